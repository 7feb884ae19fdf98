"""Concurrency against a real `appliance serve` on 127.0.0.1: 32 clients search, ask questions the
documents cannot answer (refused without the model), ask for the documents' own text (quoted answers, the
default, no model) and ask questions that generate (mode generated: SmolLM2 here, the installed Qwen under
`make reliability`), while an admin edits two documents, deletes one and reindexes
through POST /v1/reindex. No 5xx but the generation queue's documented 503, no hit on the deleted
document once its removal has answered, and p50/p95 per kind of request
(scripts/reliability/concurrency.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.reliability.concurrency import Server, cross_process_reindex_seen, run_load, serve_corpus
from scripts.reliability.security import find_leaks, log_files

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Iterator[Server]:
    # A short queue (documented: generator.queue_size) so that 32 clients meet the 503 path in seconds.
    settings = {"APPLIANCE_GENERATOR_QUEUE_SIZE": "2", "APPLIANCE_ANSWER_MAX_PROMPT_TOKENS": "512"}
    running = serve_corpus(tmp_path_factory.mktemp("load"), models_dir, extra_env=settings)
    yield running
    running.stop()


def test_32_clients_while_a_reindex_edits_and_deletes(server: Server) -> None:
    report = run_load(server, clients=32, seconds=6.0)
    figures = {"statuses": report.statuses(), "latency_ms": report.latencies(), "busy_503": report.busy}
    print("\n" + json.dumps(figures, indent=1))

    assert not report.errors, report.errors[:10]
    assert not report.server_errors, [(s.kind, s.status) for s in report.server_errors]
    statuses = report.statuses()
    assert statuses["ask generated"].get(200, 0) >= 1, "at least one real generation under load"
    assert statuses["ask refused"].get(200, 0) >= 1 and statuses["search"].get(200, 0) >= 1
    assert set(statuses["ask quoted"]) == {200}, "quoted answers never wait for the model's queue"
    assert set(statuses["ask generated"]) <= {200, 503} and report.busy == statuses["ask generated"].get(503, 0)
    assert (report.reindex["updated"], report.reindex["removed"], report.reindex["failed"]) == (2, 1, [])
    assert report.victim_found_before > 0, "the deleted document was findable before (the check can fail)"
    assert not report.victim_hits_after, report.victim_hits_after
    # A count, not a rate (throughput is scripts/bench_load.py's): the 32 clients were each served.
    assert report.requests >= 32

    secrets = [server.operator, server.admin]
    scanned, leaks = find_leaks(log_files(server.home, server.log.parent), secrets, report.answers)
    assert scanned >= 2 and not leaks, leaks


def test_a_reindex_by_another_process_reaches_the_running_servers_dense_search(server: Server) -> None:
    # The server owns the local vector store; `appliance reindex` returns once the server applied its commit.
    paths, new = cross_process_reindex_seen(server)
    assert new in paths, f"dense search of the running server returned {paths}"
