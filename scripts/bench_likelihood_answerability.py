"""Does the question's likelihood given the section shown tell an unanswerable question from an answerable one?

The evidence decision lets a quarter to a third of the unanswerable questions through (declined 67-74% on the
team's sets against a goal of 85%), and the yes/no judge's log-odds separated them only weakly (AUC 0.71,
docs/measurements/llm-judge.md). This measures the other reading of the local model: pointwise mutual
information between the question and the section the appliance would show,

    PMI = mean log P(question | section) - mean log P(question | no section)     (per question token)

where the second prompt asks for an operator's question with no section given, so a question that is simply
fluent or common scores no higher than a rare one. Only questions the evidence decision lets through are asked
(what it refuses stays refused). Fitted on choice_train.jsonl (the 150 answerable questions bench_llm_judge.py
samples, seed 40, and every unanswerable one) and runbooks_tune.jsonl: AUC, and one threshold on a logistic model
over the evidence logit and the PMI, leave one corpus group out; measured, never fitted on: runbooks held out,
sampled, demo. Shown section: the ranker's (fit_choice.prediction; out of fold for the training questions).

Usage: python scripts/bench_likelihood_answerability.py [--threads 2]
       [--json scripts/results/likelihood_answerability.json]
Inputs as scripts/bench_llm_judge.py (the features dump and the indexes it came from). Cached per question.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.models.generation.base import ChatMessage
from scripts.bench_llm_judge import LIKELIHOOD_SYSTEM, Sections, View, key, likelihood_prompt, ranker_views
from scripts.fit_choice import GROUPS, targets
from scripts.lib.report import finish
from scripts.lib.resumable import cached_entries
from scripts.lib.separation import auc

REPO = Path(__file__).resolve().parent.parent
NEUTRAL_USER = "Write one question an operator on shift would ask about the plant's procedures or runbooks."
TRAINING_GROUPS = (*GROUPS, "tune")
MEASURED = ("heldout", "sampled", "demo")
WORDS = 100


def neutral_prompt() -> list[ChatMessage]:
    return [ChatMessage("system", LIKELIHOOD_SYSTEM), ChatMessage("user", NEUTRAL_USER)]


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def features(q: dict[str, Any], pmi: float) -> list[float]:
    return [logit(q["evidence_probability"]), pmi]


def decide(rows: Sequence[tuple[dict[str, Any], float]], weights: np.ndarray, threshold: float) -> dict[str, Any]:
    """Declined and refused, among the questions the evidence decision let through, with the PMI model."""
    answerable = [(q, x) for q, x in rows if q["answerable"]]
    unanswerable = [(q, x) for q, x in rows if not q["answerable"]]

    def refuse(q: dict[str, Any], x: float) -> bool:
        z = weights[0] + float(np.dot(weights[1:], features(q, x)))
        return 1 / (1 + math.exp(-z)) < threshold

    return {
        "answerable_passed": len(answerable),
        "answerable_refused_by_pmi": sum(refuse(q, x) for q, x in answerable),
        "unanswerable_passed": len(unanswerable),
        "unanswerable_declined_by_pmi": sum(refuse(q, x) for q, x in unanswerable),
    }


def fit(rows: Sequence[tuple[dict[str, Any], float]]) -> tuple[np.ndarray, float]:
    """A logistic model (answerable = 1) over the evidence logit and the PMI, and the threshold with the most
    right decisions among the questions let through (an answerable refused and an unanswerable answered cost the
    same); ties to the lowest threshold (refuse less)."""
    x = np.array([features(q, v) for q, v in rows])
    y = np.array([1.0 if q["answerable"] else 0.0 for q, _ in rows])
    # Balanced: about 7 answerable for every unanswerable one let through.
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=4000).fit(x, y)
    weights = np.array([float(model.intercept_[0]), *map(float, model.coef_[0])])
    best, best_t = -1, 0.0
    for t in np.linspace(0.0, 0.95, 96):
        d = decide(rows, weights, float(t))
        right = (d["answerable_passed"] - d["answerable_refused_by_pmi"]) + d["unanswerable_declined_by_pmi"]
        if right > best:
            best, best_t = right, float(t)
    return weights, best_t


def section_name(q: dict[str, Any], views: dict[str, View]) -> list[str]:
    c = q["candidates"][views[key(q)].first]
    return [c["path"], c["heading"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=Path, default=REPO / ".appliance" / "choice_features.pkl")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--model", type=Path, default=REPO / "models/generator/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=REPO / ".appliance" / "llm_judge" / "pmi.jsonl")
    parser.add_argument("--fit-results", type=Path, default=REPO / "scripts" / "results" / "fit_choice.json")
    parser.add_argument("--json", type=Path, default=REPO / "scripts" / "results" / "likelihood_answerability.json")
    args = parser.parse_args()

    questions = pickle.loads(args.features.read_bytes())["questions"]
    for q in questions:
        if q["set"] in ("procedures", "procedures_llm"):
            q["kind"] = "procedure"
        if q["set"] == "tune":
            q["group"] = "tune"
    train = [q for q in questions if q["set"] == "train" or (q["set"] == "procedures" and q["split"] == "tune")]
    passed = [q for q in questions if q["evidence_sufficient"] and q["candidates"]]
    others = [q for q in passed if q["set"] in ("tune", *MEASURED)]
    chosen = json.loads(args.fit_results.read_text())["chosen"]
    l2 = (chosen["ranker_l2"]["base_features"], chosen["ranker_l2"]["heading_words"])
    layer = chosen.get("hidden_layer", {"units": 0, "l2": 0.0})
    views: dict[str, View] = ranker_views(
        train, others, l2, chosen["reading_c"], (layer["units"], layer["l2"]), chosen.get("shown_mass")
    )
    usable = [q for q in train if q["answerable"] and key(q) in views and targets(q) is not None]
    order = sorted(usable, key=key)
    random.Random(40).shuffle(order)  # bench_llm_judge.py's sample
    sampled = {key(q) for q in order[:150]}
    asked = [
        q
        for q in passed
        if key(q) in views
        and (q["set"] in ("tune", *MEASURED) or (q["set"] == "train" and (not q["answerable"] or key(q) in sampled)))
    ]

    done = cached_entries(args.cache)
    sections = Sections(args.home)
    todo = [q for q in asked if key(q) not in done or done[key(q)]["section"] != section_name(q, views)]
    if todo:
        from appliance.models.generation.local import LlamaCppGenerator

        generator = LlamaCppGenerator(args.model, model_id="judge", n_ctx=4096, n_threads=args.threads)
        with args.cache.open("a", encoding="utf-8") as out:
            for number, q in enumerate(todo, start=1):
                section = sections.of(q, [views[key(q)].first])[0]
                started = time.perf_counter()
                given, alone = generator.reply_log_likelihoods(
                    [likelihood_prompt(section, WORDS), neutral_prompt()], q["searched"].strip(), per_token=True
                )
                entry = {
                    "key": key(q),
                    "section": section_name(q, views),
                    "given": given,
                    "alone": alone,
                    "ms": (time.perf_counter() - started) * 1000.0,
                }
                done[key(q)] = entry
                out.write(json.dumps(entry) + "\n")
                out.flush()
                print(f"{number}/{len(todo)} {key(q)}: pmi {given - alone:.2f}", file=sys.stderr)
        generator.close()

    rows = [(q, done[key(q)]["given"] - done[key(q)]["alone"]) for q in asked]
    training = [(q, x) for q, x in rows if q["set"] in ("train", "procedures", "tune")]
    report: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPU cores; llama.cpp CPU build, {args.threads} threads",
        "section_words": WORDS,
        "neutral_prompt": NEUTRAL_USER,
        "auc": {},
    }
    for name, part in (("training", training), *((s, [r for r in rows if r[0]["set"] == s]) for s in MEASURED)):
        pos = [x for q, x in part if q["answerable"]]
        neg = [x for q, x in part if not q["answerable"]]
        given_pos = [done[key(q)]["given"] for q, _ in part if q["answerable"]]
        given_neg = [done[key(q)]["given"] for q, _ in part if not q["answerable"]]
        ev_pos = [q["evidence_probability"] for q, _ in part if q["answerable"]]
        ev_neg = [q["evidence_probability"] for q, _ in part if not q["answerable"]]
        report["auc"][name] = {
            "answerable": len(pos),
            "unanswerable": len(neg),
            "pmi": auc(neg, pos),
            "likelihood_given_section": auc(given_neg, given_pos),
            "evidence_probability": auc(ev_neg, ev_pos),
        }
    folds = {}
    out_of_fold: list[dict[str, Any]] = []
    for group in TRAINING_GROUPS:
        held = [r for r in training if r[0]["group"] == group]
        if not held:
            continue
        weights, threshold = fit([r for r in training if r[0]["group"] != group])
        folds[group] = {"weights": [round(float(w), 3) for w in weights], "threshold": round(threshold, 2)}
        out_of_fold.append(decide(held, weights, threshold))
    report["leave_one_group_out"] = {
        "folds": folds,
        **{k: sum(d[k] for d in out_of_fold) for k in out_of_fold[0]},
    }
    weights, threshold = fit(training)
    report["fitted_on_training"] = {"weights": [round(float(w), 3) for w in weights], "threshold": round(threshold, 2)}
    report["measured"] = {s: decide([r for r in rows if r[0]["set"] == s], weights, threshold) for s in MEASURED}
    report["ms_median"] = round(float(np.median([done[key(q)]["ms"] for q in asked])))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
