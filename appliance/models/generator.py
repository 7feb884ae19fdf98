"""The generator API (the implementation lives in appliance.models.generation).

    gen = load_generator(settings)                      # llama_cpp (local GGUF) or openai (a server)
    text, stats = gen.complete([ChatMessage("user", "…")], max_tokens=64)
    with gen.stream(messages) as pieces:                # GeneratorBusy here when the queue is full
        for piece in pieces: ...
    pieces.stats                                        # GenerationStats of that call only

Stats of a call travel with its stream (`.stats`) or `complete()`'s result, so concurrent calls never
mix them; `gen.last_stats` is a thread-local convenience (the calling thread's last finished call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from appliance.models.generation import (
    ChatMessage,
    FairQueue,
    GenerationStats,
    GenerationStream,
    Generator,
    OpenAICompatibleGenerator,
    Ticket,
    load_generator,
)

if TYPE_CHECKING:
    from appliance.models.generation.local import LlamaCppGenerator

__all__ = [
    "ChatMessage",
    "FairQueue",
    "GenerationStats",
    "GenerationStream",
    "Generator",
    "LlamaCppGenerator",
    "OpenAICompatibleGenerator",
    "Ticket",
    "load_generator",
]


def __getattr__(name: str) -> Any:
    if name == "LlamaCppGenerator":  # imported on first use: the openai backend needs no llama-cpp-python
        from appliance.models.generation.local import LlamaCppGenerator

        return LlamaCppGenerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
