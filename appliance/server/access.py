"""Who is calling: `Authorization: Bearer <secret>` checked against the TokenStore, then the role's rights.

Rules, in order, for every /v1/* route:
  * active tokens exist → a valid bearer secret is required (401 when missing, malformed, unknown or
    revoked), and its role must allow the route's action (403 otherwise);
  * no active token exists → single-host mode: requests are served without a token, as principal
    "local" with admin rights, but only when the server listens on loopback and the request comes
    from loopback; anything else is 401.
/healthz, /readyz, /metrics, /, /static and /docs are open.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import Depends, Request

from appliance.server.auth import role_allows
from appliance.server.problems import Problem
from appliance.server.security import is_loopback_host
from appliance.server.state import app_state

log = logging.getLogger("appliance.server")

LOCAL_PRINCIPAL = "local"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="appliance"'}


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    token_id: str | None = None


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return ""  # present but unusable: treated like a wrong token
    return secret.strip()


def _unauthorized(detail: str) -> Problem:
    return Problem(401, detail, headers=_CHALLENGE)


async def authenticate(request: Request) -> Principal:
    state = app_state(request)
    secret = _bearer(request)
    active = await anyio.to_thread.run_sync(state.tokens.count_active)
    if active == 0:
        client = request.client.host if request.client else None
        if is_loopback_host(state.settings.server.host) and is_loopback_host(client):
            return Principal(LOCAL_PRINCIPAL, "admin")
        raise _unauthorized(
            "no API token exists: this server accepts unauthenticated requests only on loopback. "
            "Create a token with `appliance token create`."
        )
    if secret is None:
        raise _unauthorized("an API token is required: send 'Authorization: Bearer <token>'")
    info = await anyio.to_thread.run_sync(state.tokens.verify, secret) if secret else None
    if info is None:
        # The secret itself is never logged, not even a prefix of it.
        log.warning("request_id=%s rejected an unknown or revoked token", request.state.request_id)
        raise _unauthorized("the API token is unknown, malformed or revoked")
    return Principal(info.name, info.role, info.id)


def require(action: str) -> Callable[[Request], Awaitable[Principal]]:
    """A dependency: the caller, once authenticated and allowed to perform `action`."""

    async def dependency(request: Request) -> Principal:
        principal = await authenticate(request)
        request.state.principal = principal.name
        if not role_allows(principal.role, action):  # type: ignore[arg-type]
            raise Problem(403, f"the role '{principal.role}' may not {action}: an admin token is required")
        return principal

    return dependency


# Route parameter types: `principal: CanAsk` authenticates the caller and checks the action.
CanAsk = Annotated[Principal, Depends(require("ask"))]
CanSearch = Annotated[Principal, Depends(require("search"))]
CanOpenDocuments = Annotated[Principal, Depends(require("open"))]
CanListDocuments = Annotated[Principal, Depends(require("documents"))]
CanReindex = Annotated[Principal, Depends(require("reindex"))]
CanGiveFeedback = Annotated[Principal, Depends(require("feedback"))]
CanReadAudit = Annotated[Principal, Depends(require("audit"))]
CanAdminister = Annotated[Principal, Depends(require("admin"))]
CanUpload = Annotated[Principal, Depends(require("upload"))]  # upload and delete documents
