"""Documents an admin uploads over the API: written into the upload folder, one of the sources, and indexed by
the same code as any reindex; deleted from there (and only from there) the same way.

Everything that can refuse an upload is checked before a byte lands in the folder: the name
(appliance.uploads.names), the size, and the content, by loading it with the very loader the reindex will
use (a damaged PDF, a zip bomb posing as a .docx, binary bytes in a .md are refused here, not recorded as
a failed document). Then, under the index writer lock (so a backup or a reindex never sees the file
without its index entries): the file is written to a hidden temporary name in the folder (the scanner
skips hidden files), flushed to disk and linked or renamed into place, which is atomic; the folder is
reindexed; and if that reindex fails the folder is put back as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance.config import Settings
from appliance.durable import WORKING_MARGIN, ensure_space, fsync_dir, reporting_disk_full, size_text
from appliance.errors import ApplianceError, DiskFull, DocumentError, SkippedDocument, UploadRefused
from appliance.faults import crash_point
from appliance.index.catalog import Catalog, DocumentRow
from appliance.index.lock import writer_lock
from appliance.ingest.loaders import load_bytes
from appliance.ingest.pipeline import register_sources, reindex_locked
from appliance.ingest.scan import display_prefix
from appliance.ingest.writer import IngestReport
from appliance.uploads.names import checked_upload_name


@dataclass(frozen=True)
class UploadOutcome:
    """What an upload or a delete did to one document."""

    path: str  # the display path citations use: uploads/NAME
    outcome: str  # added | replaced | unchanged | removed
    document_id: int | None  # the catalog id (None once removed)
    status: str | None  # indexed | failed | skipped (catalog status), None once removed
    error: str | None
    chunks: int
    size: int
    seconds: float
    report: IngestReport

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "outcome": self.outcome,
            "document_id": self.document_id,
            "status": self.status,
            "error": self.error,
            "chunks": self.chunks,
            "size": self.size,
            "seconds": round(self.seconds, 3),
            "index": self.report.as_json(),
        }


def upload_limit(settings: Settings) -> int:
    """The largest file an upload may carry: the upload limit, and what the reindex would read at all."""
    return min(settings.uploads.max_file_bytes, settings.ingest.max_file_bytes)


def upload_folder(settings: Settings) -> Path:
    """The upload folder, absolute (as the catalog records sources), created when missing."""
    folder = settings.upload_dir.resolve()
    folder.mkdir(mode=0o750, parents=True, exist_ok=True)
    return folder


def check_upload(settings: Settings, raw_name: str | None, data: bytes) -> str:
    """The name to store the file under, once name, size and content pass; UploadRefused otherwise."""
    name = checked_upload_name(raw_name)
    limit = upload_limit(settings)
    if len(data) > limit:
        raise UploadRefused(413, "file", f"'{name}' is larger than {limit} bytes (setting uploads.max_file_bytes)")
    if not data:
        raise UploadRefused(422, "file", f"'{name}' is empty")
    shown = f"{display_prefix(settings.upload_dir)}/{name}"
    try:
        document = load_bytes(data, Path(name), shown)
    except SkippedDocument as exc:
        raise UploadRefused(422, "file", f"'{name}' cannot be indexed: {exc.reason}") from None
    except DocumentError as exc:
        raise UploadRefused(422, "file", f"'{name}' cannot be indexed: {exc.reason}") from None
    except RecursionError:
        raise UploadRefused(422, "file", f"'{name}' cannot be indexed: its structure is nested too deeply") from None
    if not document.text.strip():
        raise UploadRefused(422, "file", f"'{name}' cannot be indexed: no text content")
    return name


def store_upload(settings: Settings, raw_name: str | None, data: bytes, *, replace: bool = False) -> UploadOutcome:
    """Check, write and index one uploaded file; refuse (UploadRefused) with nothing written."""
    started = time.monotonic()
    name = check_upload(settings, raw_name, data)
    folder = upload_folder(settings)
    shown = f"{display_prefix(folder)}/{name}"
    target = folder / name
    needed = len(data) + WORKING_MARGIN
    storing = f"storing the upload {shown} ({size_text(len(data))}) and indexing it"
    with reporting_disk_full(target, needed, storing), writer_lock(settings.lock_path, settings.index.lock_timeout_s):
        try:
            register_sources(settings, [folder])
        except UploadRefused:
            raise
        except ApplianceError as exc:  # another source is named like the upload folder
            raise UploadRefused(409, "file", str(exc)) from None
        before = _document(settings, shown)
        exists = os.path.lexists(target)
        if exists and not replace:
            raise UploadRefused(409, "file", f"{shown} exists already: send replace=true to replace it")
        if exists and (target.is_symlink() or not target.is_file()):
            raise UploadRefused(409, "file", f"{shown} exists and is not a regular file: it is left alone")
        ensure_space(folder, needed, storing)
        kept = _place_upload(folder, target, data, replace=exists)
        try:
            report = reindex_locked(settings, only=[str(folder)])
        except BaseException as exc:
            if not _in_catalog(settings, shown, data):
                _undo(folder, target, kept)
                raise
            # The catalog took the new version before the run failed (its vectors, say, found no room): the
            # file stays, so that the folder and the index agree; the vectors catch up once there is room.
            _forget(kept)
            if isinstance(exc, DiskFull):
                stored = f"{shown} is stored and indexed, its vectors not yet: {exc}"
                raise DiskFull(stored, exc.path, exc.needed, exc.free) from exc
            raise
        _forget(kept)
        after = _document(settings, shown)
    if after is None:  # another writer removed it in between: cannot happen under the lock, said if it does
        raise UploadRefused(409, "file", f"{shown} was written but is not in the index")
    if before is None:
        outcome = "added"
    else:
        outcome = "unchanged" if before.sha256 == after.sha256 and before.status == after.status else "replaced"
    return UploadOutcome(
        shown,
        outcome,
        after.id,
        after.status,
        after.error,
        after.chunk_count,
        len(data),
        time.monotonic() - started,
        report,
    )


def delete_upload(settings: Settings, document_id: int) -> UploadOutcome:
    """Remove an uploaded document: its file from the upload folder, then its index entries (a reindex of the
    folder). A document of any other source is refused: those are managed in their own folders."""
    started = time.monotonic()
    folder = upload_folder(settings)
    with writer_lock(settings.lock_path, settings.index.lock_timeout_s):
        catalog = Catalog(settings.catalog_path)
        try:
            document = catalog.document_by_id(document_id)
        finally:
            catalog.close()
        if document is None:
            raise UploadRefused(404, "document_id", f"no document has id {document_id}")
        path = Path(document.abs_path)
        if document.source != str(folder) or path.parent != folder or path.name != document.path.rsplit("/", 1)[-1]:
            raise UploadRefused(
                409,
                "document_id",
                f"{document.path} is not an uploaded document (its source is {document.source}): only files in "
                f"the upload folder {folder} are deleted here; remove it from its own folder",
            )
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        fsync_dir(folder)
        report = reindex_locked(settings, only=[str(folder)])
    return UploadOutcome(
        document.path, "removed", None, None, None, 0, document.size, time.monotonic() - started, report
    )


def _document(settings: Settings, path: str) -> DocumentRow | None:
    catalog = Catalog(settings.catalog_path)
    try:
        return catalog.document(path)
    finally:
        catalog.close()


def _in_catalog(settings: Settings, path: str, data: bytes) -> bool:
    """Whether the catalog holds this very content at `path` (False when it cannot even be read)."""
    try:
        document = _document(settings, path)
    except Exception:
        return False
    return document is not None and document.status == "indexed" and document.sha256 == hashlib.sha256(data).hexdigest()


def _forget(kept: Path | None) -> None:
    if kept is not None:
        kept.unlink()


def _place_upload(folder: Path, target: Path, data: bytes, *, replace: bool) -> Path | None:
    """Write `data` to `target` all at once or not at all; return a hidden hard link to the file it replaced."""
    token = secrets.token_hex(8)
    temporary = folder / f".upload-{token}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        crash_point("upload_file", target)
        kept = None
        if replace:
            kept = folder / f".replaced-{token}.tmp"
            os.link(target, kept)
            os.replace(temporary, target)
        else:
            try:
                os.link(temporary, target)  # fails if the name appeared meanwhile: never overwrites
            except FileExistsError:
                raise UploadRefused(409, "file", f"{target.name} exists already: send replace=true") from None
            finally:
                temporary.unlink()
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    fsync_dir(folder)
    return kept


def _undo(folder: Path, target: Path, kept: Path | None) -> None:
    """Put the folder back as it was before the upload (its reindex failed)."""
    with contextlib.suppress(FileNotFoundError):
        if kept is not None:
            os.replace(kept, target)
        else:
            target.unlink()
    fsync_dir(folder)
