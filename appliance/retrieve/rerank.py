"""Optional rerank stage: a sentence-transformers CrossEncoder from the local model store.

Used only when the store holds a reranker (a bundle made on a connected host brings one, e.g.
cross-encoder/ms-marco-MiniLM-L-6-v2); without one the pipeline runs unchanged. The model is
loaded from its folder with local_files_only: never downloaded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from appliance.config import Settings
from appliance.errors import ModelNotFound
from appliance.models.store import ModelStore


class Reranker:
    def __init__(self, model_path: Path, *, device: str = "cpu", batch_size: int = 32, max_length: int = 512) -> None:
        if not (model_path / "config.json").is_file():
            raise ModelNotFound(f"reranker model not found at {model_path} (no config.json)")
        self.model_path = model_path
        self.model_id = model_path.name
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(
                    str(self.model_path), device=self.device, max_length=self.max_length, local_files_only=True
                )
            return self._model

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        scores = self.model.predict(
            [(query, passage) for passage in passages], batch_size=self.batch_size, show_progress_bar=False
        )
        return [float(s) for s in scores]


def find_reranker(settings: Settings) -> Path | None:
    """The configured reranker's folder, or None when reranking is off or none is installed."""
    if settings.rerank.model == "none":
        return None
    store = ModelStore(settings.models_dir)
    rerankers = [m for m in store.models() if m.role == "reranker"]
    if settings.rerank.model == "auto":
        return store.path_of(rerankers[0]) if rerankers else None
    chosen = [m for m in rerankers if m.name == settings.rerank.model]
    if not chosen:
        raise ModelNotFound(
            f"reranker '{settings.rerank.model}' (setting rerank.model) is not in the model store {store.root}"
        )
    return store.path_of(chosen[0])
