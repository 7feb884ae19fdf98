"""Fit the section choice: which candidate section answers, and how the question is read (procedure or not,
whole job or one part). Every weight of the quoted answer's choice comes from here.

Input: the features scripts/choice_features.py dumped (default .appliance/choice_features.pkl) for the
training set scripts/qa/choice_train.jsonl and the evaluation sets.

1. The question's reading (answer/question.py): two logistic models over the question's embedding and the
   grammar's reading (text/questions.py: value, procedure or fact form): P(procedure) on every training
   question, P(whole job | procedure) on the procedure questions.
2. The ranker (answer/quoted/ranker.py): a conditional logit over each question's candidates: P(candidate)
   = softmax(w · standardized features). The target of a question is the candidates that show the most of its
   gold phrases and, among those, the shortest (within 10%): the section itself, not the document holding it.
   Given the penalties, a small hidden layer (tanh units over the base features as crossed with the reading,
   HIDDEN_LAYERS) may be added to the linear scores; it is kept only where it gains more than HIDDEN_MARGIN out of
   fold, each setting's networks fitted from HIDDEN_SEEDS and averaged.
3. What a procedure shows (answer/quoted/choice.py shown_section): the shortest candidate, short enough to be
   shown whole, inside which at least `shown_mass` of the ranker's probability lies (or, with no mass, the single
   likeliest candidate). Only where the question is read as a procedure (its section is shown whole); a value or
   a fact is answered by lines and keeps the likeliest section.
4. Leave-one-corpus-out: for each group (docs_corpus, openshift, gitlab, ir-prometheus) both models are fitted
   on the other three and measured on it; the regularization is the one whose pooled out-of-fold answers, the
   likeliest section shown, are most often complete plus most often right (all the gold phrases in order; in a
   section at most 1.5 times the length of the shortest that holds them); then, given it, the shown mass by the
   same measure; ties go to the more complete. The settings the shipped models were fitted with are kept unless
   the settings so chosen beat them out of fold by more than one paired standard error of the difference (about
   0.02 of complete + right over the 544 answerable training questions): settings closer than that trade places
   from one refit to the next. `--fresh` chooses without them.
5. The evaluation sets (procedures, the key-phrase sets) are measured with the model fitted on all of the
   training set, side by side with the likeliest section alone and with the rule-based chooser it replaced, on
   the same candidates.

Figures per set: mean recall of the chosen section (the share of gold phrases it holds), complete (≥ 90% of
the phrases, in order), right document, gold section exactly; the same for today's chooser and for the best
candidate (the ceiling the candidates allow).

Usage: python scripts/fit_choice.py [--features FILE] [--write] [--fresh | --keep-settings]
           [--reading-variants] [--results scripts/results/fit_choice.json]
--write stores the fitted models in appliance/answer/fitted/ (the appliance's defaults). --keep-settings refits the
weights at the shipped settings without searching the grid (a change of features or vectors measured alone).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import pickle
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from appliance.answer.question import GRAMMAR_KINDS, answer_kind, ngrams, reading_inputs
from appliance.answer.quoted.choice import mass_inside, shown_section
from appliance.answer.quoted.features import (
    BASE_FEATURES,
    FEATURES,
    FRAGMENT_WORDS,
    heading_words,
    model_features,
    with_question,
)
from appliance.answer.quoted.ranker import HiddenLayer, hidden_scores
from appliance.answer.quoted.sections import is_within
from appliance.config import AnswerSettings
from appliance.text.questions import question_kind
from scripts.bench_sop import PROCEDURE_SETS
from scripts.lib.perturb import perturb

REPO = Path(__file__).resolve().parent.parent
GROUPS = ("docs_corpus", "openshift", "gitlab", "ir-prometheus")
EMBEDDER = "all-MiniLM-L6-v2"
FITTED = REPO / "appliance" / "answer" / "fitted"
SHORTEST_WITHIN = 1.1  # targets: the shortest candidates holding the most phrases, up to this many times longer
COMPLETE = 0.9
# L2 penalties (per training question) on the base features and, apart, on the heading-word indicators: the
# words are many and corpus-bound (a strong penalty on them was better out of fold on every grid tried).
RANKER_L2 = tuple((base, words) for base in (0.1, 1.0, 10.0) for words in (1.0, 100.0))
READING_C = (0.3,)
# A small hidden layer added to the linear scores (units, L2 per training question): (0, 0) is the linear model
# alone. Chosen out of fold after the penalties and before the shown mass; each setting's networks are fitted
# from these seeds and averaged (one seed's pick of folds moved complete + right by up to 0.05).
HIDDEN_LAYERS: tuple[tuple[int, float], ...] = ((0, 0.0), (4, 0.05), (4, 0.1), (4, 0.2), (8, 0.1), (8, 0.2))
HIDDEN_SEEDS = (0, 1, 2)
HIDDEN_MARGIN = 0.005  # complete + right out of fold: half a point, as fit_lines.py keeps the simpler design
# The probability a procedure's shown section must hold (None: the likeliest section alone), chosen out of fold.
SHOWN_MASSES: tuple[float | None, ...] = (None, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)


# --- the question's reading --------------------------------------------------------------------------------


MIN_QUESTIONS = 3  # an n-gram enters the reading's vocabulary when this many training questions hold it
# With --reading-variants the reading is also fitted on every operator-style variant of its training questions
# (scripts/lib/perturb.py: a lead-in, a pasted pager line, a typo, a synonym, one case…), each with its question's
# labels, drawn under their own keys so that their picks differ from the perturbation suite's. Measured in stop 62,
# not adopted (docs/measurements/section-choice.md, "The reading fitted on typed variants"): out of fold the
# variants' readings disagree with their question's 261 → 89 times, but the sections chosen on the sets written by
# other methods got no better and on three of seven worse.
READING_VARIANTS = False


def reading_variants(question: dict[str, Any]) -> list[dict[str, Any]]:
    """The question's operator-style variants, with its labels, read as the appliance reads a question."""
    return [
        {**question, "searched": variant.text, "regex_kind": question_kind(variant.text)}
        for variant in perturb(question["question"], f"reading/{question['set']}/{question['id']}")
    ]


