"""A fitted logistic decision read from a JSON file: p = sigmoid(intercept + Σ weight · signal), and its threshold.

The follow-up decision (followup_model.py) and the unknown-words note (unmatched_note.py) are both this; their
scripts (scripts/fit_followup.py, scripts/fit_unmatched_note.py) write the file under "model".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Self


@dataclass(frozen=True)
class LogisticModel:
    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float

    def probability(self, values: dict[str, float]) -> float:
        z = self.intercept + sum(w * values[f] for f, w in zip(self.features, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-z))

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Self:
        weights = data["weights"]
        assert isinstance(weights, dict)
        return cls(
            features=tuple(weights),
            weights=tuple(float(w) for w in weights.values()),
            intercept=float(data["intercept"]),  # type: ignore[arg-type]
            threshold=float(data["threshold"]),  # type: ignore[arg-type]
        )

    @classmethod
    def read(cls, path: Path) -> Self:
        """The model a fitting script wrote to `path` (its "model" entry)."""
        return cls.from_json(json.loads(path.read_text(encoding="utf-8"))["model"])
