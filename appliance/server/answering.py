"""Run `Answerer.events()` (blocking: retrieval, then the model) in a thread, consumed from async code.

One thread per ask owns the answer's iterator from start to end (a Python generator must not be
closed by another thread while it runs). The async side receives the events through a channel
with no buffer; when it stops listening (client gone, timeout) it closes the channel, and the
thread closes the iterator at the next event, which closes the generation stream and frees the
queue slot. A request still *waiting* in the model's queue emits no events, so its stream is
also cancelled directly (`_StreamHandle`) to leave the queue at once.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel

from appliance.answer.answerer import Answerer, AnswerEvent
from appliance.answer.followup import Turn
from appliance.config import AnswerMode
from appliance.errors import ApplianceError, GeneratorBusy
from appliance.index.filters import Filters
from appliance.models.generation import (
    ChatMessage,
    GenerationStats,
    GenerationStream,
    Generator,
    JudgementUnsupported,
    YesNoJudge,
)
from appliance.server.problems import AnswerTimeout, log_unexpected
from appliance.server.state import AppState


class _StreamHandle:
    """The generation stream one request opened, so that the event loop can cancel it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stream: GenerationStream | None = None
        self._cancelled = False

    def attach(self, stream: GenerationStream) -> None:
        with self._lock:
            self._stream = stream
            cancelled = self._cancelled
        if cancelled:
            stream.close()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            stream = self._stream
        if stream is not None:
            # From another thread: takes a still-waiting request out of the queue; a running
            # generation is stopped by its own thread at the next token (GenerationStream.close).
            with contextlib.suppress(Exception):
                stream.close()


class _TrackedGenerator:
    """The app's one generator seen through one request: the same model, plus the stream handle.

    The shared generator is resolved lazily, so a refusal (no model asked) never loads the model.
    """

    def __init__(
        self, resolve: Callable[[], Generator], handle: _StreamHandle, queue_changed: Callable[[], None]
    ) -> None:
        self._resolve = resolve
        self._handle = handle
        self._queue_changed = queue_changed  # the queue-depth gauge follows a request in and out

    @property
    def model_id(self) -> str:
        return self._resolve().model_id

    @property
    def n_ctx(self) -> int:
        return self._resolve().n_ctx

    @property
    def last_stats(self) -> GenerationStats | None:
        return self._resolve().last_stats

    def count_tokens(self, text: str) -> int:
        return self._resolve().count_tokens(text)

    def prompt_tokens(self, messages: list[ChatMessage]) -> int:
        return self._resolve().prompt_tokens(messages)

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        stream = self._resolve().stream(messages, max_tokens=max_tokens)
        self._handle.attach(stream)
        self._queue_changed()
        return stream

    def complete(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> tuple[str, GenerationStats]:
        try:
            return self._resolve().complete(messages, max_tokens=max_tokens)
        finally:
            self._queue_changed()

    def yes_no_log_odds(self, prompts: Sequence[list[ChatMessage]]) -> list[float]:
        """The section judge's yes/no scoring (quoted/judge.py) on the shared generator, where it has it."""
        try:
            generator = self._resolve()
        except ApplianceError as exc:  # the shared generator cannot be loaded here (not installed): no judge
            raise JudgementUnsupported(f"the generator cannot be loaded: {exc}") from exc
        if not isinstance(generator, YesNoJudge):
            raise JudgementUnsupported(f"the generator {generator.model_id} cannot score yes/no answers")
        try:
            return generator.yes_no_log_odds(prompts)
        finally:
            self._queue_changed()

    def queue_depth(self) -> int:
        return self._resolve().queue_depth()

    def system_info(self) -> dict[str, Any]:
        return self._resolve().system_info()

    def close(self) -> None:
        """Nothing: the shared generator outlives the request."""


_END = object()


async def answer_events(
    state: AppState,
    question: str,
    *,
    k: int | None,
    filters: Filters,
    timeout_s: float | None = None,
    history: Sequence[Turn] = (),
    mode: AnswerMode | None = None,
) -> AsyncGenerator[AnswerEvent, None]:
    """The events of one answer, produced in a thread; AnswerTimeout past `timeout_s`.

    Closing this async generator early stops the generation (see the module docstring).
    """
    if not state.asks_in_flight.acquire(blocking=False):
        raise GeneratorBusy("too many questions are being answered at once; try again shortly")
    handle = _StreamHandle()
    view = Answerer(
        state.settings,
        searcher=state.searcher,
        generator=_TrackedGenerator(state.generator, handle, state.refresh_queue_depth),  # type: ignore[arg-type]
        labels=state.answerer.labels,  # the process's: a label embedded for one question serves the next
    )
    send, receive = anyio.create_memory_object_stream[tuple[str, Any]](0)
    token = anyio.lowlevel.current_token()
    # A call scheduled on the event loop just as the loop shuts down is never run, and the thread
    # would wait on it forever with its queue slot taken. So once the listener has left, the thread
    # stops calling into the loop, and the listener waits until no call of the thread is in flight.
    listener_gone = threading.Event()
    delivering = threading.Lock()

    def deliver(kind: str, value: Any) -> None:
        with delivering:
            if listener_gone.is_set():
                raise anyio.BrokenResourceError
            anyio.from_thread.run(send.send, (kind, value), token=token)

    def produce() -> None:
        iterator: Iterator[AnswerEvent] | None = None
        try:
            iterator = view.events(question, k=k, filters=filters, history=history, mode=mode)
            with state.retrieval_lock:  # retrieval and prompt building happen before the first event
                event = next(iterator, _END)
            counted = False
            while event is not _END:
                if isinstance(event, AnswerEvent) and event.kind == "token" and not counted:
                    # a remote backend counts its request from the first piece on
                    state.refresh_queue_depth()
                    counted = True
                deliver("event", event)
                event = next(iterator, _END)
            deliver("end", None)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the listener left: fall through to closing the iterator
        except BaseException as exc:
            with contextlib.suppress(Exception):
                deliver("error", exc)
        finally:
            try:
                # events() is a generator: close() raises GeneratorExit inside it → its generation stream closes.
                close = getattr(iterator, "close", None)
                if close is not None:
                    close()
            except Exception as exc:
                log_unexpected(None, exc)
            finally:
                state.asks_in_flight.release()
                with contextlib.suppress(Exception):  # its stream closed: the request left the model's queue
                    state.refresh_queue_depth()

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    finished = False
    try:
        threading.Thread(target=produce, name="appliance-answer", daemon=True).start()
    except BaseException:
        state.asks_in_flight.release()
        raise
    try:
        while True:
            try:
                with anyio.fail_after(None if deadline is None else max(0.0, deadline - time.monotonic())):
                    kind, value = await receive.receive()
            except TimeoutError:
                raise AnswerTimeout(
                    f"the answer took longer than {timeout_s:g} s (setting server.request_timeout_s) and was stopped"
                ) from None
            if kind == "end":
                finished = True
                return
            if kind == "error":
                finished = True
                raise value
            yield value
    finally:
        listener_gone.set()
        if not finished:
            handle.cancel()
        receive.close()  # a send the thread is blocked in fails now, on the loop's next turn
        send.close()
        with anyio.CancelScope(shield=True):
            await _until_released(delivering, timeout_s=5.0)


async def _until_released(lock: threading.Lock, *, timeout_s: float) -> None:
    """Let the event loop run until another thread has let go of `lock` (at most `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while not lock.acquire(blocking=False):
        if time.monotonic() > deadline:
            return
        await anyio.sleep(0.001)
    lock.release()