class Reading:
    """P(procedure) and P(whole | procedure): logistic models over the grammar's kind and the question's
    n-grams (answer/question.py reading_inputs), the vocabulary taken from the questions it is fitted on: the
    training questions and, with READING_VARIANTS, their variants."""

    def __init__(self, questions: Sequence[dict[str, Any]], c: float) -> None:
        written = [q for q in questions if q["answerable"] and q["kind"]]
        # READING_VARIANTS is the module's, set by main before the fold processes fork.
        answerable = [*written, *(v for q in written for v in reading_variants(q))] if READING_VARIANTS else written
        counts: dict[str, int] = {}
        for q in answerable:
            for gram in ngrams(q["searched"]):
                counts[gram] = counts.get(gram, 0) + 1
        self.vocabulary = tuple(sorted(g for g, n in counts.items() if n >= MIN_QUESTIONS))
        x = np.stack([self.inputs(q) for q in answerable])
        self.procedure = LogisticRegression(C=c, max_iter=4000).fit(x, [q["kind"] == "procedure" for q in answerable])
        scoped = [i for i, q in enumerate(answerable) if q["kind"] == "procedure" and q["scope"]]
        self.whole = LogisticRegression(C=c, max_iter=4000).fit(
            x[scoped], [answerable[i]["scope"] == "whole" for i in scoped]
        )

    def inputs(self, question: dict[str, Any]) -> np.ndarray:
        return reading_inputs(question["searched"], question["regex_kind"], self.vocabulary)

    def __call__(self, question: dict[str, Any]) -> tuple[float, float]:
        x = self.inputs(question)[None, :]
        return float(self.procedure.predict_proba(x)[0, 1]), float(self.whole.predict_proba(x)[0, 1])

    @staticmethod
    def model_json(model: LogisticRegression) -> dict[str, Any]:
        return {"coef": [round(float(v), 6) for v in model.coef_[0]], "intercept": round(float(model.intercept_[0]), 6)}


def fit_reading(questions: Sequence[dict[str, Any]], c: float) -> Reading:
    return Reading(questions, c)


def read(reading: Reading, question: dict[str, Any]) -> tuple[float, float]:
    return reading(question)


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


MIN_HEADING_SECTIONS = 10  # a heading word enters the ranker's vocabulary when this many training sections hold it


def heading_name(candidate: dict[str, Any]) -> str:
    return candidate["heading"].split(" › ")[-1] if candidate["heading"] else ""


def heading_vocabulary(questions: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    sections: dict[str, set[tuple[str, str]]] = {}
    for q in questions:
        for c in q["candidates"]:
            for word in heading_words(heading_name(c)):
                sections.setdefault(word, set()).add((c["path"], c["heading"]))
    return tuple(sorted(w for w in sections if len(sections[w]) >= MIN_HEADING_SECTIONS))


class Ranker:
    def __init__(
        self,
        mean: np.ndarray,
        scale: np.ndarray,
        weights: np.ndarray,
        vocabulary: tuple[str, ...],
        hidden: HiddenLayer | None = None,
    ) -> None:
        self.mean, self.scale, self.weights, self.vocabulary = mean, scale, weights, vocabulary
        self.hidden = hidden

    def design(self, question: dict[str, Any], reading: tuple[float, float]) -> np.ndarray:
        return design(question, reading, self.vocabulary)

    def scores(self, x: np.ndarray) -> np.ndarray:
        standardized = (x - self.mean) / self.scale
        return np.asarray(standardized @ self.weights + hidden_scores(standardized, self.hidden))

    def as_json(self) -> dict[str, Any]:
        model: dict[str, Any] = {
            "features": list(model_features(self.vocabulary)),
            "vocabulary": list(self.vocabulary),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [round(float(v), 6) for v in self.weights],
        }
        if self.hidden is not None:
            inputs, bias, output = self.hidden
            model["hidden"] = {
                "inputs": "the first len(FEATURES) standardized columns (features.FEATURES)",
                "weights": [[round(float(v), 6) for v in row] for row in inputs],
                "bias": [round(float(v), 6) for v in bias],
                "output": [round(float(v), 6) for v in output],
            }
        return model


def design(question: dict[str, Any], reading: tuple[float, float], vocabulary: tuple[str, ...]) -> np.ndarray:
    names = [heading_name(c) for c in question["candidates"]]
    return with_question(question["features"], reading[0], reading[1], names, vocabulary)


def fit_ranker(
    questions: Sequence[dict[str, Any]],
    reading: Reading,
    l2: tuple[float, float],
    hidden: tuple[int, float] = (0, 0.0),
) -> Ranker:
    linear, problem = fit_linear(questions, reading, l2)
    if hidden[0] == 0:
        return linear
    return with_hidden(linear, [fit_hidden(*problem, linear.weights, hidden, seed) for seed in HIDDEN_SEEDS])


# The standardized training examples and the linear penalty: what the hidden layer is fitted on.
Problem = tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]


