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

Short lexical lists. Both retrievers are asked for the same number of candidates; the dense side
returns that many (or the whole corpus, when it is smaller), the lexical side only the chunks that
hold a query word. A lexical list shorter than the dense list therefore holds every match there is,
and each other candidate scores what bm25 gives a chunk without any query word: 0. Z-scores read a
short lexical list as what it stands for, its hits followed by that many zeros, so a tag found in
one chunk stands far above the rest instead of at its list's mean (z = 0, what no match scored
too), and the fewer chunks hold it, the further it stands out. Nothing is fitted: the count comes
from the lists, and a full lexical list is scored as before. Needs lexical scores ≥ 0 with 0 for no
match, as negated bm25 is. Min-max already gives a list of one full credit; reading its short lists
the same way was measured and not adopted (docs/measurements/generalization.md, "Short lexical
lists").

Ties keep the order of first appearance.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)

NO_MATCH = 0.0  # the lexical score of a chunk that holds none of the query's words


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Key]], k: float = 60.0) -> list[tuple[Key, float]]:
    """Fuse ranked lists (best first)."""
    scores: dict[Key, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return _sorted(scores)


def unmatched_candidates(lexical: Sequence[object], dense: Sequence[object]) -> int:
    """How many candidates the lexical list leaves out because they hold no query word (see the module's note)."""
    return max(0, len(dense) - len(lexical))


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


def z_scores(scored: Sequence[tuple[Key, float]], unmatched: int = 0) -> dict[Key, float]:
    """(score − mean) / population std over the list and its `unmatched` chunks at NO_MATCH.

    A list of one score, or of equal scores, with nothing unmatched maps to 0."""
    return _standardized(scored, unmatched)[0]


def zscore_fusion(
    lexical: Sequence[tuple[Key, float]], dense: Sequence[tuple[Key, float]], dense_weight: float = 0.5
) -> list[tuple[Key, float]]:
    """w·z(dense) + (1 − w)·z(lexical); a key missing from a list gets that list's lowest z-score
    (a short lexical list's lowest is its unmatched chunks', NO_MATCH's)."""
    lexical_z, lexical_floor = _standardized(lexical, unmatched_candidates(lexical, dense))
    dense_z, dense_floor = _standardized(dense, 0)
    return _weighted_sum(lexical, dense, lexical_z, dense_z, dense_weight, (lexical_floor, dense_floor))


def _standardized(scored: Sequence[tuple[Key, float]], unmatched: int) -> tuple[dict[Key, float], float]:
    """The list's z-scores over it and `unmatched` NO_MATCH scores, and the lowest z-score of them all."""
    if not scored:
        return {}, 0.0
    values = [score for _, score in scored] + [NO_MATCH] * unmatched
    mean = statistics.fmean(values)
    spread = statistics.pstdev(values) if len(values) > 1 else 0.0
    z = {key: (score - mean) / spread if spread > 0 else 0.0 for key, score in scored}
    return z, (min(values) - mean) / spread if spread > 0 else 0.0


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
