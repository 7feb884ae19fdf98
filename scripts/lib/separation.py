"""How well a score separates two groups of questions: the AUC the benchmarks report."""

from __future__ import annotations

from collections.abc import Sequence


def auc(low: Sequence[float], high: Sequence[float]) -> float | None:
    """The chance that a `low` row scores below a `high` row (ties half): 1.0 separates them perfectly, 0.5 is
    chance; None when either group is empty."""
    if not low or not high:
        return None
    wins = sum((a < b) + 0.5 * (a == b) for a in low for b in high)
    return round(wins / (len(low) * len(high)), 3)
