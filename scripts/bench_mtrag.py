"""MTRAG-UN follow-ups: gold-passage recall@5 of the last turn alone vs the rewritten standalone question,
and the evidence decision's refusals per answerability label (library: scripts/lib/mtrag.py).

For each collection (ibmcloud, clapnq) of ../shared/data/mtrag-un/tasks.jsonl, the pool of that
collection's gold passages is written to a temporary folder, indexed in a temporary APPLIANCE_HOME
(nothing is copied into the project), and every task is searched with each method's query:
none (last turn), concat (earlier user question → last, always), rule (concat when the evidence
decision prefers it to the last turn alone: the default), rule2 (two earlier questions), model (the
local generator rewrites the follow-up), both (the model's rewrite, the rule's text when the rewrite
fails its checks). Model rewrites are cached outside the project (--rewrite-cache), so a rerun after a
change to retrieval or the evidence decision costs no generation.

Settings: defaults and APPLIANCE_<SECTION>_<FIELD> variables as for the CLI (APPLIANCE_HOME is replaced
by a temporary folder); the model store from APPLIANCE_MODELS_DIR.

Usage:
  python scripts/bench_mtrag.py                        # both collections, every method
  python scripts/bench_mtrag.py --collection clapnq --no-model --json /tmp/clapnq.json
Results: scripts/results/bench_mtrag.json (figures only: task ids and numbers, no text of the data).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.followup import REWRITE_MAX_TOKENS
from appliance.answer.generated.prompt import SYSTEM_PROMPT
from appliance.config import load_settings
from appliance.ingest.pipeline import ingest
from appliance.models.generation import load_generator
from appliance.retrieve.search import Searcher
from scripts.lib.mtrag import (
    COLLECTIONS,
    LABELS,
    RECALL_K,
    RewriteCache,
    load_tasks,
    make_rewrites,
    measure,
    summarize,
    write_passages,
)

REPO = Path(__file__).resolve().parent.parent
TASKS = REPO.parent / "shared" / "data" / "mtrag-un" / "tasks.jsonl"
RESULTS = REPO / "scripts" / "results" / "bench_mtrag.json"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "appliance" / "mtrag-rewrites.jsonl"


def _progress(label: str) -> Any:
    def show(done: int, total: int) -> None:
        if done == total or done % 10 == 0:
            print(f"  {label}: {done}/{total}", file=sys.stderr, flush=True)

    return show


def _judge(searcher: Searcher, text: str) -> tuple[bool, float]:
    evidence = searcher.search(text, k=3).evidence
    return evidence.sufficient, evidence.probability


def run_collection(collection: str, args: argparse.Namespace, generator: Any) -> dict[str, Any]:
    tasks, passages = load_tasks(args.tasks, collection)
    if args.limit:
        tasks = tasks[: args.limit]
    with tempfile.TemporaryDirectory(prefix=f"mtrag-{collection}-") as tmp:
        base = Path(tmp)
        paths = write_passages(passages, base / "passages")
        settings = load_settings().model_copy(update={"home": base / "home"})
        started = time.perf_counter()
        report = ingest(settings, [base / "passages"])
        index_s = time.perf_counter() - started
        print(f"{collection}: {len(tasks)} tasks, {len(passages)} passages indexed in {index_s:.0f} s "
              f"({report.chunks_total} chunks)", file=sys.stderr)  # fmt: skip
        complete = None
        if generator is not None:

            def complete(messages: list[Any]) -> tuple[str, float, int]:
                began = time.perf_counter()
                text, stats = generator.complete(messages, max_tokens=REWRITE_MAX_TOKENS)
                return text, (time.perf_counter() - began) * 1000.0, int(stats.completion_tokens)

        searcher = Searcher(settings)
        rewrites = make_rewrites(
            tasks,
            max_turns=settings.followup.max_turns,
            system=SYSTEM_PROMPT,
            model=generator.model_id if generator is not None else None,
            complete=complete,
            cache=None if args.no_cache else RewriteCache(args.rewrite_cache),
            progress=_progress(f"{collection} rewrites") if generator is not None else None,
            known=searcher.index.catalog.knows_word,
            judge=lambda text: _judge(searcher, text),
            model_limit=args.model_limit or None,
        )
        try:
            started = time.perf_counter()
            outcomes = measure(searcher, tasks, rewrites, paths)
            search_s = time.perf_counter() - started
        finally:
            searcher.close()
    summary = summarize(tasks, outcomes, rewrites)
    summary["passages"] = len(passages)
    summary["chunks"] = report.chunks_total
    summary["seconds"] = {"index": round(index_s, 1), "search_all": round(search_s, 1)}
    summary["per_task"] = [
        {"task_id": o.task_id, "method": o.method, "recall": o.recall, "refused": o.refused} for o in outcomes
    ]
    return summary


def _pct(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def print_summary(collection: str, summary: dict[str, Any]) -> None:
    print(f"\n== {collection}: {summary['tasks']} tasks ({summary['multi_turn']} multi-turn), "
          f"{summary['passages']} passages, labels {summary['labels']}")  # fmt: skip
    retrieval = summary["retrieval_multi_turn"]
    base = retrieval["none"][f"recall@{RECALL_K}"] or 0.0
    print(f"recall@{RECALL_K} of the gold passage, multi-turn tasks with gold passages:")
    for method, row in retrieval.items():
        recall = row[f"recall@{RECALL_K}"]
        same = row[f"none_recall@{RECALL_K}"] or base
        ratio = (
            f"  ×{recall / same:.2f} vs last turn ({_pct(same)} on these)"
            if same and recall is not None and method != "none"
            else ""
        )
        print(f"  {method:6s} recall {_pct(recall)}  hit {_pct(row[f'hit@{RECALL_K}'])}  (n={row['tasks']}){ratio}")
    print("evidence decision: share refused, per human answerability label")
    header = "".join(f"{label[:12]:>16s}" for label in LABELS)
    for scope in ("first_turn", "all"):
        print(f"  {scope:10s} {'method':6s}{header}")
        for method, scopes in summary["refusal_rate"].items():
            if scope == "first_turn" and method != "none":
                continue  # a first turn is never rewritten
            cells = "".join(f"{_pct(cell['refused']):>10s} (n={cell['tasks']:3d})" for cell in scopes[scope].values())
            print(f"  {'':10s} {method:6s}{cells}")
    cost = summary["model_rewrite_cost"]
    if cost.get("ms_mean") is not None:
        print(f"model rewrite: {cost['ms_mean'] / 1000:.1f} s mean, {cost['ms_median'] / 1000:.1f} s median, "
              f"{cost['ms_p90'] / 1000:.1f} s p90 per follow-up ({cost['generated']} generated, "
              f"{cost['completion_tokens_mean']} tokens); 'both' fell back to the rule on "
              f"{cost['both_fallbacks']} of {summary['multi_turn']}")  # fmt: skip
    elif cost["cached"]:
        print(f"model rewrites: all {cost['cached']} from the cache (timings of the first run are in its results)")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--collection", choices=[*COLLECTIONS, "all"], default="all")
    parser.add_argument("--tasks", type=Path, default=TASKS, help=f"MTRAG-UN tasks.jsonl [{TASKS}]")
    parser.add_argument("--no-model", action="store_true", help="Only none and rule (no generation).")
    parser.add_argument("--limit", type=int, default=0, help="The first N tasks of each collection (0: all).")
    parser.add_argument(
        "--model-limit", type=int, default=0, help="Model rewrites for the first N follow-ups per collection (0: all)."
    )
    parser.add_argument("--rewrite-cache", type=Path, default=CACHE, help=f"Model rewrites cache [{CACHE}]")
    parser.add_argument("--no-cache", action="store_true", help="Generate every model rewrite again.")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"Write the figures here [{RESULTS}]")
    args = parser.parse_args()
    collections = list(COLLECTIONS) if args.collection == "all" else [args.collection]
    generator = None
    if not args.no_model:
        generator = load_generator(load_settings())
    results: dict[str, Any] = {
        "benchmark": "MTRAG-UN human tasks (IBM/mt-rag-benchmark, Apache-2.0), pool of gold passages per collection",
        "settings": {"followup.max_turns": load_settings().followup.max_turns, "recall_k": RECALL_K},
        "generator": generator.model_id if generator is not None else None,
        "collections": {},
    }
    try:
        for collection in collections:
            summary = run_collection(collection, args, generator)
            results["collections"][collection] = summary
            print_summary(collection, summary)
    finally:
        if generator is not None:
            generator.close()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten: {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
