"""Security: the full auth matrix (no token, unknown, malformed, Basic, empty, revoked, operator, admin
× every route), path traversal over HTTP (archive members: tests/test_offline_archive.py), response
headers of a real `appliance serve` (no server software or version, a strict CSP on the operator page),
hypothesis over search and question text and URL query strings, and no token secret or answer text in
any log or audit file these requests produced (scripts/reliability/security.py).
"""

from __future__ import annotations

import logging
import shutil
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from appliance.config import GeneratorSettings, Settings
from appliance.server.auth import TokenStore
from scripts.reliability.procs import appliance_env, start_serve, stop
from scripts.reliability.security import (
    API_ROUTES,
    OPEN_ROUTES,
    UNKNOWN_SECRET,
    SecurityReport,
    auth_matrix,
    callers,
    check_headers,
    find_leaks,
    log_files,
    traversal,
)
from tests.test_api import TWO_SOPS, indexed_home, make_client

# Words FTS5, SQL and shells give meaning to, identifiers, odd Unicode: what a query parser must survive.
# fmt: off
QUERY_PIECES = [
    '"', "*", "^", "NEAR(", ")", "(", "AND", "OR", "NOT", "-", "+", ":", "chunks_fts", "header:", "'", ";",
    "--", "\\", "{", "}", "%", "_", "..", "/", "\x00", "\u202e", "\ufeff", "\ud7ff", "VLV-3042-B", "gasket",
    "NEAR(gasket valve, 2)", "' OR 1=1 --", "rank", "bm25(", "\t", "\n", "\u0301", "🚰", "ﬁ", "İ",
]
# fmt: on


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> dict[str, Any]:
    """A home with two SOPs and three tokens (operator, admin, one revoked admin)."""
    base = tmp_path_factory.mktemp("secured")
    home = indexed_home(base, models_dir, TWO_SOPS)
    with TokenStore(home / "tokens.sqlite") as store:
        _, operator = store.create("operator", "desk")
        _, admin = store.create("admin", "boss")
        _, revoked = store.create("admin", "gone")
        store.revoke("gone")
    return {"base": base, "home": home, "operator": operator, "admin": admin, "revoked": revoked}


@pytest.fixture
def client(secured: dict[str, Any], models_dir: Path, tmp_path: Path) -> Iterator[TestClient]:
    """The app on its own copy of the home, with the server's log going to a file to scan afterwards."""
    home = tmp_path / "home"
    shutil.copytree(secured["home"], home)
    settings = Settings(
        home=home, models_dir=models_dir, generator=GeneratorSettings.model_validate({"model": "smollm2-135m-instruct"})
    )
    handler = logging.FileHandler(tmp_path / "server.log")
    handler.setLevel(logging.DEBUG)
    logging.getLogger().addHandler(handler)
    try:
        yield make_client(settings)
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()


def secrets(secured: dict[str, Any]) -> list[str]:
    return [secured["operator"], secured["admin"], secured["revoked"], UNKNOWN_SECRET]


def test_every_caller_on_every_route(client: TestClient, secured: dict[str, Any], tmp_path: Path) -> None:
    report = auth_matrix(client, callers(secured["operator"], secured["admin"], secured["revoked"]))
    print(f"\nauth matrix: {len(report.cells)} cells, {report.responses_checked} responses checked")
    assert [f"{c.caller} {c.method} {c.path}: {c.got} != {c.expected}" for c in report.failures] == []
    assert report.findings == []
    assert len(report.cells) == 8 * (len(API_ROUTES) + len(OPEN_ROUTES))

    # The answers are the documents' own text (quoted, the default): no log may hold them either.
    assert any("VLV-3042-B" in answer for answer in report.answers), report.answers
    scanned, leaks = find_leaks(log_files(tmp_path), secrets(secured), report.answers)
    assert scanned >= 2 and leaks == [], leaks  # server.log and the audit file


