"""Admins add and remove documents over the API (appliance.uploads.store does the work; audited).

    POST   /v1/documents        multipart/form-data, field `file` (?replace=true to replace)   action "upload"
    DELETE /v1/documents/{id}   an uploaded document: its file and its index entries             action "upload"

The upload is indexed before the response: 201 with the document id and the outcome, or a problem naming
the field or the file (413 too large, 415 a type that is not indexed, 422 an unsafe name or a file that
cannot be indexed, 409 a name taken without replace=true or the index busy, 507 a full disk) with nothing written.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Path, Query, Request
from starlette.responses import Response

from appliance.server.access import CanUpload
from appliance.server.auditing import note_audit
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.routes_answer import PROBLEM_RESPONSES
from appliance.server.state import app_state
from appliance.server.upload_form import read_upload
from appliance.uploads.store import UploadOutcome, delete_upload, store_upload, upload_limit

router = APIRouter(prefix="/v1/documents", tags=["admin"])

RESPONSES: dict[int | str, dict[str, Any]] = {
    **PROBLEM_RESPONSES,
    409: {"description": "A file of that name exists (send replace=true), or another reindex holds the index."},
    413: {"description": "The file is larger than uploads.max_file_bytes; nothing was written."},
    415: {"description": "Not multipart/form-data, or a file type that is not indexed."},
    507: {"description": "The disk is full (the detail names the path and the space needed); nothing was stored."},
}
MULTIPART_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"}},
                }
            }
        },
    }
}


def _audit(request: Request, outcome: UploadOutcome) -> None:
    note_audit(
        request,
        sources=[{"path": outcome.path, "chunk_id": None, "score": None}],
        extra={"outcome": outcome.outcome, "bytes": outcome.size, "chunks": outcome.chunks}
        | ({"document_id": outcome.document_id} if outcome.document_id is not None else {}),
    )


@router.post(
    "",
    status_code=201,
    summary="Upload a document into the upload folder and index it (admin)",
    responses=RESPONSES,
    openapi_extra=MULTIPART_BODY,
)
async def upload_document(
    request: Request,
    principal: CanUpload,
    replace: Annotated[bool, Query(description="Replace an uploaded file of the same name.")] = False,
) -> Response:
    state = app_state(request)
    uploaded = await read_upload(request, upload_limit(state.settings))
    note_audit(request, extra={"bytes": len(uploaded.data), "replace": replace})
    outcome = await anyio.to_thread.run_sync(
        lambda: store_upload(state.settings, uploaded.name, uploaded.data, replace=replace)
    )
    _audit(request, outcome)
    return ApplianceJSONResponse(outcome.as_json(), status_code=201)


@router.delete(
    "/{document_id}",
    summary="Delete an uploaded document: its file and its index entries (admin)",
    responses={
        **PROBLEM_RESPONSES,
        404: {"description": "No document has this id."},
        409: {"description": "Not an uploaded document (other sources are managed in their folders)."},
    },
)
async def delete_document(
    request: Request,
    principal: CanUpload,
    document_id: Annotated[int, Path(ge=1, le=2**62, description="The document's id (GET /v1/documents).")],
) -> Response:
    state = app_state(request)
    note_audit(request, extra={"document_id": document_id})
    outcome = await anyio.to_thread.run_sync(delete_upload, state.settings, document_id)
    _audit(request, outcome)
    return ApplianceJSONResponse(outcome.as_json())
