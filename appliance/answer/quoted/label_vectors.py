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
    """`embed` with a bounded least-recently-used memory of the texts it embedded (thread-safe)."""

    def __init__(self, embed: EmbedTexts, max_texts: int = MAX_TEXTS) -> None:
        self._embed = embed
        self._max = max_texts
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            fresh = self._embed(missing)
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._vectors[text] = vector
                while len(self._vectors) > self._max:
                    self._vectors.popitem(last=False)
        with self._lock:
            rows = []
            for text in texts:
                vector = self._vectors.get(text)
                if vector is None:  # evicted by another thread meanwhile: embed it again
                    vector = self._embed([text])[0]
                else:
                    self._vectors.move_to_end(text)
                rows.append(vector)
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def __len__(self) -> int:
        return len(self._vectors)
