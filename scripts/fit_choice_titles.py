"""Would training questions written from titles alone help the section choice? Measured before any refit ships.

Every training question of scripts/qa/choice_train.jsonl was written by someone reading the section; outside
writers, and scripts/qa/procedures_titles.jsonl, ask knowing the job, not the document, and the choice scores
0.59 there against 0.72-0.76 on the sets written from the section (docs/measurements/section-choice.md).
scripts/qa/choice_train_titles.jsonl holds 57 training procedure questions written that way (draw_titles.py,
seed 59, documents apart from the measurement set's). This fits the shipped settings (l2, reading, hidden layer,
shown mass: fit_choice.incumbent_settings) on the training set with and without them, and reports, side by side:
- out of fold (leave one corpus group out), on the former training questions and on the new ones of the group
  left out;
- fitted on all of it, on every evaluation set of the dump (procedures_titles among them).
It writes nothing to the appliance: a refit that adds them is fit_choice.py's to make, with its selection.

Needs a dump with the sets train_titles and procedures_titles:
  python scripts/choice_features.py --out .appliance/choice_features_titles.pkl \\
      --sets train,train_titles,procedures,procedures_llm,procedures_titles,heldout,sampled,demo
Usage: python scripts/fit_choice_titles.py [--features .appliance/choice_features_titles.pkl]
       [--results scripts/results/fit_choice_titles.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.fit_choice import (
    GROUPS,
    by_fold,
    fit_ranker,
    fit_reading,
    fold_models,
    incumbent_settings,
    is_training,
    load_questions,
    measure,
    summary,
)

REPO = Path(__file__).resolve().parent.parent
TITLES = "train_titles"
SHOWN = ("questions", "recall", "complete", "right", "right_document")


def figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {k: v for k, v in summary(rows).items() if k in SHOWN}


def shown_rows(questions: Sequence[dict[str, Any]], reading: Any, ranker: Any, mass: float | None) -> list[Any]:
    return measure(questions, reading, ranker, mass)["fitted"]


def evaluation_sets(questions: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    sets: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        if is_training(q) or q["set"] == TITLES:
            continue
        sets.setdefault("procedures (heldout)" if q["set"] == "procedures" else q["set"], []).append(q)
    return sets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=Path, default=REPO / ".appliance" / "choice_features_titles.pkl")
    parser.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "fit_choice_titles.json")
    args = parser.parse_args()
    settings = incumbent_settings()
    if settings is None:
        raise SystemExit("no shipped section ranker to take the settings from")
    l2, c, hidden, mass = settings
    questions = load_questions(args.features)
    former = [q for q in questions if is_training(q)]
    titles = [q for q in questions if q["set"] == TITLES]
    if not titles:
        raise SystemExit(f"{args.features} holds no {TITLES} questions: dump them (see --help)")
    variants = {"former training set": former, "+ written from titles": [*former, *titles]}
    report: dict[str, Any] = {
        "settings": {"l2": l2, "reading_c": c, "hidden": hidden, "shown_mass": mass},
        "training": {"former": len(former), "titles": len(titles)},
        "out_of_fold": {},
        "evaluation": {},
    }
    for name, train in variants.items():
        models = dict(zip(GROUPS, by_fold(fold_models, train, l2, c, hidden), strict=True))
        # Each group's questions measured by the models fitted without it, pooled per part.
        held: dict[str, list[Any]] = {"former": [], "titles": []}
        for group, (reading, ranker) in models.items():
            for part, pool in (("former", former), ("titles", titles)):
                left_out = [q for q in pool if q["group"] == group]
                held[part] += shown_rows(left_out, reading, ranker, mass)
        report["out_of_fold"][name] = {part: figures(rows) for part, rows in held.items()}
        reading = fit_reading(train, c)
        ranker = fit_ranker(train, reading, l2, hidden)
        report["evaluation"][name] = {
            set_name: figures(shown_rows(chosen, reading, ranker, mass))
            for set_name, chosen in evaluation_sets(questions).items()
        }
        print(f"{name}: fitted ({len(train)} questions)", file=sys.stderr)
    print_report(report)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


def print_report(report: dict[str, Any]) -> None:
    names = list(report["out_of_fold"])
    print(f"settings {report['settings']}; training {report['training']}")
    print(f"{'':34} " + " | ".join(f"{n:>34}" for n in names))
    print(f"{'set':34} " + " | ".join(f"{'n  recall complete right document':>34}" for _ in names))

    def line(label: str, cells: Sequence[dict[str, Any]]) -> None:
        shown = [
            f"{f.get('questions', 0):>3} {f.get('recall', 0):7.3f} {f.get('complete', 0):8.3f} "
            f"{f.get('right', 0):5.3f} {f.get('right_document', 0):8.3f}"
            for f in cells
        ]
        print(f"{label:34} " + " | ".join(f"{s:>34}" for s in shown))

    for part in ("former", "titles"):
        line(f"out of fold: {part}", [report["out_of_fold"][n][part] for n in names])
    for set_name in report["evaluation"][names[0]]:
        line(set_name, [report["evaluation"][n][set_name] for n in names])


if __name__ == "__main__":
    raise SystemExit(main())
