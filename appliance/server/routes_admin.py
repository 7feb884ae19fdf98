"""Admin routes: GET /v1/documents (what is indexed) and POST /v1/reindex (bring the index up to date)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import anyio
from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.index.catalog import DocumentRow
from appliance.ingest.pipeline import reindex as run_reindex
from appliance.server.access import CanListDocuments, CanReindex
from appliance.server.auditing import note_audit
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.routes_answer import PROBLEM_RESPONSES
from appliance.server.state import app_state

router = APIRouter(prefix="/v1", tags=["admin"])


def _iso(timestamp: float | None) -> str | None:
    if not timestamp:
        return None
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat()


def document_json(doc: DocumentRow, control: dict[str, Any] | None = None) -> dict[str, Any]:
    """A document as the admin API lists it; `control`: what it states of itself (DocumentControl.as_json)."""
    return {
        "id": doc.id,
        "path": doc.path,
        "type": doc.type,
        "title": doc.title,
        "status": doc.status,
        "error": doc.error,
        "chunks": doc.chunk_count,
        "size": doc.size,
        "indexed_at": _iso(doc.indexed_at),
        "control": control,
    }


@router.get("/documents", summary="List the indexed documents (admin)", responses=PROBLEM_RESPONSES)
async def documents(request: Request, principal: CanListDocuments) -> Response:
    state = app_state(request)

    rows = await anyio.to_thread.run_sync(state.documents)
    metas = await anyio.to_thread.run_sync(state.document_meta, [doc.path for doc in rows])
    today = dt.date.today().isoformat()
    controls = {path: meta.control.as_json(today) for path, meta in metas.items() if meta.control.stated}
    note_audit(request, extra={"documents": len(rows)})
    return ApplianceJSONResponse({"documents": [document_json(doc, controls.get(doc.path)) for doc in rows]})


@router.post(
    "/reindex",
    summary="Rescan every source and update the index (admin); 409 while another reindex runs",
    responses={**PROBLEM_RESPONSES, 409: {"description": "Another reindex holds the writer lock."}},
)
async def reindex(request: Request, principal: CanReindex) -> Response:
    state = app_state(request)
    # The same writer lock as `appliance reindex`: it waits index.lock_timeout_s, then IndexBusy → 409.
    # Asks keep being answered meanwhile: readers never take the writer lock.
    report = await anyio.to_thread.run_sync(run_reindex, state.settings)
    note_audit(
        request,
        extra={
            "added": report.added,
            "updated": report.updated,
            "removed": report.removed,
            "failed": len(report.failed),
            "chunks_total": report.chunks_total,
        },
    )
    return ApplianceJSONResponse(report.as_json())
