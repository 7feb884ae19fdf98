"""Under load: answers and query embeddings while a reindex of the runbooks runs, against the same
without it, interleaved in one run.

A real `appliance ingest` of ../shared/data/runbooks into a fresh home runs in a child process scheduled as
the reindex unit schedules it (systemd/appliance-reindex.service: SCHED_IDLE; `--policy nice10` for
the previous Nice=10). Each measurement is taken twice in a row, once with the child stopped
(SIGSTOP: quiet) and once with it running, in alternating order, so a drift in the machine's load
hits both alike:

  * the answer to each question (`Answerer`, the service's settings: local generator, embedder):
    total time, loaded / quiet (the issue's bound: 1.5x);
  * one query's embedding (the search path), p50 / p95 over the questions (bound: p95 < 50 ms),
    for the configured embedder and, for contrast, torch with every core's thread.

Usage: python scripts/bench_load.py [--questions N] [--policy idle|nice10] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.answerer import Answerer
from appliance.config import load_settings
from appliance.evaluate.runner import load_qa
from appliance.ingest.pipeline import ingest
from appliance.models.embedder import Embedder
from appliance.models.registry import embedder_path, load_embedder
from scripts.lib.report import finish

REPO = Path(__file__).resolve().parent.parent
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"


def start_reindex(corpus: Path, home: Path, models_dir: Path, policy: str) -> subprocess.Popen[bytes]:
    def schedule() -> None:
        if policy == "idle":
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        else:
            os.nice(10)

    environ = {**os.environ, "APPLIANCE_HOME": str(home), "APPLIANCE_MODELS_DIR": str(models_dir)}
    environ.pop("APPLIANCE_CONFIG", None)
    sources = [str(p) for p in sorted(corpus.iterdir()) if p.is_dir()]
    return subprocess.Popen(
        [sys.executable, "-m", "appliance.cli.main", "ingest", "--json", *sources],
        env=environ,
        preexec_fn=schedule,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)


def timed_ask(answerer: Answerer, question: str) -> float:
    """One answer as the service gives a new question: its query's vector not in the cache."""
    answerer.searcher.embedder._queries.clear()
    started = time.perf_counter()
    answerer.ask(question)
    return time.perf_counter() - started


def timed_embed(embedder: Embedder, question: str) -> float:
    """One query's embedding as a search computes it the first time (embed_query's cache bypassed)."""
    started = time.perf_counter()
    embedder.embed([question])
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-load")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--questions", type=int, default=4, help="Answers measured in each condition.")
    parser.add_argument("--policy", choices=["idle", "nice10"], default="idle")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    environ = {**os.environ, "APPLIANCE_HOME": str(args.home / "demo"), "APPLIANCE_MODELS_DIR": str(args.models_dir)}
    environ.pop("APPLIANCE_CONFIG", None)
    settings = load_settings(environ)
    ingest(settings, [REPO / "docs_corpus"])
    answerer = Answerer(settings)
    items = [item for item in load_qa(REPO / "scripts/qa/demo_corpus.jsonl") if item.answerable]
    questions = [item.question for item in items]
    asked = questions[: args.questions]
    embedders = {
        f"{settings.embedder.backend} ({settings.embedder.query_threads or 'all'} thread)": load_embedder(settings),
        "torch (every core)": Embedder(
            embedder_path(settings), backend="torch", threads=0, query_threads=0
        ),  # sentence-transformers' defaults
    }
    for embedder in embedders.values():
        embedder.embed_query("warm-up")
    answerer.ask(asked[0])  # loads the generator and caches its system prefix

    work = Path(tempfile.mkdtemp(prefix="bench-load-"))
    child = start_reindex(RUNBOOKS, work / "home", args.models_dir, args.policy)
    try:
        time.sleep(20)  # model load and the first files: the child is embedding from here on
        answers: dict[str, list[float]] = {"quiet": [], "reindex": []}
        embeds: dict[str, dict[str, list[float]]] = {name: {"quiet": [], "reindex": []} for name in embedders}
        for turn, question in enumerate(asked):
            # Each question in both conditions, the order alternating: a second ask of a question finds
            # its prompt's pages in the OS cache, and the load of the machine drifts.
            for condition in ("quiet", "reindex") if turn % 2 == 0 else ("reindex", "quiet"):
                child.send_signal(signal.SIGSTOP if condition == "quiet" else signal.SIGCONT)
                time.sleep(0.5)
                answers[condition].append(timed_ask(answerer, question))
                print(f"{condition}: {answers[condition][-1]:.1f} s  {question[:60]}", file=sys.stderr, flush=True)
        for question in questions * 2:
            for condition in ("quiet", "reindex"):
                child.send_signal(signal.SIGSTOP if condition == "quiet" else signal.SIGCONT)
                for name, embedder in embedders.items():
                    embeds[name][condition].append(timed_embed(embedder, question))
        child.send_signal(signal.SIGCONT)
        still_running = child.poll() is None
    finally:
        child.kill()
        child.wait()
        answerer.close()
        shutil.rmtree(work, ignore_errors=True)

    ratios = [loaded / quiet for quiet, loaded in zip(answers["quiet"], answers["reindex"], strict=True)]
    report: dict[str, Any] = {
        "policy": args.policy,
        "reindex_still_running_at_the_end": still_running,
        "answers_s": {k: [round(v, 2) for v in vs] for k, vs in answers.items()},
        "answer_loaded_vs_quiet": {"median": round(statistics.median(ratios), 2), "max": round(max(ratios), 2)},
        "query_embedding_ms": {
            name: {
                condition: {"p50": percentile(values, 0.5), "p95": percentile(values, 0.95), "n": len(values)}
                for condition, values in by_condition.items()
            }
            for name, by_condition in embeds.items()
        },
        "generator": {k: answerer.generator.system_info()[k] for k in ("model_id", "n_threads", "draft")},
        "embedder": settings.embedder.model_dump(),
        "load_average": os.getloadavg(),
    }
    print(
        f"answers during a reindex ({args.policy}): {report['answer_loaded_vs_quiet']['median']}x the quiet time "
        f"(median; max {report['answer_loaded_vs_quiet']['max']}x), bound 1.5x"
    )
    for name, by_condition in report["query_embedding_ms"].items():
        print(
            f"query embedding, {name}: p95 {by_condition['quiet']['p95']} ms quiet, "
            f"{by_condition['reindex']['p95']} ms during the reindex (bound 50 ms)"
        )
    return finish(report, args.json, indent=2)


if __name__ == "__main__":
    sys.exit(main())
