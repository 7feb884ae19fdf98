"""Find the files under a source and give each its display path.

A document's path as shown to users (and used in citations) is the source folder's own name
followed by the path inside it: `docs_corpus/SOP-CL-004.md`. Hidden files and folders (.git,
editor swap files) are not documents.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISFIFO, S_ISREG


@dataclass(frozen=True)
class FoundFile:
    display_path: str
    abs_path: Path
    size: int
    mtime: float
    error: str | None = None  # stat failed (symlink loop, permission): reported as failed
    skip: str | None = None  # deliberately not read (a symlink when links are not followed)


def display_prefix(source: Path) -> str:
    return source.name


def scan_source(source: Path, *, follow_symlinks: bool = False) -> list[FoundFile]:
    """Every candidate file under `source` (or `source` itself when it is a file), sorted."""
    if source.is_file():
        return [_found(source, source.name, follow_symlinks)]
    found: list[FoundFile] = []
    prefix = display_prefix(source)
    for root, dirs, files in os.walk(source, followlinks=follow_symlinks):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(root) / name
            relative = path.relative_to(source).as_posix()
            found.append(_found(path, f"{prefix}/{relative}", follow_symlinks))
    return sorted(found, key=lambda f: f.display_path)


def _found(path: Path, display: str, follow_symlinks: bool) -> FoundFile:
    undecodable = _undecodable_byte(display)
    if undecodable is not None:
        # Python keeps such a name as lone surrogates, which neither SQLite, the chunk ids nor the
        # terminal can take: name the file with its byte escaped, and leave it out.
        shown = display.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        reason = f"file name is not valid UTF-8 (byte 0x{undecodable:02x}): rename the file to index it"
        return FoundFile(shown, path, 0, 0.0, skip=reason)
    if path.is_symlink() and not follow_symlinks:
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            return FoundFile(display, path, 0, 0.0, f"broken or looping symbolic link ({_reason(exc)})")
        return FoundFile(
            display, path, 0, 0.0, skip=f"symbolic link to {target} not followed (setting ingest.follow_symlinks)"
        )
    try:
        stat = path.stat()
    except OSError as exc:
        return FoundFile(display, path, 0, 0.0, f"cannot read file metadata ({_reason(exc)})")
    if not S_ISREG(stat.st_mode):
        # A named pipe would block the reader (and the writer lock) until someone writes to it.
        kind = "a named pipe" if S_ISFIFO(stat.st_mode) else "a socket or device"
        return FoundFile(display, path, 0, 0.0, skip=f"not a regular file ({kind}): left alone")
    return FoundFile(display, path, stat.st_size, stat.st_mtime)


def _undecodable_byte(name: str) -> int | None:
    """The first byte of a file name that is not UTF-8 (os.walk hands it over as a lone surrogate)."""
    for char in name:
        if "\udc80" <= char <= "\udcff":
            return ord(char) - 0xDC00
    return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__
