"""Where the search puts the gold document, beside whether the answer cited it: is a miss the search's or the choice's?

For every question of a procedure set: the gold document's rank among the documents of the hybrid search's hits
(in the order of their best hit; the section choice reads these hits and their documents), and, from a
`scripts/bench_sop.py --json` run of the same set, whether the answer cited the gold document and its step
recall. A gold document found first but not cited is the choice's miss; one found fifth or later, the search's.

Searches only (the embedder, no generator and no section choice): indexes as bench_sop.py (.appliance/bench-sop).
Usage: python scripts/gold_document_rank.py --set procedures_titles \
           --bench scripts/results/bench_sop_procedures_titles.json [--hits 30] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import appliance  # noqa: E402, F401  (offline environment first)
from scripts.bench_sop import PROCEDURE_SETS, corpus_of, load_items, settings_for  # noqa: E402


def rank_bucket(rank: int | None) -> str:
    if rank is None:
        return "not found"
    return str(rank) if rank <= 2 else "3-4" if rank <= 4 else "5+"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", required=True, choices=sorted(PROCEDURE_SETS))
    parser.add_argument("--bench", type=Path, required=True, help="a bench_sop.py --json run of the same set")
    parser.add_argument("--hits", type=int, default=30, help="hits searched (answer.section_hits: 30)")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from appliance.retrieve.search import Searcher

    answers = {row["id"]: row for row in json.loads(args.bench.read_text())[args.set]["quoted"]["rows"]}
    searchers: dict[str, Searcher] = {}
    rows: list[dict[str, Any]] = []
    try:
        for item in load_items(args.set, "all"):
            corpus = corpus_of(item, args.set)
            if corpus not in searchers:
                searchers[corpus] = Searcher(settings_for(corpus, args.home, args.models_dir))
            found = searchers[corpus].search(item["question"], k=args.hits)
            documents = list(dict.fromkeys(hit.path for hit in found.hits))
            rank = documents.index(item["gold_file"]) + 1 if item["gold_file"] in documents else None
            answer = answers[item["id"]]
            rows.append(
                {
                    "id": item["id"],
                    "group": item.get("group"),
                    "gold_document_rank": rank,
                    "documents": len(documents),
                    "cited": bool(answer["gold_cited"]),
                    "step_recall": answer["step_recall"],
                }
            )
    finally:
        for searcher in searchers.values():
            searcher.close()

    table: dict[str, Counter[str]] = {}
    for row in rows:
        bucket = table.setdefault(rank_bucket(row["gold_document_rank"]), Counter())
        bucket["questions"] += 1
        bucket["cited"] += int(row["cited"])
        bucket["complete_recall"] += int(row["step_recall"] >= 0.9)
    print(
        f"{args.set}: {len(rows)} questions, {args.hits} hits; documents among the hits, median "
        f"{statistics.median(r['documents'] for r in rows)}"
    )
    print(f"{'gold document rank':>20} {'questions':>10} {'cited':>6} {'recall >= 0.9':>14}")
    for name in ("1", "2", "3-4", "5+", "not found"):  # not `bucket`: that one is a Counter above
        if name in table:
            t = table[name]
            print(f"{name:>20} {t['questions']:>10} {t['cited']:>6} {t['complete_recall']:>14}")
    if args.json:
        report = {"set": args.set, "hits": args.hits, "by_rank": {k: dict(v) for k, v in table.items()}, "rows": rows}
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
