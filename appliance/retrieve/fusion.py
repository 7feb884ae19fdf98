"""Fusion of ranked lists.

* Reciprocal rank fusion: score(d) = Σ over lists of 1 / (k + rank of d in that list). Needs no
  score calibration, but ignores how far apart the scores are.
* Weighted fusion: each list's scores are min-max normalized to [0, 1] over the list (a document
  missing from a list gets 0 there), then combined as w·dense + (1 − w)·lexical. Uses the score
  gaps, which RRF throws away.
* Z-score fusion: each list's scores as standard scores over the list itself, (s − mean) / std (a
  document missing from a list gets that list's lowest), combined as w·dense + (1 − w)·lexical.
  Min-max scales a list by its two extremes only, so one outlier squeezes the rest of its list
  towards 0; a z-score places every hit by the whole list's mean and spread, and like min-max
  does not depend on either retriever's scale. Measured on seven collections of which only
  SciFact train was tuned on (scripts/bench_fusion.py, docs/measurements/generalization.md): at least the
  better single retriever on every untuned one, and never below min-max.
Ties keep the order of first appearance.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Key]], k: float = 60.0) -> list[tuple[Key, float]]:
    """Fuse ranked lists (best first)."""
    scores: dict[Key, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return _sorted(scores)


def min_max(scored: Sequence[tuple[Key, float]]) -> dict[Key, float]:
    """Scores scaled to [0, 1] within the list; a list of equal scores maps to 1."""
    if not scored:
        return {}
    values = [score for _, score in scored]
    low, high = min(values), max(values)
    span = high - low
    return {key: (score - low) / span if span > 0 else 1.0 for key, score in scored}


def weighted_fusion(
    lexical: Sequence[tuple[Key, float]], dense: Sequence[tuple[Key, float]], dense_weight: float = 0.5
) -> list[tuple[Key, float]]:
    """w·minmax(dense) + (1 − w)·minmax(lexical); lists are (key, raw score), best first."""
    return _weighted_sum(lexical, dense, min_max(lexical), min_max(dense), dense_weight)


def z_scores(scored: Sequence[tuple[Key, float]]) -> dict[Key, float]:
    """(score − mean) / population std over the list; a list of one score, or of equal scores, maps to 0."""
    if not scored:
        return {}
    values = [score for _, score in scored]
    mean = statistics.fmean(values)
    spread = statistics.pstdev(values) if len(values) > 1 else 0.0
    return {key: (score - mean) / spread if spread > 0 else 0.0 for key, score in scored}


def zscore_fusion(
    lexical: Sequence[tuple[Key, float]], dense: Sequence[tuple[Key, float]], dense_weight: float = 0.5
) -> list[tuple[Key, float]]:
    """w·z(dense) + (1 − w)·z(lexical); a key missing from a list gets that list's lowest z-score."""
    lexical_z, dense_z = z_scores(lexical), z_scores(dense)
    floors = min(lexical_z.values(), default=0.0), min(dense_z.values(), default=0.0)
    return _weighted_sum(lexical, dense, lexical_z, dense_z, dense_weight, floors)


def _weighted_sum(
    lexical: Sequence[tuple[Key, float]],
    dense: Sequence[tuple[Key, float]],
    lexical_norm: dict[Key, float],
    dense_norm: dict[Key, float],
    dense_weight: float,
    floors: tuple[float, float] = (0.0, 0.0),
) -> list[tuple[Key, float]]:
    """w·dense + (1 − w)·lexical over normalized scores; a key missing from a list scores that list's floor."""
    scores: dict[Key, float] = {}
    for key in [*(key for key, _ in lexical), *(key for key, _ in dense)]:
        if key not in scores:
            scores[key] = dense_weight * dense_norm.get(key, floors[1]) + (1.0 - dense_weight) * lexical_norm.get(
                key, floors[0]
            )
    return _sorted(scores)


def _sorted(scores: dict[Key, float]) -> list[tuple[Key, float]]:
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
