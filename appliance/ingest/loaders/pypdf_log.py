"""Keeping pypdf's warnings out of the application log while a PDF is loaded.

A damaged PDF can make pypdf log thousands of per-object warnings. While any load is running, the
"pypdf" logger stops propagating to the application's handlers; each load collects the warnings
of its own thread instead, so an error about the file can quote what pypdf complained of.
Reference-counted, so concurrent loads in several threads restore the logger exactly once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOGGER = logging.getLogger("pypdf")
_lock = threading.Lock()
_active = 0
_saved_propagate = True


class PypdfWarnings(logging.Handler):
    """The messages pypdf logged from one thread during one load."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self._thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._thread:
            self.messages.append(record.getMessage())


@contextmanager
def collect_pypdf_warnings() -> Iterator[PypdfWarnings]:
    global _active, _saved_propagate
    collector = PypdfWarnings()
    with _lock:
        if _active == 0:
            _saved_propagate = _LOGGER.propagate
            _LOGGER.propagate = False
        _active += 1
        _LOGGER.addHandler(collector)
    try:
        yield collector
    finally:
        with _lock:
            _LOGGER.removeHandler(collector)
            _active -= 1
            if _active == 0:
                _LOGGER.propagate = _saved_propagate