def fit_linear(
    questions: Sequence[dict[str, Any]], reading: Reading, l2: tuple[float, float]
) -> tuple[Ranker, Problem]:
    """The linear ranker, and the problem it was fitted on (for the hidden layer's fits)."""
    vocabulary = heading_vocabulary(questions)
    examples = []
    for q in questions:
        target = targets(q) if q["answerable"] else None
        if target is not None:
            examples.append((design(q, read(reading, q), vocabulary), target))
    stacked = np.concatenate([x for x, _ in examples])
    mean = stacked.mean(axis=0)
    scale = stacked.std(axis=0)
    scale[scale < 1e-6] = 1.0
    standardized = [((x - mean) / scale, t) for x, t in examples]
    penalty = np.full(stacked.shape[1], l2[1]) * len(standardized)
    penalty[: len(FEATURES)] = l2[0] * len(standardized)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total = 0.5 * float(w @ (penalty * w))
        gradient = penalty * w
        for x, t in standardized:
            s = x @ w
            s = s - s.max()
            p = np.exp(s)
            p /= p.sum()
            total -= float(t @ np.log(p + 1e-12))
            gradient += x.T @ (p - t)
        return total, gradient

    result = minimize(loss, np.zeros(stacked.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return Ranker(mean, scale, result.x, vocabulary), (standardized, penalty)


def with_hidden(linear: Ranker, fits: Sequence[tuple[np.ndarray, HiddenLayer]]) -> Ranker:
    """The networks fitted from several seeds, each started from the linear fit, averaged: one network with all
    their units (output weights divided by the number of seeds) and the mean of their linear weights."""
    k = len(fits)
    weights = sum(w for w, _ in fits) / k
    inputs = np.concatenate([h[0] for _, h in fits], axis=1)
    bias = np.concatenate([h[1] for _, h in fits])
    output = np.concatenate([h[2] for _, h in fits]) / k
    return Ranker(linear.mean, linear.scale, np.asarray(weights), linear.vocabulary, (inputs, bias, output))


def settings_json(key: tuple[Any, ...]) -> dict[str, Any]:
    return {
        "ranker_l2": {"base_features": key[0][0], "heading_words": key[0][1]},
        "reading_c": key[1],
        "hidden_layer": hidden_layer_json(key[2]),
        "shown_mass": key[3],
    }


def hidden_layer_json(hidden: tuple[int, float]) -> dict[str, Any]:
    return {"units": hidden[0], "l2": hidden[1], "seeds": len(HIDDEN_SEEDS) if hidden[0] else 0}


def fit_hidden(
    standardized: Sequence[tuple[np.ndarray, np.ndarray]],
    linear_penalty: np.ndarray,
    linear_weights: np.ndarray,
    hidden: tuple[int, float],
    seed: int,
) -> tuple[np.ndarray, HiddenLayer]:
    """The linear weights and one hidden layer fitted together by the same listwise loss; the hidden weights
    under their own L2 penalty (per training question; a strong one gives back the linear model)."""
    units, l2 = hidden
    d, k, n = len(linear_weights), len(FEATURES), len(standardized)
    sizes = (d, k * units, units, units)
    penalty = np.concatenate([linear_penalty, np.full(k * units, l2 * n), np.zeros(units), np.full(units, l2 * n)])
    rng = np.random.default_rng(seed)
    start = np.concatenate([linear_weights, rng.normal(0, 0.3, k * units), np.zeros(units), rng.normal(0, 0.1, units)])

    def unpack(params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        w, inputs, bias, output = np.split(params, np.cumsum(sizes)[:-1])
        return w, inputs.reshape(k, units), bias, output

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        w, inputs, bias, output = unpack(params)
        total = 0.5 * float(params @ (penalty * params))
        g_w, g_in, g_b, g_out = np.zeros_like(w), np.zeros_like(inputs), np.zeros_like(bias), np.zeros_like(output)
        for x, t in standardized:
            z = x[:, :k]
            h = np.tanh(z @ inputs + bias)
            s = x @ w + h @ output
            p = np.exp(s - s.max())
            p /= p.sum()
            total -= float(t @ np.log(p + 1e-12))
            g = p - t
            g_w += x.T @ g
            g_out += h.T @ g
            pre = np.outer(g, output) * (1 - h * h)
            g_in += z.T @ pre
            g_b += pre.sum(axis=0)
        return total, np.concatenate([g_w, g_in.ravel(), g_b, g_out]) + penalty * params

    result = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 400})
    w, inputs, bias, output = unpack(result.x)
    return w, (inputs, bias, output)


# --- measuring -----------------------------------------------------------------------------------------------


RIGHT_WITHIN = 1.5  # a choice is right when it holds what the best does and is at most this much longer
# A procedure longer than this is shown trimmed (config answer.max_procedure_words, its default): whether the
# parts shown hold every step is not known here, so such a choice never counts as complete.
SHOWN_WHOLE_WORDS = AnswerSettings().max_procedure_words


def outcome(question: dict[str, Any], index: int | None) -> dict[str, Any]:
    """What showing candidate `index` gives: its recall of the gold phrases, complete, the right document, the
    gold section itself, and `right`: as complete as the best candidate without being much longer (a whole
    document holding the asked part has the part's recall, but it is not the answer: the words ratio says so)."""
    if index is None:
        return {
            "recall": 0.0,
            "complete": False,
            "document": False,
            "exact": False,
            "right": False,
            "words_ratio": None,
        }
    c = question["candidates"][index]
    best = max(x["recall"] for x in question["candidates"])
    shortest = min((x["words"] for x in question["candidates"] if x["recall"] >= best - 1e-9), default=c["words"])
    return {
        "recall": c["recall"],
        "complete": c["recall"] >= COMPLETE and c["in_order"] and c["words"] <= SHOWN_WHOLE_WORDS,
        "document": c["gold_document"],
        "exact": c["gold"],
        "right": best > 0 and c["recall"] >= best - 1e-9 and c["words"] <= RIGHT_WITHIN * max(shortest, 1),
        "words_ratio": c["words"] / max(shortest, 1),
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
        "right": round(sum(r["right"] for r in rows) / n, 3),
        "complete_and_right": round(sum(r["complete"] and r["right"] for r in rows) / n, 3),
        "words_ratio_median": round(float(np.median([r["words_ratio"] for r in rows if r["words_ratio"]] or [0])), 2),
    }


def probabilities(question: dict[str, Any], reading: Reading, ranker: Ranker) -> np.ndarray:
    scores = ranker.scores(ranker.design(question, read(reading, question)))
    p = np.exp(scores - scores.max())
    return np.asarray(p / p.sum())


def regions(question: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["path"], c["heading"]) for c in question["candidates"]]


