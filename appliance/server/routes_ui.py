"""The browser side: `/` (the operator page), `/admin` (the admin page), `/static/*` and `/docs` (Swagger UI).

Both pages are open files: what they show comes from /v1 routes that check the bearer token the page
keeps in sessionStorage, so /admin shows nothing to a browser without an admin token.

Nothing is fetched from outside the appliance: FastAPI's own /docs loads Swagger UI from a CDN,
so it is disabled and this /docs serves the Swagger UI files shipped in the `fastapi-offline`
package, with its start-up code in a separate file so that the page needs no inline script.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from fastapi import APIRouter, Request
from starlette.responses import FileResponse, HTMLResponse, Response

from appliance.server.problems import Problem
from appliance.server.security import DOCS_CSP

router = APIRouter(include_in_schema=False)

STATIC_DIR = Path(__file__).resolve().parent / "static"
DOCS_ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".txt": "text/plain; charset=utf-8",
}


def _not_found(what: str) -> Problem:
    return Problem(404, f"{what} does not exist")


def static_file(root: Path, relative: str) -> Path | None:
    """The file under `root` that `relative` names, or None (missing, a folder, or outside `root`)."""
    if not root.is_dir():
        return None
    base = root.resolve()
    candidate = (base / relative).resolve()
    if not candidate.is_relative_to(base) or not candidate.is_file():
        return None
    return candidate


def _page(name: str, what: str) -> Response:
    page = static_file(STATIC_DIR, name)
    if page is None:
        raise _not_found(f"{what} (appliance/server/static/{name})")
    return FileResponse(page, media_type=_MEDIA_TYPES[".html"])


@router.get("/")
async def index() -> Response:
    return _page("index.html", "the web UI")


@router.get("/admin")
async def admin() -> Response:
    return _page("admin.html", "the admin page")


@router.get("/static/{file_path:path}")
async def static(file_path: str) -> Response:
    found = static_file(STATIC_DIR, file_path)
    if found is None:
        raise _not_found(f"/static/{file_path}")
    return FileResponse(found, media_type=_MEDIA_TYPES.get(found.suffix.lower(), "application/octet-stream"))


def docs_assets_dir() -> Path | None:
    try:
        import fastapi_offline
    except ImportError:  # pragma: no cover - a dependency; /docs then says what is missing
        return None
    return Path(fastapi_offline.__file__).resolve().parent / "static"


def _root(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


@router.get("/docs")
async def docs(request: Request) -> Response:
    if docs_assets_dir() is None:
        raise _not_found("the offline Swagger UI (package fastapi-offline)")
    root = html.escape(_root(request), quote=True)
    page = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Appliance API</title>
  <link rel="stylesheet" href="{root}/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="{root}/docs/assets/favicon.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{root}/docs/assets/swagger-ui-bundle.js"></script>
  <script src="{root}/docs/init.js"></script>
</body>
</html>
"""
    return HTMLResponse(page, headers={"Content-Security-Policy": DOCS_CSP})


@router.get("/docs/init.js")
async def docs_init(request: Request) -> Response:
    openapi_url = json.dumps(_root(request) + (request.app.openapi_url or "/openapi.json"))
    script = f"""window.addEventListener("DOMContentLoaded", function () {{
  window.ui = SwaggerUIBundle({{
    url: {openapi_url},
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset]
  }});
}});
"""
    return Response(script, media_type=DOCS_ASSETS["swagger-ui-bundle.js"])


@router.get("/docs/assets/{name}")
async def docs_asset(name: str) -> Response:
    folder = docs_assets_dir()
    found = static_file(folder, name) if folder is not None and name in DOCS_ASSETS else None
    if found is None:
        raise _not_found(f"/docs/assets/{name}")
    return FileResponse(found, media_type=DOCS_ASSETS[name])
