"""Compare two section-choice fits on the same dump, question by question (scripts/fit_choice.py results).

Each results file holds every training question's out-of-fold merit (complete + right, at its chosen
settings). Printed: the pooled merits, their difference and its paired standard error, the rule fit_choice.py
keeps settings by (a challenger wins only by more than one paired standard error), and the evaluation sets'
complete and right side by side.

Usage: python scripts/compare_choice_fits.py HOLDER.json CHALLENGER.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.fit_choice import clearly_better


def compared(holder: dict[str, Any], challenger: dict[str, Any]) -> dict[str, Any]:
    """The paired comparison of two fits' out-of-fold merits over the questions both measured."""
    ids = sorted(set(holder["question_merits"]) & set(challenger["question_merits"]))
    if not ids:
        raise SystemExit("the two results hold no training question in common: were they fitted on one dump?")
    held = np.array([holder["question_merits"][i] for i in ids])
    challenging = np.array([challenger["question_merits"][i] for i in ids])
    better, difference, error = clearly_better(challenging, held)
    sets = sorted(set(holder.get("evaluation_sets", {})) & set(challenger.get("evaluation_sets", {})))
    return {
        "questions": len(ids),
        "merit_holder": round(float(held.mean()), 4),
        "merit_challenger": round(float(challenging.mean()), 4),
        "difference": difference,
        "paired_standard_error": error,
        "challenger_clearly_better": better,
        "changed_questions": int(np.sum(held != challenging)),
        "evaluation_sets": {
            name: {
                measure: [
                    holder["evaluation_sets"][name]["fitted"][measure],
                    challenger["evaluation_sets"][name]["fitted"][measure],
                ]
                for measure in ("complete", "right", "right_document")
                if measure in holder["evaluation_sets"][name]["fitted"]
            }
            for name in sets
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("holder", type=Path)
    parser.add_argument("challenger", type=Path)
    args = parser.parse_args()
    holder, challenger = (json.loads(path.read_text()) for path in (args.holder, args.challenger))
    print(json.dumps(compared(holder, challenger), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
