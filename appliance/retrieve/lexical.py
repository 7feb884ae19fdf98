"""Lexical retrieval: FTS5 bm25 over words (porter) plus exact identifiers.

bm25() is lower-is-better in SQLite; scores here are negated so that higher is better
everywhere in the retrieval code. A chunk's lexical score is its word score plus its identifier
score, so a chunk holding the exact `VLV-3042-B` outranks one that merely mentions "valve".
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from appliance.index.filters import NO_FILTERS, Filters
from appliance.retrieve.fts_query import identifier_match, word_match


@dataclass(frozen=True)
class LexicalHit:
    rowid: int
    score: float


def lexical_search(
    conn: sqlite3.Connection,
    query: str,
    n: int,
    *,
    header_weight: float = 1.0,
    identifier_weight: float = 1.0,
    filters: Filters = NO_FILTERS,
) -> list[LexicalHit]:
    scores: dict[int, float] = {}
    where, params = filters.sql("d")
    join = " JOIN chunks c ON c.rowid = f.rowid JOIN documents d ON d.id = c.document_id" if filters.active else ""
    words = word_match(query)
    if words:
        for rowid, bm25 in conn.execute(
            f"SELECT f.rowid, bm25(chunks_fts, ?, 1.0) AS s FROM chunks_fts f{join} "
            f"WHERE chunks_fts MATCH ?{where} ORDER BY s LIMIT ?",
            (header_weight, words, *params, n),
        ):
            scores[rowid] = -bm25
    identifiers = identifier_match(query)
    if identifiers and identifier_weight > 0:
        for rowid, bm25 in conn.execute(
            f"SELECT f.rowid, bm25(chunks_ident) AS s FROM chunks_ident f{join} "
            f"WHERE chunks_ident MATCH ?{where} ORDER BY s LIMIT ?",
            (identifiers, *params, n),
        ):
            scores[rowid] = scores.get(rowid, 0.0) + identifier_weight * -bm25
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:n]
    return [LexicalHit(rowid, score) for rowid, score in ranked]
