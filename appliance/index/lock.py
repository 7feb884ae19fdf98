"""One writer at a time: an advisory lock file under the home, held for a whole reindex.

flock is released by the kernel when the holder dies (even by SIGKILL), so a crashed reindex
never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from appliance.errors import IndexBusy


@contextmanager
def writer_lock(path: Path, timeout_s: float, poll_s: float = 0.2) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(fd)
                    raise IndexBusy(
                        f"another reindex is running{holder} and holds {path}; waited {timeout_s:g} s "
                        "(setting index.lock_timeout_s). Try again when it has finished."
                    ) from None
                time.sleep(poll_s)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _read_holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
