"""Reciprocal rank fusion: score(d) = Σ over lists of 1 / (k + rank of d in that list)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Key]], k: float = 60.0) -> list[tuple[Key, float]]:
    """Fuse ranked lists (best first). Ties keep the order of first appearance."""
    scores: dict[Key, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    order = {key: i for i, key in enumerate(scores)}
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))
