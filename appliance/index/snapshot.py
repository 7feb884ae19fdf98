"""A snapshot of the index, for a backup: one committed state of the catalog, and vectors rebuilt from it.

* `Index.snapshot` copies the live catalog with SQLite's online backup API in one step: the copy is one
  committed state, taken while readers and writers go on.
* `CatalogCopy.seal` makes the copy stand alone: its change log recorded as applied (the vectors written beside it come
  from this very state), one self-contained file (no -wal beside it), SQLite's integrity check passed.
* `CatalogCopy.export_vectors` writes a local vector store holding one vector per chunk of the copy, from the copy's
  own embeddings: the catalog is the source of truth. Copying the live Chroma folder would not give the
  same state: the server that owns it holds its graph in memory and writes it out when it pleases
  (appliance.index.ownership).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from appliance.config import VectorSettings
from appliance.errors import BackupError
from appliance.index import vector_sync
from appliance.index.catalog import Catalog
from appliance.index.vectors import VectorIndex

_EXPORT_BATCH = 2000


def copy_database(source: Path, target: Path) -> None:
    """One-step online backup of an SQLite file (the catalog, the tokens): one committed state of `source`,
    taken while others use it, written as one self-contained file readable by its owner only."""
    src = sqlite3.connect(source, timeout=30.0)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file (no -wal beside it)
    finally:
        dst.close()
        src.close()
    target.chmod(0o600)


@dataclass(frozen=True)
class CatalogCopy:
    """A copy of the catalog made by `Index.snapshot`: sealed, then its vectors exported, by the backup."""

    path: Path

    def seal(self) -> dict[str, Any]:
        """Record the copy's change log as applied and check it; what it holds: the counts of
        `Catalog.counts()` and its sources."""
        catalog = Catalog(self.path)
        try:
            vector_sync.mark_applied(catalog, vector_sync.latest_seq(catalog.conn))
            counts = catalog.counts()
            sources = catalog.sources()
        finally:
            catalog.close()
        conn = sqlite3.connect(self.path)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            conn.close()
        if integrity != "ok":
            raise BackupError(f"the catalog snapshot fails SQLite's integrity check: {integrity}")
        return {**counts, "sources": sources}

    def export_vectors(self, vectors: VectorSettings, target: Path) -> int:
        """A local store at `target` (the collection and space of `vectors`) with one vector per chunk of
        the copy, in chunk id order; returns how many it holds."""
        catalog = Catalog(self.path)
        store = VectorIndex(vectors.model_copy(update={"url": ""}), target)
        try:
            rows = catalog.conn.execute(
                "SELECT c.id, c.embedding, d.path FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.id"
            )
            while batch := rows.fetchmany(_EXPORT_BATCH):
                ids = [row[0] for row in batch]
                embeddings = np.stack([np.frombuffer(row[1], dtype="<f4") for row in batch])
                store.upsert(ids, embeddings, [row[2] for row in batch])
            return store.count()
        finally:
            store.close()
            catalog.close()
