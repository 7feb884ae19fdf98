"""The index as a whole: catalog (truth) + vectors (derived), their consistency and repair.

With the local vector store (no vectors.url), one process at a time owns it (appliance.index.ownership)
and brings it to the catalog's state by applying the catalog's change log (appliance.index.vector_sync):
after each write of its own, before each consistent read (`reading`), and whenever a running server
polls (`sync`). A process that does not own the store writes only the catalog; the owner applies it.

The index owns its writes: ingest hands it embedded documents and removals, and the index writes both
stores in the crash-safe order (appliance.index.writes); a run's state (the dirty mark, the pipeline
signature the chunks were made with, the hand-over of the change log) is kept here under names that say
what it means. Ingest loads, chunks and embeds; it reads and writes the index only through these methods.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from appliance.config import Settings
from appliance.durable import is_disk_full
from appliance.errors import VectorStoreUnavailable
from appliance.faults import crash_point
from appliance.index import vector_sync, writes
from appliance.index.catalog import Catalog, DocumentRow
from appliance.index.ownership import LocalStore, local_store
from appliance.index.records import DocumentMeta
from appliance.index.snapshot import CatalogCopy, copy_database
from appliance.index.vectors import VectorIndex
from appliance.index.writes import EmbeddedDocument

# A run's state in the catalog: what the stored chunks were made with (their file content aside; a change
# re-chunks every file) and when the last reindex finished.
PIPELINE_SIGNATURE = "pipeline_signature"
LAST_REINDEX = "last_reindex"
# A read that keeps finding a newer commit than the vectors it just brought up to date gives up after
# this many tries and reads anyway (the newest batch may then be missing from its dense side).
READ_ATTEMPTS = 5


@dataclass
class Consistency:
    consistent: bool
    catalog_chunks: int
    vector_count: int
    missing_vectors: int = 0
    stray_vectors: int = 0
    fts_problems: list[str] = field(default_factory=list)
    interrupted_write: bool = False
    pending_changes: int = 0  # committed to the catalog, not yet applied to the vectors


@dataclass
class Repair:
    vectors_added: int = 0
    vectors_deleted: int = 0
    fts_rebuilt: bool = False


@dataclass(frozen=True)
class Freshness:
    """How current the vectors are: what a search answers from, next to what the catalog holds."""

    applied_seq: int
    updated_at: float | None  # unix time of the newest change the vectors reflect
    pending_changes: int
    owner: str | None  # local store: who applies the changes ("this process", "pid N (…)", None: nobody)


@dataclass(frozen=True)
class HandOver:
    """After a run: who brings the vectors to the catalog's state ("this process", the running server that
    owns the local store "pid N (appliance serve …)", the Chroma server, or None: nobody owns the store now,
    the next process that opens it does), how long that owner took to apply the run's changes, and how
    many it had not applied when the run returned."""

    applied_by: str | None
    wait_s: float | None = None
    pending: int = 0


class Index:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.catalog = Catalog(settings.catalog_path)
        self._vectors: VectorIndex | None = None
        self._store: LocalStore | None = local_store(settings.chroma_path) if not settings.vectors.url else None
        self._entered = False
        self._owned = False
        self._serve_wait_s: float | None = None
        self._reading = False

    # --- the vector store and who writes it ----------------------------------------------------

    @property
    def local(self) -> bool:
        """The vectors live in the local store under the home (no Chroma server)."""
        return self._store is not None

    def serve(self, wait_s: float) -> None:
        """This index answers questions for a long-running server: it must own the local store (waiting up
        to `wait_s` for a CLI run that holds it), or answer 503 naming the holder, never from old vectors."""
        self._serve_wait_s = wait_s

    @property
    def owns_vectors(self) -> bool:
        """Whether this process writes the vectors: always with a Chroma server, as the owner locally."""
        if self._store is None:
            return True
        self._enter()
        return self._owned

    def _enter(self) -> None:
        if self._store is not None and not self._entered:
            serving = self._serve_wait_s is not None
            try:
                self._owned = self._store.enter(self._serve_wait_s or 0.0, required=serving)
            except VectorStoreUnavailable:
                # Waited once; from now on each request answers 503 at once, and the server's sync thread
                # keeps claiming (a request must not hold the others up for the whole wait again).
                self._serve_wait_s = 0.0
                raise
            self._entered = True

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            self._enter()
            self._vectors = VectorIndex(self.settings.vectors, self.settings.chroma_path)
        return self._vectors

    def close(self) -> None:
        if self._vectors is not None:
            self._vectors.close()
            self._vectors = None
        if self._store is not None and self._entered:
            self._store.leave()
            self._entered = False
        self.catalog.close()

    def _guard(self) -> AbstractContextManager[object]:
        """The process-wide guard of the local store (nothing to guard with a Chroma server)."""
        return self._store.guard if self._store is not None else nullcontext()

    def sync(self) -> vector_sync.Applied:
        """Apply the catalog's change log to the local store when this process owns it (else nothing)."""
        if self._store is None or self._reading or not self.owns_vectors:
            return vector_sync.Applied()
        with self._store.guard:
            return vector_sync.apply_changes(self.catalog, self.vectors)

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Catalog reads from one committed state, with the local vectors brought to exactly that state
        first (the owner), so no document is half visible: its chunks and its vectors are one version.
        Re-entrant; the catalog connection must not be used by another thread meanwhile."""
        if self._reading:
            yield
            return
        conn = self.catalog.conn
        owner = self._store is not None and self.owns_vectors
        with self._guard():
            for attempt in range(READ_ATTEMPTS):
                if owner:
                    owner = self._apply_for_reading()
                conn.execute("BEGIN")
                if not owner or attempt == READ_ATTEMPTS - 1 or not vector_sync.pending(conn):
                    break
                conn.execute("COMMIT")  # a commit landed in between: apply it too
            self._reading = True
            try:
                yield
            finally:
                self._reading = False
                conn.execute("COMMIT")

    def _apply_for_reading(self) -> bool:
        """Apply the change log before a read; on a full disk the catalog answers alone (a hit goes through the
        catalog, so vectors that lag behind it only miss the newest chunks) until there is room: False."""
        try:
            vector_sync.apply_changes(self.catalog, self.vectors)
        except Exception as exc:
            if not is_disk_full(exc, near=self.settings.chroma_path):
                raise
            return False
        return True

    def vectors_owner(self) -> str | None:
        """Local store: who applies the changes ("this process", "pid N (…)", None: nobody now)."""
        return self._store.holder() if self._store is not None else None

    def freshness(self) -> Freshness:
        at = self.catalog.get_state(vector_sync.APPLIED_AT)
        return Freshness(
            applied_seq=vector_sync.applied_seq(self.catalog.conn),
            updated_at=float(at) if at else None,
            pending_changes=self.pending_changes(),
            owner=self.vectors_owner(),
        )

    def pending_changes(self) -> int:
        """Changes committed to the catalog that the vectors do not reflect yet."""
        return vector_sync.pending(self.catalog.conn)

    def wait_until_applied(self, seq: int, timeout_s: float, poll_s: float = 0.05) -> float | None:
        """Seconds until the owner had applied every change up to `seq`; None if not within `timeout_s`."""
        started = time.monotonic()
        while vector_sync.applied_seq(self.catalog.conn) < seq:
            if time.monotonic() - started >= timeout_s:
                return None
            time.sleep(poll_s)
        return time.monotonic() - started

    def check(self) -> Consistency:
        self.sync()  # the owner checks what it serves: its vectors brought up to date first
        catalog_ids = self.catalog.all_chunk_ids()
        vector_ids = self.vectors.ids()
        fts = self.catalog.fts_integrity()
        missing = len(catalog_ids - vector_ids)
        stray = len(vector_ids - catalog_ids)
        interrupted = self.writes_unfinished() or vector_sync.interrupted(self.catalog.conn)
        return Consistency(
            consistent=not (missing or stray or fts),
            catalog_chunks=len(catalog_ids),
            vector_count=len(vector_ids),
            missing_vectors=missing,
            stray_vectors=stray,
            fts_problems=fts,
            interrupted_write=interrupted,
            pending_changes=self.pending_changes(),
        )

    def needs_reconcile(self) -> bool:
        """What a reindex asks before its work: an interrupted earlier write, or Chroma holding another
        number of vectors than the catalog has chunks (vectors deleted or wiped behind the catalog's
        back, e.g. on a Chroma server). Cheap: one count each; `check` compares the id sets. A process that
        does not own the local store leaves that to the owner."""
        if not self.owns_vectors:
            return False
        if self.writes_unfinished() or vector_sync.interrupted(self.catalog.conn):
            return True
        return self.vectors.count() != self.catalog.counts()["chunks"]

    def reconcile(self) -> Repair:
        """Make Chroma and FTS5 agree with the catalog. Idempotent; safe after any crash."""
        with self._guard():
            return self._reconcile()

    def _reconcile(self) -> Repair:
        repair = Repair()
        # Chroma is made equal to the catalog as of here; changes committed later are applied after.
        covered = vector_sync.latest_seq(self.catalog.conn)
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
            self.vectors.upsert(ids, np.stack([vector for _, vector in pairs]), [rows[i].path for i in ids])
            repair.vectors_added = len(ids)
        vector_sync.mark_applied(self.catalog, covered)
        return repair

    # --- writes: both stores, in the crash-safe order (appliance.index.writes) -------------------

    def write_documents(self, documents: Sequence[EmbeddedDocument]) -> None:
        """Write a batch of embedded documents, each replacing whatever version of it was indexed."""
        writes.write_documents(self, documents)

    def remove_document(self, path: str) -> None:
        """Remove a document: its row, its chunks and their vectors."""
        writes.remove_document(self, path)

    def record_failure(
        self, *, path: str, abs_path: str, source: str, size: int, mtime: float, doc_type: str, error: str
    ) -> None:
        """A document could not be (re)indexed. An indexed version of it stays searchable, with the error
        noted; otherwise it is listed as failed, with nothing to search (so no chunks, no vectors change)."""
        existing = self.catalog.document(path)
        if existing is not None and existing.status == "indexed":
            self.catalog.note_error(path, error)
            return
        self.catalog.replace_document(
            path=path,
            abs_path=abs_path,
            source=source,
            sha256=None,
            size=size,
            mtime=mtime,
            doc_type=doc_type,
            title=None,
            status="failed",
            error=error,
            chunks=[],
            embeddings=None,
            embedding_model="",
        )

    def touch_document(self, path: str, mtime: float) -> None:
        """Same content, new mtime (e.g. `touch`): remember it so the next scan skips hashing."""
        self.catalog.touch_document(path, mtime)

    def add_source(self, path: str) -> None:
        """Remember a folder or file (resolved) as a source that reindex scans."""
        self.catalog.add_source(path)

    # --- a backup's snapshot (appliance.index.snapshot) ------------------------------------------

    def snapshot(self, target: Path) -> CatalogCopy:
        """Copy the catalog, as one committed state, to the new file `target` while readers and writers go
        on (a backup holds the writer lock meanwhile, so its upload files match). The copy is then sealed
        and its vectors exported on their own, without this index."""
        copy_database(self.catalog.path, target)
        return CatalogCopy(target)

    # --- a run's state -------------------------------------------------------------------------

    def writes_unfinished(self) -> bool:
        """A run began writing the vectors of a Chroma server and did not finish (the dirty mark is set)."""
        return writes.unfinished(self.catalog)

    def finish_run(self) -> None:
        """A run has written everything it meant to: clear the dirty mark."""
        writes.finish_run(self.catalog)

    def stored_pipeline_signature(self) -> str | None:
        """The pipeline signature the stored chunks were made with (None before the first full reindex)."""
        return self.catalog.get_state(PIPELINE_SIGNATURE)

    def record_pipeline_signature(self, signature: str) -> None:
        """Every source was chunked with this pipeline signature."""
        self.catalog.set_state(PIPELINE_SIGNATURE, signature)

    def record_reindex_time(self) -> None:
        """A reindex finished now (`appliance status` shows it)."""
        self.catalog.set_state(LAST_REINDEX, str(time.time()))

    def stored_embeddings(self, text_shas: Iterable[str], model: str) -> dict[str, np.ndarray]:
        """Text sha256 → the embedding `model` already made of that text: edits re-embed only what changed."""
        return self.catalog.embeddings_by_text_sha(text_shas, model)

    def hand_over(self, wait_s: float) -> HandOver:
        """A run is done writing: who applies its changes to the vectors. When another process owns the
        local store (the running server), wait up to `wait_s` for it to apply them."""
        if not self.local:
            return HandOver(f"the Chroma server at {self.vectors.location}")
        if self.owns_vectors:
            return HandOver("this process")
        seq = vector_sync.hand_over(self.catalog)
        owner = self.vectors_owner()
        waited = self.wait_until_applied(seq, wait_s) if owner is not None else None
        return HandOver(owner, waited, self.pending_changes())

    # --- what a run reads ----------------------------------------------------------------------

    def sources(self) -> list[str]:
        return self.catalog.sources()

    def documents(self, source: str | None = None) -> list[DocumentRow]:
        """Every document (or those of one source), by path."""
        return self.catalog.documents(source)

    def document(self, path: str) -> DocumentRow | None:
        return self.catalog.document(path)

    def document_meta(self, paths: Iterable[str]) -> dict[str, DocumentMeta]:
        """Display path → each document's control block (number, revision, dates), furniture and warnings."""
        return self.catalog.document_meta(paths)

    def chunk_count(self) -> int:
        return self.catalog.counts()["chunks"]
