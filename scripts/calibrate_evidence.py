"""Fit the evidence model on the TUNE questions and measure it on the HELD-OUT ones.

1. Index ../shared/data/runbooks (all four folders) into --home (reused when unchanged).
2. For every question of scripts/qa/runbooks_tune.jsonl, collect the evidence signals.
3. Fit a logistic regression (L2, Newton's method) answerable ~ signals.
4. Pick the threshold that refuses the most unanswerable tune questions while wrongly refusing at
   most --max-false-refusal of the answerable ones.
5. Report refusal rate (unanswerable) and false refusal rate (answerable) on tune AND held-out,
   plus the top-cosine-only baseline at its best threshold, for comparison.
The printed coefficients and threshold are what appliance/config.py ships as defaults.

Usage: python scripts/calibrate_evidence.py [--home DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

import appliance  # noqa: F401
from appliance.config import Settings
from appliance.evaluate.runner import QAItem, load_qa
from appliance.ingest.pipeline import ingest
from appliance.retrieve.evidence import EvidenceSignals
from appliance.retrieve.search import Searcher

REPO = Path(__file__).resolve().parent.parent
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
# Questions with a word the corpus never uses are refused by rule (evidence.refuse_unknown_terms); the
# model is fitted on the others.
FEATURES = ("top_dense", "coverage", "any_unknown", "unknown_identifier", "agreement")


def signals_for(searcher: Searcher, items: list[QAItem]) -> list[EvidenceSignals]:
    collected = []
    for item in items:
        result = searcher.search(item.question, k=5)
        assert result.evidence.signals is not None
        collected.append(result.evidence.signals)
    return collected


def matrix(signals: list[EvidenceSignals]) -> np.ndarray:
    return np.array([[s.features()[f] for f in FEATURES] for s in signals], dtype=float)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 0.1, iterations: int = 50) -> np.ndarray:
    """Newton's method on the L2-penalised log-likelihood; returns [intercept, *weights]."""
    design = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(design.shape[1])
    penalty = np.eye(design.shape[1]) * l2
    penalty[0, 0] = 0.0  # no penalty on the intercept
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-design @ w))
        gradient = design.T @ (y - p) - penalty @ w
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        w += step
        if np.abs(step).max() < 1e-8:
            break
    return w


def probabilities(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(w[0] + x @ w[1:])))


def rates(p: np.ndarray, y: np.ndarray, threshold: float) -> dict[str, float]:
    refused = p < threshold
    return {
        "refused_unanswerable": round(float(refused[y == 0].mean()), 4),
        "false_refusals": round(float(refused[y == 1].mean()), 4),
    }


def best_threshold(p: np.ndarray, y: np.ndarray, max_false_refusal: float, false_refusal_cost: float = 2.0) -> float:
    """Within the false-refusal budget, the threshold that maximises refusals of unanswerable questions
    minus `false_refusal_cost` times the false refusals (a wrongly refused operator is the worse error)."""
    candidates = sorted(set(np.round(p, 6)) | {0.0, 1.0})
    best, best_value = 0.0, -1.0
    for threshold in candidates:
        r = rates(p, y, threshold)
        value = r["refused_unanswerable"] - false_refusal_cost * r["false_refusals"]
        if r["false_refusals"] <= max_false_refusal and value > best_value:
            best, best_value = threshold, value
    # Midway to the next probability: a little margin for unseen questions.
    above = [c for c in candidates if c > best]
    return float((best + above[0]) / 2) if above else best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "calibration")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--tune", type=Path, default=REPO / "scripts" / "qa" / "runbooks_tune.jsonl")
    parser.add_argument("--heldout", type=Path, default=REPO / "scripts" / "qa" / "runbooks_heldout.jsonl")
    parser.add_argument("--max-false-refusal", type=float, default=0.05)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    settings = Settings(home=args.home, models_dir=args.models_dir)
    report = ingest(settings, sorted(p for p in RUNBOOKS.iterdir() if p.is_dir()))
    print(f"runbooks index: {report.chunks_total} chunks ({report.chunks_embedded} embedded now)", file=sys.stderr)
    searcher = Searcher(settings)
    tune, heldout = load_qa(args.tune), load_qa(args.heldout)
    tune_signals, heldout_signals = signals_for(searcher, tune), signals_for(searcher, heldout)
    x_tune, x_held = matrix(tune_signals), matrix(heldout_signals)
    y_tune = np.array([1.0 if i.answerable else 0.0 for i in tune])
    y_held = np.array([1.0 if i.answerable else 0.0 for i in heldout])

    ruled_tune = np.array([bool(s.salient_unknown_terms) for s in tune_signals])
    ruled_held = np.array([bool(s.salient_unknown_terms) for s in heldout_signals])
    w = fit_logistic(x_tune[~ruled_tune], y_tune[~ruled_tune])
    # The rule refuses outright: probability 0 for those questions.
    p_tune = np.where(ruled_tune, 0.0, probabilities(w, x_tune))
    p_held = np.where(ruled_held, 0.0, probabilities(w, x_held))
    threshold = best_threshold(p_tune, y_tune, args.max_false_refusal)

    cos_tune, cos_held = x_tune[:, 0], x_held[:, 0]
    cos_threshold = best_threshold(cos_tune, y_tune, args.max_false_refusal)

    result: dict[str, Any] = {
        "coefficients": {
            "intercept": round(float(w[0]), 4),
            **{f: round(float(v), 4) for f, v in zip(FEATURES, w[1:], strict=True)},
        },
        "threshold": round(threshold, 4),
        "tune": rates(p_tune, y_tune, threshold),
        "heldout": rates(p_held, y_held, threshold),
        "top_cosine_only": {
            "threshold": round(cos_threshold, 4),
            "tune": rates(cos_tune, y_tune, cos_threshold),
            "heldout": rates(cos_held, y_held, cos_threshold),
        },
        "tutorial_cosine_0.35": {"tune": rates(cos_tune, y_tune, 0.35), "heldout": rates(cos_held, y_held, 0.35)},
        "heldout_by_kind": {},
    }
    for kind in ("out-of-corpus", "near-miss"):
        ids = {
            json.loads(line)["id"]
            for line in args.heldout.read_text().splitlines()
            if line.strip() and json.loads(line).get("kind") == kind
        }
        mask = np.array([i.id in ids for i in heldout])
        if mask.any():
            result["heldout_by_kind"][kind] = round(float((p_held[mask] < threshold).mean()), 4)
    missed = [i.question for i, p in zip(heldout, p_held, strict=True) if not i.answerable and p >= threshold]
    wrongly = [i.question for i, p in zip(heldout, p_held, strict=True) if i.answerable and p < threshold]
    result["heldout_answered_unanswerable"] = missed
    result["heldout_refused_answerable"] = wrongly
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
