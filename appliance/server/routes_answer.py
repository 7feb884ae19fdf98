"""POST /v1/ask (JSON or Server-Sent Events) and POST /v1/search.

SSE format of an ask (`stream: true`, or `Accept: text/event-stream`):
    event: evidence   data: {"evidence": [EvidenceItem, …]}     first, before the model writes
    event: steps      data: {"answer_kind", "steps": [Step, …]}  a quoted answer: the SOP's own items, at once
                      (+ "checking": true where the local model checks the section choice next)
    event: revised    data: {"evidence", "answer_kind", "steps", "first_shown": Alternative}  the check chose another
                      section: its sources and steps replace those shown; first_shown names the one shown first
    event: token      data: {"text": "…"}                        one per generated piece (a generated answer)
    event: done       data: AnswerResult.as_json() + request_id   last
or, when something fails after the stream has begun:
    event: error      data: a problem object {type, title, status, detail, instance}
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Sequence
from dataclasses import asdict
from typing import Any

import anyio
from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.answer.answerer import AnswerEvent, AnswerResult
from appliance.answer.followup import Turn
from appliance.errors import ApplianceError
from appliance.index.filters import Filters
from appliance.retrieve.search import SearchResult
from appliance.server.access import CanAsk, CanSearch
from appliance.server.answering import answer_events
from appliance.server.auditing import answer_audit, note_audit, search_audit
from appliance.server.problems import Problem, log_unexpected, problem_for_error, too_long
from appliance.server.responses import ApplianceJSONResponse as JSONResponse
from appliance.server.schemas import AskRequest, HistoryTurn, SearchRequest
from appliance.server.sse import EventStreamResponse, sse_event, wants_event_stream
from appliance.server.state import AppState, app_state

router = APIRouter(prefix="/v1", tags=["answers"])

PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"description": "Missing, unknown or revoked API token (problem+json)."},
    403: {"description": "The token's role may not do this (problem+json)."},
    422: {"description": "Invalid body; the problem names the field."},
}


def history_turns(history: Sequence[HistoryTurn], limit: int) -> list[Turn]:
    """The earlier turns as the answerer takes them; an earlier question is held to the question limit."""
    for position, turn in enumerate(history):
        if turn.role == "user" and len(turn.content) > limit:
            raise too_long(f"history.{position}.content", limit, "server.max_question_chars")
    return [Turn(turn.role, turn.content) for turn in history if turn.content.strip()]


def make_filters(path_prefix: str | None, types: Sequence[str] | None) -> Filters:
    return Filters(path_prefix=path_prefix or None, doc_types=tuple(types or ()))


def record_answer(state: AppState, request: Request, result: AnswerResult) -> None:
    state.metrics.observe_stages(result.timings_ms)
    note_audit(request, **answer_audit(state, result))


def result_json(request: Request, result: AnswerResult) -> dict[str, Any]:
    """The answer as JSON, with the request id an operator rates it by (POST /v1/feedback)."""
    return {**result.as_json(), "request_id": request.state.request_id}


async def collect_result(events: AsyncGenerator[AnswerEvent, None]) -> AnswerResult:
    async with contextlib.aclosing(events):
        async for event in events:
            if event.kind == "done" and event.result is not None:
                return event.result
    raise RuntimeError("the answer ended without a result")  # pragma: no cover


def stream_problem(request: Request, exc: Exception) -> Problem:
    """The problem an error becomes once the stream has begun (logged like the middleware would)."""
    request_id = request.state.request_id
    if not isinstance(exc, ApplianceError | Problem):
        log_unexpected(request_id, exc)
    problem = problem_for_error(exc)
    note_audit(request, status=problem.status)
    return problem


async def _ask_stream(
    state: AppState, request: Request, events: AsyncGenerator[AnswerEvent, None]
) -> AsyncGenerator[bytes, None]:
    async with contextlib.aclosing(events):
        try:
            async for event in events:
                if event.kind == "evidence":
                    yield sse_event("evidence", {"evidence": [asdict(item) for item in event.evidence or []]})
                elif event.kind == "steps":
                    steps = [asdict(step) for step in event.steps or []]
                    data: dict[str, object] = {"answer_kind": event.answer_kind, "steps": steps}
                    if event.checking:
                        data["checking"] = True
                    yield sse_event("steps", data)
                elif event.kind == "revised":
                    yield sse_event(
                        "revised",
                        {
                            "evidence": [asdict(item) for item in event.evidence or []],
                            "answer_kind": event.answer_kind,
                            "steps": [asdict(step) for step in event.steps or []],
                            "first_shown": asdict(event.first_shown) if event.first_shown else None,
                        },
                    )
                elif event.kind == "token":
                    yield sse_event("token", {"text": event.text or ""})
                elif event.kind == "done" and event.result is not None:
                    record_answer(state, request, event.result)
                    yield sse_event("done", result_json(request, event.result))
        except Exception as exc:
            problem = stream_problem(request, exc)
            yield sse_event("error", problem.body(f"urn:request:{request.state.request_id}"))


@router.post(
    "/ask",
    summary="Answer a question from the indexed SOPs, with citations (JSON or Server-Sent Events)",
    responses={
        **PROBLEM_RESPONSES,
        200: {"content": {"text/event-stream": {}}, "description": "AnswerResult JSON, or SSE events."},
        502: {"description": "The generator failed."},
        503: {"description": "The generator is busy (Retry-After)."},
        504: {"description": "The answer took longer than server.request_timeout_s."},
    },
)
async def ask(body: AskRequest, request: Request, principal: CanAsk) -> Response:
    state = app_state(request)
    limit = state.settings.server.max_question_chars
    if len(body.question) > limit:
        raise too_long("question", limit, "server.max_question_chars")
    note_audit(request, question=body.question, models=state.models(None))
    events = answer_events(
        state,
        body.question,
        k=body.k,
        filters=make_filters(body.path_prefix, body.types),
        timeout_s=state.settings.server.request_timeout_s,
        history=history_turns(body.history, limit),
        mode=body.mode,
    )
    if body.stream or wants_event_stream(request.headers.get("accept")):
        return EventStreamResponse(_ask_stream(state, request, events))
    result = await collect_result(events)
    record_answer(state, request, result)
    return JSONResponse(result_json(request, result))


@router.post("/search", summary="Search the indexed SOPs (no model is asked)", responses=PROBLEM_RESPONSES)
async def search(body: SearchRequest, request: Request, principal: CanSearch) -> Response:
    state = app_state(request)
    limit = state.settings.server.max_question_chars
    if len(body.query) > limit:
        raise too_long("query", limit, "server.max_question_chars")
    note_audit(request, question=body.query)
    filters = make_filters(body.path_prefix, body.types)

    def run() -> SearchResult:
        with state.retrieval_lock:
            return state.searcher.search(body.query, k=body.k, mode=body.mode, filters=filters)

    result = await anyio.to_thread.run_sync(run)
    note_audit(request, **search_audit(state, result))
    return JSONResponse(result.as_json())
