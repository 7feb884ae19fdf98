"""Measure what a fact answer's passage does with a line that introduces the next ("Two options:", "run the
following command:"): shown with the line it introduces or not at all (answer/quoted/lines.py pick_passages,
since stop 66), against the passages grown without that rule, on the same candidate lines.

Reads the line features dumped by scripts/fit_lines.py (run it first, or with --reuse on its dump), fits the
shipped line ranker's design (fitted/line_ranker.json: its signals, section count, paragraph split, seeds,
budget; the penalty from scripts/results/fit_lines.json) with each corpus of the training set left out in turn, and
on the whole training set for the measured sets, then counts per set: questions whose shown lines hold every
phrase, the median words shown, and answers showing an introduction without the line it introduces.

Usage: python scripts/measure_introductions.py [--dump .appliance/line_features.pkl] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.quoted.lines import FITTED, Line, introduced, pick_passages
from scripts.fit_lines import GROUPS, Ranker, at_count, dumped_lines

REPO = Path(__file__).resolve().parent.parent


def dangling(lines: Sequence[Line], shown: set[int]) -> bool:
    """An introduction shown without the line it introduces (lines.py `introduced`)."""
    return any((following := introduced(lines, n)) is not None and following not in shown for n in shown)


def measure(
    questions: Sequence[dict[str, Any]], rankers: dict[str, Ranker], full: Ranker, budget: int, seeds: int, whole: bool
) -> dict[str, Any]:
    by_set: dict[str, dict[str, Any]] = {}
    for q in questions:
        row = by_set.setdefault(q["set"], {"questions": 0, "every_phrase": 0, "words": [], "dangling": 0})
        row["questions"] += 1
        if not q["lines"]:
            row["words"].append(0)
            continue
        ranker = rankers[q["group"]] if q["set"] == "train" else full
        lines = dumped_lines(q)
        picked = pick_passages(lines, ranker.probabilities(q["features"]), budget, seeds, whole_introductions=whole)
        shown = {line.item for line in picked}
        row["every_phrase"] += all(any(q["lines"][n]["holds"][j] for n in shown) for j in range(len(q["phrases"])))
        row["words"].append(sum(len(line.text.split()) for line in picked))
        row["dangling"] += dangling(lines, shown)
    return {
        name: {
            "questions": row["questions"],
            "every_phrase_shown": row["every_phrase"],
            "words_median": float(np.median(row["words"])),
            "introductions_without_their_line": row["dangling"],
        }
        for name, row in sorted(by_set.items())
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", type=Path, default=REPO / ".appliance" / "line_features.pkl")
    parser.add_argument("--json", type=Path, default=REPO / "scripts" / "results" / "measure_introductions.json")
    args = parser.parse_args()
    model = json.loads(FITTED.read_text())
    fitted = json.loads((REPO / "scripts" / "results" / "fit_lines.json").read_text())["chosen"]
    l2 = float(fitted["l2"])
    questions = at_count(
        pickle.loads(args.dump.read_bytes()), int(model["sections"]), model["features"], int(model["paragraph_words"])
    )
    train = [q for q in questions if q["set"] == "train"]
    rankers = {g: Ranker([q for q in train if q["group"] != g], l2) for g in GROUPS}
    full = Ranker(train, l2)
    budget, seeds = int(model["budget_words"]), int(model["seeds"])
    report = {
        "design": {**{k: model[k] for k in ("sections", "paragraph_words", "seeds", "budget_words")}, "l2": l2},
        "note": "train: each corpus left out in turn; the other sets: the ranker fitted on the whole training set",
        "before": measure(questions, rankers, full, budget, seeds, whole=False),
        "after": measure(questions, rankers, full, budget, seeds, whole=True),
    }
    args.json.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
