"""Watch source folders and every folder under them, also those created later, for documents that land,
change, move or go (Linux inotify, through libc: no dependency).

systemd's .path units watch one folder, not its subfolders, and SOPs live in folders by plant area: a
file dropped into docs/area-b/ would wait for the nightly timer. `appliance watch` closes that gap: it
runs beside the service and, when something under a source changed and then stayed quiet for
`settle_s`, either writes a trigger file (that appliance-reindex.path watches: systemd then starts
appliance-reindex.service, with its own sandbox and priority) or runs the reindex itself.

Hidden entries are ignored, as the scanner ignores them. A kernel queue overflow, or a folder that
could not be watched, is reported as a change: the reindex that follows rescans everything anyway.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import select
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from appliance.durable import write_atomically

IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
# A file counts once it is written and closed (a copy in progress does not), created empty, renamed,
# deleted, or has its permissions changed (an unreadable file becomes readable).
WATCHED = (
    IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)


class WatchError(OSError):
    """inotify is not available, or a source folder cannot be watched at all."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    return libc


class TreeWatcher:
    """inotify watches on every non-hidden folder under `roots`; `changes()` yields what moved.

    `recursive=False` watches the roots alone, as a systemd PathChanged= does (scripts/bench_index_lag.py
    emulates the path unit with it)."""

    def __init__(self, roots: list[Path], recursive: bool = True) -> None:
        self.roots = [root.resolve() for root in roots]
        self.recursive = recursive
        self._libc = _libc()
        self._fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self._fd < 0:
            raise WatchError(ctypes.get_errno(), f"inotify is not available: {os.strerror(ctypes.get_errno())}")
        # poll(), not select(): select() fails on a descriptor numbered 1024 or more, which a long-lived
        # process holding many files (or a test run) reaches.
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        self._folders: dict[int, Path] = {}
        self.unwatched: list[str] = []  # folders that could not be watched (the inotify limit, permissions)
        for root in self.roots:
            self.watch_tree(root)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def __enter__(self) -> TreeWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def folders(self) -> list[Path]:
        return sorted(self._folders.values())

    def watch_tree(self, top: Path) -> list[Path]:
        """Watch `top` and every non-hidden folder below it; the files already there (a folder moved or
        copied in brings its files along before its watch exists)."""
        files: list[Path] = []
        for folder, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".")] if self.recursive else []
            wd = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), WATCHED | IN_ONLYDIR)
            if wd < 0:
                self.unwatched.append(f"{folder}: {os.strerror(ctypes.get_errno())}")
                continue
            self._folders[wd] = Path(folder)
            files.extend(Path(folder) / name for name in names if not name.startswith("."))
        return files

    def changes(self, timeout_s: float) -> list[Path]:
        """What changed within `timeout_s` (empty when nothing did); watches follow new folders."""
        if not self._poller.poll(max(0, int(timeout_s * 1000))):
            return []
        changed: list[Path] = []
        for wd, mask, name in self._read():
            if mask & IN_Q_OVERFLOW:  # events were lost: watch everything again, report a change
                changed.extend(self.roots)
                for root in self.roots:
                    self.watch_tree(root)
                continue
            folder = self._folders.get(wd)
            if mask & IN_IGNORED:  # the folder went away (deleted, or moved out and then lost)
                self._folders.pop(wd, None)
                continue
            if folder is None:
                continue
            if not name:  # the watched folder itself was deleted or moved
                changed.append(folder)
                continue
            if name.startswith("."):
                continue
            path = folder / name
            changed.append(path)
            if self.recursive and mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                changed.extend(self.watch_tree(path))
        return changed

    def _read(self) -> Iterator[tuple[int, int, str]]:
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + length]
                offset += _EVENT.size + length
                yield wd, mask, os.fsdecode(raw.rstrip(b"\0"))


def watch(
    roots: list[Path],
    on_change: Callable[[list[Path]], None],
    *,
    settle_s: float,
    should_stop: Callable[[], bool] = lambda: False,
    poll_s: float = 1.0,
    on_ready: Callable[[TreeWatcher], None] = lambda _: None,
) -> None:
    """Call `on_change(paths)` once the changes under `roots` have been quiet for `settle_s`, until
    `should_stop()` (checked at least every `poll_s`). `on_ready` is called once the watches are in place."""
    with TreeWatcher(roots) as watcher:
        on_ready(watcher)
        pending: list[Path] = []
        quiet_since = 0.0
        while not should_stop():
            found = watcher.changes(min(poll_s, settle_s) if pending else poll_s)
            now = time.monotonic()
            if found:
                pending.extend(found)
                quiet_since = now
            elif pending and now - quiet_since >= settle_s:
                batch, pending = pending, []
                on_change(sorted(set(batch)))


def write_trigger(path: Path, changed: list[Path]) -> None:
    """Replace `path` with a line naming what changed.

    Written to a sibling and renamed over `path`, so a reader never sees it empty or half written; a
    systemd PathChanged= on it fires on the rename (IN_MOVED_TO) as it would on a close after writing.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    first = str(changed[0]) if changed else ""
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    write_atomically(path, f"{time.time():.3f} changed: {first}{more}\n")