def shown(question: dict[str, Any], p: np.ndarray, reading: Reading, mass: float | None) -> tuple[int, float]:
    """The candidate shown and its probability, as answer/quoted/choice.py gives them: for a question read as a
    procedure (answer/question.py answer_kind) the shortest candidate holding `mass`, with the mass inside it; else
    the likeliest, with its own probability."""
    top = int(np.argmax(p))
    if mass is None or answer_kind(question["regex_kind"], read(reading, question)[0]) != "procedure":
        return top, float(p[top])
    words = [c["words"] for c in question["candidates"]]
    index = shown_section(regions(question), words, list(p), mass, SHOWN_WHOLE_WORDS)
    if index is None:
        return top, float(p[top])
    return index, mass_inside(regions(question), list(p), index)


def measure(
    questions: Sequence[dict[str, Any]],
    reading: Reading,
    ranker: Ranker,
    mass: float | None,
) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {"fitted": [], "fitted_likeliest": [], "today": [], "ceiling": []}
    for q in questions:
        if not q["answerable"] or not q["candidates"]:
            continue
        p = probabilities(q, reading, ranker)
        rows["fitted"].append({"id": q["id"], **outcome(q, shown(q, p, reading, mass)[0])})
        rows["fitted_likeliest"].append({"id": q["id"], **outcome(q, int(np.argmax(p)))})
        rows["today"].append({"id": q["id"], **outcome(q, today_index(q))})
        rows["ceiling"].append({"id": q["id"], **outcome(q, oracle_index(q))})
    return rows


