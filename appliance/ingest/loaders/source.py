"""Reading a document's bytes safely: the checks every format shares, done once before parsing."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from appliance.errors import DocumentError

if TYPE_CHECKING:
    from .page_ocr import PageReader

_MB = 1024 * 1024


@dataclass(frozen=True)
class Source:
    """Where a document's bytes came from, and the name to show for it in blocks and errors."""

    path: Path
    display_path: str
    ocr: PageReader | None = None  # reads page images (scanned PDF pages, image files); None: no OCR

    @property
    def stem(self) -> str:
        return self.path.stem


def format_size(n_bytes: int) -> str:
    """Human size: '12.5 MB', '3 KB', '100 bytes'."""
    if n_bytes >= _MB:
        value, unit = n_bytes / _MB, "MB"
    elif n_bytes >= 1024:
        value, unit = n_bytes / 1024, "KB"
    else:
        return f"{n_bytes} bytes"
    text = f"{value:.1f}"
    return f"{text.removesuffix('.0')} {unit}"


def _too_big(size: int, max_bytes: int, *, at_least: bool = False) -> str:
    shown, limit = format_size(size), format_size(max_bytes)
    if shown == limit:  # rounding hid the difference: say it in bytes
        shown, limit = f"{size:,} bytes", f"{max_bytes:,} bytes"
    prefix = "at least " if at_least else ""
    return f"file is {prefix}{shown}, over the limit of {limit} (setting ingest.max_file_bytes)"


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "cannot open the file: too many levels of symbolic links (a symlink loop?)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot read the file: permission denied"
    if exc.errno == errno.ENOENT:
        return "cannot read the file: it does not exist (or is a broken symlink)"
    words = exc.strerror or str(exc)
    return f"cannot read the file: {words[:1].lower()}{words[1:]}"


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def read_source(source: Source, max_bytes: int) -> bytes:
    """Return the file's bytes, or raise DocumentError for anything that is not a readable, sane file.

    Stats before opening so a FIFO or device is never opened (that could block forever), and reads
    at most max_bytes + 1 bytes so a file that grew after the stat cannot exhaust memory.
    """
    shown = source.display_path
    try:
        info = os.stat(source.path)
    except OSError as exc:
        raise DocumentError(shown, _os_reason(exc)) from None
    if not stat.S_ISREG(info.st_mode):
        raise DocumentError(shown, f"not a regular file (it is {_kind_of(info.st_mode)})")
    if info.st_size == 0:
        raise DocumentError(shown, "empty file")
    if info.st_size > max_bytes:
        raise DocumentError(shown, _too_big(info.st_size, max_bytes))
    try:
        with open(source.path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise DocumentError(shown, _os_reason(exc)) from None
    if not data:
        raise DocumentError(shown, "empty file")
    if len(data) > max_bytes:
        raise DocumentError(shown, _too_big(len(data), max_bytes, at_least=True))
    return data
