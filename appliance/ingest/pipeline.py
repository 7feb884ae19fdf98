"""Ingest and reindex: scan sources, diff by content hash, load, chunk, embed, and hand the documents
to the index, which writes its two stores in the crash-safe order (appliance.index.writes).

`update_index` is the one reindex loop: files (`reindex`, `ingest`, an upload) and a BEIR corpus
(appliance.evaluate.beir_index) all go through it, each as a `DocumentSource` (appliance.ingest.sources).
A run that finds an earlier run's write interrupted, or Chroma holding another number of vectors
than the catalog has chunks (say, a wiped Chroma server), reconciles first; a run that finishes clears
the interrupted-write mark (Index.finish_run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence, Sized
from contextlib import AbstractContextManager, closing
from pathlib import Path
from typing import Any

from appliance.config import Settings
from appliance.durable import WORKING_MARGIN, reporting_disk_full
from appliance.errors import ApplianceError, DocumentError, SkippedDocument
from appliance.index.catalog import DocumentRow
from appliance.index.index import Index, Repair
from appliance.index.lock import writer_lock
from appliance.ingest.chunker import CHUNKER_VERSION, chunk_document
from appliance.ingest.loaders import OcrLimits, PageReader
from appliance.ingest.loaders.image_loader import SUFFIXES as IMAGE_SUFFIXES
from appliance.ingest.scan import FoundFile, display_prefix
from appliance.ingest.sources import DocumentSource, Entry, FolderSource
from appliance.ingest.writer import BatchWriter, IngestReport, PreparedDocument
from appliance.models.embedder_backends import embedding_model_id, resolve_backend
from appliance.models.registry import configured_embedder_path, load_embedder, ocr_model_path

Progress = Callable[[str, int, int], None]  # (display path, index, total; 0 when a source cannot tell)


def ingest(settings: Settings, paths: list[Path], progress: Progress | None = None) -> IngestReport:
    """Remember `paths` as sources and index them (incrementally, like reindex)."""
    resolved = [p.resolve() for p in paths]
    for path in resolved:
        if not path.exists():
            raise ApplianceError(f"{path}: no such file or folder")
    with _reporting_disk_full(settings):
        register_sources(settings, resolved)
    return reindex(settings, progress, only=[str(p) for p in resolved])


def register_sources(settings: Settings, paths: list[Path]) -> None:
    """Remember these (resolved) folders or files as sources; refuse one whose display name another source has."""
    with closing(Index(settings)) as index:
        known = {Path(s).name: s for s in index.sources()}
        for path in paths:
            other = known.get(display_prefix(path))
            if other is not None and other != str(path):
                raise ApplianceError(
                    f"{path}: a different source with the same name is already indexed ({other}); "
                    "document paths would collide. Rename one of the folders."
                )
            index.add_source(str(path))
            known[display_prefix(path)] = str(path)


def reindex(settings: Settings, progress: Progress | None = None, only: list[str] | None = None) -> IngestReport:
    """Rescan every source (or `only` these) and bring the index up to date with the files."""
    with _reporting_disk_full(settings), writer_lock(settings.lock_path, settings.index.lock_timeout_s):
        return reindex_locked(settings, progress, only)


def reindex_locked(settings: Settings, progress: Progress | None = None, only: list[str] | None = None) -> IngestReport:
    """`reindex` for a caller that holds the writer lock already (an upload writes its file and indexes it
    under one hold of the lock, so a backup never sees the one without the other)."""
    with _reporting_disk_full(settings), closing(Index(settings)) as index:
        registered = index.sources()
        roots = only if only is not None else registered
        sources = [FolderSource(Path(root), settings.ingest) for root in roots]
        return update_index(settings, index, sources, progress, complete=set(roots) >= set(registered))


def update_index(
    settings: Settings,
    index: Index,
    sources: Sequence[DocumentSource[Any]],
    progress: Progress | None = None,
    *,
    complete: bool = True,
) -> IngestReport:
    """The reindex loop: bring `index` up to date with what `sources` hold now (new, changed and gone
    documents), first repairing what an interrupted run or a wiped vector store left (Index.needs_reconcile).
    `complete`: these are all the index's sources, so the stored chunks are all made with this run's pipeline
    signature. The caller holds the writer lock.

    A full disk stops the run with DiskFull (naming the home and about the space the batch being written
    needs): every batch written before it stays, the one being written is not half there (appliance.index.writes),
    and the next run, once there is room, goes on from there."""
    with _reporting_disk_full(settings):
        started = time.monotonic()
        report = IngestReport()
        if index.needs_reconcile():
            report.repaired = _repair_json(index.reconcile())
        embedder = load_embedder(settings)
        writer = BatchWriter(index, embedder, report)
        ocr = page_reader(settings)
        signature = pipeline_signature(settings)
        rechunk = index.stored_pipeline_signature() != signature
        try:
            for source in sources:
                _sync_source(settings, index, writer, source, report, progress, ocr, rechunk=rechunk)
            writer.flush()
        finally:
            writer.close()
            report.ocr_pages, report.ocr_seconds = ocr.pages, ocr.seconds
        index.finish_run()
        if complete:
            index.record_pipeline_signature(signature)
        index.record_reindex_time()
        report.chunks_total = index.chunk_count()
        handed = index.hand_over(settings.index.serve_wait_s)
        report.vectors_applied_by, report.vectors_wait_s = handed.applied_by, handed.wait_s
        report.vectors_pending = handed.pending
        report.seconds = time.monotonic() - started
        return report


def page_reader(settings: Settings) -> PageReader:
    """OCR for this run's loaders: the model from the store, loaded on the first page that needs it."""
    ingest = settings.ingest
    limits = OcrLimits(
        dpi=ingest.ocr_dpi,
        min_words=ingest.ocr_min_words,
        max_pages=ingest.ocr_max_pages,
        max_pixels=ingest.ocr_max_pixels,
        seconds_per_page=ingest.ocr_seconds_per_page,
    )
    if not ingest.ocr:
        return PageReader(None, limits, unavailable="switched off (setting ingest.ocr)")
    try:
        model_dir = ocr_model_path(settings)
    except ApplianceError:
        why = f"the OCR model '{ingest.ocr_model}' is not in the model store {settings.models_dir}"
        why += " (appliance models init, or a bundle that has it)"
        return PageReader(None, limits, unavailable=why)
    return PageReader(model_dir, limits, threads=ingest.ocr_threads)