def overlapping(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["path"] == b["path"] and (is_within(a["heading"], b["heading"]) or is_within(b["heading"], a["heading"]))


def prediction(question: dict[str, Any], reading: Reading, ranker: Ranker, mass: float | None) -> dict[str, Any]:
    """What the fitted choice says of one question: every candidate's probability, the likeliest and its
    probability (the inputs of the answerability model); the candidate shown, its probability as choice.py gives
    it (the mass inside it where a procedure's shown section holds more than the likeliest), its region's
    probability and the best rival's."""
    candidates = question["candidates"]
    if not candidates:
        return {"index": None, "p_top": 0.0, "region": 0.0, "alt": 0.0, "raw_cos": 0.0, "lex_body": 0.0}
    p = probabilities(question, reading, ranker)
    top = int(np.argmax(p))
    index, p_shown = shown(question, p, reading, mass)
    region = float(sum(p[i] for i, c in enumerate(candidates) if overlapping(c, candidates[index])))
    alt = float(max((p[i] for i, c in enumerate(candidates) if not overlapping(c, candidates[index])), default=0.0))
    return {
        "p": p,
        "index": top,
        "p_top": float(p[top]),
        "shown": index,
        "p_shown": p_shown,
        "region": region,
        "alt": alt,
        "raw_cos": candidates[top]["raw_cos"],
        "lex_body": candidates[top]["lex_body"],
        "max_raw_cos": max(c["raw_cos"] for c in candidates),
    }


def reading_accuracy(questions: Sequence[dict[str, Any]], reading: Reading) -> dict[str, float]:
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


def leave_one_corpus_out(
    train: Sequence[dict[str, Any]], l2: tuple[float, float], c: float, hidden: tuple[int, float] = (0, 0.0)
) -> tuple[dict[float | None, dict[str, Any]], dict[float | None, np.ndarray], list[str]]:
    """For each shown mass: the figures per group left out and pooled, and each question's merit (complete +
    right, the groups in order) for the paired comparison of settings; and the questions' ids in that order. One
    fit per group serves every mass; the groups are fitted side by side, one process each, up to the machine's
    cores."""
    by_mass: dict[float | None, dict[str, Any]] = {mass: {} for mass in SHOWN_MASSES}
    pooled: dict[float | None, dict[str, list[dict[str, Any]]]] = {
        mass: {"fitted": [], "fitted_likeliest": [], "today": [], "ceiling": []} for mass in SHOWN_MASSES
    }
    folds = by_fold(_fold, train, l2, c, hidden)
    for group, (rows_by_mass, accuracy) in zip(GROUPS, folds, strict=True):
        for mass in SHOWN_MASSES:
            rows = rows_by_mass[mass]
            by_mass[mass][group] = {name: summary(r) for name, r in rows.items()}
            by_mass[mass][group]["reading"] = accuracy
            for name, r in rows.items():
                pooled[mass][name].extend(r)
    for mass in SHOWN_MASSES:
        by_mass[mass]["all (pooled)"] = {name: summary(r) for name, r in pooled[mass].items()}
    merits = {mass: question_merits(pooled[mass]["fitted"]) for mass in SHOWN_MASSES}
    return by_mass, merits, [str(r["id"]) for r in pooled[SHOWN_MASSES[0]]["fitted"]]


def question_merits(rows: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([float(r["complete"]) + float(r["right"]) for r in rows])


def clearly_better(challenger: np.ndarray, holder: np.ndarray) -> tuple[bool, float, float]:
    """Whether the challenger's mean merit over the same questions beats the holder's by more than one paired
    standard error of the difference; (that, the difference, the standard error)."""
    difference = challenger - holder
    error = float(np.std(difference, ddof=1) / np.sqrt(len(difference)))
    return float(difference.mean()) > error, round(float(difference.mean()), 4), round(error, 4)


def incumbent_settings() -> tuple[tuple[float, float], float, tuple[int, float], float | None] | None:
    """The settings the shipped models were fitted with (appliance/answer/fitted/), or None without them."""
    try:
        ranker = json.loads((FITTED / "section_ranker.json").read_text())
        reading = json.loads((FITTED / "question_reading.json").read_text())
    except (OSError, ValueError):
        return None
    hidden = ranker.get("hidden_layer") or {"units": 0, "l2": 0.0}
    return (
        (float(ranker["l2"]["base_features"]), float(ranker["l2"]["heading_words"])),
        float(reading["regularization_c"]),
        (int(hidden["units"]), float(hidden["l2"])),
        ranker.get("shown_mass"),
    )


# (ranker penalties (base, heading words), reading C, hidden layer (units, l2), shown mass)
ChoiceSettings = tuple[tuple[float, float], float, tuple[int, float], float | None]


def settings_kept(held: ChoiceSettings | None) -> ChoiceSettings:
    """The shipped settings, for --keep-settings: refused, naming what is missing, where there are none to keep or
    their shown mass is not one the out-of-fold figures are computed for."""
    if held is None:
        raise SystemExit("--keep-settings: no shipped models to take the settings from (appliance/answer/fitted/)")
    if held[3] not in SHOWN_MASSES:
        raise SystemExit(f"--keep-settings: the shipped shown_mass {held[3]} is not among SHOWN_MASSES {SHOWN_MASSES}")
    return held


_FOLD_TRAIN: Sequence[dict[str, Any]] = ()  # the training set, inherited by the fold processes (fork)


def by_fold(work: Any, train: Sequence[dict[str, Any]], *settings: Any) -> list[Any]:
    """`work(group, *settings)` for every group left out, side by side, one process each up to the machine's cores;
    the processes read `train` as the module's _FOLD_TRAIN (fork: nothing is pickled but the settings)."""
    global _FOLD_TRAIN
    _FOLD_TRAIN = train
    columns = [[value] * len(GROUPS) for value in settings]
    workers = min(len(GROUPS), os.cpu_count() or 1)
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return list(pool.map(work, GROUPS, *columns))


def fold_models(group: str, l2: tuple[float, float], c: float, hidden: tuple[int, float]) -> tuple[Reading, Ranker]:
    """The reading and the ranker fitted without `group` (run by by_fold; bench_llm_judge.py uses them too)."""
    fit_on = [q for q in _FOLD_TRAIN if q["group"] != group]
    reading = fit_reading(fit_on, c)
    return reading, fit_ranker(fit_on, reading, l2, hidden)


def _fold(group: str, l2: tuple[float, float], c: float, hidden: tuple[int, float]) -> tuple[dict[Any, Any], Any]:
    fit_on = [q for q in _FOLD_TRAIN if q["group"] != group]
    held = [q for q in _FOLD_TRAIN if q["group"] == group]
    reading = fit_reading(fit_on, c)
    ranker = fit_ranker(fit_on, reading, l2, hidden)
    return {mass: measure(held, reading, ranker, mass) for mass in SHOWN_MASSES}, reading_accuracy(held, reading)


def load_questions(path: Path) -> list[dict[str, Any]]:
    """The questions scripts/choice_features.py dumped, each of a procedure set marked as asking for one."""
    dump = pickle.loads(path.read_bytes())
    if tuple(dump["features"]) != BASE_FEATURES:
        raise SystemExit("the features file was dumped with other feature names: run scripts/choice_features.py again")
    questions: list[dict[str, Any]] = dump["questions"]
    for q in questions:
        if q["set"] in PROCEDURE_SETS:
            q["kind"] = "procedure"  # every question of procedures.jsonl and procedures_llm.jsonl asks for one
    return questions


def refragment(questions: Sequence[dict[str, Any]], words: int) -> None:
    """Recompute each candidate's `fragment` signal as if features.FRAGMENT_WORDS were `words` (0: no section is a
    fragment), from its length as dumped: a measurement of that length without dumping again."""
    fragment = BASE_FEATURES.index("fragment")
    for q in questions:
        lengths = np.array([c["words"] for c in q["candidates"]])
        if len(lengths):
            q["features"][:, fragment] = (lengths < words).astype(q["features"].dtype)


def is_training(question: dict[str, Any]) -> bool:
    """The training set, and the procedure set's tune split (procedures.jsonl: chosen on, never reported)."""
    return bool(question["set"] == "train" or (question["set"] == "procedures" and question["split"] == "tune"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=Path, default=REPO / ".appliance" / "choice_features.pkl")
    parser.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "fit_choice.json")
    parser.add_argument("--write", action="store_true", help="Store the fitted models as the appliance's defaults.")
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--fresh",
        action="store_true",
        help="Choose the settings afresh, not keeping the shipped ones when no other is clearly better out of fold.",
    )
    how.add_argument(
        "--keep-settings",
        action="store_true",
        help="Refit the weights at the shipped settings (penalties, reading, hidden layer, shown mass) without "
        "searching the grid: for new features or vectors, whose effect is then not mixed with a reselection.",
    )
    parser.add_argument(
        "--reading-variants",
        action="store_true",
        help="Fit the question's reading on the training questions and their operator-style variants "
        "(READING_VARIANTS; measured in stop 62, not adopted): for comparison, never with --write.",
    )
    parser.add_argument(
        "--fragment-words",
        type=int,
        help="Read a section shorter than this many words as a fragment (features.FRAGMENT_WORDS; 0: none is), "
        "recomputed from the dump: a measurement, compared with scripts/compare_choice_fits.py; never with --write.",
    )
    args = parser.parse_args()
    if args.fragment_words is not None and args.write:
        raise SystemExit("--fragment-words is a measurement: the appliance computes features.FRAGMENT_WORDS")
    if args.reading_variants and args.write:
        raise SystemExit("--reading-variants is a measurement: the shipped reading is fitted on the questions as typed")
    global READING_VARIANTS
    READING_VARIANTS = args.reading_variants
    questions = load_questions(args.features)
    if args.fragment_words is not None:
        refragment(questions, args.fragment_words)
    train = [q for q in questions if is_training(q)]
    report: dict[str, Any] = {
        "training_questions": len(train),
        "reading_variants": READING_VARIANTS,
        "fragment_words": FRAGMENT_WORDS if args.fragment_words is None else args.fragment_words,
    }

    # Regularization: chosen out of fold (leave one corpus out), below.
    linear = HIDDEN_LAYERS[0]
    grid = {}
    merits: dict[tuple[Any, ...], np.ndarray] = {}
    merit_ids: list[str] = []  # the training questions in the order of each merits array

    def search(l2: tuple[float, float], c: float, hidden: tuple[int, float]) -> None:
        by_mass, question_merit, ids = leave_one_corpus_out(train, l2, c, hidden)
        merit_ids[:] = ids
        for mass, folds in by_mass.items():
            grid[(l2, c, hidden, mass)] = folds
            merits[(l2, c, hidden, mass)] = question_merit[mass]
            pooled = folds["all (pooled)"]["fitted"]
            print(
                f"l2 {l2} C {c} hidden {hidden} shown mass {mass}: LOCO right {pooled['right']} recall "
                f"{pooled['recall']} complete {pooled['complete']} both {pooled['complete_and_right']}",
                file=sys.stderr,
                flush=True,
            )

    held = None if args.fresh else incumbent_settings()
    kept = settings_kept(held) if args.keep_settings else None
    if kept is not None:
        search(*kept[:3])
        report["kept_settings"] = True
    else:
        for l2 in RANKER_L2:
            for c in READING_C:
                search(l2, c, linear)

    # Out of fold, the most complete answers plus the most right ones, weighed alike: complete alone rewards a
    # whole document that holds the part asked (more words, other procedures), right alone a part too small to
    # hold the job. Ties (to the third decimal) go to the more complete: a missing step is the dangerous miss,
    # a section longer than needed still holds every step.
    def merit(key: tuple[Any, ...]) -> tuple[float, float]:
        pooled = grid[key]["all (pooled)"]["fitted"]
        return round(pooled["complete"] + pooled["right"], 3), pooled["complete"]

    # First the penalties, on the ranker's own pick (the likeliest section); then the hidden layer given them, the
    # same way; then the mass, given both. Chosen together, a weak penalty spread the probability over small parts
    # and leaned on the mass to climb back (the demo's "How do I change a chlorine ton container?": a 33-word
    # Records section likeliest, at 0.14).
    if kept is not None:
        l2, c, hidden, best = kept[0], kept[1], kept[2], kept
    else:
        l2, c, _, _ = max((key for key in grid if key[3] is None), key=merit)
        for hidden in HIDDEN_LAYERS[1:]:
            search(l2, c, hidden)
        _, _, hidden, _ = max((key for key in grid if key[:2] == (l2, c) and key[3] is None), key=merit)
        if merit((l2, c, hidden, None))[0] - merit((l2, c, linear, None))[0] <= HIDDEN_MARGIN:
            hidden = linear  # the simpler model unless the hidden layer gains more than the margin out of fold
        best = max((key for key in grid if key[:3] == (l2, c, hidden)), key=merit)
    # The shipped settings stay unless the settings chosen above beat them out of fold by more than the noise:
    # settings a hundredth apart trade places from one refit to the next (today's features on near-identical
    # vectors chose 4 units and mass 0.35 against the shipped 8 and 0.55), and the model must not move with them.
    if held is not None and held[3] in SHOWN_MASSES and held != best:
        if held not in grid:
            search(*held[:3])
        better, difference, error = clearly_better(merits[best], merits[held])
        report["incumbent"] = {
            "settings": settings_json(held),
            "challenger": settings_json(best),
            "merit_difference": difference,
            "paired_standard_error": error,
            "kept": not better,
        }
        if not better:
            best = held
            l2, c, hidden = held[0], held[1], held[2]
    report["chosen"] = settings_json(best)
    report["leave_one_corpus_out"] = grid[best]
    # Each training question's out-of-fold merit (complete + right) at the chosen settings, in the training
    # order: two fits on the same dump are compared question by question (scripts/compare_choice_fits.py).
    report["question_merits"] = dict(zip(merit_ids, (float(m) for m in merits[best]), strict=True))
    report["hidden_layer_out_of_fold"] = {
        f"{units} units, l2 {penalty}": {
            "likeliest": grid[(l2, c, (units, penalty), None)]["all (pooled)"]["fitted"],
            f"shown mass {best[3]}": grid[(l2, c, (units, penalty), best[3])]["all (pooled)"]["fitted"],
        }
        for units, penalty in HIDDEN_LAYERS
        if (l2, c, (units, penalty), best[3]) in grid
    }
    report["shown_mass_out_of_fold"] = {
        str(mass): grid[(l2, c, hidden, mass)]["all (pooled)"]["fitted"] for mass in SHOWN_MASSES
    }
    mass = best[3]

    reading = fit_reading(train, c)
    ranker = fit_ranker(train, reading, l2, hidden)
    linear_ranker = ranker if hidden == linear else fit_ranker(train, reading, l2)
    report["weights"] = dict(
        zip(model_features(ranker.vocabulary), [round(float(w), 4) for w in ranker.weights], strict=True)
    )
    # Every other set, measured with the model fitted on the whole training set; "linear" beside it is the
    # ranker without the hidden layer (the same penalties and mass).
    evaluation: dict[str, Any] = {}
    for set_name in sorted({q["set"] for q in questions} - {"train"}):
        chosen = [q for q in questions if q["set"] == set_name]
        if set_name == "procedures":
            set_name, chosen = "procedures (heldout)", [q for q in chosen if q["split"] == "heldout"]
        evaluation[set_name] = {n: summary(r) for n, r in measure(chosen, reading, ranker, mass).items()}
        evaluation[set_name]["linear"] = summary(measure(chosen, reading, linear_ranker, mass)["fitted"])
    report["evaluation_sets"] = evaluation

    # Out-of-fold predictions of every training question (its group left out of the fit), then the
    # calibration of the choice's confidence and the "none answers" model on them.
    held_out: dict[str, dict[str, Any]] = {}
    for group, (fold_reading, fold_ranker) in zip(GROUPS, by_fold(fold_models, train, l2, c, hidden), strict=True):
        for q in train:
            if q["group"] == group:
                held_out[key(q)] = prediction(q, fold_reading, fold_ranker, mass)
    calibration = calibrate_confidence(train, held_out)
    report["confidence"] = calibration
    others = [q for q in questions if q not in train]
    predicted = {**held_out, **{key(q): prediction(q, reading, ranker, mass) for q in others}}
    answerability = fit_answerability(train, others, predicted)
    # Measured, not used by the appliance (it refused more answerable questions than the evidence decision
    # alone): its figures and coefficients stay in the results, not among the fitted models.
    report["answerability"] = answerability["report"]
    report["answerability_models"] = answerability["models"]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "weights"}, indent=1))
    if args.write:
        write_models(reading, ranker, best, len(train), calibration)
    return 0


