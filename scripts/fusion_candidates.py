"""Fusion rules measured by scripts/bench_fusion.py, beside the ones in appliance/retrieve/fusion.py.

Each takes the lexical and the dense list of one query ((key, raw score), best first) and returns
(key, fused score) best first. The lists' raw scales differ by retriever, by collection and by query
(negated bm25 is unbounded; cosines of one embedder sit in a narrow band), which is what a fixed
weight on min-max scores cannot see.

`zscore_0.5 unpadded (before)` is the library's z-score fusion as it was before a short lexical list was
read as its hits followed by zeros (appliance/retrieve/fusion.py, "Short lexical lists"), and
`weighted_0.5 padded` the same reading applied to min-max fusion; `zscore_0.5 padded to 25` pads a short
list to a reference length fitted on the tune collections only, not to the dense list's length (both measured,
not adopted).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from appliance.retrieve import fusion
from appliance.retrieve.fusion import min_max, reciprocal_rank_fusion, weighted_fusion

Key = TypeVar("Key", bound=Hashable)
Scored = Sequence[tuple[Key, float]]
Fuse = Callable[[Scored, Scored], list[tuple[Key, float]]]


def _stats(scored: Scored) -> tuple[float, float]:
    values = [s for _, s in scored]
    if len(values) < 2:
        return (values[0] if values else 0.0), 1.0
    spread = statistics.pstdev(values)
    return statistics.fmean(values), spread if spread > 0 else 1.0


def z_scores(scored: Scored) -> dict[Key, float]:
    mean, spread = _stats(scored)
    return {key: (score - mean) / spread for key, score in scored}


def standout(scored: Scored) -> float:
    """How far the best score stands above the list, in standard deviations (0 for an empty list)."""
    if len(scored) < 2:
        return 0.0
    mean, spread = _stats(scored)
    return max(0.0, (scored[0][1] - mean) / spread)


def _combine(
    lexical: dict[Key, float],
    dense: dict[Key, float],
    w_dense: float,
    floor_lex: float,
    floor_dense: float,
    order: list[Key],
) -> list[tuple[Key, float]]:
    scores: dict[Key, float] = {}
    for key in order:
        if key not in scores:
            scores[key] = w_dense * dense.get(key, floor_dense) + (1 - w_dense) * lexical.get(key, floor_lex)
    position = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], position[item[0]]))


def _order(lexical: Scored, dense: Scored) -> list[Key]:
    return [*(k for k, _ in lexical), *(k for k, _ in dense)]


def zscore_fusion(lexical: Scored, dense: Scored, dense_weight: float = 0.5) -> list[tuple[Key, float]]:
    """Each list as z-scores over its own top-N, however short; a key missing from a list gets that list's lowest z."""
    zl: dict[Key, float] = z_scores(lexical)
    zd: dict[Key, float] = z_scores(dense)
    return _combine(
        zl, zd, dense_weight, min(zl.values(), default=0.0), min(zd.values(), default=0.0), _order(lexical, dense)
    )


def standout_weight(lexical: Scored, dense: Scored, prior: float = 0.5) -> float:
    """The dense share for this query: each retriever weighted by how far its best hit stands out."""
    sl, sd = standout(lexical), standout(dense)
    if not lexical:
        return 1.0
    if not dense:
        return 0.0
    total = prior * sd + (1 - prior) * sl
    return prior if total <= 0 else prior * sd / total


def adaptive_minmax(lexical: Scored, dense: Scored) -> list[tuple[Key, float]]:
    """Min-max scores, weighted per query by the standout of each list's best hit."""
    return weighted_fusion(lexical, dense, standout_weight(lexical, dense))


def adaptive_zscore(lexical: Scored, dense: Scored) -> list[tuple[Key, float]]:
    """Z-scores, weighted per query by the standout of each list's best hit."""
    return zscore_fusion(lexical, dense, standout_weight(lexical, dense))


def weighted_padded(lexical: Scored, dense: Scored, dense_weight: float = 0.5) -> list[tuple[Key, float]]:
    """Min-max fusion with a lexical list shorter than the dense list scaled from bm25's no match (0) to its best."""
    lexical_norm: dict[Key, float] = min_max(lexical)
    if lexical and len(lexical) < len(dense):
        best = max(score for _, score in lexical)
        lexical_norm = {key: score / best if best > 0 else 1.0 for key, score in lexical}
    return _combine(lexical_norm, min_max(dense), dense_weight, 0.0, 0.0, _order(lexical, dense))


# A list of n scores cannot put its best above z = √(n − 1). Over full (top-100) lexical lists the best
# hit's median z is 4.9 on SciFact train and 4.4 on the runbook tune set (bench_fusion.py's `lexical_top_z`),
# so a list shorter than 1 + 4.9² ≈ 25 cannot reach a typical best: the reference length of a short list.
REFERENCE_LENGTH = 25


def zscore_padded_to(length: int) -> Fuse:
    """Z-score fusion with a short lexical list padded with bm25's no match (0) up to `length` candidates only."""

    def fuse(lexical: Scored, dense: Scored) -> list[tuple[Key, float]]:
        unmatched = max(0, min(len(dense), length) - len(lexical))
        values = [score for _, score in lexical] + [0.0] * unmatched
        mean, spread = _stats([(i, v) for i, v in enumerate(values)])
        zl: dict[Key, float] = {key: (score - mean) / spread for key, score in lexical}
        zd: dict[Key, float] = z_scores(dense)
        floor = (min(values, default=0.0) - mean) / spread
        return _combine(zl, zd, 0.5, floor, min(zd.values(), default=0.0), _order(lexical, dense))

    return fuse


def _weighted(w: float) -> Fuse:
    return lambda lexical, dense: weighted_fusion(lexical, dense, w)


def _rrf(k: float) -> Fuse:
    return lambda lexical, dense: reciprocal_rank_fusion([[x for x, _ in lexical], [x for x, _ in dense]], k=k)


def _only(which: str) -> Fuse:
    return lambda lexical, dense: list(lexical if which == "lexical" else dense)


METHODS: dict[str, Fuse] = {
    "lexical": _only("lexical"),
    "dense": _only("dense"),
    "weighted_0.5": _weighted(0.5),
    "weighted_0.5 padded (not adopted)": weighted_padded,
    "weighted_0.3": _weighted(0.3),
    "weighted_0.7": _weighted(0.7),
    "rrf_60": _rrf(60.0),
    "rrf_10": _rrf(10.0),
    "zscore_0.5 (today)": fusion.zscore_fusion,
    "zscore_0.5 unpadded (before)": zscore_fusion,
    f"zscore_0.5 padded to {REFERENCE_LENGTH} (not adopted)": zscore_padded_to(REFERENCE_LENGTH),
    "adaptive_minmax": adaptive_minmax,
    "adaptive_zscore": adaptive_zscore,
}
