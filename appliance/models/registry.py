"""Load the configured models from the local model store (never from a hub)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from appliance.config import Settings
from appliance.models.embedder import Embedder
from appliance.models.store import ModelStore


def embedder_path(settings: Settings) -> Path:
    store = ModelStore(settings.models_dir)
    return store.path_of(store.find("embedder", settings.embedder.model))


@lru_cache(maxsize=4)
def _cached_embedder(path: str, device: str, batch_size: int) -> Embedder:
    return Embedder(Path(path), device=device, batch_size=batch_size)


def load_embedder(settings: Settings) -> Embedder:
    """One embedder per (path, device, batch size) per process: loading costs seconds."""
    return _cached_embedder(
        str(embedder_path(settings).resolve()), settings.embedder.device, settings.embedder.batch_size
    )