def test_path_traversal_over_http_finds_nothing_outside(client: TestClient, secured: dict[str, Any]) -> None:
    report = traversal(client, {"Authorization": f"Bearer {secured['admin']}"}, known_prefix="plant/")
    assert report.findings == []
    assert report.traversal_probes >= 25


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    text=st.one_of(
        st.text(min_size=1, max_size=300),
        st.lists(st.sampled_from(QUERY_PIECES), min_size=1, max_size=12).map(" ".join),
        st.lists(st.sampled_from(QUERY_PIECES), min_size=1, max_size=12).map("".join),
    ),
    mode=st.sampled_from(["lexical", "dense", "hybrid"]),
    param=st.text(alphabet=string.printable + "é\u202e", max_size=40),
)
def test_any_query_text_gets_an_answer_not_a_server_error(
    client: TestClient, secured: dict[str, Any], text: str, mode: str, param: str
) -> None:
    headers = {"Authorization": f"Bearer {secured['operator']}"}
    calls = [
        client.post("/v1/search", json={"query": text, "mode": mode}, headers=headers),
        client.post("/v1/ask", json={"question": text}, headers=headers),
        client.get("/v1/models", params={"q": param, param or "x": text}, headers=headers),
        client.get("/healthz", params={"q": text}),
    ]
    for response in calls:
        assert response.status_code < 500, (response.request.url, response.status_code, response.text[:300])
        assert response.status_code in (200, 422), (response.request.url, response.status_code, response.text[:300])


@pytest.mark.slow
def test_a_real_server_names_no_software_and_leaks_no_secret(
    secured: dict[str, Any], models_dir: Path, tmp_path: Path
) -> None:
    """Headers as uvicorn really sends them (TestClient bypasses uvicorn), on every kind of answer."""
    home = tmp_path / "home"
    shutil.copytree(secured["home"], home)
    env = appliance_env(
        home, models_dir, APPLIANCE_GENERATOR_MODEL="smollm2-135m-instruct", APPLIANCE_GENERATOR_MAX_TOKENS="24"
    )
    report, answers = SecurityReport(), []
    operator = {"Authorization": f"Bearer {secured['operator']}"}
    server, base = start_serve(env, tmp_path / "serve.log")
    try:
        with httpx.Client(base_url=base, timeout=300.0) as http:
            probes: list[tuple[str, str, dict[str, Any] | None, dict[str, str], int]] = [
                ("GET", "/", None, {}, 200),
                ("GET", "/docs", None, {}, 200),
                ("GET", "/healthz", None, {}, 200),
                ("GET", "/no/such/page", None, {}, 404),
                ("DELETE", "/v1/search", None, operator, 405),
                ("POST", "/v1/search", {"query": ""}, operator, 422),
                ("POST", "/v1/search", {"query": "gasket"}, {"Authorization": f"Bearer {UNKNOWN_SECRET}"}, 401),
                ("POST", "/v1/search", {"query": "gasket"}, {"Authorization": f"Bearer {secured['revoked']}"}, 401),
                ("GET", "/v1/documents", None, operator, 403),
                ("POST", "/v1/search", {"query": "gasket"}, operator, 200),
                (
                    "POST",
                    "/v1/ask",
                    {"question": "Which gasket goes on the chlorine cylinder connection?"},
                    operator,
                    200,
                ),
            ]
            for method, path, body, headers, expected in probes:
                response = http.request(method, path, json=body, headers=headers)
                assert response.status_code == expected, (method, path, response.status_code, response.text[:300])
                check_headers(response, path, report)
                assert "Traceback" not in response.text and "uvicorn" not in response.text.lower()
                if path == "/v1/ask" and not response.json()["refused"]:
                    answers.append(response.json()["answer"])
            page = http.get("/")
            csp = page.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "object-src 'none'" in csp
    finally:
        stop(server)
    assert report.findings == []
    assert answers, "the ask was answered by the model"
    scanned, leaks = find_leaks(log_files(tmp_path), secrets(secured), answers)
    assert scanned >= 2 and leaks == [], leaks
