"""How much of the section choice is the fit's noise: the same training questions, their features dumped with two
embedder backends whose vectors agree to a cosine of 0.9999 (torch bf16 and onnx), fitted the same way. A choice
that changes between the two is not a property of the data.

For each dump, at fitted_choice's chosen penalties and reading, this fits the linear ranker and the hidden layer's
networks from SEEDS seeds (each network once, so the ensembles of the first 3 and of all SEEDS are taken from the
same fits), out of fold (leave one corpus out) and on the whole training set. Then, for the linear model, the
3-seed ensemble (what fit_choice.py ships) and the SEEDS-seed ensemble, at every shown mass:
- out of fold: complete, right, complete + right per dump, and the paired standard error of a difference;
- on every evaluation set (fitted on the whole training set): complete and right per dump, and the share of
  questions whose shown section differs between the two dumps (what a refit alone changes).

Usage: python scripts/fit_choice_stability.py [--a .appliance/choice_features.pkl]
       [--b .appliance/choice_features_base.pkl] [--results scripts/results/fit_choice_stability.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.fit_choice import (
    GROUPS,
    SHOWN_MASSES,
    clearly_better,
    fit_hidden,
    fit_linear,
    fit_reading,
    is_training,
    load_questions,
    measure,
    question_merits,
    with_hidden,
)

REPO = Path(__file__).resolve().parent.parent
SEEDS = tuple(range(10))
SHIPPED_SEEDS = 3  # fit_choice.py's HIDDEN_SEEDS
L2 = (1.0, 100.0)  # fit_choice.py's chosen penalties on both dumps (scripts/results/fit_choice*.json)
READING_C = 0.3
HIDDEN = (8, 0.2)  # the shipped hidden layer
MODELS = ("linear", f"hidden {SHIPPED_SEEDS} seeds", f"hidden {len(SEEDS)} seeds")

_DUMPS: dict[str, list[dict[str, Any]]] = {}  # inherited by the fold processes (fork)


def evaluated(questions: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    sets: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        if is_training(q):
            continue
        name = "procedures (heldout)" if q["set"] == "procedures" else q["set"]
        sets.setdefault(name, []).append(q)
    return sets


def work(dump: str, group: str | None) -> dict[str, Any]:
    """Fit on the training set without `group` (all of it when None); the rows shown per model and mass, on the
    group left out or on every evaluation set."""
    questions = _DUMPS[dump]
    train = [q for q in questions if is_training(q)]
    fit_on = [q for q in train if group is None or q["group"] != group]
    reading = fit_reading(fit_on, READING_C)
    linear, problem = fit_linear(fit_on, reading, L2)
    fits = [fit_hidden(*problem, linear.weights, HIDDEN, seed) for seed in SEEDS]
    rankers = dict(
        zip(MODELS, (linear, with_hidden(linear, fits[:SHIPPED_SEEDS]), with_hidden(linear, fits)), strict=True)
    )
    targets = {"out of fold": [q for q in train if q["group"] == group]} if group else evaluated(questions)
    return {
        name: {
            model: {str(mass): measure(chosen, reading, ranker, mass)["fitted"] for mass in SHOWN_MASSES}
            for model, ranker in rankers.items()
        }
        for name, chosen in targets.items()
    }


def figures(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    n = max(len(rows), 1)
    complete = sum(r["complete"] for r in rows) / n
    right = sum(r["right"] for r in rows) / n
    return {"complete": round(complete, 3), "right": round(right, 3), "merit": round(complete + right, 3)}


def differing(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> float:
    shown_b = {r["id"]: r.get("section") for r in b}
    return round(sum(shown_b.get(r["id"]) != r.get("section") for r in a) / max(len(a), 1), 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", type=Path, default=REPO / ".appliance" / "choice_features.pkl")
    parser.add_argument("--b", type=Path, default=REPO / ".appliance" / "choice_features_base.pkl")
    parser.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "fit_choice_stability.json")
    args = parser.parse_args()
    _DUMPS["a"], _DUMPS["b"] = load_questions(args.a), load_questions(args.b)
    jobs = [(dump, group) for dump in ("a", "b") for group in (*GROUPS, None)]
    with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=multiprocessing.get_context("fork")) as pool:
        done = dict(zip(jobs, pool.map(work, *zip(*jobs, strict=True)), strict=True))

    # Out of fold: the four groups' rows pooled, per dump, model and mass.
    pooled: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    for dump in ("a", "b"):
        pooled[dump] = {model: {str(m): [] for m in SHOWN_MASSES} for model in MODELS}
        for group in GROUPS:
            for model in MODELS:
                for mass, rows in done[(dump, group)]["out of fold"][model].items():
                    pooled[dump][model][mass].extend(rows)
    report: dict[str, Any] = {
        "dumps": {"a": str(args.a.name), "b": str(args.b.name)},
        "penalties": L2,
        "hidden_layer": HIDDEN,
        "seeds": len(SEEDS),
        "out_of_fold": {},
        "evaluation_sets": {},
    }
    for model in MODELS:
        for mass in map(str, SHOWN_MASSES):
            a, b = pooled["a"][model][mass], pooled["b"][model][mass]
            report["out_of_fold"][f"{model}, mass {mass}"] = {
                "a": figures(a),
                "b": figures(b),
                "shown section differs": differing(a, b),
            }
    # The paired standard error of a difference in merit between two settings, out of fold (dump a): the noise
    # a selection among settings has to see through.
    base = question_merits(pooled["a"]["linear"]["None"])
    spreads = [
        clearly_better(question_merits(pooled["a"][model][mass]), base)[2]
        for model in MODELS
        for mass in map(str, SHOWN_MASSES)
        if (model, mass) != ("linear", "None")
    ]
    report["paired_standard_error_of_a_difference"] = {
        "median": round(float(np.median(spreads)), 4),
        "max": round(float(np.max(spreads)), 4),
    }
    for set_name in done[("a", None)]:
        for model in MODELS:
            for mass in map(str, SHOWN_MASSES):
                a, b = done[("a", None)][set_name][model][mass], done[("b", None)][set_name][model][mass]
                report["evaluation_sets"].setdefault(set_name, {})[f"{model}, mass {mass}"] = {
                    "a": figures(a),
                    "b": figures(b),
                    "shown section differs": differing(a, b),
                }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=1))
    for name, table in [("out of fold", report["out_of_fold"]), *report["evaluation_sets"].items()]:
        print(f"\n{name}: complete / right (a | b), shown section differs")
        for key, row in table.items():
            a, b = row["a"], row["b"]
            print(
                f"  {key:28s} {a['complete']:.3f} / {a['right']:.3f} | {b['complete']:.3f} / {b['right']:.3f}"
                f"   differs {row['shown section differs']:.3f}"
            )
    print(
        "\npaired standard error of a difference in merit, out of fold:",
        report["paired_standard_error_of_a_difference"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
