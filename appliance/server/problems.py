"""Every HTTP error is an RFC 9457 problem: `application/problem+json` {type, title, status, detail, instance?}.

Library errors map to statuses here (GeneratorBusy 503 + Retry-After, GeneratorError 502, IndexBusy
409, …). Validation errors name the offending field but never echo the submitted value back: a
question may be sensitive, and a 2 MB body must not come back as a 2 MB error.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from appliance.errors import (
    ApplianceError,
    ConfigError,
    DiskFull,
    DocumentUnavailable,
    GeneratorBusy,
    GeneratorError,
    IndexBusy,
    ModelNotFound,
    UploadRefused,
    VectorStoreUnavailable,
)
from appliance.server.responses import dumps

log = logging.getLogger("appliance.server")

PROBLEM_MEDIA_TYPE = "application/problem+json"
# Problem types are relative URIs under the appliance itself: nothing points outside the isolated network.
TYPE_BASE = "/problems/"
# Seconds a client should wait before retrying a busy generator; one short answer takes about this long.
RETRY_AFTER_S = 5

# What FastAPI says (a 400) when reading the body fails for another reason than invalid JSON syntax.
FASTAPI_BODY_ERROR = "There was an error parsing the body"

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    410: "Gone",
    413: "Request too large",
    422: "Invalid request",
    500: "Internal server error",
    502: "Generator failed",
    503: "Service unavailable",
    504: "Timed out",
    507: "Insufficient storage",
}


class AnswerTimeout(ApplianceError):
    """An ask took longer than server.request_timeout_s; its generation was stopped."""


class Problem(Exception):
    """Raised by routes and dependencies to answer with a problem response."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        title: str | None = None,
        kind: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.title = title or _TITLES.get(status, "Error")
        self.kind = kind or self.title.lower().replace(" ", "-")
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def body(self, instance: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": TYPE_BASE + self.kind,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if instance:
            data["instance"] = instance
        data.update(self.extra)
        return data


def problem_response(problem: Problem, request_id: str | None = None) -> Response:
    instance = f"urn:request:{request_id}" if request_id else None
    body = problem.body(instance)
    if request_id:
        body.setdefault("request_id", request_id)
    return Response(
        dumps(body),
        status_code=problem.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=problem.headers,
    )


def problem_for_error(exc: BaseException) -> Problem:
    """The problem a library error (or an unexpected one) becomes. Unexpected errors say nothing specific."""
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, GeneratorBusy):
        return Problem(503, str(exc), title="Generator busy", headers={"Retry-After": str(RETRY_AFTER_S)})
    if isinstance(exc, AnswerTimeout):
        return Problem(504, str(exc), title="Answer timed out")
    if isinstance(exc, GeneratorError):
        return Problem(502, str(exc))
    if isinstance(exc, IndexBusy):
        return Problem(409, str(exc), title="Index busy")
    if isinstance(exc, ModelNotFound):
        return Problem(503, str(exc), title="Model not installed")
    if isinstance(exc, VectorStoreUnavailable):
        return Problem(503, str(exc), title="Vector store unavailable")
    if isinstance(exc, UploadRefused):
        title = _TITLES.get(exc.status, "Upload refused") if exc.status != 415 else "Unsupported media type"
        return Problem(exc.status, str(exc), title=title, extra={"field": exc.field})
    if isinstance(exc, DocumentUnavailable):
        return Problem(exc.status, str(exc), title=exc.title)
    if isinstance(exc, DiskFull):
        return Problem(507, str(exc), title="Disk full")
    if isinstance(exc, ConfigError):
        return Problem(500, str(exc), title="Configuration error")
    if isinstance(exc, ApplianceError):
        # Library errors are written to be shown to the user (what failed and where).
        return Problem(500, str(exc), title="Appliance error")
    # Anything else is a bug: no exception text, no traceback (both are logged server-side).
    return Problem(500, "An unexpected error occurred; quote the request id to the administrator.")


def log_unexpected(request_id: str | None, exc: BaseException) -> None:
    """Log a bug with its traceback but without the exception's message: it may quote a question or a document."""
    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("request_id=%s unexpected %s\n%s", request_id, type(exc).__name__, frames.rstrip())


def _field_name(loc: Sequence[int | str]) -> str:
    parts = [str(part) for part in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:] or parts
    return ".".join(parts) or "body"


def too_long(field: str, limit: int, setting: str) -> Problem:
    """The 422 for a text longer than a configured limit, shaped like pydantic's own errors."""
    message = f"String should have at most {limit} characters (setting {setting})"
    return validation_problem([{"loc": ("body", field), "type": "string_too_long", "msg": message}])


def validation_problem(errors: Sequence[Any]) -> Problem:
    """A 422 that names each field and why, without the submitted values."""
    fields: list[dict[str, str]] = []
    for error in errors:
        loc = error.get("loc", ()) if isinstance(error, Mapping) else ()
        kind = str(error.get("type", "invalid")) if isinstance(error, Mapping) else "invalid"
        message = str(error.get("msg", "invalid value")) if isinstance(error, Mapping) else str(error)
        if kind == "json_invalid":
            fields.append({"field": "body", "type": kind, "message": "the body is not valid JSON"})
            continue
        fields.append({"field": _field_name(loc), "type": kind, "message": message})
    detail = "; ".join(f"{item['field']}: {item['message']}" for item in fields) or "the request is invalid"
    return Problem(422, detail, kind="validation-error", extra={"errors": fields})


def _request_id(request: Request) -> str | None:
    value = request.scope.get("state", {}).get("request_id")
    return str(value) if value else None


def install_problem_handlers(app: FastAPI) -> None:
    """Route every error FastAPI and the library raise through `problem_response`."""

    async def on_problem(request: Request, exc: Exception) -> Response:
        return problem_response(problem_for_error(exc), _request_id(request))

    async def on_validation(request: Request, exc: Exception) -> Response:
        errors = exc.errors() if isinstance(exc, RequestValidationError) else []
        return problem_response(validation_problem(errors), _request_id(request))

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else _TITLES.get(exc.status_code, "Error")
        if exc.status_code == 400 and detail == FASTAPI_BODY_ERROR:
            # A body FastAPI could not even decode (bad UTF-8, JSON nested too deeply): malformed, like bad JSON.
            return problem_response(validation_problem([{"type": "json_invalid"}]), _request_id(request))
        problem = Problem(exc.status_code, detail, headers=exc.headers)
        return problem_response(problem, _request_id(request))

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(ApplianceError, on_problem)
