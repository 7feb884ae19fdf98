"""The evidence threshold for the quoted default: m measured again, and what the cost rule's threshold would do.

The threshold (evidence.threshold, 0.4) follows from a cost rule (scripts/calibrate_evidence.py): refuse before
answering only when (1 - p) * m > p, m the share of unanswerable questions that the steps after the evidence
decision answer anyway. m = 2/3 was measured on the generated design, whose model and checks declined a third of
them. The quoted default has one refusal after the evidence decision (a value question with no line stating a
value), so its m is measured here the same way, on the training sets' unanswerable questions
(scripts/qa/choice_train.jsonl and runbooks_tune.jsonl, as written), each asked with the evidence threshold at 0
(the LLM judge off: it never refuses): the share answered, among those whose evidence probability is below 0.5
(where a threshold decides), and in the band 0.3-0.5 next to today's threshold.

The cost rule also assumes the probabilities are calibrated. So the script counts, with the signals fit_evidence.py
cached (the shipped coefficients; every training question as written, in lower and upper case), what the
thresholds 0.4, 0.45 and 0.5 refuse and decline on each training group: where raising the threshold refuses more
answerable questions than it declines unanswerable ones, the probabilities between them are too low and the
rule's threshold is not kept. Each model ships the threshold with the fewest errors over the training groups
(both errors counted alike, as the cost rule counts them), among 0.4 and the thresholds the rule gives here.

Usage: python scripts/quoted_threshold.py [--json scripts/results/quoted_threshold.json]
Settings: as bench_sop.py (indexes under .appliance/bench-sop); run scripts/fit_evidence.py first (its cache).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ["APPLIANCE_ANSWER_LLM_JUDGE"] = "off"  # the judge re-ranks sections; it never refuses

import appliance  # noqa: E402, F401  (offline environment first)
from appliance.config import DEFAULT_EVIDENCE_COEFFICIENTS, SCALE_FREE_EVIDENCE_COEFFICIENTS  # noqa: E402
from scripts.bench_sop import corpus_of, settings_for  # noqa: E402
from scripts.calibrate_evidence import cost_threshold  # noqa: E402
from scripts.fit_evidence import CACHE, GROUPS, TRAINING_SETS, probability  # noqa: E402
from scripts.fit_unmatched_note import training_items  # noqa: E402
from scripts.lib.resumable import cached_entries  # noqa: E402

RESULTS = REPO / "scripts" / "results" / "quoted_threshold.json"
BANDS = ((0.0, 0.5), (0.3, 0.5), (0.0, 1.01))
THRESHOLDS = (0.4, 0.45, 0.5)


def answered_anyway(home: Path, models_dir: Path) -> list[dict[str, Any]]:
    """Each unanswerable training question: its evidence probability (which no threshold changes), and whether
    the quoted default answers it when the evidence decision lets everything through."""
    from appliance.answer.answerer import Answerer

    items = [i for i in training_items() if not i.get("answerable", True) and i["set"] in ("choice_train", "tune")]
    answerers: dict[str, Answerer] = {}
    rows = []
    try:
        for item in items:
            corpus = corpus_of(item, item["set"])
            if corpus not in answerers:
                settings = settings_for(corpus, home, models_dir)
                open_door = settings.evidence.model_copy(update={"threshold": 0.0, "scale_free_threshold": 0.0})
                answerers[corpus] = Answerer(settings.model_copy(update={"evidence": open_door}))
            answerer = answerers[corpus]
            result = answerer.ask(item["question"])
            rows.append(
                {
                    "id": f"{item['set']}/{item['id']}",
                    "probability": round(answerer.searcher.search(item["question"]).evidence.probability, 4),
                    "answered": not result.refused,
                    "refusal_reason": (result.refusal_reason or "")[:80],
                }
            )
    finally:
        for answerer in answerers.values():
            answerer.close()
    return rows


def by_threshold(cache: Path, shipped: dict[str, float]) -> dict[str, Any]:
    """Per training group and threshold: answerable refused and unanswerable declined (`shipped` coefficients),
    each with its total."""
    entries = [e for e in cached_entries(cache).values() if e["set"] in TRAINING_SETS and "control" not in e["variant"]]
    table: dict[str, Any] = {}
    for group in GROUPS:
        mine = [(e["answerable"], probability(shipped, e)) for e in entries if e["group"] == group]
        table[group] = {
            str(t): {
                "answerable": sum(a for a, _ in mine),
                "answerable_refused": sum(a and p < t for a, p in mine),
                "unanswerable": sum(not a for a, _ in mine),
                "unanswerable_declined": sum((not a) and p < t for a, p in mine),
            }
            for t in THRESHOLDS
        }
    return table


def errors_by_threshold(table: dict[str, Any]) -> dict[str, int]:
    """Both errors counted alike over every group: answerable refused plus unanswerable answered."""
    return {
        str(t): sum(
            c[str(t)]["answerable_refused"] + c[str(t)]["unanswerable"] - c[str(t)]["unanswerable_declined"]
            for c in table.values()
        )
        for t in THRESHOLDS
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--cache", type=Path, default=CACHE, help="fit_evidence.py's signal cache")
    parser.add_argument("--json", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = answered_anyway(args.home, args.models_dir)
    report: dict[str, Any] = {
        "questions": len(rows),
        "m": {},
        "by_threshold": by_threshold(args.cache, dict(DEFAULT_EVIDENCE_COEFFICIENTS)),
        # The model without the dense similarity (another embedder configured): the same rule, the same check.
        "scale_free_by_threshold": by_threshold(args.cache, dict(SCALE_FREE_EVIDENCE_COEFFICIENTS)),
        "rows": rows,
    }
    for low, high in BANDS:
        band = [r for r in rows if low <= r["probability"] < high]
        m = sum(r["answered"] for r in band) / len(band) if band else None
        report["m"][f"{low}-{min(high, 1.0)}"] = {
            "questions": len(band),
            "answered": sum(r["answered"] for r in band),
            "m": round(m, 3) if m is not None else None,
            "cost_threshold": round(cost_threshold(m), 3) if m is not None else None,
        }
    report["errors_by_threshold"] = errors_by_threshold(report["by_threshold"])
    report["fewest_errors"] = min(report["errors_by_threshold"], key=lambda t: report["errors_by_threshold"][t])
    report["scale_free_errors_by_threshold"] = errors_by_threshold(report["scale_free_by_threshold"])
    report["scale_free_fewest_errors"] = min(
        report["scale_free_errors_by_threshold"], key=lambda t: report["scale_free_errors_by_threshold"][t]
    )
    for band_name, cell in report["m"].items():
        print(f"p in {band_name}: {cell['answered']}/{cell['questions']} answered anyway, m {cell['m']}, "
              f"threshold by the cost rule {cell['cost_threshold']}")  # fmt: skip
    print("\nshipped model, training groups (as written, lower and upper case): answerable refused / declined")
    for group, cells in report["by_threshold"].items():
        print(f"  {group:14} " + "   ".join(
            f"{t}: {c['answerable_refused']}/{c['answerable']} / {c['unanswerable_declined']}/{c['unanswerable']}"
            for t, c in cells.items()
        ))  # fmt: skip
    print("errors (answerable refused + unanswerable let through, every group):", report["errors_by_threshold"])
    print("fewest at", report["fewest_errors"], "; the scale-free model:", report["scale_free_errors_by_threshold"],
          "fewest at", report["scale_free_fewest_errors"])  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
