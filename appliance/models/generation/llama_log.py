"""llama.cpp's log, routed into Python logging instead of stderr.

llama-cpp-python's own callback prints to stderr and maps an older ggml level enum (in the ggml
bundled with 0.3.x, 1=DEBUG 2=INFO 3=WARN 4=ERROR 5=CONT), so with verbose=False it still prints
warnings and hides real errors. This callback replaces it process-wide: DEBUG/INFO chatter becomes
DEBUG records of logger "appliance.generator.llama_cpp", warnings and errors keep their level, and
nothing reaches stderr. `capture()` also collects the lines of one model load, which tell the load
error's reason and which device each layer was assigned to.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import llama_cpp

logger = logging.getLogger("appliance.generator.llama_cpp")

_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.DEBUG, 3: logging.WARNING, 4: logging.ERROR}
_CONT = 5


class _LogRouter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._installed = False
        self._callback: Any = None  # ctypes keeps only a weak hold: this reference keeps it alive
        self._capture: list[tuple[int, str]] | None = None
        self._last_level = logging.DEBUG

    def install(self) -> None:
        with self._lock:
            if self._installed:
                return
            self._callback = llama_cpp.llama_log_callback(self._on_log)
            llama_cpp.llama_log_set(self._callback, ctypes.c_void_p(0))
            self._installed = True

    def _on_log(self, level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        message = text.decode("utf-8", errors="replace")
        python_level = self._last_level if level == _CONT else _LEVELS.get(level, logging.DEBUG)
        self._last_level = python_level
        capture = self._capture
        if capture is not None:
            capture.append((python_level, message))
        if message.strip() and logger.isEnabledFor(python_level):
            logger.log(python_level, "%s", message.rstrip())

    @contextmanager
    def capture(self) -> Iterator[list[tuple[int, str]]]:
        """Collect (level, line) pairs while the block runs; callers serialize loads (one capture at a time)."""
        lines: list[tuple[int, str]] = []
        self._capture = lines
        try:
            yield lines
        finally:
            self._capture = None


router = _LogRouter()
