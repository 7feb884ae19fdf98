"""What every generator backend shares: messages, per-call statistics, the stream object, the protocol.

Thread-safety of statistics: each call's numbers travel with its own `GenerationStream` (`.stats`,
set when the stream ends) and with `complete()`'s return value, so concurrent calls never see each
other's numbers. `last_stats` is only a convenience and is thread-local: the stats of the last
stream that the *calling thread* finished.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from collections.abc import Generator as PyGenerator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class ChatMessage:
    role: str  # "system" | "user" | "assistant"
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass
class GenerationStats:
    """Numbers of one generation. All *_ms are milliseconds.

    prefill_ms / decode_ms come from llama.cpp's own timers (None for a remote server);
    first_token_ms and total_ms are wall time from the call, queue wait included.
    """

    prompt_tokens: int
    completion_tokens: int
    prefill_ms: float | None
    decode_ms: float | None
    first_token_ms: float
    total_ms: float
    queue_wait_ms: float
    finish_reason: str  # "stop" | "length" | "cancelled" (the consumer stopped early)
    # llama.cpp's own token counters behind the two timers. prompt_eval_tokens is smaller than
    # prompt_tokens when the KV cache already held a prefix of the prompt (see LlamaCppGenerator).
    prompt_eval_tokens: int | None = None
    decode_eval_tokens: int | None = None
    # Draft-and-verify decoding (generator.draft): tokens proposed, and those the model kept.
    draft_tokens: int | None = None
    accepted_tokens: int | None = None


class StatsBox:
    """Where a running generation leaves its stats; shared by the stream object and its body.

    The body must not reference the GenerationStream itself: that would make a reference cycle
    and delay the release of an abandoned stream's queue slot until the cyclic garbage collector runs.
    """

    def __init__(self) -> None:
        self.stats: GenerationStats | None = None


class GenerationStream(Iterator[str]):
    """The text pieces of one generation, in order; `.stats` is set once the pieces are exhausted.

    Closing it (close(), a `with` block, `break` followed by garbage collection) stops the
    generation and frees its place in the backend's queue. `release` frees that place when the
    body is not running (a stream never iterated has no body whose `finally` would do it);
    `cancel` is used instead when another thread is inside `next()` right now: it may only take a
    still-waiting request out of the queue, never free a slot under a running generation.
    """

    def __init__(
        self,
        pieces: PyGenerator[str, None, None],
        box: StatsBox,
        *,
        release: Callable[[], None] | None = None,
        cancel: Callable[[], None] | None = None,
    ) -> None:
        self._pieces = pieces
        self._box = box
        self._release = release
        self._cancel = cancel

    @property
    def stats(self) -> GenerationStats | None:
        return self._box.stats

    def __iter__(self) -> GenerationStream:
        return self

    def __next__(self) -> str:
        return next(self._pieces)

    def text(self) -> str:
        """Consume the remaining pieces and return them joined."""
        return "".join(self)

    def close(self) -> None:
        try:
            self._pieces.close()
        except ValueError:  # "generator already executing": another thread is inside next()
            if self._cancel is not None:
                self._cancel()
            return
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> GenerationStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # nothing useful can be done about it during garbage collection
            self.close()


class GeneratorBase:
    """Shared by the backends: `complete()` on top of `stream()`, and the thread-local `last_stats`."""

    def __init__(self) -> None:
        self._local = threading.local()

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        raise NotImplementedError

    def complete(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> tuple[str, GenerationStats]:
        """The whole answer at once, with its stats."""
        with self.stream(messages, max_tokens=max_tokens) as pieces:
            text = pieces.text()
        assert pieces.stats is not None  # set by every stream that ran to its end
        return text, pieces.stats

    @property
    def last_stats(self) -> GenerationStats | None:
        """The stats of the last generation the calling thread finished (see the module docstring)."""
        return getattr(self._local, "stats", None)

    def _remember(self, stats: GenerationStats) -> None:
        self._local.stats = stats


def check_messages(messages: list[ChatMessage]) -> None:
    from appliance.errors import GeneratorError

    if not messages:
        raise GeneratorError("no messages to answer")
    for message in messages:
        if message.role not in ROLES:
            raise GeneratorError(f"unknown chat role '{message.role}' (expected one of {', '.join(ROLES)})")


@runtime_checkable
class Generator(Protocol):
    """A chat model that streams answers. Implemented by LlamaCppGenerator and OpenAICompatibleGenerator."""

    model_id: str
    n_ctx: int

    @property
    def last_stats(self) -> GenerationStats | None: ...

    def count_tokens(self, text: str) -> int: ...

    def prompt_tokens(self, messages: list[ChatMessage]) -> int: ...

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream: ...

    def complete(
        self, messages: list[ChatMessage], *, max_tokens: int | None = None
    ) -> tuple[str, GenerationStats]: ...

    def queue_depth(self) -> int: ...

    def system_info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...
