"""Document scores from chunk scores: a document is as good as its best chunk, plus a little for
every other chunk that also matched (a long document that matches in several places is more
likely about the question than one lucky paragraph). A chunk scoring below zero adds nothing: under
z-score fusion that is a chunk below its list's mean, not a match worth counting."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
DocKey = TypeVar("DocKey", bound=Hashable)


def aggregate_documents(
    scored: Sequence[tuple[Item, float]],
    document_of: Callable[[Item], DocKey],
    *,
    other_chunks_weight: float = 0.0,
) -> list[tuple[DocKey, float, Item]]:
    """(document, score, best item) best first; score = best + w · sum of the other items' positive scores."""
    best: dict[DocKey, tuple[float, Item]] = {}
    rest: dict[DocKey, float] = {}
    order: dict[DocKey, int] = {}
    for item, score in scored:
        doc = document_of(item)
        order.setdefault(doc, len(order))
        if doc not in best:
            best[doc] = (score, item)
            rest[doc] = 0.0
        elif score > best[doc][0]:
            rest[doc] += max(best[doc][0], 0.0)
            best[doc] = (score, item)
        else:
            rest[doc] += max(score, 0.0)
    documents = [(doc, best[doc][0] + other_chunks_weight * rest[doc], best[doc][1]) for doc in best]
    return sorted(documents, key=lambda entry: (-entry[1], order[entry[0]]))
