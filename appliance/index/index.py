"""The index as a whole: catalog (truth) + vectors (derived), their consistency and repair."""

from __future__ import annotations

from dataclasses import dataclass, field

from appliance.config import Settings
from appliance.faults import crash_point
from appliance.index.catalog import Catalog
from appliance.index.vectors import VectorIndex

VECTORS_DIRTY = "vectors_dirty"


@dataclass
class Consistency:
    consistent: bool
    catalog_chunks: int
    vector_count: int
    missing_vectors: int = 0
    stray_vectors: int = 0
    fts_problems: list[str] = field(default_factory=list)
    interrupted_write: bool = False


@dataclass
class Repair:
    vectors_added: int = 0
    vectors_deleted: int = 0
    fts_rebuilt: bool = False


class Index:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.catalog = Catalog(settings.catalog_path)
        self._vectors: VectorIndex | None = None

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            self._vectors = VectorIndex(self.settings.vectors, self.settings.chroma_path)
        return self._vectors

    def close(self) -> None:
        self.catalog.close()

    def check(self) -> Consistency:
        catalog_ids = self.catalog.all_chunk_ids()
        vector_ids = self.vectors.ids()
        fts = self.catalog.fts_integrity()
        missing = len(catalog_ids - vector_ids)
        stray = len(vector_ids - catalog_ids)
        interrupted = self.catalog.get_state(VECTORS_DIRTY) == "1"
        return Consistency(
            consistent=not (missing or stray or fts),
            catalog_chunks=len(catalog_ids),
            vector_count=len(vector_ids),
            missing_vectors=missing,
            stray_vectors=stray,
            fts_problems=fts,
            interrupted_write=interrupted,
        )

    def needs_reconcile(self) -> bool:
        """What a reindex asks before its work: an interrupted earlier write, or Chroma holding another
        number of vectors than the catalog has chunks (vectors deleted or wiped behind the catalog's
        back, e.g. on a Chroma server). Cheap: one count each; `check` compares the id sets."""
        if self.catalog.get_state(VECTORS_DIRTY) == "1":
            return True
        return self.vectors.count() != self.catalog.counts()["chunks"]

    def reconcile(self) -> Repair:
        """Make Chroma and FTS5 agree with the catalog. Idempotent; safe after any crash."""
        repair = Repair()
        if self.catalog.fts_integrity():
            self.catalog.rebuild_fts()
            repair.fts_rebuilt = True
        catalog_ids = self.catalog.all_chunk_ids()
        vector_ids = self.vectors.ids()
        stray = vector_ids - catalog_ids
        if stray:
            self.vectors.delete(sorted(stray))
            repair.vectors_deleted = len(stray)
            crash_point("during_reconcile")
        missing = sorted(catalog_ids - vector_ids)
        if missing:
            import numpy as np

            rows = self.catalog.chunks_by_ids(missing)
            pairs = list(self.catalog.embeddings(missing))
            ids = [chunk_id for chunk_id, _ in pairs]
            self.vectors.upsert(ids, np.stack([vector for _, vector in pairs]), [rows[i].document_path for i in ids])
            repair.vectors_added = len(ids)
        return repair