def key(question: dict[str, Any]) -> str:
    return question["set"] + ":" + question["id"]


CERTAIN_PRECISION = 0.9  # "certain" is badged only where the choice was right this often, out of fold
CLOSE_RATIOS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


def calibrate_confidence(train: Sequence[dict[str, Any]], held_out: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """CLOSE_RATIO: the rival/choice probability ratio from which the choice is right least often compared with
    below it; CERTAIN_PROBABILITY: the lowest region probability above which, with no close rival, the choice
    was right at least CERTAIN_PRECISION of the time (out of fold)."""
    rows = []
    for q in train:
        pred = held_out.get(key(q))
        if not q["answerable"] or pred is None or pred["index"] is None:
            continue
        c = q["candidates"][pred["shown"]]  # what is shown, with its probability as choice.py gives it
        rows.append((pred["alt"] / max(pred["p_shown"], 1e-9), pred["region"], c["recall"] >= COMPLETE))
    table = []
    for ratio in CLOSE_RATIOS:
        close = [right for r, _, right in rows if r >= ratio]
        clear = [right for r, _, right in rows if r < ratio]
        if close and clear:
            table.append(
                {
                    "ratio": ratio,
                    "close": len(close),
                    "right_when_close": round(sum(close) / len(close), 3),
                    "right_when_clear": round(sum(clear) / len(clear), 3),
                }
            )
    best = max(table, key=lambda t: t["right_when_clear"] - t["right_when_close"])
    ratio = best["ratio"]
    certain = 1.0
    thresholds = []
    for threshold in np.arange(0.2, 1.0, 0.05):
        chosen = [right for r, region, right in rows if r < ratio and region >= threshold]
        if chosen:
            precision = sum(chosen) / len(chosen)
            thresholds.append(
                {"region_at_least": round(float(threshold), 2), "answers": len(chosen), "right": round(precision, 3)}
            )
            if precision >= CERTAIN_PRECISION and certain == 1.0:
                certain = round(float(threshold), 2)
    return {
        "close_ratio": ratio,
        "certain_probability": certain,
        "close_table": table,
        "certain_table": thresholds,
        "questions": len(rows),
    }


ANSWERABILITY_FEATURES = ("evidence_logit", "log_region", "log_p_top", "raw_cos", "max_raw_cos", "lex_body")
SCALE_FREE = ("evidence_logit", "log_region", "log_p_top", "lex_body")  # no cosine level: for any embedder


def answerability_inputs(question: dict[str, Any], pred: dict[str, Any], names: Sequence[str]) -> np.ndarray:
    p = min(max(question["evidence_probability"], 1e-4), 1 - 1e-4)
    values = {
        "evidence_logit": float(np.log(p / (1 - p))),
        "log_region": float(np.log(max(pred["region"], 1e-4))),
        "log_p_top": float(np.log(max(pred["p_top"], 1e-4))),
        "raw_cos": pred["raw_cos"],
        "max_raw_cos": pred.get("max_raw_cos", 0.0),
        "lex_body": pred["lex_body"],
    }
    return np.asarray([values[name] for name in names])


def fit_answerability(
    train: Sequence[dict[str, Any]], others: Sequence[dict[str, Any]], predicted: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """P(the documents answer) from the evidence decision's probability and the choice's own confidence; fitted
    on the training set and the runbook tune set (balanced classes: a refused answerable question costs as much as
    an answered unanswerable one), reported out of fold and on the other sets beside the evidence decision alone."""

    fit_on = [*train, *(q for q in others if q["set"] == "tune")]
    groups = [q["group"] if q in train else "runbooks-tune" for q in fit_on]
    report: dict[str, Any] = {}
    models: dict[str, Any] = {}
    for variant, names in (("embedder", ANSWERABILITY_FEATURES), ("scale_free", SCALE_FREE)):
        x = np.stack([answerability_inputs(q, predicted[key(q)], names) for q in fit_on])
        y = np.asarray([q["answerable"] for q in fit_on])
        out_of_fold = np.zeros(len(fit_on))
        for group in sorted(set(groups)):
            mask = np.asarray([g == group for g in groups])
            model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000).fit(x[~mask], y[~mask])
            out_of_fold[mask] = model.predict_proba(x[mask])[:, 1]
        model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000).fit(x, y)
        models[variant] = {
            "features": list(names),
            "coef": [round(float(v), 6) for v in model.coef_[0]],
            "intercept": round(float(model.intercept_[0]), 6),
            "threshold": 0.5,
        }
        rows = {"out of fold (train + runbook tune)": [(q, out_of_fold[i]) for i, q in enumerate(fit_on)]}
        for set_name in sorted({q["set"] for q in others} - {"tune", "procedures"}):
            chosen = [q for q in others if q["set"] == set_name]
            probabilities = model.predict_proba(
                np.stack([answerability_inputs(q, predicted[key(q)], names) for q in chosen])
            )[:, 1]
            rows[set_name] = list(zip(chosen, probabilities, strict=True))
        report[variant] = {name: _refusals(r) for name, r in rows.items()}
    return {"report": report, "models": models}


