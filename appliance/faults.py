"""Fault injection for crash tests: kill this process at a named point of a write.

Set APPLIANCE_FAULT_KILL_AT=<point> (first time the point is reached) or <point>:<n> (the n-th
time). Unset, `crash_point` is a dictionary lookup and nothing else. The points are the moments
between the steps of a write where a power cut or OOM kill would hurt most.
"""

from __future__ import annotations

import os
import signal

ENV = "APPLIANCE_FAULT_KILL_AT"
_hits: dict[str, int] = {}


def crash_point(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
