"""OpenAI-compatible routes, so existing chat clients can use the appliance: POST /v1/chat/completions, GET /v1/models.

The last user message is the question; the user and assistant messages before it are the conversation
it follows (a follow-up is searched as a standalone question, setting followup.rewrite). Every answer
still comes from the SOPs alone: earlier assistant messages are never sources.
The reply is the checked answer followed by its sources; `appliance` carries the
citations and the grounding verdict for clients that know about it. With `stream: true` the reply
is OpenAI's `chat.completion.chunk` events, ending with `data: [DONE]`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncGenerator
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.answer.answerer import AnswerEvent, AnswerResult, Citation
from appliance.answer.followup import Turn
from appliance.index.filters import NO_FILTERS
from appliance.server.access import CanAsk
from appliance.server.answering import answer_events
from appliance.server.auditing import note_audit
from appliance.server.problems import too_long, validation_problem
from appliance.server.responses import ApplianceJSONResponse, dumps
from appliance.server.routes_answer import PROBLEM_RESPONSES, collect_result, record_answer, stream_problem
from appliance.server.schemas import ChatCompletionRequest
from appliance.server.sse import EventStreamResponse, sse_data
from appliance.server.state import AppState, app_state

router = APIRouter(prefix="/v1", tags=["openai-compatible"])


def _where(citation: Citation) -> str:
    text = citation.path + (f" › {citation.section}" if citation.section else "")
    return text + (f" (p. {citation.page})" if citation.page else "")


def sources_block(result: AnswerResult) -> str:
    if not result.citations:
        return ""
    return "\n\nSources:\n" + "\n".join(f"[{c.n}] {_where(c)}" for c in result.citations)


def appliance_extension(result: AnswerResult) -> dict[str, Any]:
    return {
        "citations": [asdict(c) for c in result.citations],
        "grounded": result.grounded,
        "refused": result.refused,
        "truncated": result.truncated,
        "searched": result.searched,
        "did_you_mean": result.did_you_mean,
    }


def _finish_reason(result: AnswerResult) -> str:
    """OpenAI's own words: "length" when the model was cut at generator.max_tokens."""
    return "length" if result.truncated else "stop"


def _question(body: ChatCompletionRequest, limit: int) -> str:
    users = [m for m in body.messages if m.role == "user"]
    if not users:
        raise validation_problem([{"loc": ("body", "messages"), "type": "missing", "msg": "no user message"}])
    question = users[-1].text().strip()
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: not text a tokenizer can take
        raise validation_problem(
            [{"loc": ("body", "messages"), "type": "string_unicode", "msg": "the last user message is not valid text"}]
        ) from None
    if not question:
        raise validation_problem(
            [{"loc": ("body", "messages"), "type": "string_too_short", "msg": "the last user message is empty"}]
        )
    if len(question) > limit:
        raise too_long("messages", limit, "server.max_question_chars")
    return question


def _history(body: ChatCompletionRequest) -> list[Turn]:
    """The user and assistant messages before the last user message (system, tool and developer ones play no part)."""
    last = max(i for i, m in enumerate(body.messages) if m.role == "user")
    return [
        Turn("user" if m.role == "user" else "assistant", m.text())
        for m in body.messages[:last]
        if m.role in ("user", "assistant") and m.text().strip()
    ]


def _model(state: AppState, result: AnswerResult | None = None) -> str:
    return (result.model if result is not None else None) or state.generator_model_id()


@router.post(
    "/chat/completions",
    summary="OpenAI-compatible chat completion: the last user message, read with the conversation, answered",
    responses={**PROBLEM_RESPONSES, 200: {"content": {"text/event-stream": {}}}},
)
async def chat_completions(body: ChatCompletionRequest, request: Request, principal: CanAsk) -> Response:
    state = app_state(request)
    question = _question(body, state.settings.server.max_question_chars)
    note_audit(request, question=question, models=state.models(None))
    events = answer_events(
        state,
        question,
        k=None,
        filters=NO_FILTERS,
        timeout_s=state.settings.server.request_timeout_s,
        history=_history(body),
    )
    completion_id = f"chatcmpl-{request.state.request_id}"
    created = int(time.time())
    if body.stream:
        return EventStreamResponse(_chat_stream(state, request, events, completion_id, created))
    result = await collect_result(events)
    record_answer(state, request, result)
    generation = result.generation
    prompt_tokens = int(generation.get("prompt_tokens") or 0)
    completion_tokens = int(generation.get("completion_tokens") or 0)
    return ApplianceJSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": _model(state, result),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": result.answer + sources_block(result)},
                    "finish_reason": _finish_reason(result),
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
            # The id to rate this answer with (POST /v1/feedback); also the X-Request-ID header.
            "appliance": {**appliance_extension(result), "request_id": request.state.request_id},
        }
    )


async def _chat_stream(
    state: AppState,
    request: Request,
    events: AsyncGenerator[AnswerEvent, None],
    completion_id: str,
    created: int,
) -> AsyncGenerator[bytes, None]:
    model = _model(state)

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> bytes:
        data = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **more,
        }
        return sse_data(dumps(data))

    async with contextlib.aclosing(events):
        try:
            yield chunk({"role": "assistant", "content": ""})
            streamed = False
            async for event in events:
                if event.kind == "token" and event.text:
                    streamed = True
                    yield chunk({"content": event.text})
                elif event.kind == "done" and event.result is not None:
                    result = event.result
                    record_answer(state, request, result)
                    # A refusal without the model has no tokens: its text comes now, like the sources.
                    tail = ("" if streamed else result.answer) + sources_block(result)
                    if tail:
                        yield chunk({"content": tail})
                    extension = {**appliance_extension(result), "request_id": request.state.request_id}
                    yield chunk({}, _finish_reason(result), appliance=extension)
        except Exception as exc:
            problem = stream_problem(request, exc)
            error = {"message": problem.detail, "type": problem.kind, "code": problem.status}
            yield sse_data(json.dumps({"error": error}))
        yield sse_data("[DONE]")


@router.get("/models", summary="OpenAI-compatible model list: the configured generator")
async def models(request: Request, principal: CanAsk) -> Response:
    state = app_state(request)
    return ApplianceJSONResponse(
        {"object": "list", "data": [{"id": state.generator_model_id(), "object": "model", "owned_by": "appliance"}]}
    )
