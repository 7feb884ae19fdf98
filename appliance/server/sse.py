"""Server-Sent Events: the wire format, and a response that always closes its event source.

Starlette does not close a streaming body when the client goes away (it stops iterating, or the
send fails). `EventStreamResponse` closes it in every case, so the answer's thread learns at
once that nobody listens and frees its place in the generator's queue.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from appliance.server.responses import dumps

SSE_MEDIA_TYPE = "text/event-stream"


def sse_event(event: str, data: Any) -> bytes:
    """One event. JSON never contains a raw newline, so `data` is always a single line."""
    return f"event: {event}\ndata: {dumps(data)}\n\n".encode()


def sse_data(data: str) -> bytes:
    """An unnamed event (OpenAI's chat completion chunks, and its `[DONE]` marker)."""
    return f"data: {data}\n\n".encode()


def wants_event_stream(accept: str | None) -> bool:
    return bool(accept) and SSE_MEDIA_TYPE in (accept or "").lower()


class EventStreamResponse(StreamingResponse):
    """A `text/event-stream` response whose async generator is closed however the stream ends."""

    def __init__(self, content: AsyncGenerator[bytes, None], headers: dict[str, str] | None = None) -> None:
        super().__init__(
            content,
            media_type=SSE_MEDIA_TYPE,
            # X-Accel-Buffering: a reverse proxy in front must pass tokens through as they come.
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", **(headers or {})},
        )
        self._source = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self._source.aclose()
