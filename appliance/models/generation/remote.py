"""The scale-out backend: an OpenAI-compatible server (llama.cpp server, llama-cpp-python's server, vLLM).

POST {url}/chat/completions with `stream: true`, read the server-sent events (`data: {...}` lines)
until `data: [DONE]`. Failures to connect and 5xx answers are retried with exponential backoff,
but only while nothing has been streamed: a partly delivered answer is never started over (that
would repeat text). A read timeout is not retried either: a server that is slow to answer is
busy, and sending the request again would only add to its load.

Timeouts: `timeout_s` bounds each read (the longest silence between two pieces, not the whole
answer) and each write; connecting has its own, shorter bound (`connect_timeout_s`, by default
min(10 s, timeout_s)) so an unreachable server fails fast.

Token counts are estimates here (the server's tokenizer is not at hand): ceil(chars / 3.5) per
text, plus 4 tokens per message and 3 for the reply header in `prompt_tokens`. When the server
reports `usage` in its last event (requested with stream_options.include_usage), the stats use
it; otherwise prompt_tokens is the estimate and completion_tokens counts the streamed chunks
(llama.cpp and vLLM send one chunk per token). The request queue is the server's: here
`queue_depth()` is the number of requests in flight from this process, and queue_wait_ms is 0
(time spent queued on the server is part of first_token_ms).

The API key is sent as `Authorization: Bearer …` and never logged or put in an error message.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Generator as PyGenerator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from appliance.config import GeneratorSettings
from appliance.errors import ConfigError, GeneratorError
from appliance.models.generation.base import (
    ChatMessage,
    GenerationStats,
    GenerationStream,
    GeneratorBase,
    StatsBox,
    check_messages,
)
from appliance.models.generation.judgement import JudgementUnsupported, log_odds_from_top, top_logprobs_of

logger = logging.getLogger("appliance.generator")

CHARS_PER_TOKEN = 3.5
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_OVERHEAD_TOKENS = 3
BODY_EXCERPT_CHARS = 300
TOP_LOGPROBS = 20  # the first token's alternatives asked for in a judgement: yes and no are among them


class _Retryable(Exception):
    """A failure before the first piece that another attempt may cure (no connection, 5xx)."""


@dataclass
class _Progress:
    """What one call has received so far, across its attempts."""

    pieces: int = 0
    first_ms: float | None = None
    finish: str | None = None
    done: bool = False
    usage: dict[str, Any] | None = None


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= BODY_EXCERPT_CHARS else text[:BODY_EXCERPT_CHARS] + "…"


class OpenAICompatibleGenerator(GeneratorBase):
    """Streams chat completions from a server. Thread-safe: the httpx client pools connections."""

    backend = "openai"

    def __init__(
        self,
        url: str,
        *,
        model: str,
        api_key: str = "",
        n_ctx: int = 4096,
        max_tokens: int = 384,
        temperature: float = 0.0,
        seed: int = 42,
        timeout_s: float = 120.0,
        connect_timeout_s: float | None = None,
        retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        super().__init__()
        if not url.strip():
            raise ConfigError(
                "generator.url is empty: the openai backend needs the server's base URL, e.g. http://HOST:PORT/v1"
            )
        self.url = url.strip().rstrip("/")
        self.endpoint = f"{self.url}/chat/completions"
        self.model_id = model
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        connect = connect_timeout_s if connect_timeout_s is not None else min(10.0, timeout_s)
        headers = {"Accept": "text/event-stream"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=connect), headers=headers)
        self._in_flight = 0
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: GeneratorSettings) -> OpenAICompatibleGenerator:
        return cls(
            settings.url,
            model=settings.model,
            api_key=settings.api_key,
            n_ctx=settings.n_ctx,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            seed=settings.seed,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
        )

    def __repr__(self) -> str:  # no headers: the API key stays out of logs and tracebacks
        return f"OpenAICompatibleGenerator(url={self.url!r}, model={self.model_id!r})"

    # -- tokens (estimates) ------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """An estimate: ceil(len(text) / 3.5)."""
        return estimate_tokens(text)

    def prompt_tokens(self, messages: list[ChatMessage]) -> int:
        """An estimate: the messages' texts plus a fixed overhead per message for the chat template."""
        body = sum(estimate_tokens(m.content) + MESSAGE_OVERHEAD_TOKENS for m in messages)
        return body + REPLY_OVERHEAD_TOKENS

    # -- generation --------------------------------------------------------------------------

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        """The request is sent on the stream's first `next()`; closing the stream closes the connection."""
        start = time.perf_counter()
        check_messages(messages)
        payload = {
            "model": self.model_id,
            "messages": [m.as_dict() for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": max_tokens or self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
        }
        box = StatsBox()
        return GenerationStream(self._generate(payload, messages, start, box), box)

    def _generate(
        self, payload: dict[str, Any], messages: list[ChatMessage], start: float, box: StatsBox
    ) -> PyGenerator[str, None, None]:
        progress = _Progress()
        with self._lock:
            self._in_flight += 1
        try:
            yield from self._attempts(payload, progress, start)
            box.stats = self._stats(progress, messages, start)
            self._remember(box.stats)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _attempts(self, payload: dict[str, Any], progress: _Progress, start: float) -> Iterator[str]:
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                yield from self._attempt(payload, progress, start)
                return
            except _Retryable as exc:
                if attempt == attempts:
                    raise GeneratorError(
                        f"the generator server at {self.endpoint} failed after {attempts} attempts: {exc}"
                    ) from exc
                delay = self.backoff_s * 2 ** (attempt - 1)
                logger.warning(
                    "generator server %s: attempt %d of %d failed (%s); retrying in %.2f s",
                    self.endpoint,
                    attempt,
                    attempts,
                    exc,
                    delay,
                )
                time.sleep(delay)

    def _attempt(self, payload: dict[str, Any], progress: _Progress, start: float) -> Iterator[str]:
        try:
            with self._client.stream("POST", self.endpoint, json=payload) as response:
                self._check_status(response)
                for event in self._events(response):
                    piece = self._take(event, progress)
                    if piece:
                        if progress.first_ms is None:
                            progress.first_ms = (time.perf_counter() - start) * 1000.0
                        yield piece
                    if progress.done:
                        return
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise _Retryable(f"cannot connect: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise GeneratorError(
                f"the generator server at {self.endpoint} sent nothing for {self.timeout_s:g} s "
                f"(setting generator.timeout_s): {type(exc).__name__}"
            ) from exc
        except httpx.TransportError as exc:
            if progress.pieces == 0:
                raise _Retryable(f"connection failed: {type(exc).__name__}: {exc}") from exc
            raise GeneratorError(
                f"the stream from {self.endpoint} broke after {progress.pieces} pieces: {type(exc).__name__}: {exc}"
            ) from exc
        if not (progress.done or progress.finish):
            raise GeneratorError(f"the stream from {self.endpoint} ended before its last event (no [DONE])")

    def _check_status(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        body = _excerpt(response.read().decode("utf-8", errors="replace"))
        message = f"HTTP {response.status_code} from {self.endpoint}: {body}"
        if response.status_code >= 500:
            raise _Retryable(message)
        raise GeneratorError(f"the generator server refused the request: {message}")

    def _events(self, response: httpx.Response) -> Iterator[dict[str, Any] | None]:
        """Parsed events of the stream; None stands for the final `[DONE]`.

        An event is its `data:` lines, complete only at the blank line that ends it; a stream cut
        in the middle of an event leaves that event out (and then lacks its end, which is an error).
        """
        data: list[str] = []
        for line in response.iter_lines():
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif not line and data:
                payload, data = "\n".join(data), []
                if payload.strip() == "[DONE]":
                    yield None
                    return
                yield self._parse_event(payload)
            # anything else: `: ping` comments, `event:`/`id:`/`retry:` fields
        if data and "\n".join(data).strip() == "[DONE]":
            yield None  # a server that omits the blank line after its very last event

    def _parse_event(self, payload: str) -> dict[str, Any]:
        try:
            event = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise GeneratorError(f"the server at {self.endpoint} sent a malformed event: {_excerpt(payload)}") from exc
        if not isinstance(event, dict):
            return {}
        if event.get("error"):
            raise GeneratorError(f"the server at {self.endpoint} reported: {_excerpt(json.dumps(event['error']))}")
        return event

    @staticmethod
    def _take(event: dict[str, Any] | None, progress: _Progress) -> str:
        """Record one event in `progress`; return its text piece ('' if none)."""
        if event is None:
            progress.done = True
            return ""
        if event.get("usage"):
            progress.usage = event["usage"]
        choices = event.get("choices") or []
        if not choices:
            return ""
        choice = choices[0]
        if choice.get("finish_reason"):
            progress.finish = choice["finish_reason"]
        content = (choice.get("delta") or {}).get("content")
        if content is None:
            return ""
        progress.pieces += 1
        return str(content)

    def _stats(self, progress: _Progress, messages: list[ChatMessage], start: float) -> GenerationStats:
        usage = progress.usage or {}
        total = (time.perf_counter() - start) * 1000.0
        return GenerationStats(
            prompt_tokens=int(usage.get("prompt_tokens") or self.prompt_tokens(messages)),
            completion_tokens=int(usage.get("completion_tokens") or progress.pieces),
            prefill_ms=None,
            decode_ms=None,
            first_token_ms=progress.first_ms if progress.first_ms is not None else total,
            total_ms=total,
            queue_wait_ms=0.0,
            finish_reason=progress.finish or "stop",
        )

    # -- yes/no judgements (judgement.py) -----------------------------------------------------

    def yes_no_log_odds(self, prompts: Sequence[list[ChatMessage]]) -> list[float]:
        """For each prompt, log P("yes") − log P("no") as the first answer token, from the server's
        `top_logprobs` of a one-token completion (one request per prompt, no retries: a judgement is optional).

        JudgementUnsupported when the server refuses the request (4xx) or answers without log-probabilities;
        GeneratorError when it cannot be reached or fails (5xx)."""
        return [self._judge(messages) for messages in prompts]

    def _judge(self, messages: list[ChatMessage]) -> float:
        check_messages(messages)
        payload = {
            "model": self.model_id,
            "messages": [m.as_dict() for m in messages],
            "max_tokens": 1,
            "temperature": 0.0,
            "seed": self.seed,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        try:
            response = self._client.post(self.endpoint, json=payload, headers={"Accept": "application/json"})
        except httpx.TransportError as exc:
            raise GeneratorError(
                f"the generator server at {self.endpoint} failed a judgement request: {type(exc).__name__}: {exc}"
            ) from exc
        if response.status_code >= 400:
            message = f"HTTP {response.status_code} from {self.endpoint}: {_excerpt(response.text)}"
            if response.status_code >= 500:
                raise GeneratorError(f"the generator server failed a judgement request: {message}")
            raise JudgementUnsupported(f"the generator server refused a judgement request (logprobs): {message}")
        try:
            data = response.json()
        except ValueError as exc:
            raise GeneratorError(f"the server at {self.endpoint} answered a judgement with no JSON") from exc
        if not isinstance(data, dict):
            raise JudgementUnsupported(f"the server at {self.endpoint} answered a judgement with no completion")
        return log_odds_from_top(top_logprobs_of(data))

    # -- the rest ----------------------------------------------------------------------------

    def queue_depth(self) -> int:
        with self._lock:
            return self._in_flight

    def system_info(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model_id": self.model_id,
            "url": self.url,
            "n_ctx": self.n_ctx,
            "gpu_offload": None,  # decided by the server; unknown here
            "offloaded_layers": None,
            "llama_system_info": None,
            "token_counts": f"estimated: ceil(chars / {CHARS_PER_TOKEN})",
            "retries": self.retries,
            "timeout_s": self.timeout_s,
            "queue_depth": self.queue_depth(),
        }

    def close(self) -> None:
        self._client.close()
