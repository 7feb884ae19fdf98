"""POST /v1/feedback: an operator rates an answer by its request_id (appliance/feedback.py keeps it).

An unknown request_id is a 404, not a rating recorded blind: a rating is only worth keeping with the
question it rates, which the answer's own audit record holds. A request id that names no answer (a
typo, a search, an answer older than audit retention) would be a rating of nothing, and accepting
any id would let a client fill the log with ratings that no report can use.
"""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.reports.feedback import find_answer
from appliance.server.access import CanGiveFeedback
from appliance.server.auditing import note_audit
from appliance.server.problems import Problem, validation_problem
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.routes_answer import PROBLEM_RESPONSES
from appliance.server.schemas import FeedbackRequest
from appliance.server.state import app_state

router = APIRouter(prefix="/v1", tags=["feedback"])

# An answer's audit record is written just after its last byte is sent: a rating clicked at once waits
# this long for it. Only a rating of an answer this process is still recording waits: any other id (a typo, a
# search's id, an answer long recorded) is looked up once, so a wrong id costs no thread 3 seconds of scans.
# (With `serve --workers N`, a rating that reaches another worker within those milliseconds is looked up once.)
ANSWER_RECORD_WAIT_S = 3.0


@router.post(
    "/feedback",
    summary="Rate an answer (up or down, with a reason and a comment) by its request_id",
    responses={
        **PROBLEM_RESPONSES,
        404: {"description": "No answer with this request_id is in the audit log."},
    },
)
async def feedback(body: FeedbackRequest, request: Request, principal: CanGiveFeedback) -> Response:
    state = app_state(request)
    if body.reason is not None and body.rating != "down":
        raise validation_problem(
            [{"loc": ("body", "reason"), "type": "value_error", "msg": "A reason goes with rating 'down' only"}]
        )
    audit_dir = state.settings.audit_dir
    wait_s = ANSWER_RECORD_WAIT_S if body.request_id in state.unrecorded_answers else 0.0
    answer = await anyio.to_thread.run_sync(lambda: find_answer(audit_dir, body.request_id, wait_s))
    fields: dict[str, Any] = {"rated_request_id": body.request_id, "rating": body.rating, "reason": body.reason}
    if answer is None:
        note_audit(request, extra={**fields, "found": False})
        raise Problem(
            404,
            f"request_id {body.request_id!r} names no answer in the audit log (POST /v1/ask or "
            "/v1/chat/completions, within audit retention): rate an answer by the request_id it came with",
            title="Unknown answer",
        )
    note_audit(request, comment=body.comment, extra=fields)
    return ApplianceJSONResponse(
        {"recorded": True, "request_id": body.request_id, "rating": body.rating, "reason": body.reason}
    )
