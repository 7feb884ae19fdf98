"""The original bytes of an indexed document, and nothing else.

A document id is the only handle: the path comes from the catalog, never from a request. The file is
served only while it is an indexed document of a source that is still registered, it resolves inside
that source (no symbolic link leads out), it is a regular file (a named pipe is never opened: it could
block the server forever) within `ingest.max_file_bytes`. It is read once, into memory, and hashed:
bytes that differ from what was indexed are returned flagged `changed`, never as the cited version.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from appliance.config import Settings
from appliance.errors import DocumentUnavailable
from appliance.index.catalog import Catalog, DocumentRow

# Each document type's media type; text types get "; charset=utf-8" when their bytes are UTF-8.
MEDIA_TYPES = {
    "md": "text/markdown",
    "txt": "text/plain",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}
# Image documents (type "image") by file suffix.
IMAGE_MEDIA_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
}


@dataclass(frozen=True)
class Original:
    document: DocumentRow
    data: bytes
    sha256: str
    changed: bool  # the bytes on disk are not the ones that were indexed

    @property
    def media_type(self) -> str:
        media = MEDIA_TYPES.get(self.document.type) or IMAGE_MEDIA_TYPES.get(
            Path(self.document.abs_path).suffix.lower(), "application/octet-stream"
        )
        if media.startswith("text/") and _is_utf8(self.data):
            media += "; charset=utf-8"
        return media

    @property
    def file_name(self) -> str:
        return Path(self.document.abs_path).name


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _not_found(document_id: int, why: str) -> DocumentUnavailable:
    return DocumentUnavailable(404, "Document not found", f"document {document_id} {why}")


def _refused(document: DocumentRow, why: str) -> DocumentUnavailable:
    return DocumentUnavailable(409, "Document not served", f"{document.path}: {why}; reindex to bring it up to date")


def indexed_document(catalog: Catalog, document_id: int) -> DocumentRow:
    """The catalog row of an indexed document of a registered source, or DocumentUnavailable (404)."""
    document = catalog.document_by_id(document_id)
    if document is None:
        raise _not_found(document_id, "is not in the index (never indexed, or removed by a reindex)")
    if document.status != "indexed":
        raise _not_found(document_id, f"is not indexed (its status is '{document.status}'): there is nothing to open")
    if document.source not in catalog.sources():
        raise _not_found(document_id, "belongs to a source that is no longer registered")
    return document


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def read_file(settings: Settings, document: DocumentRow) -> Original:
    """The bytes of an indexed document's file (the catalog row from `indexed_document`), confined to its source."""
    source = os.path.realpath(document.source)
    if not _inside(os.path.normpath(document.abs_path), os.path.normpath(document.source)):
        raise _refused(document, "its recorded file is not inside its source")
    try:
        link = os.lstat(document.abs_path)
    except FileNotFoundError:
        raise DocumentUnavailable(
            410, "Document gone", f"{document.path}: the file is no longer on disk; the next reindex removes it"
        ) from None
    except OSError as exc:
        raise _refused(document, f"cannot read the file ({_reason(exc)})") from None
    if stat.S_ISLNK(link.st_mode) and not settings.ingest.follow_symlinks:
        raise _refused(document, "the file is now a symbolic link, not followed (setting ingest.follow_symlinks)")
    real = os.path.realpath(document.abs_path)
    if not _inside(real, source):
        raise _refused(document, "the file resolves outside its registered source (through a symbolic link)")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)  # O_NONBLOCK: a named pipe put in its place opens without waiting for a writer
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise DocumentUnavailable(410, "Document gone", f"{document.path}: the file is no longer on disk") from None
        raise _refused(document, f"cannot read the file ({_reason(exc)})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _refused(document, "the file is no longer a regular file")
        limit = settings.ingest.max_file_bytes
        if info.st_size > limit:
            raise _refused(document, f"the file is now larger than the limit of {limit} bytes (ingest.max_file_bytes)")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise _refused(document, f"the file is now larger than the limit of {limit} bytes (ingest.max_file_bytes)")
    sha = hashlib.sha256(data).hexdigest()
    return Original(document, data, sha, changed=sha != document.sha256)


def _reason(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "a symbolic link where none is followed"
    return (exc.strerror or type(exc).__name__).lower()


def host_files(catalog: Catalog, paths: list[str]) -> dict[str, str]:
    """Display path → the absolute file an operator on the host can open (what `ask` and `search` print)."""
    return {path: abs_path for path, (_, abs_path) in catalog.document_files(paths).items()}


def open_hint(file: str | None, page: int | None) -> str:
    """ "open: /srv/sops/SOP-FLT-001.pdf (page 3)": where the cited words are, for an operator on the host. A
    file below the working directory is named from there (`docs_corpus/SOP-CL-004….md` in a checkout): the
    shell that ran the command opens it as it is shown."""
    if not file:
        return ""
    return f"open: {_from_working_directory(file)}" + (f" (page {page})" if page else "")


def _from_working_directory(file: str) -> str:
    try:
        return str(Path(file).relative_to(Path.cwd()))
    except (ValueError, OSError):  # elsewhere, or the working directory is gone
        return file
