"""Fault injection for crash and full-disk tests, at named points of a write.

APPLIANCE_FAULT_KILL_AT=<point> (the first time the point is reached) or <point>:<n> (the n-th time)
SIGKILLs the process there. APPLIANCE_FAULT_DISK_FULL_AT=<point>[:<n>] raises there what a full disk
raises (OSError ENOSPC), and at every point reached after it (a full disk stays full); the point `*`
counts every point, so `*:<n>` fails from the n-th point on, whichever it is (random points, for the
full-disk suite). Unset, `crash_point` is two dictionary lookups and nothing else. The points are the
moments between the steps of a write where a power cut, an OOM kill or a full disk would hurt most.
"""

from __future__ import annotations

import errno
import os
import signal

ENV = "APPLIANCE_FAULT_KILL_AT"
DISK_FULL_ENV = "APPLIANCE_FAULT_DISK_FULL_AT"
_hits: dict[str, int] = {}
_disk_full_hits: dict[str, int] = {}


def crash_point(name: str, path: str | os.PathLike[str] | None = None) -> None:
    """A named moment of a write (`path`: what it writes, named by an injected full-disk error)."""
    spec = os.environ.get(ENV)
    if spec and _due(spec, name, _hits):
        os.kill(os.getpid(), signal.SIGKILL)
    spec = os.environ.get(DISK_FULL_ENV)
    if spec and _due(spec, name, _disk_full_hits):
        filename = None if path is None else os.fspath(path)
        raise OSError(errno.ENOSPC, f"No space left on device (injected at {name})", filename)


def reset() -> None:
    """Forget the points counted so far (a test that injects twice in one process)."""
    _hits.clear()
    _disk_full_hits.clear()


def _due(spec: str, name: str, hits: dict[str, int]) -> bool:
    point, _, nth = spec.partition(":")
    if point not in (name, "*"):
        return False
    hits[point] = hits.get(point, 0) + 1
    return hits[point] >= int(nth or 1)  # a full disk stays full from then on
