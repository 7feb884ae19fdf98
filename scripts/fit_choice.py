"""Fit the section choice: which candidate section answers, and how the question is read (procedure or not,
whole job or one part). Every weight of the quoted answer's choice comes from here.

Input: the features scripts/choice_features.py dumped (default .appliance/choice_features.pkl) for the
training set scripts/qa/choice_train.jsonl and the evaluation sets.

1. The question's reading (answer/question.py): two logistic models over the question's embedding and the
   grammar's reading (text/questions.py: value, procedure or fact form): P(procedure) on every training
   question, P(whole job | procedure) on the procedure questions.
2. The ranker (answer/quoted/ranker.py): a conditional logit over each question's candidates: P(candidate)
   = softmax(w · standardized features). The target of a question is the candidates that show the most of its
   gold phrases and, among those, the shortest (within 25%): the section itself, not the document holding it.
3. Leave-one-corpus-out: for each group (docs_corpus, openshift, gitlab, ir-prometheus) both models are fitted
   on the other three and measured on it; the regularization is chosen by the mean of those folds.
4. The evaluation sets (procedures, the key-phrase sets) are measured with the model fitted on all of the
   training set, side by side with today's rule-based chooser on the same candidates.

Figures per set: mean recall of the chosen section (the share of gold phrases it holds), complete (≥ 90% of
the phrases, in order), right document, gold section exactly; the same for today's chooser and for the best
candidate (the ceiling the candidates allow).

Usage: python scripts/fit_choice.py [--features FILE] [--write] [--results scripts/results/fit_choice.json]
--write stores the fitted models in appliance/answer/fitted/ (the appliance's defaults).
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
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from appliance.answer.quoted.features import BASE_FEATURES, FEATURES, with_question

REPO = Path(__file__).resolve().parent.parent
GROUPS = ("docs_corpus", "openshift", "gitlab", "ir-prometheus")
KINDS = ("value", "procedure", "fact")
EMBEDDER = "all-MiniLM-L6-v2"
FITTED = REPO / "appliance" / "answer" / "fitted"
SHORTEST_WITHIN = 1.25  # targets: the shortest candidates holding the most phrases, up to this many times longer
COMPLETE = 0.9
RANKER_L2 = (0.01, 0.03, 0.1, 0.3, 1.0)
READING_C = (0.1, 0.3, 1.0, 3.0)


# --- the question's reading --------------------------------------------------------------------------------


def reading_inputs(question: dict[str, Any]) -> np.ndarray:
    grammar = [1.0 if question["regex_kind"] == kind else 0.0 for kind in KINDS]
    return np.concatenate([question["vector"], np.asarray(grammar, dtype=np.float32)])


def fit_reading(questions: Sequence[dict[str, Any]], c: float) -> tuple[LogisticRegression, LogisticRegression]:
    answerable = [q for q in questions if q["answerable"] and q["kind"]]
    x = np.stack([reading_inputs(q) for q in answerable])
    procedure = LogisticRegression(C=c, max_iter=2000).fit(x, [q["kind"] == "procedure" for q in answerable])
    procedures = [q for q in answerable if q["kind"] == "procedure" and q["scope"]]
    xw = np.stack([reading_inputs(q) for q in procedures])
    whole = LogisticRegression(C=c, max_iter=2000).fit(xw, [q["scope"] == "whole" for q in procedures])
    return procedure, whole


def read(models: tuple[LogisticRegression, LogisticRegression], question: dict[str, Any]) -> tuple[float, float]:
    x = reading_inputs(question)[None, :]
    return float(models[0].predict_proba(x)[0, 1]), float(models[1].predict_proba(x)[0, 1])


# --- the ranker ----------------------------------------------------------------------------------------------


def targets(question: dict[str, Any]) -> np.ndarray | None:
    candidates = question["candidates"]
    best = max((c["recall"] for c in candidates), default=0.0)
    if best <= 0:
        return None
    holding = [i for i, c in enumerate(candidates) if c["recall"] >= best - 1e-9]
    shortest = min(candidates[i]["words"] for i in holding)
    chosen = [i for i in holding if candidates[i]["words"] <= SHORTEST_WITHIN * max(shortest, 1)]
    target = np.zeros(len(candidates))
    target[chosen] = 1.0 / len(chosen)
    return target


def design(question: dict[str, Any], reading: tuple[float, float]) -> np.ndarray:
    return with_question(question["features"], reading[0], reading[1])


class Ranker:
    def __init__(self, mean: np.ndarray, scale: np.ndarray, weights: np.ndarray) -> None:
        self.mean, self.scale, self.weights = mean, scale, weights

    def scores(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.weights

    def as_json(self) -> dict[str, Any]:
        return {
            "features": list(FEATURES),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [round(float(v), 6) for v in self.weights],
        }


def fit_ranker(examples: Sequence[tuple[np.ndarray, np.ndarray]], l2: float) -> Ranker:
    stacked = np.concatenate([x for x, _ in examples])
    mean = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale < 1e-6] = 1.0
    standardized = [((x - mean) / scale, t) for x, t in examples]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total = 0.5 * l2 * float(w @ w) * len(standardized)
        gradient = l2 * w * len(standardized)
        for x, t in standardized:
            s = x @ w
            s = s - s.max()
            p = np.exp(s)
            p /= p.sum()
            total -= float(t @ np.log(p + 1e-12))
            gradient += x.T @ (p - t)
        return total, gradient

    result = minimize(loss, np.zeros(stacked.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return Ranker(mean, scale, result.x)


# --- measuring -----------------------------------------------------------------------------------------------


def outcome(question: dict[str, Any], index: int | None) -> dict[str, Any]:
    if index is None:
        return {"recall": 0.0, "complete": False, "document": False, "exact": False}
    c = question["candidates"][index]
    return {
        "recall": c["recall"],
        "complete": c["recall"] >= COMPLETE and c["in_order"],
        "document": c["gold_document"],
        "exact": c["gold"],
        "section": f"{c['path']} § {c['heading']}",
    }


def today_index(question: dict[str, Any]) -> int | None:
    if question["today"] is None:
        return None
    path, heading = question["today"]
    return next(
        (i for i, c in enumerate(question["candidates"]) if c["path"] == path and c["heading"] == heading), None
    )


def oracle_index(question: dict[str, Any]) -> int | None:
    target = targets(question)
    return None if target is None else int(np.argmax(target))


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {}
    n = len(rows)
    return {
        "questions": n,
        "recall": round(sum(r["recall"] for r in rows) / n, 3),
        "complete": round(sum(r["complete"] for r in rows) / n, 3),
        "right_document": round(sum(r["document"] for r in rows) / n, 3),
        "exact_section": round(sum(r["exact"] for r in rows) / n, 3),
    }


def measure(
    questions: Sequence[dict[str, Any]],
    reading: tuple[LogisticRegression, LogisticRegression],
    ranker: Ranker,
) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {"fitted": [], "today": [], "ceiling": []}
    for q in questions:
        if not q["answerable"] or not q["candidates"]:
            continue
        scores = ranker.scores(design(q, read(reading, q)))
        rows["fitted"].append({"id": q["id"], **outcome(q, int(np.argmax(scores)))})
        rows["today"].append({"id": q["id"], **outcome(q, today_index(q))})
        rows["ceiling"].append({"id": q["id"], **outcome(q, oracle_index(q))})
    return rows


def reading_accuracy(questions: Sequence[dict[str, Any]], reading: tuple[LogisticRegression, LogisticRegression]):
    answerable = [q for q in questions if q["answerable"] and q["kind"]]
    fitted = [read(reading, q) for q in answerable]
    procedure_right = sum(
        (p >= 0.5) == (q["kind"] == "procedure") for q, (p, _) in zip(answerable, fitted, strict=True)
    )
    grammar_right = sum((q["regex_kind"] == "procedure") == (q["kind"] == "procedure") for q in answerable)
    scoped = [(q, w) for q, (_, w) in zip(answerable, fitted, strict=True) if q["kind"] == "procedure" and q["scope"]]
    whole_right = sum((w >= 0.5) == (q["scope"] == "whole") for q, w in scoped)
    return {
        "procedure_or_not_fitted": round(procedure_right / max(len(answerable), 1), 3),
        "procedure_or_not_grammar": round(grammar_right / max(len(answerable), 1), 3),
        "whole_or_part_fitted": round(whole_right / max(len(scoped), 1), 3),
        "questions": len(answerable),
    }


def examples_of(
    questions: Sequence[dict[str, Any]], reading: tuple[LogisticRegression, LogisticRegression]
) -> list[tuple[np.ndarray, np.ndarray]]:
    found = []
    for q in questions:
        target = targets(q) if q["answerable"] else None
        if target is not None:
            found.append((design(q, read(reading, q)), target))
    return found


def leave_one_corpus_out(train: Sequence[dict[str, Any]], l2: float, c: float) -> dict[str, Any]:
    folds: dict[str, Any] = {}
    pooled: dict[str, list[dict[str, Any]]] = {"fitted": [], "today": [], "ceiling": []}
    for group in GROUPS:
        fit_on = [q for q in train if q["group"] != group]
        held = [q for q in train if q["group"] == group]
        reading = fit_reading(fit_on, c)
        ranker = fit_ranker(examples_of(fit_on, reading), l2)
        rows = measure(held, reading, ranker)
        folds[group] = {name: summary(r) for name, r in rows.items()}
        folds[group]["reading"] = reading_accuracy(held, reading)
        for name, r in rows.items():
            pooled[name].extend(r)
    folds["all (pooled)"] = {name: summary(r) for name, r in pooled.items()}
    return folds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=Path, default=REPO / ".appliance" / "choice_features.pkl")
    parser.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "fit_choice.json")
    parser.add_argument("--write", action="store_true", help="Store the fitted models as the appliance's defaults.")
    args = parser.parse_args()
    dump = pickle.loads(args.features.read_bytes())
    if tuple(dump["features"]) != BASE_FEATURES:
        raise SystemExit("the features file was dumped with other feature names: run scripts/choice_features.py again")
    questions = dump["questions"]
    train = [q for q in questions if q["set"] == "train"]
    report: dict[str, Any] = {"training_questions": len(train)}

    # Regularization: the best mean leave-one-corpus-out recall.
    grid = {}
    for l2 in RANKER_L2:
        for c in READING_C:
            folds = leave_one_corpus_out(train, l2, c)
            grid[(l2, c)] = folds
            pooled = folds["all (pooled)"]["fitted"]
            print(f"l2 {l2} C {c}: LOCO recall {pooled['recall']} complete {pooled['complete']}", file=sys.stderr)
    best = max(grid, key=lambda key: grid[key]["all (pooled)"]["fitted"]["recall"])
    report["chosen"] = {"ranker_l2": best[0], "reading_c": best[1]}
    report["leave_one_corpus_out"] = grid[best]

    reading = fit_reading(train, best[1])
    ranker = fit_ranker(examples_of(train, reading), best[0])
    report["weights"] = dict(zip(FEATURES, [round(float(w), 4) for w in ranker.weights], strict=True))
    evaluation: dict[str, Any] = {}
    for set_name in sorted({q["set"] for q in questions} - {"train"}):
        chosen = [q for q in questions if q["set"] == set_name]
        if set_name == "procedures":
            for split in ("tune", "heldout"):
                part = [q for q in chosen if q["split"] == split]
                evaluation[f"procedures ({split})"] = {n: summary(r) for n, r in measure(part, reading, ranker).items()}
            continue
        evaluation[set_name] = {n: summary(r) for n, r in measure(chosen, reading, ranker).items()}
    report["evaluation_sets"] = evaluation
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "weights"}, indent=1))
    if args.write:
        write_models(reading, ranker, best, len(train))
    return 0


def _logistic_json(model: LogisticRegression) -> dict[str, Any]:
    return {"coef": [round(float(v), 6) for v in model.coef_[0]], "intercept": float(model.intercept_[0])}


def write_models(reading: tuple[LogisticRegression, LogisticRegression], ranker: Ranker, best: Any, n: int) -> None:
    FITTED.mkdir(parents=True, exist_ok=True)
    procedure, whole = reading
    question_model = {
        "embedder": EMBEDDER,
        "inputs": "question embedding, then the grammar's reading one-hot: " + ", ".join(KINDS),
        "procedure": {
            "coef": [round(float(v), 6) for v in procedure.coef_[0]],
            "intercept": float(procedure.intercept_[0]),
        },
        "whole": {"coef": [round(float(v), 6) for v in whole.coef_[0]], "intercept": float(whole.intercept_[0])},
        "fitted_by": "scripts/fit_choice.py",
        "training_set": "scripts/qa/choice_train.jsonl",
        "training_questions": n,
        "regularization_c": best[1],
    }
    (FITTED / "question_reading.json").write_text(json.dumps(question_model) + "\n")
    ranker_model = {
        "embedder": EMBEDDER,
        **ranker.as_json(),
        "fitted_by": "scripts/fit_choice.py",
        "training_set": "scripts/qa/choice_train.jsonl",
        "training_questions": n,
        "l2": best[0],
    }
    (FITTED / "section_ranker.json").write_text(json.dumps(ranker_model, indent=1) + "\n")
    print(f"wrote {FITTED}/question_reading.json and section_ranker.json", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