def _refusals(rows: Sequence[tuple[dict[str, Any], float]]) -> dict[str, Any]:
    answerable = [(q, p) for q, p in rows if q["answerable"]]
    unanswerable = [(q, p) for q, p in rows if not q["answerable"]]

    def share(items: Sequence[bool]) -> str:
        return f"{sum(items)}/{len(items)}"

    return {
        "answerable_refused": share([p < 0.5 for _, p in answerable]),
        "unanswerable_declined": share([p < 0.5 for _, p in unanswerable]),
        "evidence_alone_answerable_refused": share([not q["evidence_sufficient"] for q, _ in answerable]),
        "evidence_alone_unanswerable_declined": share([not q["evidence_sufficient"] for q, _ in unanswerable]),
    }


def write_models(reading: Reading, ranker: Ranker, best: Any, n: int, calibration: dict[str, Any]) -> None:
    FITTED.mkdir(parents=True, exist_ok=True)
    question_model = {
        "inputs": "the grammar's reading one-hot (" + ", ".join(GRAMMAR_KINDS) + "), then the vocabulary's n-grams",
        "vocabulary": list(reading.vocabulary),
        "procedure": reading.model_json(reading.procedure),
        "whole": reading.model_json(reading.whole),
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
        "l2": {"base_features": best[0][0], "heading_words": best[0][1]},
        "hidden_layer": hidden_layer_json(best[2]),
        "close_ratio": calibration["close_ratio"],
        "certain_probability": calibration["certain_probability"],
        "shown_mass": best[3],
        "shown_whole_words": SHOWN_WHOLE_WORDS,
    }
    (FITTED / "section_ranker.json").write_text(json.dumps(ranker_model, indent=1) + "\n")
    print(f"wrote {FITTED}/question_reading.json, section_ranker.json", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
