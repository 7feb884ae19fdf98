"""The embedder's vectors of section labels and headings (and of the fact lines), kept while the process runs.

The section choice compares the question with the label and the heading of every candidate section (a
hundred short texts a question). The same documents come back question after question, and a label's vector
never changes while the embedder does not, so each text is embedded once: the first question that reaches a
document pays (about 2 s for five documents on 2 cores), the next ones read the vectors back.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

EmbedTexts = Callable[[Sequence[str]], np.ndarray]
MAX_TEXTS = 20_000  # about 30 MB of 384-d vectors


class LabelVectors:
    """`embed` with a bounded least-recently-used memory of the texts it embedded (thread-safe).

    A text another thread is embedding is waited for, not embedded again: on a fresh server 32 operators'
    first questions reach the same documents at once, and each embedding its own copy of the same hundred
    labels made every answer wait for 32 times the work."""

    def __init__(self, embed: EmbedTexts, max_texts: int = MAX_TEXTS) -> None:
        self._embed = embed
        self._max = max_texts
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, threading.Event] = {}  # text → set once the thread embedding it is done
        self._lock = threading.Lock()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        wanted = list(dict.fromkeys(texts))
        done = threading.Event()
        with self._lock:
            absent = [t for t in wanted if t not in self._vectors]
            others = {self._pending[t] for t in absent if t in self._pending}
            mine = [t for t in absent if t not in self._pending]
            for text in mine:
                self._pending[text] = done
        try:
            if mine:
                self._keep(mine, self._embed(mine))
        finally:
            with self._lock:
                for text in mine:
                    del self._pending[text]
            done.set()
        for event in others:
            event.wait()
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in wanted:
                if text in self._vectors:
                    found[text] = self._vectors[text]
                    self._vectors.move_to_end(text)
        # Evicted meanwhile, or the thread that was embedding it failed: embedded here after all.
        still = [t for t in wanted if t not in found]
        if still:
            found.update(zip(still, self._keep(still, self._embed(still)), strict=True))
        rows = [found[t] for t in texts]
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def _keep(self, texts: Sequence[str], vectors: np.ndarray) -> list[np.ndarray]:
        kept = list(vectors)
        with self._lock:
            for text, vector in zip(texts, kept, strict=True):
                self._vectors[text] = vector
                self._vectors.move_to_end(text)
            while len(self._vectors) > self._max:
                self._vectors.popitem(last=False)
        return kept

    def __len__(self) -> int:
        return len(self._vectors)
