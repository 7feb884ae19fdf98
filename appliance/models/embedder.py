"""The embedder: a sentence-transformers model loaded from a local folder, never downloaded.

Backends (`embedder_backends.py`): "torch" and "torch-bf16" run it with sentence-transformers; "onnx"
and "onnx-int8" run the same network exported to ONNX (fp32, or int8 weights) by ONNX Runtime
(`onnx_encoder.py`); "auto" picks one for the CPU. Its own tokenizer
(tokenizer.json) also counts tokens for the chunker, so chunk bounds match what the model really sees.

Threads: `threads` serve batches (ingest), `query_threads` a single text (a search's query): on two
shared cores a query embedded with every thread waits for cores that llama.cpp or a reindex hold.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from appliance.errors import ModelNotFound
from appliance.models.embedder_backends import batch_size_for, embedding_model_id, resolve_backend


def _set_torch_threads(count: int) -> None:
    """Torch's intra-op thread count (OpenMP, MKL) belongs to the calling thread: set it per call."""
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)


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

    def split(self, word: str) -> list[str]:
        """The vocabulary pieces of one word: "pegged" -> ["peg", "##ged"], "zabbix" -> ["za", "##bb", "##ix"]."""
        return list(self._tokenizer.encode(word, add_special_tokens=False).tokens)

    def __call__(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)  # no offsets
        return [len(encoding.ids) for encoding in encodings]


QUERY_CACHE_SIZE = 1024


def _max_seq_length(model_path: Path) -> int:
    config = model_path / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", 512))
    return 512


class Embedder:
    """Normalized float32 embeddings; cosine similarity is then a dot product."""

    def __init__(
        self,
        model_path: Path,
        *,
        device: str = "cpu",
        batch_size: int = 0,
        backend: str = "torch",
        threads: int = 0,
        query_threads: int = 1,
    ) -> None:
        _require_model_folder(model_path, "embedder")
        self.model_path = model_path
        self.backend = resolve_backend(backend, device, model_path)
        self.model_id = embedding_model_id(model_path.name, self.backend)
        self.device = device
        self.batch_size = batch_size_for(self.backend, batch_size)  # 0: the runtime's own
        self.threads = threads or os.cpu_count() or 1
        self.query_threads = query_threads or self.threads
        self._model: Any = None
        self._lock = threading.Lock()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self.count_tokens = TokenCounter(model_path)

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                if self.backend.startswith("torch"):
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(str(self.model_path), device=self.device, local_files_only=True)
                else:
                    from appliance.models.onnx_encoder import OnnxEncoder

                    self._model = OnnxEncoder(
                        self.model_path,
                        self.backend,
                        max_tokens=_max_seq_length(self.model_path),
                        threads=self.threads,
                        query_threads=self.query_threads,
                    )
            return self._model

    @property
    def dimension(self) -> int:
        model = self.model
        if self.backend.startswith("torch"):  # sentence-transformers 6 renamed the method
            dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            return int(dimension())
        return int(model.dimension)

    @property
    def max_tokens(self) -> int:
        if self.backend.startswith("torch"):
            return int(self.model.max_seq_length)
        return _max_seq_length(self.model_path)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if not self.backend.startswith("torch"):
            return self.model.encode(list(texts), self.batch_size)
        import torch

        model = self.model
        _set_torch_threads(self.query_threads if len(texts) == 1 else self.threads)
        bf16 = self.backend == "torch-bf16"
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """One text's vector; repeated questions (the web page's retries, the same alarm asked again)
        come from a small cache. It cannot go stale: the vector of a text depends only on this
        embedder, whose files do not change under a running process."""
        with self._lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
        vector = self.embed([text])[0]
        vector.setflags(write=False)
        with self._lock:
            self._queries[text] = vector
            if len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector
