"""The embedder: a sentence-transformers model loaded from a local folder, never downloaded.

Its own tokenizer (tokenizer.json) also counts tokens for the chunker, so chunk bounds match
what the model really sees.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from appliance.errors import ModelNotFound


def _require_model_folder(path: Path, role: str) -> None:
    if not (path / "config.json").is_file():
        raise ModelNotFound(
            f"{role} model not found at {path}: the model store holds no such model. "
            "Build the store with `appliance models init` (development) or install a bundle "
            "(`appliance install`); models are never downloaded at run time."
        )


class TokenCounter:
    """Counts tokens with the model's own fast tokenizer, no truncation, no special tokens."""

    def __init__(self, model_path: Path) -> None:
        from tokenizers import Tokenizer

        tokenizer_file = model_path / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise ModelNotFound(f"tokenizer.json missing in {model_path}")
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def pieces(self, word: str) -> int:
        """How many vocabulary pieces one word becomes (1 for an ordinary English word)."""
        return len(self._tokenizer.encode(word, add_special_tokens=False).ids)

    def __call__(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(encoding.ids) for encoding in encodings]


class Embedder:
    """Normalized float32 embeddings; cosine similarity is then a dot product."""

    def __init__(self, model_path: Path, *, device: str = "cpu", batch_size: int = 64) -> None:
        _require_model_folder(model_path, "embedder")
        self.model_path = model_path
        self.model_id = model_path.name
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        self.count_tokens = TokenCounter(model_path)

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(self.model_path), device=self.device, local_files_only=True)
            return self._model

    @property
    def dimension(self) -> int:
        return int(self.model.get_sentence_embedding_dimension())

    @property
    def max_tokens(self) -> int:
        return int(self.model.max_seq_length)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
