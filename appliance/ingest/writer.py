"""Writing prepared documents to the index, in embedding batches.

Each batch's documents are handed to the index as soon as they are embedded (Index.write_documents),
and the index writes both of its stores in the crash-safe order (appliance.index.writes), so the work
of every batch written survives a crash.

Two stages overlap: a batch is embedded on a worker thread (the runtimes release the GIL) while
this thread writes the batch before it and loads and chunks the documents of the next one. Every
index call stays on this thread, and batches are written one after another in order, so the index's
order holds for each of them.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from appliance.durable import WORKING_MARGIN, reporting_disk_full
from appliance.index.catalog import DocumentRow, text_sha256
from appliance.index.index import Index
from appliance.index.records import Chunk, DocumentMeta
from appliance.index.writes import EmbeddedDocument
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
    # Indexed, with a fallback the reader should know of ({"path", "warning"}: a broken outline, a font
    # table without sizes): the file's text is all there, its structure came from the next rule down.
    warnings: list[dict[str, str]] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    repaired: dict[str, Any] | None = None
    # Who brings the vectors to the catalog's state: "this process", the running server that owns the
    # local store ("pid N (appliance serve …)"), the Chroma server, or None (nobody owns it right now:
    # the next process that opens it does).
    vectors_applied_by: str | None = None
    vectors_wait_s: float | None = None  # how long the owner took to apply this run's changes
    vectors_pending: int = 0  # changes the owner had not applied when the run returned
    ocr_pages: int = 0  # pages (and image frames) read by OCR in this run
    ocr_seconds: float = 0.0  # the time they took: OCR is most of a scanned folder's ingest

    def as_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "failed": self.failed,
            "skipped": self.skipped,
            "warnings": self.warnings,
            "chunks_embedded": self.chunks_embedded,
            "chunks_reused": self.chunks_reused,
            "chunks_total": self.chunks_total,
            "seconds": round(self.seconds, 3),
            "ocr": {"pages": self.ocr_pages, "seconds": round(self.ocr_seconds, 3)},
            "repaired": self.repaired,
            "vectors": {
                "applied_by": self.vectors_applied_by,
                "wait_s": None if self.vectors_wait_s is None else round(self.vectors_wait_s, 3),
                "pending": self.vectors_pending,
            },
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
    meta: DocumentMeta | None = None  # its control block, page furniture and loader warnings


@dataclass
class _Batch:
    """Documents whose new chunk texts are being embedded; `known` holds the vectors already found
    (stored ones, and at write time those the batch before it embedded)."""

    documents: list[PreparedDocument]
    shas: list[str]  # text sha256 of each chunk, in order
    known: dict[str, np.ndarray]
    todo: list[str]  # text sha256s this batch embeds itself
    vectors: Future[np.ndarray] | None


class BatchWriter:
    """Collects prepared documents, embeds them in batches and writes them crash-safely."""

    def __init__(self, index: Index, embedder: Embedder, report: IngestReport) -> None:
        self.index = index
        self.embedder = embedder
        self.report = report
        self.pending: list[PreparedDocument] = []
        self.pending_chunks = 0
        self._embedding: _Batch | None = None  # dispatched, not written yet
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")

    def add(self, pending: PreparedDocument) -> None:
        self.pending.append(pending)
        self.pending_chunks += len(pending.chunks)
        if self.pending_chunks >= EMBED_BATCH_CHUNKS:
            self._dispatch()

    def close(self) -> None:
        """Stop the embedding thread (after flush(); a batch not yet written is dropped)."""
        self._worker.shutdown(wait=True, cancel_futures=True)

    def flush(self) -> None:
        """Embed and write everything added so far."""
        self._dispatch()
        self._write_embedded()

    def _dispatch(self) -> None:
        """Start embedding the pending documents, then write the batch embedded before them."""
        if not self.pending:
            return
        documents, self.pending, self.pending_chunks = self.pending, [], 0
        chunks = [chunk for item in documents for chunk in item.chunks]
        shas = [text_sha256(c.embedding_text) for c in chunks]
        known = self.index.stored_embeddings(shas, self.embedder.model_id)
        # Each new text once; one that the batch in flight embeds is taken from it (see _write).
        earlier = set(self._embedding.todo) if self._embedding is not None else set()
        first = {sha: i for i, sha in reversed(list(enumerate(shas))) if sha not in known and sha not in earlier}
        todo = sorted(first, key=first.__getitem__)
        texts = [chunks[first[sha]].embedding_text for sha in todo]
        future = self._worker.submit(self.embedder.embed, texts) if texts else None
        self.report.chunks_embedded += len(todo)
        self.report.chunks_reused += len(chunks) - len(todo)
        previous, self._embedding = self._embedding, _Batch(documents, shas, known, todo, future)
        if previous is not None:
            self._write(previous)

    def _write_embedded(self) -> None:
        batch, self._embedding = self._embedding, None
        if batch is not None:
            self._write(batch)

    def _write(self, batch: _Batch) -> None:
        if batch.vectors is not None:
            batch.known.update(zip(batch.todo, batch.vectors.result(), strict=True))
        following = self._embedding
        if following is not None:  # texts it shares with this batch were left to this batch to embed
            following.known.update({sha: batch.known[sha] for sha in following.shas if sha in batch.todo})
        self._write_documents(batch.documents, batch.shas, batch.known)

    def _write_documents(self, batch: list[PreparedDocument], shas: list[str], known: dict[str, np.ndarray]) -> None:
        embeddings = (
            np.stack([known[sha] for sha in shas]).astype(np.float32) if shas else np.zeros((0, 1), dtype=np.float32)
        )
        documents: list[EmbeddedDocument] = []
        offset = 0
        for item in batch:
            count = len(item.chunks)
            documents.append(
                EmbeddedDocument(
                    path=item.found.display_path,
                    abs_path=str(item.found.abs_path),
                    source=item.source,
                    sha256=item.sha256,
                    size=item.found.size,
                    mtime=item.found.mtime,
                    doc_type=item.doc_type,
                    title=item.title,
                    chunks=item.chunks,
                    embeddings=embeddings[offset : offset + count],
                    embedding_model=self.embedder.model_id,
                    meta=item.meta,
                )
            )
            offset += count
        needed = space_needed(documents)
        with reporting_disk_full(
            self.index.settings.home, needed, f"writing {len(documents)} document(s) to the index"
        ):
            self.index.write_documents(documents)
        for item in batch:
            if item.existing is None:
                self.report.added += 1
            else:
                self.report.updated += 1


def space_needed(documents: list[EmbeddedDocument]) -> int:
    """About what writing these documents takes on disk: each chunk's text three times (its row and the two
    FTS5 tables) and its vector twice (the catalog and the vector store), doubled for the write-ahead logs,
    plus the working margin."""
    text = sum(len(chunk.text.encode("utf-8")) for document in documents for chunk in document.chunks)
    vectors = sum(int(document.embeddings.nbytes) for document in documents)
    return 2 * (3 * text + 2 * vectors) + WORKING_MARGIN
