"""The original documents behind citations (operator role, audited: who opened which document).

    GET  /v1/documents/{id}/file   the original bytes, with their real media type          action "open"
    POST /v1/documents/{id}/view   a safe rendered view, the cited sentences marked          action "open"

The id is the only handle (`document_id` of a citation or source); what may be served is decided by
`appliance.documents.original`. A file changed on disk since it was indexed is served flagged:
`X-Document-Changed: true` on the file, `changed` and a notice in the view.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from appliance.documents.original import Original, indexed_document, read_file
from appliance.documents.view import document_view
from appliance.errors import DocumentUnavailable
from appliance.index.catalog import DocumentRow
from appliance.index.records import ChunkRow
from appliance.server.access import CanOpenDocuments
from appliance.server.auditing import note_audit
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.routes_answer import PROBLEM_RESPONSES
from appliance.server.schemas import DocumentViewRequest
from appliance.server.state import AppState, app_state

router = APIRouter(prefix="/v1/documents", tags=["documents"])

DocumentId = Annotated[int, Path(ge=1, le=2**62, description="The document_id of a citation or a source.")]
RESPONSES: dict[int | str, dict[str, Any]] = {
    **PROBLEM_RESPONSES,
    404: {"description": "No indexed document has this id (never indexed, failed, removed)."},
    409: {"description": "The file may no longer be served (a link out of its source, not a regular file…)."},
    410: {"description": "The file is gone from disk (the next reindex removes it)."},
}
# The original is shown as a document of its own origin-less sandbox: nothing in it can run, and it
# can reach nothing. Debian's Chromium shows a PDF in its built-in viewer under this policy as well.
FILE_CSP = (
    "sandbox; default-src 'self'; script-src 'none'; object-src 'none'; style-src 'unsafe-inline'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _document(state: AppState, document_id: int, chunk_id: str | None = None) -> tuple[DocumentRow, ChunkRow | None]:
    with state.retrieval_lock:  # the catalog connection is shared
        catalog = state.catalog()
        document = indexed_document(catalog, document_id)
        chunk = catalog.chunks_by_ids([chunk_id]).get(chunk_id) if chunk_id else None
    if chunk_id and (chunk is None or chunk.path != document.path):
        raise DocumentUnavailable(404, "Chunk not found", f"chunk {chunk_id} is not a passage of {document.path}")
    return document, chunk


def _ocr_chunks(state: AppState, document: DocumentRow) -> list[ChunkRow]:
    """The document's chunks read by OCR: the view shows them (OCR is too slow to run again)."""
    if document.type not in ("pdf", "image"):
        return []
    with state.retrieval_lock:
        chunks = state.catalog().chunks_of_documents([document.path]).get(document.path, [])
    return [chunk for chunk in chunks if chunk.ocr_confidence is not None]


def _audit(
    request: Request, document: DocumentRow, original: Original | None, view: bool, chunk_id: str | None = None
) -> None:
    note_audit(
        request,
        sources=[{"path": document.path, "chunk_id": chunk_id, "score": None}],
        extra={"document_id": document.id, "view": view, "changed": original.changed if original else None},
    )


def _content_disposition(name: str, document_type: str) -> str:
    kind = "attachment" if document_type == "docx" else "inline"  # no browser shows a .docx
    ascii_name = name.encode("ascii", "replace").decode("ascii").replace('"', "_").replace("\\", "_")
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"


@router.get("/{document_id}/file", summary="The original file of an indexed document (operator)", responses=RESPONSES)
async def document_file(document_id: DocumentId, request: Request, principal: CanOpenDocuments) -> Response:
    state = app_state(request)

    def run() -> Original:
        document, _ = _document(state, document_id)
        _audit(request, document, None, view=False)
        return read_file(state.settings, document)

    original = await anyio.to_thread.run_sync(run)
    _audit(request, original.document, original, view=False)
    headers = {
        "Content-Disposition": _content_disposition(original.file_name, original.document.type),
        "Content-Security-Policy": FILE_CSP,
        "X-Document-Changed": "true" if original.changed else "false",
        "X-Document-Sha256": original.sha256,
    }
    return Response(original.data, media_type=original.media_type, headers=headers)


@router.post(
    "/{document_id}/view",
    summary="A safe rendered view of an indexed document, opened at the cited passage (operator)",
    responses=RESPONSES,
)
async def document_view_route(
    document_id: DocumentId, body: DocumentViewRequest, request: Request, principal: CanOpenDocuments
) -> Response:
    state = app_state(request)

    def run() -> dict[str, Any]:
        document, chunk = _document(state, document_id, body.chunk_id)
        _audit(request, document, None, view=True, chunk_id=body.chunk_id)
        original = read_file(state.settings, document)
        _audit(request, document, original, view=True, chunk_id=body.chunk_id)
        return document_view(
            original,
            section=chunk.section if chunk is not None else (body.section or ""),
            page=chunk.page if chunk is not None else body.page,
            sentences=body.sentences,
            chunks=_ocr_chunks(state, document),
        )

    return ApplianceJSONResponse(await anyio.to_thread.run_sync(run))
