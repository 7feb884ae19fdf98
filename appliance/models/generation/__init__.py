"""Generator backends for a local LLM: llama.cpp in this process, or an OpenAI-compatible server.

Modules: base (messages, stats, the stream object, the Generator protocol), fair_queue (the FIFO
queue in front of a local model), local (LlamaCppGenerator), remote (OpenAICompatibleGenerator),
llama_log (llama.cpp's log into Python logging), loader (load_generator), judgement (yes/no log-odds
in one prefill, for judges).

`LlamaCppGenerator` is imported on first use only: a host that runs the `openai` backend needs no
llama-cpp-python at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from appliance.models.generation.base import ChatMessage, GenerationStats, GenerationStream, Generator
from appliance.models.generation.fair_queue import FairQueue, Ticket
from appliance.models.generation.judgement import JudgementUnsupported, YesNoJudge
from appliance.models.generation.loader import load_generator
from appliance.models.generation.remote import OpenAICompatibleGenerator

if TYPE_CHECKING:
    from appliance.models.generation.local import LlamaCppGenerator

__all__ = [
    "ChatMessage",
    "FairQueue",
    "GenerationStats",
    "GenerationStream",
    "Generator",
    "JudgementUnsupported",
    "LlamaCppGenerator",
    "OpenAICompatibleGenerator",
    "Ticket",
    "YesNoJudge",
    "load_generator",
]


def __getattr__(name: str) -> Any:
    if name == "LlamaCppGenerator":
        from appliance.models.generation.local import LlamaCppGenerator

        return LlamaCppGenerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
