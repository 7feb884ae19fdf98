"""The fitted section ranker: P(candidate answers) = softmax over a question's candidates of

    w · x  +  v · tanh(W x_F + b)

x the candidate's features (features.py) standardized as in training, x_F its first len(FEATURES) columns (the
base features crossed with the question's reading). The hidden layer (W, b, v) is optional: a model without
one is the linear conditional logit; scripts/fit_choice.py chooses between them out of fold.

The weights are data, not code: appliance/answer/fitted/section_ranker.json, written by scripts/fit_choice.py
from the training set scripts/qa/choice_train.jsonl (its leave-one-corpus-out figures in
scripts/results/fit_choice.json). A file fitted with other feature names is refused with a clear error: the
names are the contract between the features and the weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from appliance.answer.quoted.features import FEATURES, model_features
from appliance.errors import ApplianceError

FITTED = Path(__file__).resolve().parent.parent / "fitted"
DEFAULT_MODEL = FITTED / "section_ranker.json"


HiddenLayer = tuple[np.ndarray, np.ndarray, np.ndarray]  # input weights (len(FEATURES) × units), biases, output


def hidden_scores(standardized: np.ndarray, hidden: HiddenLayer | None) -> np.ndarray | float:
    """What the hidden layer adds to the linear scores of standardized features: tanh units over the base features
    as crossed with the question's reading (the first len(FEATURES) columns; the heading words stay linear).
    scripts/fit_choice.py fits with this same function."""
    if hidden is None:
        return 0.0
    inputs, bias, output = hidden
    return np.asarray(np.tanh(standardized[:, : len(FEATURES)] @ inputs + bias) @ output)


@dataclass(frozen=True)
class SectionRanker:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    embedder: str  # the embedder whose vectors the training features came from
    source: str
    vocabulary: tuple[str, ...] = ()  # the heading words the model weighs (features.model_features)
    close_ratio: float = 0.5  # a rival this likely against the choice makes it a close call
    certain_probability: float = 1.0  # the region probability from which a choice without rival is "certain"
    # A procedure is shown as the shortest section holding at least this much of the probability (None: the single
    # likeliest section), among the sections short enough to be shown whole (choice.shown_section).
    shown_mass: float | None = None
    shown_whole_words: int = 1000
    hidden: HiddenLayer | None = None  # the hidden layer, if the fit kept one

    def scores(self, features: np.ndarray) -> np.ndarray:
        standardized = (features - self.mean) / self.scale
        return np.asarray(standardized @ self.weights + hidden_scores(standardized, self.hidden))

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        if len(features) == 0:
            return np.zeros(0)
        scores = self.scores(features)
        exp = np.exp(scores - scores.max())
        return exp / exp.sum()


def load_ranker(path: Path = DEFAULT_MODEL) -> SectionRanker:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ApplianceError(f"section ranker {path}: cannot be read ({exc})") from exc
    vocabulary = tuple(data.get("vocabulary", ()))
    if tuple(data.get("features", ())) != model_features(vocabulary):
        raise ApplianceError(
            f"section ranker {path}: fitted on other features than this version computes; "
            "run scripts/choice_features.py and scripts/fit_choice.py --write"
        )
    scale = np.asarray(data["scale"], dtype=np.float64)
    hidden = _hidden_layer(data.get("hidden"), path)
    return SectionRanker(
        mean=np.asarray(data["mean"], dtype=np.float64),
        scale=np.where(scale > 0, scale, 1.0),
        weights=np.asarray(data["weights"], dtype=np.float64),
        embedder=str(data.get("embedder", "")),
        source=str(path),
        vocabulary=vocabulary,
        close_ratio=float(data.get("close_ratio", 0.5)),
        certain_probability=float(data.get("certain_probability", 1.0)),
        shown_mass=None if data.get("shown_mass") is None else float(data["shown_mass"]),
        shown_whole_words=int(data.get("shown_whole_words", 1000)),
        hidden=hidden,
    )


def _hidden_layer(data: object, path: Path) -> HiddenLayer | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ApplianceError(f"section ranker {path}: 'hidden' must be an object with weights, bias and output")
    try:
        inputs = np.asarray(data["weights"], dtype=np.float64)
        bias = np.asarray(data["bias"], dtype=np.float64)
        output = np.asarray(data["output"], dtype=np.float64)
    except (KeyError, TypeError, ValueError) as exc:
        raise ApplianceError(f"section ranker {path}: its hidden layer cannot be read ({exc!r})") from exc
    if inputs.shape != (len(FEATURES), len(bias)) or output.shape != bias.shape:
        raise ApplianceError(
            f"section ranker {path}: its hidden layer has shape {inputs.shape}, {bias.shape}, {output.shape}; "
            f"expected ({len(FEATURES)}, units), (units,), (units,)"
        )
    return inputs, bias, output


@lru_cache(maxsize=1)
def default_ranker() -> SectionRanker:
    return load_ranker()
