"""Reports for SOP owners (admin): GET /v1/admin/feedback and GET /v1/admin/gaps, both `?since=7d`."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.feedback import feedback_report
from appliance.reports.period import DEFAULT_SINCE, Period, PeriodError, parse_period
from appliance.server.access import CanReadAudit
from appliance.server.auditing import note_audit
from appliance.server.problems import validation_problem
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.routes_answer import PROBLEM_RESPONSES
from appliance.server.state import app_state

router = APIRouter(prefix="/v1/admin", tags=["admin"])


def period_of(since: str) -> Period:
    try:
        return parse_period(since)
    except PeriodError as exc:
        raise validation_problem([{"loc": ("query", "since"), "type": "value_error", "msg": str(exc)}]) from None


@router.get("/feedback", summary="Operators' ratings of the period's answers (admin)", responses=PROBLEM_RESPONSES)
async def feedback(request: Request, principal: CanReadAudit, since: str = DEFAULT_SINCE) -> Response:
    state = app_state(request)
    period = period_of(since)
    data: dict[str, Any] = await anyio.to_thread.run_sync(feedback_report, state.settings.audit_dir, period)
    note_audit(request, extra={"since": period.text, "rated": data["rated"]})
    return ApplianceJSONResponse(data)
