"""Load the configured models from the local model store (never from a hub)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from appliance.config import Settings
from appliance.errors import ApplianceError
from appliance.models.embedder import Embedder
from appliance.models.store import ModelStore


def embedder_path(settings: Settings) -> Path:
    store = ModelStore(settings.models_dir)
    return store.path_of(store.find("embedder", settings.embedder.model))


def ocr_model_path(settings: Settings) -> Path:
    """The folder of the configured OCR model (ModelNotFound when the store does not hold it)."""
    store = ModelStore(settings.models_dir)
    return store.path_of(store.find("ocr", settings.ingest.ocr_model))


def configured_embedder_path(settings: Settings) -> Path | None:
    """The configured embedder's folder, or None when the store does not hold it (loading then says so)."""
    try:
        return embedder_path(settings)
    except ApplianceError:
        return None


@lru_cache(maxsize=4)
def _cached_embedder(
    path: str, device: str, batch_size: int, backend: str, threads: int, query_threads: int
) -> Embedder:
    return Embedder(
        Path(path), device=device, batch_size=batch_size, backend=backend, threads=threads, query_threads=query_threads
    )


def load_embedder(settings: Settings) -> Embedder:
    """One embedder per configuration per process: loading costs seconds."""
    config = settings.embedder
    return _cached_embedder(
        str(embedder_path(settings).resolve()),
        config.device,
        config.batch_size,
        config.backend,
        config.threads,
        config.query_threads,
    )
