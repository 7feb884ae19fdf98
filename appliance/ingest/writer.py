"""Writing prepared documents to both stores, in embedding batches, in the crash-safe order.

For each batch: mark the vectors dirty → upsert the new vectors into Chroma → replace the
documents in the catalog in one transaction → delete the replaced vectors from Chroma. The
pipeline clears the dirty mark when a whole run has finished.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from appliance.faults import crash_point
from appliance.index.catalog import DocumentRow, text_sha256
from appliance.index.index import VECTORS_DIRTY, Index
from appliance.ingest.chunker import Chunk
from appliance.ingest.scan import FoundFile
from appliance.models.embedder import Embedder

# Embed across documents in batches of about this many chunks (throughput), but write each
# batch's documents as soon as it is embedded (progress survives a crash).
EMBED_BATCH_CHUNKS = 256


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    repaired: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "failed": self.failed,
            "skipped": self.skipped,
            "chunks_embedded": self.chunks_embedded,
            "chunks_reused": self.chunks_reused,
            "chunks_total": self.chunks_total,
            "seconds": round(self.seconds, 3),
            "repaired": self.repaired,
        }


@dataclass
class PreparedDocument:
    """A document loaded and chunked, waiting for its embeddings."""

    found: FoundFile
    source: str
    sha256: str
    doc_type: str
    title: str
    chunks: list[Chunk]
    existing: DocumentRow | None


class BatchWriter:
    """Collects prepared documents, embeds them in batches and writes them crash-safely."""

    def __init__(self, index: Index, embedder: Embedder, report: IngestReport) -> None:
        self.index = index
        self.embedder = embedder
        self.report = report
        self.pending: list[PreparedDocument] = []
        self.pending_chunks = 0

    def add(self, pending: PreparedDocument) -> None:
        self.pending.append(pending)
        self.pending_chunks += len(pending.chunks)
        if self.pending_chunks >= EMBED_BATCH_CHUNKS:
            self.flush()

    def _mark_dirty(self) -> None:
        if self.index.catalog.get_state(VECTORS_DIRTY) != "1":
            self.index.catalog.set_state(VECTORS_DIRTY, "1")

    def remove(self, path: str) -> None:
        self._mark_dirty()
        old_ids = self.index.catalog.chunk_ids_of(path)
        self.index.catalog.remove_document(path)
        crash_point("after_catalog_remove")
        self.index.vectors.delete(old_ids)

    def flush(self) -> None:
        if not self.pending:
            return
        batch, self.pending, self.pending_chunks = self.pending, [], 0
        catalog, vectors = self.index.catalog, self.index.vectors
        model_id = self.embedder.model_id
        all_chunks = [chunk for item in batch for chunk in item.chunks]
        embeddings = self._embed(all_chunks, model_id)
        self._mark_dirty()
        old_ids = {item.found.display_path: set(catalog.chunk_ids_of(item.found.display_path)) for item in batch}
        paths = [item.found.display_path for item in batch for _ in item.chunks]
        if all_chunks:
            vectors.upsert([c.id for c in all_chunks], embeddings, paths)
        crash_point("after_vectors_upsert")
        offset = 0
        with catalog.transaction():
            for item in batch:
                count = len(item.chunks)
                catalog.replace_document_in_transaction(
                    path=item.found.display_path,
                    abs_path=str(item.found.abs_path),
                    source=item.source,
                    sha256=item.sha256,
                    size=item.found.size,
                    mtime=item.found.mtime,
                    doc_type=item.doc_type,
                    title=item.title,
                    status="indexed",
                    error=None,
                    chunks=item.chunks,
                    embeddings=embeddings[offset : offset + count],
                    embedding_model=model_id,
                )
                offset += count
                crash_point("inside_catalog_transaction")
        crash_point("after_catalog_commit")
        stale: set[str] = set()
        for item in batch:
            stale |= old_ids[item.found.display_path] - {c.id for c in item.chunks}
            if item.existing is None:
                self.report.added += 1
            else:
                self.report.updated += 1
        vectors.delete(sorted(stale))
        crash_point("after_vectors_delete")

    def _embed(self, chunks: list[Chunk], model_id: str) -> np.ndarray:
        shas = [text_sha256(c.embedding_text) for c in chunks]
        known = self.index.catalog.embeddings_by_text_sha(shas, model_id)
        todo = sorted({sha: i for i, sha in enumerate(shas) if sha not in known}.items(), key=lambda kv: kv[1])
        if todo:
            vectors = self.embedder.embed([chunks[i].embedding_text for _, i in todo])
            for (sha, _), vector in zip(todo, vectors, strict=True):
                known[sha] = vector
        self.report.chunks_embedded += len(todo)
        self.report.chunks_reused += len(chunks) - len(todo)
        if not chunks:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([known[sha] for sha in shas]).astype(np.float32)
