"""What the admin page runs besides documents, reindex and the reports (admin role; every call audited):

    GET  /v1/admin/status                 index status and consistency, sources, pending changes, models,
                                          and the files that failed or were skipped, with their reasons
    POST /v1/admin/models/verify          re-check every stored model file's size and sha256
    POST /v1/admin/audit/verify           check the audit log's hash chain
    GET  /v1/admin/tokens                 list tokens (never secrets or hashes)
    POST /v1/admin/tokens                 create one: its secret is in this response only, never in a log
    POST /v1/admin/tokens/{id}/revoke     revoke one

They call the same library functions as `appliance status`, `models verify`, `audit verify` and `token …`.
"""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Request
from starlette.responses import Response

from appliance.audit.verify import verify_audit
from appliance.errors import ApplianceError
from appliance.models.store import ModelStore
from appliance.server.access import CanAdminister, CanReadAudit
from appliance.server.auditing import note_audit
from appliance.server.problems import Problem
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.routes_admin import document_json
from appliance.server.routes_answer import PROBLEM_RESPONSES
from appliance.server.schemas import TokenCreateRequest
from appliance.server.state import AppState, app_state
from appliance.status import index_status

router = APIRouter(prefix="/v1/admin", tags=["admin"])


def status(state: AppState) -> dict[str, Any]:
    """`appliance status`, plus the documents that are not indexed and why (blocking: run in a thread)."""
    data = index_status(state.settings)
    problems = [document_json(doc) for doc in state.documents() if doc.status != "indexed"]
    return {**data, "not_indexed": problems}


@router.get("/status", summary="Index status, consistency, sources, models, files not indexed (admin)")
async def admin_status(request: Request, principal: CanAdminister) -> Response:
    state = app_state(request)
    data = await anyio.to_thread.run_sync(status, state)
    note_audit(request, extra={"consistent": data["consistent"], "not_indexed": len(data["not_indexed"])})
    return ApplianceJSONResponse(data)


@router.post("/models/verify", summary="Re-check every stored model file's size and sha256 (admin)")
async def models_verify(request: Request, principal: CanAdminister) -> Response:
    store = ModelStore(app_state(request).settings.models_dir)
    problems = await anyio.to_thread.run_sync(store.verify)
    note_audit(request, extra={"ok": not problems, "problems": len(problems)})
    return ApplianceJSONResponse({"ok": not problems, "problems": problems, "models": len(store.models())})


@router.post("/audit/verify", summary="Check the audit log's hash chain (admin)")
async def audit_verify(request: Request, principal: CanReadAudit) -> Response:
    report = await anyio.to_thread.run_sync(verify_audit, app_state(request).settings.audit_dir)
    note_audit(request, extra={"ok": report.ok, "records": report.records, "problems": len(report.problems)})
    return ApplianceJSONResponse(report.as_json())


@router.get("/tokens", summary="List API tokens, active and revoked, without secrets (admin)")
async def tokens(request: Request, principal: CanAdminister) -> Response:
    infos = await anyio.to_thread.run_sync(app_state(request).tokens.list)
    note_audit(request, extra={"tokens": len(infos)})
    return ApplianceJSONResponse({"tokens": [info.as_json() for info in infos]})


@router.post(
    "/tokens",
    summary="Create an API token; its secret is shown in this response only (admin)",
    responses={**PROBLEM_RESPONSES, 409: {"description": "A token with this name exists (names are never reused)."}},
)
async def create_token(body: TokenCreateRequest, request: Request, principal: CanAdminister) -> Response:
    state = app_state(request)
    try:
        info, secret = await anyio.to_thread.run_sync(lambda: state.tokens.create(body.role, body.name))
    except ApplianceError as exc:
        raise Problem(409, str(exc), title="Token name taken") from None
    note_audit(request, extra={"token_id": info.id, "token_name": info.name, "role": info.role})
    return ApplianceJSONResponse(
        {"token": info.as_json(), "secret": secret, "note": "Store it now: it cannot be shown again."}
    )


@router.post(
    "/tokens/{token_id}/revoke",
    summary="Revoke an API token by id (admin); it is refused from then on",
    responses={
        **PROBLEM_RESPONSES,
        404: {"description": "No token has this id."},
        409: {"description": "It is the last active admin token."},
    },
)
async def revoke_token(token_id: str, request: Request, principal: CanAdminister) -> Response:
    state = app_state(request)
    tokens = {info.id: info for info in await anyio.to_thread.run_sync(state.tokens.list)}
    target = tokens.get(token_id)  # by id only: a name in a URL would be ambiguous with an id
    if target is None:
        raise Problem(404, f"no token has the id {token_id!r:.20}")
    admins = [info for info in tokens.values() if info.active and info.role == "admin"]
    if target.active and admins == [target]:
        # From a browser that would lock every admin out; the CLI on the host can still do it.
        raise Problem(
            409,
            f"token {target.name} is the last active admin token: create another admin token first "
            "(or revoke it on the appliance with `appliance token revoke`)",
            title="Last admin token",
        )
    info = await anyio.to_thread.run_sync(state.tokens.revoke, token_id)
    note_audit(request, extra={"token_id": info.id, "token_name": info.name, "by": principal.name})
    return ApplianceJSONResponse({"token": info.as_json()})
