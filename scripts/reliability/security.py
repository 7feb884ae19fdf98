"""Security checks that run against any client of the API (a FastAPI TestClient or httpx against a real
`appliance serve`): the auth matrix over every route, path traversal, response headers, and a scan of
log and audit files for token secrets and answer text.

Path traversal in archive members (`..`, absolute names, links) is covered by
tests/test_offline_archive.py; this module covers the HTTP side (static files, the docs assets, the
path filter of search and ask).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.answer.generated.prompt import REFUSAL

QUESTION = "What do I close before the chlorine cylinder change?"


@dataclass(frozen=True)
class Upload:
    """A multipart body with one file in the field `file` (POST /v1/documents)."""

    name: str
    data: bytes


MATRIX_UPLOAD = Upload("matrix-check.md", b"# Matrix check\n\nA document the auth matrix uploads, then deletes.\n")
# (method, path, JSON body or upload, action) of every /v1 route; the action names the right it needs.
# `{uploaded}` is the id of the document the matrix uploaded last (before that, an id nobody has).
API_ROUTES: list[tuple[str, str, dict[str, Any] | Upload | None, str]] = [
    ("POST", "/v1/ask", {"question": QUESTION}, "ask"),
    ("POST", "/v1/search", {"query": "gasket"}, "search"),
    ("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": QUESTION}]}, "ask"),
    ("GET", "/v1/models", None, "ask"),
    ("GET", "/v1/documents", None, "documents"),
    ("POST", "/v1/reindex", None, "reindex"),
    # Document 1 of the tested index (the first file ingested).
    ("GET", "/v1/documents/1/file", None, "open"),
    ("POST", "/v1/documents/1/view", {}, "open"),
    # ANSWER_ID: the request id of the caller's own ask above (a rating needs an answer to rate).
    ("POST", "/v1/feedback", {"request_id": "ANSWER_ID", "rating": "down", "reason": "wrong"}, "feedback"),
    ("GET", "/v1/admin/status", None, "admin"),
    ("GET", "/v1/admin/gaps?since=1d", None, "audit"),
    ("GET", "/v1/admin/feedback?since=1d", None, "audit"),
    ("POST", "/v1/admin/audit/verify", None, "audit"),
    ("POST", "/v1/admin/models/verify", None, "admin"),
    ("GET", "/v1/admin/tokens", None, "admin"),
    ("POST", "/v1/admin/tokens", {"role": "operator"}, "admin"),
    # TOKEN_ID: the token the caller created just above.
    ("POST", "/v1/admin/tokens/TOKEN_ID/revoke", None, "admin"),
    ("POST", "/v1/documents", MATRIX_UPLOAD, "upload"),
    ("DELETE", "/v1/documents/{uploaded}", None, "upload"),
]
# What an allowed caller gets where it is not 200.
OK_STATUS = {("POST", "/v1/documents"): 201}
OPEN_ROUTES = [
    "/healthz",
    "/readyz",
    "/metrics",
    "/",
    "/static/app.js",
    "/admin",
    "/static/admin.js",
    "/docs",
    "/docs/init.js",
    "/openapi.json",
]
# Pages whose CSP must allow no inline or remote code.
PAGES = ("/", "/static/app.js", "/admin", "/static/admin.js")
ROLE_ACTIONS = {
    "operator": {"ask", "search", "open", "feedback"},
    "admin": {"ask", "search", "open", "feedback", "documents", "reindex", "audit", "admin", "upload"},
}
UNKNOWN_SECRET = "apl_00000000_" + "x" * 43
# Callers that must all be refused alike: nothing tells one kind of bad credential from another.
BAD_CALLERS = ["no token", "unknown token", "malformed token", "Basic scheme", "empty bearer", "revoked token"]
TRAVERSALS = [
    "/static/../app.py",
    "/static/%2e%2e/app.py",
    "/static/%2e%2e%2f%2e%2e%2fconfig.py",
    "/static/..%2f..%2fconfig.py",
    "/static/%252e%252e/app.py",
    "/static//etc/passwd",
    "/static/%2fetc%2fpasswd",
    "/static/..%5capp.py",
    "/static/....//....//etc/passwd",
    "/docs/assets/..%2f..%2fapp.py",
    "/docs/assets/%2e%2e",
    "/docs/assets/../../etc/passwd",
]
PATH_FILTERS = [
    "../",
    "../../etc/passwd",
    "/etc/passwd",
    "plant/../../",
    "%2e%2e/",
    "..\\..\\",
    "\u2025/",
    "plant/\u0000",
]
# What a file from outside the static folder would show: Python source, /etc/passwd, a settings file.
_OUTSIDE = re.compile(r"(^|\n)(import |from \w+ import|def |root:x:0:0)|\[tool\.ruff\]")
VERSION_WORDS = re.compile(r"uvicorn|starlette|fastapi|python/|cpython|hypercorn|gunicorn|\b\d+\.\d+\.\d+\b", re.I)


# httpx.Client against a real server, or a FastAPI TestClient (request(method, url, json=, headers=)).
Client = Any


@dataclass
class Cell:
    caller: str
    method: str
    path: str
    expected: int
    got: int
    ok: bool
    detail: str = ""


@dataclass
class SecurityReport:
    cells: list[Cell] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    traversal_probes: int = 0
    responses_checked: int = 0
    answers: list[str] = field(default_factory=list)  # the answers given: no log may hold them

    @property
    def failures(self) -> list[Cell]:
        return [cell for cell in self.cells if not cell.ok]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.findings


def callers(operator: str, admin: str, revoked: str) -> dict[str, dict[str, str]]:
    return {
        "no token": {},
        "unknown token": {"Authorization": f"Bearer {UNKNOWN_SECRET}"},
        "malformed token": {"Authorization": "Bearer not-a-token"},
        "Basic scheme": {"Authorization": "Basic YWRtaW46YWRtaW4="},
        "empty bearer": {"Authorization": "Bearer"},
        "revoked token": {"Authorization": f"Bearer {revoked}"},
        "operator": {"Authorization": f"Bearer {operator}"},
        "admin": {"Authorization": f"Bearer {admin}"},
    }


def auth_matrix(
    client: Client, headers_of: dict[str, dict[str, str]], report: SecurityReport | None = None
) -> SecurityReport:
    """Every caller × every route: 401 for every bad credential, 403 for a role without the right,
    200 otherwise; open routes answer everyone. Refusals must not differ by the kind of bad credential."""
    report = report or SecurityReport()
    refusals: dict[str, set[str]] = {}
    uploaded = 2**40
    for caller, headers in headers_of.items():
        answer_id = token_id = "none"
        for method, template, template_body, action in API_ROUTES:
            path = template.replace("TOKEN_ID", token_id).replace("{uploaded}", str(uploaded))
            if isinstance(template_body, Upload):
                upload = {"file": (template_body.name, template_body.data)}
                response = client.request(method, path, files=upload, headers=headers)
                if response.status_code == 201:
                    uploaded = response.json()["document_id"]
            else:
                response = client.request(method, path, json=_filled(template_body, answer_id), headers=headers)
            if response.status_code == 200 and template == "/v1/ask":
                answer_id = response.headers["x-request-id"]
            elif response.status_code == 200 and template == "/v1/admin/tokens" and method == "POST":
                token_id = response.json()["token"]["id"]
            report.responses_checked += 1
            check_headers(response, path, report)
            allowed = OK_STATUS.get((method, template), 200)
            expected = (allowed if action in ROLE_ACTIONS[caller] else 403) if caller in ROLE_ACTIONS else 401
            ok = response.status_code == expected
            detail = ""
            if expected == 401:
                challenge = response.headers.get("www-authenticate", "")
                ok = ok and challenge.startswith("Bearer")
                detail = _detail(response)
                if caller != "no token":
                    refusals.setdefault(detail, set()).add(caller)
            report.cells.append(Cell(caller, method, template, expected, response.status_code, ok, detail))
            if response.status_code == 200 and path == "/v1/ask" and not response.json()["refused"]:
                report.answers.append(response.json()["answer"])
            elif response.status_code == 200 and path == "/v1/chat/completions":
                content = response.json()["choices"][0]["message"]["content"]
                if content != REFUSAL:
                    report.answers.append(content)
        for path in OPEN_ROUTES:
            response = client.request("GET", path, headers=headers)
            report.responses_checked += 1
            check_headers(response, path, report)
            ok = response.status_code == 200 or (path == "/readyz" and response.status_code == 503)
            report.cells.append(Cell(caller, "GET", path, 200, response.status_code, ok))
    if len(refusals) > 1:
        report.findings.append(f"bad credentials are refused with different details (an oracle): {refusals}")
    return report


def _filled(body: dict[str, Any] | None, answer_id: str) -> dict[str, Any] | None:
    if body is None:
        return None
    return {key: answer_id if value == "ANSWER_ID" else value for key, value in body.items()}


def _detail(response: Any) -> str:
    try:
        return str(response.json().get("detail", ""))
    except ValueError:
        return ""


def check_headers(response: Any, path: str, report: SecurityReport) -> None:
    """No header names the server software or a version; pages carry a strict CSP; the usual hardening."""
    headers = {name.lower(): value for name, value in response.headers.items()}
    for name in ("server", "x-powered-by", "x-aspnet-version", "via"):
        if name in headers:
            report.findings.append(f"{path}: header {name}: {headers[name]}")
    for name, value in headers.items():
        if name in ("content-length", "date", "x-request-id", "etag", "last-modified", "retry-after", "content-type"):
            continue
        if VERSION_WORDS.search(value):
            report.findings.append(f"{path}: header {name} may name the software or its version: {value}")
    if headers.get("x-content-type-options") != "nosniff":
        report.findings.append(f"{path}: no X-Content-Type-Options: nosniff")
    csp = headers.get("content-security-policy", "")
    if not csp or "default-src 'self'" not in csp or "frame-ancestors 'none'" not in csp:
        report.findings.append(f"{path}: Content-Security-Policy missing or lax: {csp!r}")
    if path in PAGES and ("unsafe-inline" in csp or "unsafe-eval" in csp or "http" in csp):
        report.findings.append(f"{path}: the page's CSP allows inline or remote code: {csp!r}")
    if path.startswith("/v1/") and headers.get("cache-control") != "no-store":
        report.findings.append(f"{path}: API response may be cached: cache-control {headers.get('cache-control')!r}")


def traversal(
    client: Client, headers: dict[str, str], known_prefix: str, report: SecurityReport | None = None
) -> SecurityReport:
    """Paths that climb out of the static folders get a 404 problem and nothing from outside; the path
    filter of search and ask only ever narrows the index (no hit outside `known_prefix`), never 5xx."""
    report = report or SecurityReport()
    for path in TRAVERSALS:
        response = client.request("GET", path, headers=headers)
        report.traversal_probes += 1
        report.responses_checked += 1
        if response.status_code not in (400, 404):
            report.findings.append(f"GET {path}: HTTP {response.status_code}, not 404")
        if _OUTSIDE.search(response.text):
            report.findings.append(f"GET {path}: the body looks like a file from outside the static folder")
    control = client.request(
        "POST", "/v1/search", json={"query": "gasket", "path_prefix": known_prefix}, headers=headers
    )
    if control.status_code != 200 or not control.json()["hits"]:
        report.findings.append(f"the control search under {known_prefix!r} found nothing: the probes prove nothing")
    for prefix in PATH_FILTERS:
        for route, body in (
            ("/v1/search", {"query": "gasket", "path_prefix": prefix}),
            ("/v1/ask", {"question": QUESTION, "path_prefix": prefix}),
        ):
            response = client.request("POST", route, json=body, headers=headers)
            report.traversal_probes += 1
            report.responses_checked += 1
            if response.status_code >= 500 or response.status_code not in (200, 422):
                report.findings.append(f"POST {route} path_prefix={prefix!r}: HTTP {response.status_code}")
                continue
            if response.status_code == 200:
                data = response.json()
                items = [*data.get("hits", []), *data.get("citations", [])]
                if isinstance(data.get("evidence"), list):  # an ask's sources (a search's is its decision)
                    items += data["evidence"]
                paths = [item["path"] for item in items]
                outside = [item for item in paths if not item.startswith(known_prefix) or not item.startswith(prefix)]
                if outside:
                    report.findings.append(f"POST {route} path_prefix={prefix!r} returned {outside[:3]}")
    return report


def find_leaks(files: Iterable[Path], secrets: Iterable[str], answers: Iterable[str]) -> tuple[int, list[str]]:
    """(files scanned, leaks): any token secret (or its random part) or any answer text found in a file."""
    needles: list[tuple[str, bytes]] = []
    for secret in secrets:
        needles.append(("token secret", secret.encode()))
        random_part = secret.split("_", 2)[-1]
        if len(random_part) >= 16:
            needles.append(("token secret (random part)", random_part.encode()))
    for answer in answers:
        text = answer.strip()
        if len(text) >= 24:  # shorter answers are too generic to search for
            needles.append(("answer text", text.encode()))
    scanned, leaks = 0, []
    for path in files:
        if not path.is_file() or path.is_symlink():
            continue
        data = path.read_bytes()
        scanned += 1
        for what, needle in needles:
            if needle in data:
                leaks.append(f"{path}: {what} {needle[:24]!r}…")
    return scanned, leaks


def log_files(*roots: Path) -> list[Path]:
    """Every log, audit and output file under these folders (*.log, *.jsonl, *.txt, audit/…). Not the
    harness's own strace logs: they hold the first bytes of every HTTP response the server sent."""
    found: list[Path] = []
    for root in roots:
        for path in root.rglob("*"):
            wanted = path.suffix in (".log", ".jsonl", ".txt") or "audit" in path.parts
            if wanted and path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found)
