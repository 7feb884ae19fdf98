"""Lexical retrieval: FTS5 bm25 over words (porter) plus exact identifiers.

bm25() is lower-is-better in SQLite; scores here are negated so that higher is better
everywhere in the retrieval code. A chunk's lexical score is its word score plus its identifier
score, so a chunk holding the exact `VLV-3042-B` outranks one that merely mentions "valve".
"""

from __future__ import annotations

from dataclasses import dataclass

from appliance.index.filters import NO_FILTERS, Filters
from appliance.index.fulltext import FullText
from appliance.retrieve.fts_query import identifier_match, word_match


@dataclass(frozen=True)
class LexicalHit:
    rowid: int
    score: float


def lexical_search(
    fulltext: FullText,
    query: str,
    n: int,
    *,
    header_weight: float = 1.0,
    identifier_weight: float = 1.0,
    filters: Filters = NO_FILTERS,
) -> list[LexicalHit]:
    """The best `n` chunks for `query` over the catalog's FTS5 tables (`Catalog.fulltext`)."""
    scores: dict[int, float] = {}
    words = word_match(query)
    if words:
        for rowid, bm25 in fulltext.ranked("words", words, n, header_weight=header_weight, filters=filters):
            scores[rowid] = -bm25
    identifiers = identifier_match(query)
    if identifiers and identifier_weight > 0:
        for rowid, bm25 in fulltext.ranked("identifiers", identifiers, n, filters=filters):
            scores[rowid] = scores.get(rowid, 0.0) + identifier_weight * -bm25
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:n]
    return [LexicalHit(rowid, score) for rowid, score in ranked]
