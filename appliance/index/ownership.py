"""Which process owns the local vector store: one at a time, by an advisory lock beside the folder.

A Chroma PersistentClient keeps its HNSW graph in memory and never reads the files again, and two
processes writing one store would each persist their own graph over the other's. So one process at
a time, the owner, writes the local store: it applies what the catalog's change log says to it
(appliance.index.vector_sync). Any other process writes only the catalog, the source of truth, and
leaves its changes in that log for the owner. The running server claims the store when it starts and
keeps it; a CLI command claims it only when it is free.

flock is released by the kernel when the holder dies (even by SIGKILL). Two flocks taken by one
process on two descriptors of the same file conflict, so every Index of a process shares one claim
(`local_store(path)`). Whether the process owns the store is decided when its first user opens it
and holds until its last user closes it: a client opened without owning it may hold an old graph, and
writing through it would spread that graph.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from appliance.errors import VectorStoreUnavailable

CLAIM_POLL_S = 0.05


@dataclass(eq=False)
class LocalStore:
    """The local vector store at `path`, as this process sees it: owned or not, and by how many users."""

    path: Path
    # Serializes applying changes and the reads that must see the store and the catalog at one state.
    guard: threading.RLock = field(default_factory=threading.RLock)
    _fd: int | None = None
    _users: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".owner")

    @property
    def owned(self) -> bool:
        return self._fd is not None

    def enter(self, wait_s: float = 0.0, required: bool = False) -> bool:
        """One more user of the store in this process; whether the process owns it.

        The first user claims it (waiting up to `wait_s` for another owner to let go; other users of this
        process are not held up meanwhile). `required`: a process that serves questions must own it, so not
        owning it is an error naming the holder."""
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                if self._users == 0 and not self.owned:
                    self._try_claim()
                # Owned, or not needed, or decided for now (other users of this process opened it unowned).
                if self.owned or not required or self._users > 0 or time.monotonic() >= deadline:
                    if required and not self.owned:
                        holder = self.holder() or "another process"
                        raise VectorStoreUnavailable(
                            f"the local vector store {self.path} is held by {holder}, which writes it now; this "
                            f"server answers from it only as its owner (waited {wait_s:g} s, setting "
                            "index.lock_timeout_s). It is claimed as soon as that process lets go"
                        )
                    self._users += 1
                    return self.owned
            time.sleep(CLAIM_POLL_S)

    def leave(self) -> None:
        """One user fewer; the last one lets go of the claim."""
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0 and self._fd is not None:
                os.close(self._fd)  # closing releases the lock
                self._fd = None

    def _try_claim(self) -> None:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({_command()})".encode(), 0)
        self._fd = fd

    def holder(self) -> str | None:
        """Who owns the store: "this process", the other process's pid and command, or None when nobody does."""
        if self.owned:
            return "this process"
        try:
            fd = os.open(self.lock_path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)


def _command() -> str:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    return " ".join([name, *sys.argv[1:2]])  # "appliance serve", "appliance ingest"


_stores: dict[Path, LocalStore] = {}
_stores_lock = threading.Lock()


def local_store(path: Path) -> LocalStore:
    """This process's view of the local store at `path` (one per folder, shared by every Index)."""
    key = Path(os.path.abspath(path))
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = LocalStore(key)
        return store
