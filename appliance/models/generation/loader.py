"""`load_generator`: the backend named by settings.generator.backend, from the local store or a server."""

from __future__ import annotations

from appliance.config import Settings
from appliance.models.generation.base import Generator
from appliance.models.generation.remote import OpenAICompatibleGenerator
from appliance.models.store import ModelStore


def load_generator(settings: Settings) -> Generator:
    """llama_cpp: the GGUF named generator.model from the model store (ModelNotFound if absent, never
    downloaded). openai: a client of the server at generator.url."""
    config = settings.generator
    if config.backend == "openai":
        return OpenAICompatibleGenerator.from_settings(config)
    from appliance.models.generation.local import LlamaCppGenerator  # llama-cpp-python only for this backend

    store = ModelStore(settings.models_dir)
    stored = store.find("generator", config.model)
    return LlamaCppGenerator.from_settings(config, store.path_of(stored), model_id=stored.name)
