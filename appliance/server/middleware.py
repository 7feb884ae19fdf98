"""The one request middleware (pure ASGI, so streamed answers pass through untouched).

For every request: a request id (a sane `X-Request-ID` from the client, else a new one), the
security headers, a 500 problem for anything unexpected (with the request id; the traceback goes
to the log, never to the client), one log line (id, method, route, status, latency: never the
query string, a question, an answer or an Authorization header), the request metrics, and the
audit record of audited routes.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

import anyio
from fastapi import HTTPException
from starlette.datastructures import MutableHeaders
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from appliance.errors import DiskFull
from appliance.reports.feedback import ANSWER_ENDPOINTS
from appliance.server.auditing import AUDITED, write_audit
from appliance.server.problems import Problem, log_unexpected, problem_for_error, problem_response
from appliance.server.security import apply_security_headers
from appliance.server.state import AppState
from appliance.server.upload_form import FRAMING_BYTES
from appliance.uploads.store import upload_limit

log = logging.getLogger("appliance.server")

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# The largest body read: a question is at most 100,000 characters; a chat history gets some room.
MAX_BODY_BYTES = 4 * 1024 * 1024
UPLOAD_PATH = "/v1/documents"


def _client_request_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            text = value.decode("latin-1").strip()
            return text if _REQUEST_ID.fullmatch(text) else None
    return None


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def limit_body(receive: Receive, limit: int = MAX_BODY_BYTES) -> Receive:
    """A receive that stops a body (chunked ones too) at `limit` bytes with a 413."""
    seen = 0

    async def limited() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                # FastAPI passes an HTTPException raised while reading the body through unchanged.
                raise HTTPException(413, f"the request body is larger than {limit} bytes")
        return message

    return limited


def endpoint_label(scope: Scope) -> str:
    """The route template (bounded label values); unknown paths all count as 'other'."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    raw = str(scope.get("path", ""))
    return "/static" if raw.startswith("/static/") else "other"


class RequestContextMiddleware:
    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = _client_request_id(scope) or uuid.uuid4().hex
        request_state: dict[str, Any] = scope.setdefault("state", {})
        request_state["request_id"] = request_id
        path = str(scope.get("path", ""))
        status = 500
        response_started = False
        audited = AUDITED.get((str(scope.get("method")), path))
        answering = audited in ANSWER_ENDPOINTS
        if answering:
            self.state.unrecorded_answers.add(request_id)

        async def send_with_headers(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                response_started = True
                status = int(message["status"])
                headers = MutableHeaders(scope=message)
                apply_security_headers(path, headers)
                headers["X-Request-ID"] = request_id
            await send(message)

        try:
            limit = self._body_limit(scope)
            declared = _declared_length(scope)
            if declared is not None and declared > limit:
                too_large = Problem(413, f"the request body is larger than {limit} bytes")
                await problem_response(too_large, request_id)(scope, receive, send_with_headers)
            else:
                await self.app(scope, limit_body(receive, limit), send_with_headers)
        except ClientDisconnect:
            log.info("request_id=%s client disconnected", request_id)
            request_state.setdefault("audit", {}).setdefault("extra", {})["client_disconnected"] = True
        except Exception as exc:
            log_unexpected(request_id, exc)
            if not response_started:
                response = problem_response(problem_for_error(exc), request_id)
                await response(scope, receive, send_with_headers)
        finally:
            seconds = time.perf_counter() - started
            endpoint = endpoint_label(scope)
            self.state.metrics.observe_request(endpoint, status, seconds)
            log.info(
                "request_id=%s method=%s endpoint=%s status=%d latency_ms=%.1f",
                request_id,
                scope.get("method"),
                path,
                status,
                seconds * 1000.0,
            )
            audited = audited or AUDITED.get((str(scope.get("method")), endpoint))
            try:
                if audited is not None:
                    await self._audit(scope, audited, request_id, status, seconds * 1000.0)
            finally:
                if answering:
                    self.state.unrecorded_answers.discard(request_id)

    def _body_limit(self, scope: Scope) -> int:
        """An upload may carry a file of up to the upload limit (the route counts the file itself exactly)."""
        if scope.get("method") == "POST" and scope.get("path") == UPLOAD_PATH:
            return upload_limit(self.state.settings) + FRAMING_BYTES
        return MAX_BODY_BYTES

    async def _audit(self, scope: Scope, endpoint: str, request_id: str, status: int, latency_ms: float) -> None:
        request_state = scope.get("state", {})
        client = scope.get("client")
        try:
            with anyio.CancelScope(shield=True):  # a client that left still gets its request audited
                await anyio.to_thread.run_sync(
                    lambda: write_audit(
                        self.state,
                        endpoint,
                        status=status,
                        request_id=request_id,
                        principal=request_state.get("principal"),
                        client=client[0] if client else None,
                        latency_ms=latency_ms,
                        notes=dict(request_state.get("audit", {})),
                    )
                )
        except Exception as exc:
            # Losing an audit record is serious but must not turn an answered request into an error. A full disk
            # is said with its path and sizes (DiskFull's message holds nothing of the request).
            why = str(exc) if isinstance(exc, DiskFull) else type(exc).__name__
            log.error("request_id=%s the audit record could not be written: %s", request_id, why)
