"""Where a run finds its documents: what the one reindex loop (appliance.ingest.pipeline.update_index) asks
of a source, and the folder that answers it (the docs folder, a folder or file given to `appliance
ingest`, the upload folder).

A BEIR corpus (appliance.evaluate.beir_index) is the other kind: its records go through the same loop as
files (change detection, chunker, embedder, writer, repair), so an evaluation measures the code that
serves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, TypeVar

from appliance.config import IngestSettings
from appliance.ingest.document import LoadedDocument
from appliance.ingest.loaders import PageReader, load_document
from appliance.ingest.scan import FoundFile, scan_source

Entry = TypeVar("Entry", bound=FoundFile)


class DocumentSource(Protocol[Entry]):
    """A source of documents, each found as an `Entry` (its display path, size and mtime at least)."""

    # Each document's `source` in the catalog: a run removes those of its documents it no longer finds.
    root: str
    # Whether an unchanged size and mtime mean unchanged content (files: yes, as make and rsync assume; a
    # record of a corpus file has no mtime of its own, so its content hash decides).
    trusts_stat: bool

    def unavailable(self) -> str | None:
        """Why nothing can be read from it now (its indexed documents are then kept), or None."""
        ...

    def scan(self) -> Iterable[Entry]:
        """The documents it holds now, by display path (a list where the total is known, for progress)."""
        ...

    def content_sha256(self, entry: Entry) -> str:
        """The hash that decides whether the entry changed; OSError when it cannot be read."""
        ...

    def load(self, entry: Entry, ocr: PageReader) -> LoadedDocument:
        """The entry as typed blocks; DocumentError (bad file) or SkippedDocument (nothing to index)."""
        ...


class FolderSource:
    """A folder (or one file) of documents on disk."""

    trusts_stat = True

    def __init__(self, path: Path, settings: IngestSettings) -> None:
        self.path = path
        self.root = str(path)
        self.settings = settings

    def unavailable(self) -> str | None:
        # An unmounted share must not wipe the index.
        return None if self.path.exists() else "source folder is missing; its documents are kept"

    def scan(self) -> list[FoundFile]:
        return scan_source(self.path, follow_symlinks=self.settings.follow_symlinks)

    def content_sha256(self, entry: FoundFile) -> str:
        return file_sha256(entry.abs_path, self.settings.max_file_bytes)

    def load(self, entry: FoundFile, ocr: PageReader) -> LoadedDocument:
        return load_document(entry.abs_path, entry.display_path, max_bytes=self.settings.max_file_bytes, ocr=ocr)


def file_sha256(path: Path, max_bytes: int) -> str:
    digest = hashlib.sha256()
    read = 0
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
            read += len(block)
            if read > max_bytes:  # the loader will refuse it; do not hash gigabytes first
                break
    return digest.hexdigest()
