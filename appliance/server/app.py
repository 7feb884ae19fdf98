"""`create_app(settings)`: the HTTP API of the appliance, as a FastAPI app (run it with `appliance serve`).

Routes:
    POST /v1/ask               answer with citations (JSON, or Server-Sent Events)      action "ask"
    POST /v1/search            ranked passages, no model                                action "search"
    POST /v1/chat/completions  OpenAI-compatible chat                                   action "ask"
    GET  /v1/models            OpenAI-compatible model list                             action "ask"
    GET  /v1/documents         the catalog                                              action "documents" (admin)
    POST /v1/reindex           rescan the sources                                       action "reindex" (admin)
    POST /v1/feedback          rate an answer by its request_id                         action "feedback"
    GET  /v1/admin/*           status, gaps, feedback, audit verify, tokens, models     actions "audit", "admin" (admin)
    GET  /admin                the admin page (its API calls carry the admin token)    open
    POST /v1/documents         upload a document (multipart, field `file`) and index it action "upload" (admin)
    DELETE /v1/documents/{id}  delete an uploaded document and its index entries        action "upload" (admin)
    GET  /v1/documents/{id}/file   an indexed document's original bytes                action "open"
    POST /v1/documents/{id}/view   its safe rendered view, at the cited place           action "open"
    GET  /healthz /readyz /metrics, /, /static/*, /docs, /openapi.json                 open

Auth (appliance.server.access): a bearer token whenever any active token exists; without any,
single-host mode serves loopback clients of a loopback-bound server as admin "local".
The app holds ONE Answerer (index, embedder, and the generator loaded on first use) for the process.

`create_app_from_environment()` is the factory uvicorn calls in each worker process of
`appliance serve --workers N`: settings from the environment and the TOML file exactly as the CLI
loads them (the CLI passes its --host/--port on as APPLIANCE_SERVER_HOST/PORT), and the same bind
check as `appliance serve`. A Chroma server that cannot be reached is a 503 problem.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from appliance import __version__
from appliance.answer.answerer import Answerer
from appliance.audit.writer import AuditLog
from appliance.config import Settings, load_settings
from appliance.errors import ApplianceError
from appliance.server import (
    routes_admin,
    routes_admin_tools,
    routes_answer,
    routes_documents,
    routes_feedback,
    routes_openai,
    routes_ops,
    routes_reports,
    routes_ui,
    routes_uploads,
)
from appliance.server.auth import TokenStore
from appliance.server.index_sync import IndexSync
from appliance.server.middleware import RequestContextMiddleware
from appliance.server.problems import install_problem_handlers
from appliance.server.responses import ApplianceJSONResponse
from appliance.server.security import check_bind_allowed
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


# What `appliance serve` logs with; the process id tells the workers of `--workers N` apart.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s"
# uvicorn's exit status for a worker that cannot start: its supervisor then stops instead of
# restarting it forever (uvicorn.config.STARTUP_FAILURE).
STARTUP_FAILURE = 3


def configure_server_logging() -> None:
    """INFO lines with the process id; httpx's line per HTTP request (to a Chroma server, to an
    OpenAI-compatible generator) only from WARNING up, or it would outnumber the requests served."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    logging.getLogger("httpx").setLevel(logging.WARNING)


def create_app(settings: Settings, *, answerer: Answerer | None = None) -> FastAPI:
    """The app. An `answerer` passed in (tests: a scripted generator) is used as is and left open."""
    owns_answerer = answerer is None
    state = AppState(
        settings=settings,
        answerer=answerer if answerer is not None else Answerer(settings),
        tokens=TokenStore(settings.tokens_path),
        audit=AuditLog(settings),
    )

    # The searcher answers from the local vector store only as its owner, brought up to date by the
    # sync thread and before each search with what other processes commit to the catalog.
    state.searcher.index.serve(settings.index.lock_timeout_s)
    index_sync = IndexSync(settings) if not settings.vectors.url else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if index_sync is not None:
            index_sync.start()
        try:
            yield
        finally:
            if index_sync is not None:
                index_sync.stop()
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
    for module in (
        routes_answer,
        routes_openai,
        routes_feedback,
        routes_reports,
        routes_admin_tools,
        routes_admin,
        routes_uploads,
        routes_documents,
        routes_ops,
        routes_ui,
    ):
        app.include_router(module.router)
    app.add_middleware(RequestContextMiddleware, state=state)
    _add_bearer_scheme(app)
    return app


def _thread_only_progress_lock() -> None:
    """tqdm (sentence-transformers runs a disabled progress bar per encode) makes a multiprocessing
    lock on first use; in a uvicorn worker that named semaphore outlives the worker and the parent
    warns about "leaked semaphore objects" at every shutdown. Threads are all a worker needs."""
    with contextlib.suppress(ImportError):
        from tqdm import tqdm

        tqdm.set_lock(threading.RLock())


def create_app_from_environment() -> FastAPI:
    """The app of one `appliance serve --workers N` worker (uvicorn calls this factory in each process).

    Settings come from APPLIANCE_* and the TOML file, as the CLI reads them; the bind check of
    `appliance serve` runs again here, so no worker listens on the network without a token. A
    worker that cannot start logs one line and exits with uvicorn's startup-failure status, which
    stops the supervisor instead of restarting the worker in a loop.
    """
    configure_server_logging()
    _thread_only_progress_lock()
    try:
        settings = load_settings()
        check_bind_allowed(settings, settings.server.host)
        return create_app(settings)
    except ApplianceError as exc:
        logging.getLogger("appliance.server").error("worker %d cannot start: %s", os.getpid(), exc)
        sys.exit(STARTUP_FAILURE)
    except Exception:  # a bug or an unreadable file: same exit, with the traceback for the administrator
        logging.getLogger("appliance.server").exception("worker %d cannot start", os.getpid())
        sys.exit(STARTUP_FAILURE)