def pipeline_signature(settings: Settings) -> str:
    """What the stored chunks depend on besides file content; when it changes every file is re-chunked
    (cheaply: embeddings of unchanged text are reused)."""
    ingest = settings.ingest
    # Another runtime's vectors differ slightly: changing it re-embeds (torch keeps the old signature).
    backend = resolve_backend(settings.embedder.backend, settings.embedder.device, configured_embedder_path(settings))
    embedder = embedding_model_id(settings.embedder.model, backend)
    # OCR's settings decide which pages are read and how; switching it on re-reads the scans.
    ocr = f"{ingest.ocr_model}@{ingest.ocr_dpi}dpi,min_words={ingest.ocr_min_words}" if ingest.ocr else "off"
    return (
        f"chunker={CHUNKER_VERSION};max_tokens={ingest.chunk_max_tokens};overlap={ingest.chunk_overlap_tokens};"
        f"embedder={embedder};ocr={ocr}"
    )


def _reporting_disk_full(settings: Settings) -> AbstractContextManager[None]:
    """A full disk anywhere in a run, said as DiskFull naming the home (a batch's write says more itself)."""
    return reporting_disk_full(settings.home, WORKING_MARGIN, "indexing (the catalog and the vectors under it)")


def _repair_json(repair: Repair) -> dict[str, Any]:
    return {
        "vectors_added": repair.vectors_added,
        "vectors_deleted": repair.vectors_deleted,
        "fts_rebuilt": repair.fts_rebuilt,
    }


