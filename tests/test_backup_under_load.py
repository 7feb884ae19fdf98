"""Backup under load, against a real `appliance serve` on 127.0.0.1: 32 clients keep asking while an admin's
`appliance ingest` reindexes new documents and `appliance backup` runs (real processes, as on a host). The
backup waits for the reindex's writer lock and then holds its whole result, never half of it; every
question is answered meanwhile; the backup restores (`appliance restore`) into a fresh home whose server
answers every question with the same answer and the same citations as the original, with the original's
tokens, and whose audit chain verifies (`appliance audit verify`). A restore onto the running appliance is
refused. The in-process contract of backup and restore: tests/test_backup.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from scripts.reliability.concurrency import create_token
from scripts.reliability.crash_harness import Corpus
from scripts.reliability.procs import VENV_APPLIANCE, appliance_env, start_serve, stop

pytestmark = pytest.mark.slow

DOCS = Path(__file__).resolve().parent.parent / "docs_corpus"
CLIENTS = 32
EXTRA_DOCUMENTS = 8
QUESTIONS = [
    "need to take one clearwell cell down for cleaning - how much can the plant make with only one cell?",
    "ALM-GEN-FAIL-START during an outage, what do I do at GCP-601?",
    "hypo tank is at 35 %, what's the most I can take off the next truck?",
    "fluoride pumps stopped on ALM-FL-HIGH-02 - what has to be true before I restart the feed?",
    "reconnecting VR-451 after a container change - what gasket part number do I use?",
    "ozone generator tripped on high dew point, how do I get it back online?",
    "What is procedure RLY-0005 filed as?",  # one of the documents the reindex adds
]


@dataclass
class Served:
    base: str
    home: Path
    env: dict[str, str]
    admin: str
    work: Path
    documents: int


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Iterator[Served]:
    work = tmp_path_factory.mktemp("backup-load")
    sops = work / "sops"
    sops.mkdir()
    for path in sorted(DOCS.glob("*.md")):
        shutil.copy(path, sops / path.name)
    env = appliance_env(work / "home", models_dir)
    subprocess.run([VENV_APPLIANCE, "ingest", str(sops)], env=env, capture_output=True, timeout=900, check=True)
    admin = create_token(env, "admin", "backup-admin")
    process, base = start_serve(env, work / "serve.log")
    try:
        yield Served(base, work / "home", env, admin, work, len(list(sops.iterdir())))
    finally:
        stop(process)


def ask_all(base: str, admin: str) -> list[dict[str, Any]]:
    seen = []
    with httpx.Client(base_url=base, timeout=300.0, headers={"Authorization": f"Bearer {admin}"}) as http:
        for question in QUESTIONS:
            response = http.post("/v1/ask", json={"question": question})
            assert response.status_code == 200, response.text
            data = response.json()
            citations = [(c["path"], c["chunk_id"]) for c in data["citations"]]
            seen.append({"answer": data["answer"], "refused": data["refused"], "citations": citations})
    return seen


def wait_until_locked(lock: Path, process: subprocess.Popen[str], timeout_s: float = 300.0) -> None:
    """Until another process holds the index writer lock (probing it without waiting)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail("the reindex finished before it was seen holding the writer lock: give it more documents")
        if lock.exists():
            fd = os.open(lock, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            finally:
                os.close(fd)
        time.sleep(0.02)
    pytest.fail("the reindex never took the writer lock")


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([VENV_APPLIANCE, *args], env=env, capture_output=True, text=True, timeout=900)


def test_a_backup_taken_during_a_reindex_under_32_clients_restores_an_appliance_that_answers_the_same(
    served: Served, models_dir: Path, tmp_path: Path
) -> None:
    extra = Corpus(served.work / "extra", random.Random(7))
    for _ in range(EXTRA_DOCUMENTS):
        extra.add()
    samples: list[tuple[float, float, int | str]] = []
    stopping = threading.Event()

    def client(number: int) -> None:
        headers = {"Authorization": f"Bearer {served.admin}"}
        # Generous: on a shared 2-core host 32 clients, a reindex and a backup make each answer wait its turn.
        with httpx.Client(base_url=served.base, timeout=900.0, headers=headers) as http:
            while not stopping.is_set():
                started = time.monotonic()
                status: int | str
                try:
                    status = http.post("/v1/ask", json={"question": QUESTIONS[number % 6]}).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                samples.append((started, time.monotonic(), status))

    clients = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in clients:
        thread.start()
    try:
        reindex = subprocess.Popen(
            [VENV_APPLIANCE, "ingest", str(extra.root), "--json"],
            env=served.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until_locked(served.home / "index.lock", reindex)
        backup_started = time.monotonic()
        backup = run(served.env, "backup", str(tmp_path / "backup"), "--wait", "600", "--json")
        backup_ended = time.monotonic()
        reindexed, reindex_errors = reindex.communicate(timeout=900)
    finally:
        stopping.set()
        for thread in clients:
            thread.join(timeout=1200)

    assert reindex.returncode == 0, reindex_errors
    assert json.loads(reindexed)["added"] == EXTRA_DOCUMENTS
    assert backup.returncode == 0, backup.stderr
    made = json.loads(backup.stdout)
    # It waited for the reindex, then took its whole result: never a catalog between two of its batches.
    assert made["lock_wait_s"] > 0
    assert made["catalog"]["documents"] == served.documents + EXTRA_DOCUMENTS
    assert made["vectors"]["count"] == made["catalog"]["chunks"]
    # Every question was answered, and answers kept coming while the backup ran (32 clients on a shared
    # 2-core host: one ask waits for the others' turns, so few start and end within the backup).
    assert Counter(status for _, _, status in samples) == {200: len(samples)}
    during = [s for s in samples if backup_started <= s[1] <= backup_ended]
    print(f"\n{len(samples)} asks, {len(during)} answered during the backup's {backup_ended - backup_started:.1f} s")
    assert during, "no question was answered while the backup ran"

    original = ask_all(served.base, served.admin)
    assert original[-1]["citations"] and original[-1]["citations"][0][0].startswith("extra/")
    assert not original[0]["refused"] and original[0]["citations"]

    restored_env = appliance_env(tmp_path / "restored-home", models_dir)
    restored = run(restored_env, "restore", str(tmp_path / "backup"), "--json")
    assert restored.returncode == 0, restored.stderr
    verified = run(restored_env, "audit", "verify", "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["last_seq"] == made["audit"]["last_seq"] > 0

    process, base = start_serve(restored_env, tmp_path / "restored.log")
    try:
        assert ask_all(base, served.admin) == original  # same answers, same citations, same admin token
    finally:
        stop(process)

    refused = run(served.env, "restore", "--force", str(tmp_path / "backup"))
    assert refused.returncode == 1 and "the appliance is running" in refused.stderr, refused.stderr
