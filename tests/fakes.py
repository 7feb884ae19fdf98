"""Test fakes plugged into the real code paths (never a network, never a model).

`chunk_row` builds a catalog row as the index would read it back, for code that takes chunks.

`ScriptedGenerator` speaks the generator protocol (`appliance.models.generation.Generator`): it
streams a fixed answer through a real `GenerationStream`, and can be busy, fail or go slowly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from appliance.config import Settings
from appliance.errors import GeneratorBusy, GeneratorError
from appliance.index.records import ChunkRow
from appliance.models.generation import ChatMessage, GenerationStats, GenerationStream
from appliance.models.generation.base import StatsBox

SCRIPTED_ANSWER = "Close the cylinder valve VLV-3042-B and wait until the vacuum regulator gauge reads zero [1]."


def cut_at_max_tokens(words: list[str], max_tokens: int | None) -> tuple[list[str], str]:
    """Like llama.cpp, with a word per token: the words within `max_tokens` and the finish reason
    ("length" when the answer was cut)."""
    if max_tokens is None or len(words) <= max_tokens:
        return words, "stop"
    return words[:max_tokens], "length"


class ScriptedGenerator:
    """'Writes' a fixed answer through the real stream protocol; can be busy, fail, or go slowly."""

    model_id = "scripted"
    n_ctx = 4096

    def __init__(
        self,
        answer: str = SCRIPTED_ANSWER,
        *,
        busy: bool = False,
        fail_after: int | None = None,
        error: Exception | None = None,
        delay_s: float = 0.0,
    ) -> None:
        self.answer = answer
        self.busy = busy
        self.fail_after = fail_after
        self.error = error or GeneratorError("the model crashed")
        self.delay_s = delay_s
        self.produced = 0
        self.closed = threading.Event()
        self.calls: list[list[ChatMessage]] = []  # the messages of every stream() call

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def prompt_tokens(self, messages: list[ChatMessage]) -> int:
        return sum(self.count_tokens(m.content) for m in messages)

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        self.calls.append(messages)
        if self.busy:
            raise GeneratorBusy("the model is busy: 8 requests are waiting (setting generator.queue_size)")
        box = StatsBox()
        words = self.answer.split(" ")
        words, finish = cut_at_max_tokens(words, max_tokens)

        def pieces() -> Iterator[str]:
            try:
                for i, word in enumerate(words):
                    if self.fail_after is not None and i == self.fail_after:
                        raise self.error
                    if self.delay_s:
                        time.sleep(self.delay_s)
                    self.produced += 1
                    yield word if i == 0 else " " + word
                box.stats = GenerationStats(self.prompt_tokens(messages), len(words), 5.0, 5.0, 1.0, 2.0, 0.0, finish)
            finally:
                self.closed.set()

        return GenerationStream(pieces(), box)  # type: ignore[arg-type]

    def complete(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> tuple[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def queue_depth(self) -> int:
        return 0

    def system_info(self) -> dict[str, Any]:
        return {"backend": "scripted"}


def generated(settings: Settings) -> Settings:
    """The settings with answer.mode = generated: for tests of what the model's own answer goes through
    (quoted answers, the default, never ask the model)."""
    return settings.model_copy(update={"answer": settings.answer.model_copy(update={"mode": "generated"})})


class ScriptedJudgeGenerator(ScriptedGenerator):
    """A generator that also judges sections (the YesNoJudge of quoted/judge.py): "Yes" (+5) to the prompts whose
    text holds `favour`, "No" (−5) to the others; `favour=None` says Yes to the second prompt only (overturning the
    ranker). With `gate` it waits until the gate is set, as a slow CPU model does."""

    def __init__(self, favour: str | None = None, *, gate: threading.Event | None = None) -> None:
        super().__init__()
        self.favour = favour
        self.gate = gate
        self.judged: list[list[str]] = []  # the user prompt of every judgement, per call

    def yes_no_log_odds(self, prompts: Sequence[list[ChatMessage]]) -> list[float]:
        if self.gate is not None:
            self.gate.wait(timeout=60)
        texts = [messages[-1].content for messages in prompts]
        self.judged.append(texts)
        if self.favour is None:
            return [5.0 if i == 1 else -5.0 for i in range(len(texts))]
        return [5.0 if self.favour in text else -5.0 for text in texts]


def judging(settings: Settings, timing: str) -> Settings:
    """The settings with the LLM judge on, run `timing` ("before" / "after") the steps are shown."""
    answer = settings.answer.model_copy(update={"llm_judge": "on", "llm_judge_timing": timing})
    return settings.model_copy(update={"answer": answer})


def chunk_row(rowid: int, path: str, title: str, section: str, text: str, *, ord: int = 0) -> ChunkRow:
    """One chunk of a Markdown document, under `title › section`, as the catalog reads it back."""
    return ChunkRow(
        chunk_id=f"{path}#{rowid}",
        rowid=rowid,
        path=path,
        title=title,
        type="md",
        ord=ord,
        header=f"{title} › {section}",
        text=text,
        section=f"{title} › {section}",
        page=None,
        start=0,
        end=len(text),
        identifiers="",
    )