def _sync_source(
    settings: Settings,
    index: Index,
    writer: BatchWriter,
    source: DocumentSource[Entry],
    report: IngestReport,
    progress: Progress | None,
    ocr: PageReader,
    *,
    rechunk: bool = False,
) -> None:
    why = source.unavailable()
    if why is not None:
        report.failed.append({"path": source.root, "error": why})
        return
    found = source.scan()
    total = len(found) if isinstance(found, Sized) else 0
    existing = {doc.path: doc for doc in index.documents(source=source.root)}
    seen: set[str] = set()
    for position, item in enumerate(found):
        seen.add(item.display_path)
        if progress:
            progress(item.display_path, position, total)
        pending = _prepare(
            settings,
            catalog_doc=existing.get(item.display_path),
            item=item,
            source=source,
            report=report,
            index=index,
            writer=writer,
            ocr=ocr,
            rechunk=rechunk,
        )
        if pending is not None:
            writer.add(pending)
    writer.flush()
    for path in sorted(set(existing) - seen):
        index.remove_document(path)
        report.removed += 1


def _prepare(
    settings: Settings,
    *,
    catalog_doc: DocumentRow | None,
    item: Entry,
    source: DocumentSource[Entry],
    report: IngestReport,
    index: Index,
    writer: BatchWriter,
    ocr: PageReader,
    rechunk: bool = False,
) -> PreparedDocument | None:
    embedder = writer.embedder
    if item.skip is not None:
        report.skipped.append({"path": item.display_path, "reason": item.skip})
        return None
    if item.error is not None:
        _record_failure(index, item, source.root, item.error, report)
        return None
    if (
        source.trusts_stat
        and not rechunk
        and catalog_doc is not None
        and catalog_doc.status != "failed"
        and catalog_doc.size == item.size
        and catalog_doc.mtime == item.mtime
        and catalog_doc.error is None
    ):
        _count_unchanged(catalog_doc, item, report)
        return None
    try:
        sha = source.content_sha256(item)
    except OSError as exc:
        _record_failure(index, item, source.root, f"cannot read file ({exc.strerror or exc})", report)
        return None
    if (
        not rechunk
        and catalog_doc is not None
        and catalog_doc.sha256 == sha
        and catalog_doc.status != "failed"
        and not catalog_doc.error
    ):
        if catalog_doc.mtime != item.mtime:
            index.touch_document(item.display_path, item.mtime)
        _count_unchanged(catalog_doc, item, report)
        return None
    try:
        loaded = source.load(item, ocr)
        chunks = chunk_document(
            loaded,
            embedder.count_tokens,
            max_tokens=min(settings.ingest.chunk_max_tokens, embedder.max_tokens),
            overlap_tokens=settings.ingest.chunk_overlap_tokens,
        )
    except SkippedDocument as exc:  # nothing to index: no fault of the file
        if catalog_doc is not None:
            index.remove_document(item.display_path)
        report.skipped.append({"path": item.display_path, "reason": exc.reason})
        return None
    except DocumentError as exc:
        _record_failure(index, item, source.root, exc.reason, report)
        return None
    except RecursionError:
        _record_failure(index, item, source.root, "document structure is nested too deeply", report)
        return None
    report.warnings += [{"path": item.display_path, "warning": warning} for warning in loaded.warnings]
    return PreparedDocument(item, source.root, sha, loaded.doc_type, loaded.title, chunks, catalog_doc, loaded.meta)


def _count_unchanged(doc: DocumentRow, item: FoundFile, report: IngestReport) -> None:
    if doc.status == "skipped":
        report.skipped.append({"path": item.display_path, "reason": doc.error or "skipped"})
    else:
        report.unchanged += 1


def _record_failure(index: Index, item: FoundFile, source: str, reason: str, report: IngestReport) -> None:
    """A bad file is reported; an older good version of it stays searchable (Index.record_failure)."""
    report.failed.append({"path": item.display_path, "error": reason})
    index.record_failure(
        path=item.display_path,
        abs_path=str(item.abs_path),
        source=source,
        size=item.size,
        mtime=item.mtime,
        doc_type=failed_type(item.abs_path),
        error=reason,
    )


def failed_type(path: Path) -> str:
    """The type a failed file is listed under: its loader's type for images (one type, "image"), else its suffix."""
    suffix = path.suffix.lower()
    return "image" if suffix in IMAGE_SUFFIXES else suffix.lstrip(".") or "unknown"
