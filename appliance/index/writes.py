"""The index's writes, in the order that keeps the catalog (the truth) and the vectors (derived from it)
consistent through a crash at any moment.

With a Chroma server, which every process writes itself, for each batch of documents:
  1. mark the vectors dirty in the catalog (a crash from here on is repaired by Index.reconcile);
  2. upsert the new chunks' vectors (a stray vector is invisible: every hit goes through the catalog);
  3. replace the documents in the catalog in one transaction (chunks, both FTS5 tables, document rows);
  4. delete the vectors of the chunks they replaced;
  5. record the catalog's change log as applied.
A removal is steps 1, 3 (the document's rows deleted), 4 and 5. The run clears the dirty mark when it
has finished (`finish_run`): a reindex that finds it set, an interrupted write, reconciles first.

With the local store, each batch is one catalog transaction, whose chunk changes land in the catalog's
change log in that same transaction; then the owner of the store applies the log (this process when it
owns the store, else the running server that does: appliance.index.vector_sync).

The crash points (appliance.faults) sit between the steps on both paths, so a crash test kills at the
same named moment, the same number of times, whichever store is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from appliance.faults import crash_point
from appliance.index import vector_sync
from appliance.index.catalog import Catalog
from appliance.index.records import Chunk, DocumentMeta
from appliance.index.vectors import VectorIndex

VECTORS_DIRTY = "vectors_dirty"


@dataclass(frozen=True)
class EmbeddedDocument:
    """A document loaded, chunked and embedded: what a write puts in the index, replacing any older version."""

    path: str  # the display path, as citations show it
    abs_path: str
    source: str
    sha256: str
    size: int
    mtime: float
    doc_type: str
    title: str | None
    chunks: Sequence[Chunk]
    embeddings: np.ndarray  # float32, one row per chunk, in the chunks' order
    embedding_model: str
    meta: DocumentMeta | None = None  # its control block, page furniture and loader warnings


class Stores(Protocol):
    """What the writes need of the index: the catalog, the vectors (opened when first used, as before any
    write of this order), and, with the local store, the owner's application of the change log."""

    catalog: Catalog

    @property
    def local(self) -> bool: ...

    @property
    def vectors(self) -> VectorIndex: ...

    def sync(self) -> object: ...


def write_documents(stores: Stores, documents: Sequence[EmbeddedDocument]) -> None:
    """Write these documents (one batch) to both stores in the order above."""
    catalog = stores.catalog
    replaced: set[str] = set()  # chunks the catalog holds now that the new versions do not keep
    if not stores.local:
        for doc in documents:
            replaced |= set(catalog.chunk_ids_of(doc.path)) - {chunk.chunk_id for chunk in doc.chunks}
        _mark_dirty(catalog)
        ids = [chunk.chunk_id for doc in documents for chunk in doc.chunks]
        if ids:
            embeddings = np.concatenate([doc.embeddings for doc in documents if doc.chunks])
            paths = [doc.path for doc in documents for _ in doc.chunks]
            stores.vectors.upsert(ids, embeddings, paths)
    crash_point("after_vectors_upsert")
    with catalog.transaction():
        for doc in documents:
            catalog.replace_document_in_transaction(
                path=doc.path,
                abs_path=doc.abs_path,
                source=doc.source,
                sha256=doc.sha256,
                size=doc.size,
                mtime=doc.mtime,
                doc_type=doc.doc_type,
                title=doc.title,
                status="indexed",
                error=None,
                chunks=doc.chunks,
                embeddings=doc.embeddings,
                embedding_model=doc.embedding_model,
                meta=doc.meta,
            )
            crash_point("inside_catalog_transaction")
    crash_point("after_catalog_commit")
    if stores.local:
        stores.sync()
    else:
        stores.vectors.delete(sorted(replaced))
        vector_sync.mark_applied(catalog)
    crash_point("after_vectors_delete")


def remove_document(stores: Stores, path: str) -> None:
    """Remove one document (its chunks and their vectors) in the order above."""
    catalog = stores.catalog
    if not stores.local:
        _mark_dirty(catalog)
    old_ids = catalog.chunk_ids_of(path)
    catalog.remove_document(path)
    crash_point("after_catalog_remove")
    if stores.local:
        stores.sync()
    else:
        stores.vectors.delete(old_ids)
        vector_sync.mark_applied(catalog)


def unfinished(catalog: Catalog) -> bool:
    """A run began writing the vectors of a Chroma server and has not finished: the dirty mark is set."""
    return catalog.get_state(VECTORS_DIRTY) == "1"


def finish_run(catalog: Catalog) -> None:
    """The run has written everything: clear the dirty mark (a state write only when it was set)."""
    if unfinished(catalog):
        catalog.set_state(VECTORS_DIRTY, "0")


def _mark_dirty(catalog: Catalog) -> None:
    if not unfinished(catalog):
        catalog.set_state(VECTORS_DIRTY, "1")
