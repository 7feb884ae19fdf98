"""Index a BEIR corpus with the real chunker and writer, into its own home, reused when unchanged.

Each corpus line is one document (path = its `_id`, title = its `title`); its text goes through
the same chunker, embedder and crash-safe writer as any file. The index lives under
`<home>/eval/<folder name>-<hash of the corpus path>/` and documents whose title and text are
unchanged are not re-embedded, so a second `eval beir` run starts at once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

from appliance.config import Settings
from appliance.index.index import Index
from appliance.index.lock import writer_lock
from appliance.ingest.chunker import chunk_document
from appliance.ingest.document import DocumentBuilder
from appliance.ingest.pipeline import pipeline_signature
from appliance.ingest.scan import FoundFile
from appliance.ingest.writer import BatchWriter, IngestReport, PreparedDocument
from appliance.models.registry import load_embedder

from .beir import BeirDoc, load_corpus

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def eval_settings(settings: Settings, folder: Path) -> Settings:
    """The settings of the BEIR folder's own index: the same except for the home."""
    corpus = (folder / "corpus.jsonl").resolve()
    key = hashlib.sha256(str(corpus).encode()).hexdigest()[:12]
    update: dict[str, object] = {"home": settings.home / "eval" / f"{folder.resolve().name}-{key}"}
    if settings.vectors.url:  # a shared Chroma server: a collection of its own, or reconciles fight
        collection = f"{settings.vectors.collection[:40]}-eval-{key}"
        update["vectors"] = settings.vectors.model_copy(update={"collection": collection})
    return settings.model_copy(update=update)


def _document_sha(doc: BeirDoc) -> str:
    return hashlib.sha256(f"{doc.title}\0{doc.text}".encode()).hexdigest()


def build_beir_index(
    settings: Settings, folder: Path, progress: Callable[[int], None] | None = None
) -> tuple[Settings, IngestReport]:
    """Bring the BEIR folder's index up to date; return its settings and what changed."""
    own = eval_settings(settings, folder)
    report = IngestReport()
    corpus_file = folder / "corpus.jsonl"
    with writer_lock(own.lock_path, own.index.lock_timeout_s):
        index = Index(own)
        closing: list[Callable[[], None]] = []
        try:
            if index.writes_unfinished():
                index.reconcile()
            signature = pipeline_signature(own)
            rechunk = index.stored_pipeline_signature() != signature
            known = {d.path: d.sha256 for d in index.documents()}
            embedder = load_embedder(own)
            writer = BatchWriter(index, embedder, report)
            closing.append(writer.close)
            seen: set[str] = set()
            for position, doc in enumerate(load_corpus(folder)):
                seen.add(doc.doc_id)
                if progress and position % 100 == 0:
                    progress(position)
                sha = _document_sha(doc)
                if not rechunk and known.get(doc.doc_id) == sha:
                    report.unchanged += 1
                    continue
                builder = DocumentBuilder(doc.doc_id, "txt")
                for paragraph in _PARAGRAPH_BREAK.split(doc.text):
                    builder.add("paragraph", paragraph)
                loaded = builder.build(doc.title)
                if not loaded.blocks:
                    builder.add("paragraph", doc.title or doc.doc_id)  # a title-only record is still a document
                    loaded = builder.build(doc.title)
                chunks = chunk_document(
                    loaded,
                    embedder.count_tokens,
                    max_tokens=min(own.ingest.chunk_max_tokens, embedder.max_tokens),
                    overlap_tokens=own.ingest.chunk_overlap_tokens,
                )
                found = FoundFile(doc.doc_id, corpus_file, len(doc.text), 0.0)
                existing = index.document(doc.doc_id)
                writer.add(PreparedDocument(found, str(corpus_file), sha, "txt", doc.title, chunks, existing))
            writer.flush()
            for gone in sorted(set(known) - seen):
                index.remove_document(gone)
                report.removed += 1
            index.finish_run()
            index.record_pipeline_signature(signature)
            report.chunks_total = index.chunk_count()
        finally:
            for close in closing:
                close()
            index.close()
    return own, report
