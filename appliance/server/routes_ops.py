"""Open operational routes: GET /healthz (the process answers), /readyz (it can answer questions), /metrics."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.models.calibration import calibration_warnings
from appliance.models.store import ModelStore
from appliance.server.metrics import MEDIA_TYPE
from appliance.server.problems import Problem, problem_response
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.state import AppState, app_state
from appliance.status import index_status

router = APIRouter(tags=["operations"])


@router.get("/healthz", summary="Liveness: the process is up")
async def healthz() -> Response:
    return ApplianceJSONResponse({"status": "ok"})


def readiness(state: AppState) -> tuple[dict[str, str], list[str], dict[str, Any]]:
    """Each check's verdict, the reasons of those that failed, and index counts (blocking: run in a thread)."""
    settings = state.settings
    checks: dict[str, str] = {}
    reasons: list[str] = []
    try:
        state.searcher.embedder  # noqa: B018 - loads (and caches) the embedder
        checks["embedder"] = "ok"
    except Exception as exc:
        checks["embedder"] = "failed"
        reasons.append(f"embedder '{settings.embedder.model}' does not load: {exc}")
    if state.loaded_generator() is not None:
        checks["generator"] = "ok"
    elif settings.generator.backend == "openai":
        checks["generator"] = "ok" if settings.generator.url else "failed"
        if not settings.generator.url:
            reasons.append("generator.backend is 'openai' but generator.url is empty")
    else:
        try:
            ModelStore(settings.models_dir).find("generator", settings.generator.model)
            checks["generator"] = "ok"
        except Exception as exc:
            checks["generator"] = "failed"
            reasons.append(str(exc))
    counts: dict[str, Any] = {}
    try:
        local = not settings.vectors.url
        if local and state.searcher.index.vectors_owner() is None:
            with state.retrieval_lock:  # nobody holds the local store: claim it now (the sync thread would)
                state.searcher.index.owns_vectors  # noqa: B018
        status = index_status(settings)
        counts = {
            "documents": status["documents"],
            "chunks": status["chunks"],
            "vectors": status["vectors"],
            # What this server answers from: the newest change its vectors reflect (readiness brought them
            # up to date first), and changes committed that they do not reflect yet.
            "index_updated_at": status["index_updated_at"],
            "pending_changes": status["pending_changes"],
        }
        checks["index"] = "ok" if status["consistent"] else "inconsistent"
        if not status["consistent"]:
            reasons.append(f"the index is inconsistent ({status['consistency']}): run `appliance reindex` to repair it")
        elif local and status["vectors_owner"] != "this process":
            # Answering from a local store another process writes would be answering from old vectors.
            checks["index"] = "not owned"
            holder = status["vectors_owner"] or "nobody yet (this server is claiming it)"
            reasons.append(f"the local vector store is held by {holder}; this server answers only as its owner")
    except Exception as exc:
        checks["index"] = "failed"
        reasons.append(f"the index cannot be read: {exc}")
    return checks, reasons, counts


@router.get("/readyz", summary="Readiness: embedder loads, generator installed, index consistent")
async def readyz(request: Request) -> Response:
    state = app_state(request)
    checks, reasons, counts = await anyio.to_thread.run_sync(readiness, state)
    # Ready all the same: a decision calibrated for another embedder falls back to a scale-free rule.
    warnings = calibration_warnings(state.settings)
    if reasons:
        extra = {"ready": False, "reasons": reasons, "checks": checks, **counts, "warnings": warnings}
        problem = Problem(503, "; ".join(reasons), title="Not ready", extra=extra)
        return problem_response(problem, request.state.request_id)
    return ApplianceJSONResponse({"ready": True, "checks": checks, **counts, "warnings": warnings})


def gauges(state: AppState) -> dict[str, tuple[str, float]]:
    """The gauges read at a scrape (blocking: run in a thread). The index is one for every worker, so the
    worker answering reports it; the queue depth is each worker's own, summed over them (metrics.py)."""
    state.refresh_queue_depth()
    counts = state.index_counts()
    return {
        "appliance_index_documents": (
            "Documents indexed (not counting failed or skipped).",
            float(counts["documents"]),
        ),
        "appliance_index_chunks": ("Chunks in the catalog.", float(counts["chunks"])),
    }


@router.get("/metrics", summary="Prometheus metrics (text exposition format)")
async def metrics(request: Request) -> Response:
    state = app_state(request)
    current = await anyio.to_thread.run_sync(gauges, state)
    return Response(state.metrics.render(current), media_type=MEDIA_TYPE)
