"""Bring the local vector store to the catalog's state by applying the catalog's change log.

Every chunk the catalog gains or loses is written to `vector_changes` by triggers, in the same
transaction as the chunk itself (migration 0003), so the log can never disagree with what was
committed. The owner of the local store (appliance.index.ownership) applies it: for each chunk named
since the last applied entry, the vector is written when the chunk exists now (its embedding is in
the catalog) and deleted when it does not. That is idempotent, so a process killed anywhere in here
leaves nothing to undo: the next owner applies the same entries again. What was applied, and the time
of the newest change it reflects, are recorded in the catalog's state (`APPLIED_SEQ`, `APPLIED_AT`).

With a Chroma server (vectors.url) every process writes the vectors itself, before and after its
catalog transaction (appliance.index.writes), and only records the log as applied.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from appliance.faults import crash_point
from appliance.index.catalog import Catalog
from appliance.index.vectors import VectorIndex

APPLIED_SEQ = "vectors_applied_seq"
APPLIED_AT = "vectors_applied_at"
# The newest change a writer that does not own the store finished cleanly: changes up to here wait for
# the owner; changes past it that nobody applied were left by a run that died (an interrupted write).
HANDED_OVER_SEQ = "vectors_handed_over_seq"


@dataclass(frozen=True)
class Applied:
    upserted: int = 0
    deleted: int = 0
    seq: int = 0  # the newest change now applied (0: none ever)


def applied_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM state WHERE key = ?", (APPLIED_SEQ,)).fetchone()
    return int(row[0]) if row else 0


def latest_seq(conn: sqlite3.Connection) -> int:
    """The newest change committed (0 when the log has always been empty)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_changes'").fetchone()
    return int(row[0]) if row else 0


def pending(conn: sqlite3.Connection) -> int:
    """Changes committed to the catalog that the vectors do not reflect yet."""
    row = conn.execute("SELECT COUNT(*) FROM vector_changes WHERE seq > ?", (applied_seq(conn),)).fetchone()
    return int(row[0])


def interrupted(conn: sqlite3.Connection) -> bool:
    """Changes nobody applied nor handed over: a writer died between its commit and the vectors."""
    handed = conn.execute("SELECT value FROM state WHERE key = ?", (HANDED_OVER_SEQ,)).fetchone()
    floor = max(applied_seq(conn), int(handed[0]) if handed else 0)
    return conn.execute("SELECT 1 FROM vector_changes WHERE seq > ? LIMIT 1", (floor,)).fetchone() is not None


def apply_changes(catalog: Catalog, vectors: VectorIndex) -> Applied:
    """Apply every change past the last applied one to `vectors` (the caller owns the store)."""
    conn = catalog.conn
    conn.execute("BEGIN")  # one snapshot: the changes and the chunks they name
    try:
        done = applied_seq(conn)
        rows = conn.execute("SELECT seq, chunk_id FROM vector_changes WHERE seq > ? ORDER BY seq", (done,)).fetchall()
        if not rows:
            return Applied(seq=done)
        newest = int(rows[-1][0])
        named = sorted({chunk_id for _, chunk_id in rows})
        paths = catalog.document_paths_of_chunks(named)
        embeddings = dict(catalog.embeddings(sorted(paths)))
    finally:
        conn.execute("COMMIT")
    gone = [chunk_id for chunk_id in named if chunk_id not in paths]
    if gone:
        vectors.delete(gone)
    crash_point("during_vector_sync")
    ids = sorted(embeddings)
    if ids:
        vectors.upsert(ids, np.stack([embeddings[i] for i in ids]), [paths[i] for i in ids])
    mark_applied(catalog, newest)
    return Applied(upserted=len(ids), deleted=len(gone), seq=newest)


def mark_applied(catalog: Catalog, up_to: int | None = None) -> None:
    """Record the vectors as reflecting every change up to `up_to` (default: the newest) and prune the log."""
    with catalog.transaction() as conn:
        sql = "SELECT seq, at FROM vector_changes" + (" WHERE seq <= ?" if up_to is not None else "")
        row = conn.execute(sql + " ORDER BY seq DESC LIMIT 1", () if up_to is None else (up_to,)).fetchone()
        if row is None or int(row[0]) <= applied_seq(conn):
            return
        conn.execute("INSERT OR REPLACE INTO state(key, value) VALUES (?, ?)", (APPLIED_SEQ, str(row[0])))
        conn.execute("INSERT OR REPLACE INTO state(key, value) VALUES (?, ?)", (APPLIED_AT, repr(float(row[1]))))
        conn.execute("DELETE FROM vector_changes WHERE seq <= ?", (row[0],))


def hand_over(catalog: Catalog) -> int:
    """A writer that does not own the store finished: its changes wait for the owner. The newest seq."""
    seq = latest_seq(catalog.conn)
    catalog.set_state(HANDED_OVER_SEQ, str(seq))
    return seq
