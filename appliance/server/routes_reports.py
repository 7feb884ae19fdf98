"""Reports for SOP owners (admin): GET /v1/admin/feedback and GET /v1/admin/gaps, both `?since=7d`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np
from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.reports.feedback import feedback_report
from appliance.reports.gaps import Probe, gaps_report, searcher_probe
from appliance.reports.period import DEFAULT_SINCE, Period, PeriodError, parse_period
from appliance.server.access import CanReadAudit
from appliance.server.auditing import note_audit
from appliance.server.problems import validation_problem
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.routes_answer import PROBLEM_RESPONSES
from appliance.server.state import AppState, app_state

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


def gaps(state: AppState, period: Period) -> dict[str, Any]:
    """The report over the serving index (blocking: run in a thread). Asks wait only per search, not
    for the whole report: each embedding and search takes the retrieval lock on its own."""
    search = searcher_probe(lambda question: state.searcher.search(question, k=1))

    def embed(texts: Sequence[str]) -> np.ndarray:
        with state.retrieval_lock:
            return state.searcher.embedder.embed(texts)

    def probe(question: str) -> Probe:
        with state.retrieval_lock:
            return search(question)

    return gaps_report(state.settings.audit_dir, period, state.settings.reports, embed, probe)


@router.get(
    "/gaps",
    summary="The period's refused, thin or rated-down questions by topic: not covered, or covered but not found",
    responses=PROBLEM_RESPONSES,
)
async def gaps_route(request: Request, principal: CanReadAudit, since: str = DEFAULT_SINCE) -> Response:
    state = app_state(request)
    period = period_of(since)
    data = await anyio.to_thread.run_sync(gaps, state, period)
    note_audit(request, extra={"since": period.text, "topics": len(data["topics"])})
    return ApplianceJSONResponse(data)
