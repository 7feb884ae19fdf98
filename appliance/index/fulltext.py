"""The catalog's full-text side: queries over its two FTS5 tables, for the lexical retriever and the corpus
vocabulary (appliance.retrieve).

`chunks_fts` holds each chunk's header and text, porter-stemmed: words. `chunks_ident` holds only the exact
identifiers of each chunk (VLV-3042-B, gitlab-ctl), with '-_.:/' kept inside tokens. Callers hand over MATCH
strings they have made safe (appliance.retrieve.fts_query quotes every user token); a string the tokenizer
reduces to nothing matches nothing here instead of raising. bm25() is lower-is-better, as SQLite gives it.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from appliance.index.filters import NO_FILTERS, Filters

Table = Literal["words", "identifiers"]
_TABLES: dict[Table, str] = {"words": "chunks_fts", "identifiers": "chunks_ident"}
Ranked = list[tuple[int, float]]  # (chunk rowid, bm25), best (lowest) first


class FullText:
    """FTS5 reads over one catalog connection (inside `Index.reading()` they see its committed state)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def version(self) -> tuple[int, int]:
        """Changes whenever the index did, through this connection or another process's: a cache key."""
        return (self._conn.total_changes, int(self._conn.execute("PRAGMA data_version").fetchone()[0]))

    def ranked(
        self, table: Table, match: str, n: int, *, header_weight: float = 1.0, filters: Filters = NO_FILTERS
    ) -> Ranked:
        """The best `n` chunks for `match` by bm25 (words: the header column weighted by `header_weight`), only
        of the documents the filters admit."""
        name = _TABLES[table]
        weights = ", ?, 1.0" if table == "words" else ""
        where, params = filters.sql("d")
        join = " JOIN chunks c ON c.rowid = f.rowid JOIN documents d ON d.id = c.document_id" if filters.active else ""
        args: tuple[Any, ...] = (header_weight,) if table == "words" else ()
        rows = self._conn.execute(
            f"SELECT f.rowid, bm25({name}{weights}) AS s FROM {name} f{join} WHERE {name} MATCH ?{where} "
            "ORDER BY s LIMIT ?",
            (*args, match, *params, n),
        )
        return [(int(rowid), float(score)) for rowid, score in rows]

    def matches(self, table: Table, match: str, rowid: int | None = None) -> bool:
        """Some chunk (or the chunk `rowid`) matches."""
        name = _TABLES[table]
        one_chunk = " AND rowid = ?" if rowid is not None else ""
        sql = f"SELECT 1 FROM {name} WHERE {name} MATCH ?{one_chunk} LIMIT 1"
        args: tuple[Any, ...] = (match,) if rowid is None else (match, rowid)
        try:
            return self._conn.execute(sql, args).fetchone() is not None
        except sqlite3.OperationalError:
            return False  # a term the tokenizer reduces to nothing

    def texts_matching(self, match: str, limit: int) -> list[str]:
        """The texts of the first `limit` chunks whose words match (in FTS5's order, not ranked)."""
        try:
            rows = self._conn.execute(
                "SELECT c.text FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid WHERE chunks_fts MATCH ? LIMIT ?",
                (match, limit),
            ).fetchall()
        except sqlite3.OperationalError:
            return []
        return [text for (text,) in rows]

    def chunks_matching(self, match: str) -> int:
        """How many chunks' words match (0 for a term the tokenizer reduces to nothing)."""
        try:
            return int(
                self._conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchone()[0]
            )
        except sqlite3.OperationalError:
            return 0
