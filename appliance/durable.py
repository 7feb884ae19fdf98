"""Writes that survive a crash, and a full disk said plainly.

`write_atomically` replaces a file whole or not at all: the bytes go to a hidden sibling, are flushed to
disk, renamed over the file, and the rename is flushed too (`fsync_dir`). A crash leaves the old file or
the new one; a full disk leaves the old one and no temporary behind.

A full disk (ENOSPC, a quota, SQLite's SQLITE_FULL) becomes `DiskFull`, whose message names the path, the
space the work needs and what is free there: `disk_full`, `ensure_space` before a write whose size is
known, `reporting_disk_full` around one whose failure is to be translated.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from appliance.errors import DiskFull
from appliance.faults import crash_point

_DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# SQLITE_FULL, and SQLITE_IOERR_SHMSIZE: a WAL database's shared-memory file could not grow (on a full disk, a
# connection cannot even open).
_SQLITE_FULL_CODES = (13, 4874)
# How a full disk reads in the text of errors that carry no errno (the vector store's Rust core: "(code: 13)
# database or disk is full", "No space left on device (os error 28)").
_DISK_FULL_WORDS = ("database or disk is full", "no space left on device", "(os error 28)", "disk quota exceeded")
# What any write to a home needs besides its data: SQLite's write-ahead log and shared memory, lock files.
WORKING_MARGIN = 1 << 20


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (a file created, renamed or removed in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes | str, *, mode: int = 0o644) -> None:
    """Replace `path` with `data` (text is written as UTF-8) all at once or not at all, with this mode
    whatever the umask; DiskFull, with the old file in place, when the disk has no room for it."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point("atomic_write", path)
        os.replace(temporary, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        if is_disk_full(exc):
            raise disk_full(path, len(payload), f"writing {path.name}") from exc
        raise
    fsync_dir(path.parent)


def is_disk_full(exc: BaseException, near: Path | None = None) -> bool:
    """Whether `exc` (or an error it was raised from) says the disk is full; with `near`, also an error of the
    vector store (whose compaction hides the cause: "Failed to apply logs to the metadata segment") while the
    file system of `near` has less than WORKING_MARGIN free."""
    if near is not None and _hides_its_cause(exc) and free_bytes(near) < WORKING_MARGIN:
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DiskFull):
            return True
        if isinstance(current, OSError) and current.errno in _DISK_FULL_ERRNOS:
            return True
        if isinstance(current, sqlite3.Error) and getattr(current, "sqlite_errorcode", None) in _SQLITE_FULL_CODES:
            return True
        if any(words in str(current).lower() for words in _DISK_FULL_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def _hides_its_cause(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "chromadb"


def free_bytes(path: Path) -> int:
    """The space free for this user on the file system that holds `path` (or would hold it)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def tree_size(path: Path) -> int:
    """The bytes of a file, or of the files under a folder (links not followed); 0 when it does not exist."""
    if path.is_file():
        return path.stat().st_size
    if not path.is_dir():
        return 0
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file() and not entry.is_symlink())


def size_text(size: int) -> str:
    if size < 1 << 10:
        return f"{size} bytes"
    if size < 1 << 20:
        return f"{size / (1 << 10):.1f} KiB"
    if size < 1 << 30:
        return f"{size / (1 << 20):.1f} MiB"
    return f"{size / (1 << 30):.2f} GiB"


def disk_full(path: Path, needed: int | None, what: str) -> DiskFull:
    """The error for a write that found no room: the path, the space needed (None: unknown), what is free."""
    free = free_bytes(path)
    need = f"needs about {size_text(needed)}" if needed else "needs more space"
    return DiskFull(
        f"{path}: no space left on the device: {what} {need}, {size_text(free)} free there; "
        "free some space and run it again",
        str(path),
        needed,
        free,
    )


def ensure_space(path: Path, needed: int, what: str) -> None:
    """DiskFull before anything is written when the file system of `path` has less than `needed` bytes free."""
    if free_bytes(path) < needed:
        raise disk_full(path, needed, what)


@contextlib.contextmanager
def reporting_disk_full(path: Path, needed: int | None, what: str, *, restate: bool = False) -> Iterator[None]:
    """Turn a full disk inside the block into DiskFull naming `path`. A DiskFull raised inside stays as it is,
    unless `restate`: then it is said again for `path` (a file in a work folder that is gone by then)."""
    try:
        yield
    except DiskFull as exc:
        if restate:
            raise disk_full(path, needed, what) from exc
        raise
    except Exception as exc:
        if is_disk_full(exc, near=path):
            raise disk_full(path, needed, what) from exc
        raise
