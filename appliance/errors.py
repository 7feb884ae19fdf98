"""Error types shared by the library, the CLI (exit codes) and later the HTTP API."""

from __future__ import annotations


class ApplianceError(Exception):
    """Base class: a failure the user can act on, with a message that says what and where."""

    exit_code = 1


class ConfigError(ApplianceError):
    """A setting is missing, malformed or out of bounds (names the setting and its source)."""

    exit_code = 2


class DocumentError(ApplianceError):
    """One document could not be read. The run goes on; the file is reported with this reason."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SkippedDocument(DocumentError):
    """A file that is not indexed, and that is no fault of the file: skipped with its reason, not failed."""


class UnsupportedDocument(SkippedDocument):
    """The file's type is not one the appliance indexes."""


class NothingToIndex(SkippedDocument):
    """A readable file of a supported type that holds no text: only front matter (a Hugo `_index.md`, an
    archetype), only whitespace, only comments. An empty (0-byte) file is a failure instead: it is what a
    copy that broke off leaves behind."""


class ModelNotFound(ApplianceError):
    """A model is not in the local model store. Nothing is ever downloaded at run time."""


class IndexBusy(ApplianceError):
    """Another process holds the index writer lock."""


class GeneratorBusy(ApplianceError):
    """Every slot of the generation queue is taken (the API maps this to 503 with Retry-After)."""


class GeneratorError(ApplianceError):
    """The generator failed: a model that does not load, a remote server that errs or times out."""


class VectorStoreUnavailable(ApplianceError):
    """The Chroma server named by vectors.url cannot be reached, does not answer like Chroma, or stopped
    answering. The CLI exits 1; the API answers 503."""

    exit_code = 1


class DocumentUnavailable(ApplianceError):
    """An indexed document's original file cannot be served as it is (the API answers `status`):
    unknown or not indexed (404), gone from disk (410), or no longer what was indexed in a way that
    must not be served: a link out of its source, not a regular file, unreadable (409)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title


class UploadRefused(ApplianceError):
    """An upload or a delete that is refused before anything is written (the API answers `status`, naming
    the form field, or the document, at fault): wrong type, too large, an unsafe name, a name taken."""

    def __init__(self, status: int, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.status = status
        self.field = field
        self.detail = detail


class BackupError(ApplianceError):
    """A backup cannot be taken or restored: a tampered, partial or unknown backup (naming the file at fault),
    a running appliance, a home that is not empty."""


class DiskFull(ApplianceError):
    """A write found no space left on its device (ENOSPC, a quota, SQLite's "database or disk is full"). The
    message names the path, the space the work needs and what is free (appliance.durable writes it); what
    was there before the write is kept. The API answers 507."""

    def __init__(self, message: str, path: str, needed: int | None, free: int | None) -> None:
        super().__init__(message)
        self.path = path
        self.needed = needed
        self.free = free
