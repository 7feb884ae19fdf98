"""`create_app(settings)`: the HTTP API of the appliance, as a FastAPI app (run it with `appliance serve`).

Routes:
    POST /v1/ask               answer with citations (JSON, or Server-Sent Events)      action "ask"
    POST /v1/search            ranked passages, no model                                action "search"
    POST /v1/chat/completions  OpenAI-compatible chat                                   action "ask"
    GET  /v1/models            OpenAI-compatible model list                             action "ask"
    GET  /v1/documents         the catalog                                              action "documents" (admin)
    POST /v1/reindex           rescan the sources                                       action "reindex" (admin)
    GET  /healthz /readyz /metrics, /, /static/*, /docs, /openapi.json                 open

Auth (appliance.server.access): a bearer token whenever any active token exists; without any,
single-host mode serves loopback clients of a loopback-bound server as admin "local".
The app holds ONE Answerer (index, embedder, and the generator loaded on first use) for the process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from appliance import __version__
from appliance.answer.answerer import Answerer
from appliance.audit import AuditLog
from appliance.config import Settings
from appliance.server import routes_admin, routes_answer, routes_openai, routes_ops, routes_ui
from appliance.server.auth import TokenStore
from appliance.server.middleware import RequestContextMiddleware
from appliance.server.problems import install_problem_handlers
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.state import AppState

DESCRIPTION = """Offline question answering over standard operating procedures.

Send `Authorization: Bearer <token>` (tokens: `appliance token create`). While no token exists, the
server answers unauthenticated requests only when it listens on loopback and the client is local
(single-host mode, admin rights). Errors are `application/problem+json`.
"""


def _add_bearer_scheme(app: FastAPI) -> None:
    """Document the bearer token in the OpenAPI schema (so Swagger UI's Authorize button works)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = schema.setdefault("components", {})
        components.setdefault("securitySchemes", {})["bearer"] = {"type": "http", "scheme": "bearer"}
        for path, operations in schema.get("paths", {}).items():
            if path.startswith("/v1/"):
                for operation in operations.values():
                    operation["security"] = [{"bearer": []}]
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(settings: Settings, *, answerer: Answerer | None = None) -> FastAPI:
    """The app. An `answerer` passed in (tests: a scripted generator) is used as is and left open."""
    owns_answerer = answerer is None
    state = AppState(
        settings=settings,
        answerer=answerer if answerer is not None else Answerer(settings),
        tokens=TokenStore(settings.tokens_path),
        audit=AuditLog(settings),
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owns_answerer:
                state.answerer.close()
            state.tokens.close()

    app = FastAPI(
        title="SOP appliance",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,  # FastAPI's pages load Swagger UI and ReDoc from a CDN; routes_ui serves them locally
        redoc_url=None,
        lifespan=lifespan,
        default_response_class=ApplianceJSONResponse,
    )
    app.state.appliance = state
    install_problem_handlers(app)
    for module in (routes_answer, routes_openai, routes_admin, routes_ops, routes_ui):
        app.include_router(module.router)
    app.add_middleware(RequestContextMiddleware, state=state)
    _add_bearer_scheme(app)
    return app
