"""The HTTP API: every route's contract, the auth matrix, SSE, problems, readiness, metrics, audit, docs.

Real components throughout (SQLite catalog, Chroma, the real embedder from the test model store);
only the LLM is a scripted fake, so answers are known and fast. The corpus is indexed once per
module and each test works on its own copy of that home. The answers here are the model's
(answer.mode = generated): the default quoted answers over HTTP are in test_quoted_answers.py.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient

from appliance.answer.answerer import Answerer
from appliance.answer.generated.prompt import REFUSAL
from appliance.cli.main import cli
from appliance.config import AnswerSettings, GeneratorSettings, IndexSettings, Settings
from appliance.errors import GeneratorError
from appliance.index.filters import NO_FILTERS
from appliance.index.index import Index
from appliance.index.lock import writer_lock
from appliance.ingest.pipeline import ingest
from appliance.models.generation import ChatMessage, GenerationStream
from appliance.models.generation.base import StatsBox
from appliance.models.registry import load_embedder
from appliance.server.answering import answer_events
from appliance.server.app import create_app
from appliance.server.auth import TokenStore
from appliance.server.security import BindRefused, check_bind_allowed, is_loopback_host
from appliance.server.state import MAX_ASKS_IN_FLIGHT, AppState
from tests.fakes import SCRIPTED_ANSWER, ScriptedGenerator

CHLORINE = """# Chlorine cylinder change

## Isolation

Close the cylinder valve VLV-3042-B and wait until the vacuum regulator gauge reads zero.
Replace the lead gasket RW-GSK-0410 at every connection; a gasket is never reused.

## Leak check

Apply ammonia vapour to the joint. A white cloud means a leak: evacuate and call extension 2100.
"""
PUMP = """# Raw water pump start

## Pre-start checks

Open the suction valve VLV-1100-A fully and vent the pump casing until water flows without air.
Check that the discharge valve VLV-1101-A is closed before starting pump P-RW-01.
"""
FILTER = """Backwash of sand filter SF-2

Stop the filter feed, open the backwash outlet and run the backwash pump for 8 minutes.
Close the backwash outlet before returning SF-2 to service.
"""

QUESTION = "What do I close before the chlorine cylinder change?"
ANSWER = SCRIPTED_ANSWER
OFF_TOPIC = "How do I restart the Zabbix agent on the bastion hosts?"
LOOPBACK_CLIENT = ("127.0.0.1", 50000)


# --- fakes ---------------------------------------------------------------------------------------


class QueuedGenerator(ScriptedGenerator):
    """A request that waits in the model's queue until it is cancelled (like FairQueue.wait)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()
        self.cancelled = threading.Event()

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        def pieces() -> Iterator[str]:
            try:
                self.waiting.set()
                if not self.cancelled.wait(timeout=30):
                    yield "too late"
                raise GeneratorError("the request was cancelled while it waited for the model")
            finally:
                self.closed.set()

        return GenerationStream(pieces(), StatsBox(), cancel=self.cancelled.set)  # type: ignore[arg-type]


# --- fixtures ------------------------------------------------------------------------------------


TWO_SOPS = {"SOP-CL-004.md": CHLORINE, "SOP-RW-001.md": PUMP}


def indexed_home(base: Path, models_dir: Path, files: dict[str, str]) -> Path:
    """`base/home`, with these documents (file name -> text) written to `base/plant` and indexed."""
    plant = base / "plant"
    plant.mkdir()
    for name, text in files.items():
        (plant / name).write_text(text)
    home = base / "home"
    ingest(Settings(home=home, models_dir=models_dir), [plant])
    return home


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    """A home with three SOPs indexed (once per module; tests copy it)."""
    files = {"SOP-CL-004.md": CHLORINE, "SOP-RW-001.md": PUMP, "filter-backwash.txt": FILTER}
    return indexed_home(tmp_path_factory.mktemp("api"), models_dir, files)


@pytest.fixture
def api_settings(corpus_home: Path, models_dir: Path, tmp_path: Path) -> Settings:
    home = tmp_path / "home"
    shutil.copytree(corpus_home, home)
    return Settings(
        home=home,
        models_dir=models_dir,
        generator=GeneratorSettings.model_validate({"model": "smollm2-135m-instruct"}),
        answer=AnswerSettings(mode="generated"),
    )


def make_client(
    settings: Settings, generator: Any | None = None, client: tuple[str, int] = LOOPBACK_CLIENT
) -> TestClient:
    answerer = Answerer(settings, generator=generator or ScriptedGenerator())  # type: ignore[arg-type]
    app = create_app(settings, answerer=answerer)
    return TestClient(app, client=client, raise_server_exceptions=False)


@pytest.fixture
def client(api_settings: Settings) -> TestClient:
    return make_client(api_settings)


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def parse_sse(text: str) -> list[tuple[str | None, str]]:
    """(event name, data) per event of a text/event-stream body."""
    events: list[tuple[str | None, str]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name: str | None = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
        events.append((name, "\n".join(data)))
    return events


def assert_problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert {"type", "title", "status", "detail"} <= set(body) and body["status"] == status
    return body


# --- ask -----------------------------------------------------------------------------------------


def test_ask_returns_the_answer_result_with_citations(client: TestClient) -> None:
    response = client.post("/v1/ask", json={"question": QUESTION})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    data = response.json()
    assert {"question", "answer", "refused", "grounded", "citations", "evidence", "timings_ms", "model"} <= set(data)
    assert data["model"] == "scripted" and not data["refused"]
    assert data["citations"][0]["path"] == "plant/SOP-CL-004.md"
    assert {"retrieve", "first_token", "total"} <= set(data["timings_ms"])


def test_ask_filters_and_k_are_applied(client: TestClient) -> None:
    data = client.post("/v1/ask", json={"question": QUESTION, "k": 1, "types": ["md"]}).json()
    assert len(data["evidence"]) <= 3
    numbered = [item for item in data["evidence"] if item["n"] is not None]
    assert len(numbered) == 1
    refused = client.post("/v1/ask", json={"question": QUESTION, "path_prefix": "elsewhere/"}).json()
    assert refused["refused"] and refused["evidence"] == []


def test_a_question_the_documents_do_not_cover_is_refused_without_the_model(api_settings: Settings) -> None:
    client = make_client(api_settings, ScriptedGenerator(busy=True))  # would be 503 if asked
    data = client.post("/v1/ask", json={"question": OFF_TOPIC}).json()
    assert data["refused"] and data["answer"] == REFUSAL and data["model"] is None


def test_ask_stream_sends_evidence_then_tokens_then_done(client: TestClient) -> None:
    with client.stream("POST", "/v1/ask", json={"question": QUESTION, "stream": True}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["cache-control"] == "no-store"
        events = parse_sse("".join(response.iter_text()))
    names = [name for name, _ in events]
    assert names[0] == "evidence" and names[-1] == "done"
    assert set(names[1:-1]) == {"token"} and len(names) > 3
    evidence = json.loads(events[0][1])["evidence"]
    assert evidence[0]["path"] == "plant/SOP-CL-004.md" and evidence[0]["n"] == 1
    text = "".join(json.loads(data)["text"] for name, data in events if name == "token")
    assert text == ANSWER
    done = json.loads(events[-1][1])
    assert done["citations"][0]["n"] == 1 and done["model"] == "scripted"


def test_accept_event_stream_also_streams(client: TestClient) -> None:
    response = client.post("/v1/ask", json={"question": QUESTION}, headers={"Accept": "text/event-stream"})
    names = [name for name, _ in parse_sse(response.text)]
    assert names[0] == "evidence" and names[-1] == "done"


def test_a_generation_failing_midway_ends_the_stream_with_an_error_event(api_settings: Settings) -> None:
    client = make_client(api_settings, ScriptedGenerator(fail_after=3))
    response = client.post("/v1/ask", json={"question": QUESTION, "stream": True})
    events = parse_sse(response.text)
    names = [name for name, _ in events]
    assert names == ["evidence", "token", "token", "token", "error"]
    problem = json.loads(events[-1][1])
    assert problem["status"] == 502 and {"type", "title", "detail", "instance"} <= set(problem)


def test_a_busy_generator_is_503_with_retry_after(api_settings: Settings) -> None:
    client = make_client(api_settings, ScriptedGenerator(busy=True))
    response = client.post("/v1/ask", json={"question": QUESTION})
    body = assert_problem(response, 503)
    assert int(response.headers["retry-after"]) > 0
    assert "busy" in body["detail"]


def test_a_failing_generator_is_502(api_settings: Settings) -> None:
    client = make_client(api_settings, ScriptedGenerator(fail_after=0))
    assert_problem(client.post("/v1/ask", json={"question": QUESTION}), 502)


def test_an_unexpected_error_is_a_500_problem_without_details(
    api_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(api_settings, ScriptedGenerator(fail_after=0, error=RuntimeError("internal-secret-xyz")))
    with caplog.at_level(logging.INFO, logger="appliance.server"):
        response = client.post("/v1/ask", json={"question": QUESTION}, headers={"X-Request-ID": "req-500"})
    body = assert_problem(response, 500)
    assert "internal-secret-xyz" not in response.text and "Traceback" not in response.text
    assert body["request_id"] == "req-500" and response.headers["x-request-id"] == "req-500"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "req-500" in logged and "RuntimeError" in logged
    assert QUESTION not in logged and "internal-secret-xyz" not in logged


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"{not json", "body"),
        (b'{"question": "\xff\xfe"}', "body"),
        (b"[" * 5000 + b"]" * 5000, "body"),
        (b"", "body"),
        (b'{"question": "\\ud800 valve"}', "question"),
        (b'{"k": 3}', "question"),
        (b'{"question": "   "}', "question"),
        (b'{"question": 42}', "question"),
        (b'{"question": "ok?", "k": "5"}', "k"),
        (b'{"question": "ok?", "k": 0}', "k"),
        (b'{"question": "ok?", "stream": "yes"}', "stream"),
        (b'{"question": "ok?", "types": ["exe"]}', "types.0"),
        (b'{"question": "ok?", "colour": "blue"}', "colour"),
        (b'["question"]', "body"),
    ],
)
def test_invalid_ask_bodies_are_422_problems_naming_the_field(client: TestClient, body: bytes, field: str) -> None:
    response = client.post("/v1/ask", content=body, headers={"Content-Type": "application/json"})
    problem = assert_problem(response, 422)
    assert field in [error["field"] for error in problem["errors"]], problem
    assert field in problem["detail"]


def test_a_too_long_question_is_422_and_not_echoed(api_settings: Settings) -> None:
    settings = api_settings.model_copy(
        update={"server": api_settings.server.model_copy(update={"max_question_chars": 50})}
    )
    client = make_client(settings)
    question = "valve " * 20
    problem = assert_problem(client.post("/v1/ask", json={"question": question}), 422)
    assert problem["errors"][0]["field"] == "question" and "50" in problem["detail"]
    assert question.strip() not in json.dumps(problem)
    assert_problem(client.post("/v1/search", json={"query": question}), 422)
    chat = {"messages": [{"role": "user", "content": question}]}
    assert_problem(client.post("/v1/chat/completions", json=chat), 422)


def test_a_huge_body_is_refused_with_413(client: TestClient) -> None:
    huge = b'{"question": "' + b"a" * (5 * 1024 * 1024) + b'"}'
    assert_problem(client.post("/v1/ask", content=huge, headers={"Content-Type": "application/json"}), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies while reading
        yield b'{"question": "'
        for _ in range(5):
            yield b"a" * (1024 * 1024)
        yield b'"}'

    chunked = client.post("/v1/ask", content=chunks(), headers={"Content-Type": "application/json"})
    assert_problem(chunked, 413)


def test_an_answer_slower_than_the_request_timeout_is_504_and_stopped(api_settings: Settings) -> None:
    server = api_settings.server.model_copy(update={"request_timeout_s": 2.0})
    generator = ScriptedGenerator(" ".join(["slow"] * 400), delay_s=0.05)  # 20 s if nothing stopped it
    client = make_client(api_settings.model_copy(update={"server": server}), generator)
    problem = assert_problem(client.post("/v1/ask", json={"question": QUESTION}), 504)
    assert "server.request_timeout_s" in problem["detail"]
    # On a loaded machine the timeout may even fire before generation starts; either way it stops.
    assert generator.produced < 400
    assert generator.produced == 0 or generator.closed.wait(5)


# --- search, documents, reindex -------------------------------------------------------------------


def test_search_returns_ranked_hits(client: TestClient) -> None:
    data = client.post("/v1/search", json={"query": "VLV-3042-B", "k": 2, "mode": "lexical"}).json()
    assert data["mode"] == "lexical" and len(data["hits"]) <= 2
    top = data["hits"][0]
    assert set(top) == {"rank", "chunk_id", "path", "title", "section", "page", "score", "text", "ocr_confidence"}
    assert top["path"] == "plant/SOP-CL-004.md" and "evidence" in data and "timings_ms" in data
    only_txt = client.post("/v1/search", json={"query": "backwash pump", "types": ["txt"]}).json()
    assert only_txt["hits"] and {hit["path"] for hit in only_txt["hits"]} == {"plant/filter-backwash.txt"}
    assert_problem(client.post("/v1/search", json={"query": "x", "mode": "fuzzy"}), 422)


def test_documents_lists_the_catalog(client: TestClient) -> None:
    data = client.get("/v1/documents").json()
    paths = {doc["path"] for doc in data["documents"]}
    assert paths == {"plant/SOP-CL-004.md", "plant/SOP-RW-001.md", "plant/filter-backwash.txt"}
    doc = next(d for d in data["documents"] if d["path"] == "plant/SOP-CL-004.md")
    assert set(doc) == {"id", "path", "type", "title", "status", "error", "chunks", "size", "indexed_at", "control"}
    assert doc["control"] is None  # the test SOP states no number, revision or date
    assert doc["type"] == "md" and doc["status"] == "indexed" and doc["chunks"] >= 1 and doc["size"] > 0


def test_reindex_returns_the_report_and_409_while_another_reindex_runs(api_settings: Settings, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    ingest(api_settings, [extra])
    client = make_client(api_settings)
    before = client.post("/v1/search", json={"query": "PX-7781-Q"}).json()["hits"]
    assert all(hit["path"] != "extra/sampler.md" for hit in before)
    (extra / "sampler.md").write_text("# Sampler\n\nFlush the sampler line PX-7781-Q for two minutes.\n")
    report = client.post("/v1/reindex").json()
    assert report["unchanged"] == 3 and report["added"] == 1 and "chunks_total" in report
    hits = client.post("/v1/search", json={"query": "PX-7781-Q", "mode": "dense"}).json()["hits"]
    assert hits[0]["path"] == "extra/sampler.md", "the running app sees what its reindex wrote"
    busy_settings = api_settings.model_copy(update={"index": IndexSettings(lock_timeout_s=0.0)})
    busy_client = make_client(busy_settings)
    with writer_lock(busy_settings.lock_path, 1.0):
        problem = assert_problem(busy_client.post("/v1/reindex"), 409)
    assert "reindex" in problem["detail"]


# --- OpenAI-compatible ---------------------------------------------------------------------------


def test_chat_completion_answers_the_last_user_message_with_sources(client: TestClient) -> None:
    body = {
        "model": "anything",
        "temperature": 0.2,
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
        ],
    }
    data = client.post("/v1/chat/completions", json=body).json()
    assert data["object"] == "chat.completion" and data["model"] == "scripted" and data["id"].startswith("chatcmpl-")
    choice = data["choices"][0]
    assert choice["finish_reason"] == "stop" and choice["message"]["role"] == "assistant"
    content = choice["message"]["content"]
    assert content.startswith("Close the cylinder valve")
    assert "\n\nSources:\n[1] plant/SOP-CL-004.md › " in content
    assert data["usage"]["completion_tokens"] > 0
    assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"]
    assert data["appliance"]["grounded"] is True and data["appliance"]["refused"] is False
    assert data["appliance"]["citations"][0]["path"] == "plant/SOP-CL-004.md"


def test_chat_completion_streams_openai_chunks_and_done(client: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": QUESTION}], "stream": True}
    response = client.post("/v1/chat/completions", json=body)
    events = parse_sse(response.text)
    assert events[-1] == (None, "[DONE]")
    chunks = [json.loads(data) for _, data in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "scripted" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text.startswith(ANSWER) and "Sources:\n[1] plant/SOP-CL-004.md" in text
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and chunks[-1]["appliance"]["refused"] is False


def test_chat_completion_cut_at_the_token_limit_finishes_with_length(api_settings: Settings) -> None:
    short = api_settings.model_copy(update={"generator": api_settings.generator.model_copy(update={"max_tokens": 3})})
    client = make_client(short)
    for stream in (False, True):
        response = client.post(
            "/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}], "stream": stream}
        )
        if stream:
            last = [json.loads(data) for _, data in parse_sse(response.text)[:-1]][-1]
            finish, extension = last["choices"][0]["finish_reason"], last["appliance"]
        else:
            data = response.json()
            finish, extension = data["choices"][0]["finish_reason"], data["appliance"]
        assert finish == "length" and extension["truncated"] is True


def test_chat_completion_without_a_usable_user_message_is_422(client: TestClient) -> None:
    body = {"messages": [{"role": "system", "content": "x"}]}
    assert assert_problem(client.post("/v1/chat/completions", json=body), 422)["errors"][0]["field"] == "messages"
    assert_problem(client.post("/v1/chat/completions", json={"messages": []}), 422)
    surrogate = b'{"messages": [{"role": "user", "content": "\\ud800 valve"}]}'
    headers = {"Content-Type": "application/json"}
    assert_problem(client.post("/v1/chat/completions", content=surrogate, headers=headers), 422)
    assert_problem(client.post("/v1/chat/completions", json={"messages": [{"role": "user"}], "stream": "yes"}), 422)


def test_models_lists_the_generator(client: TestClient) -> None:
    data = client.get("/v1/models").json()
    assert data == {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "appliance"}]}


# --- auth ----------------------------------------------------------------------------------------


def test_auth_matrix(api_settings: Settings) -> None:
    with TokenStore(api_settings.tokens_path) as store:
        _, operator = store.create("operator", "op")
        _, admin = store.create("admin", "boss")
        _, revoked = store.create("admin", "gone")
        store.revoke("gone")
    client = make_client(api_settings)
    ask = {"question": QUESTION}
    for headers in ({}, bearer("apl_00000000_" + "x" * 43), bearer(revoked), {"Authorization": "Basic abc"}):
        response = client.post("/v1/ask", json=ask, headers=headers)
        assert_problem(response, 401)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert_problem(client.get("/v1/documents", headers=headers), 401)
    assert client.post("/v1/ask", json=ask, headers=bearer(operator)).status_code == 200
    assert client.post("/v1/search", json={"query": "gasket"}, headers=bearer(operator)).status_code == 200
    assert client.get("/v1/models", headers=bearer(operator)).status_code == 200
    assert_problem(client.get("/v1/documents", headers=bearer(operator)), 403)
    assert_problem(client.post("/v1/reindex", headers=bearer(operator)), 403)
    assert client.get("/v1/documents", headers=bearer(admin)).status_code == 200
    assert client.post("/v1/reindex", headers=bearer(admin)).status_code == 200
    for open_path in ("/healthz", "/metrics", "/docs", "/openapi.json"):
        assert client.get(open_path).status_code == 200, open_path
    assert client.get("/readyz").status_code in (200, 503)


def test_without_tokens_only_loopback_is_served(api_settings: Settings) -> None:
    assert make_client(api_settings).get("/v1/documents").status_code == 200  # single-host mode: admin
    remote_client = make_client(api_settings, client=("10.1.2.3", 40000))
    assert "appliance token create" in assert_problem(remote_client.get("/v1/documents"), 401)["detail"]
    exposed = api_settings.model_copy(update={"server": api_settings.server.model_copy(update={"host": "0.0.0.0"})})
    assert_problem(make_client(exposed).post("/v1/ask", json={"question": QUESTION}), 401)


def test_listening_beyond_loopback_needs_a_token(api_settings: Settings) -> None:
    for host in ("127.0.0.1", "127.0.0.53", "::1", "[::1]", "localhost"):
        assert is_loopback_host(host), host
        check_bind_allowed(api_settings, host)
    for host in ("0.0.0.0", "::", "", "10.0.0.1", "appliance.plant.local"):
        assert not is_loopback_host(host), host
    with pytest.raises(BindRefused, match="no API token exists"):
        check_bind_allowed(api_settings, "0.0.0.0")
    with TokenStore(api_settings.tokens_path) as store:
        store.create("admin", "ops")
    check_bind_allowed(api_settings, "0.0.0.0")


def test_serve_refuses_a_public_address_without_a_token_and_runs_uvicorn_without_server_header(
    api_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLIANCE_HOME", str(api_settings.home))
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(api_settings.models_dir))
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    calls: list[dict[str, Any]] = []
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: calls.append({"app": app, **kwargs}))
    refused = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--port", "8099"])
    assert refused.exit_code == 1 and "no API token exists" in refused.output and not calls
    started = CliRunner().invoke(cli, ["serve", "--port", "8099"])
    assert started.exit_code == 0, started.output
    (call,) = calls
    assert isinstance(call["app"], FastAPI)
    assert (call["host"], call["port"], call["server_header"], call["access_log"]) == ("127.0.0.1", 8099, False, False)
    assert "Example:" in CliRunner().invoke(cli, ["serve", "--help"]).output


# --- headers, UI, docs ---------------------------------------------------------------------------


def test_security_headers_and_no_server_header(client: TestClient) -> None:
    api = client.post("/v1/search", json={"query": "gasket"})
    health = client.get("/healthz")
    for response in (api, health):
        assert "server" not in response.headers
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
    assert api.headers["cache-control"] == "no-store"
    page = client.get("/")
    assert page.status_code in (200, 404)  # the UI's files are optional
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    if page.status_code == 200:
        assert page.headers["content-type"].startswith("text/html")
    assert_problem(client.get("/static/../app.py"), 404)
    assert_problem(client.get("/static/no-such-file.js"), 404)


def test_docs_are_served_from_local_assets_only(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and "swagger-ui" in page.text
    assert not re.search(r"https?://", page.text), "the docs page must not load anything from outside"
    assert "<script>" not in page.text  # no inline script: the CSP stays strict
    init = client.get("/docs/init.js")
    assert init.status_code == 200 and not re.search(r"https?://", init.text)
    for asset in re.findall(r'(?:src|href)="([^"]+)"', page.text):
        assert asset.startswith("/") and client.get(asset).status_code == 200, asset
    schema = client.get("/openapi.json").json()
    assert {"/v1/ask", "/v1/search", "/v1/chat/completions", "/v1/documents", "/v1/reindex"} <= set(schema["paths"])
    assert client.get("/redoc").status_code == 404


# --- readiness and metrics -----------------------------------------------------------------------


def test_readyz_is_ready_then_503_on_an_inconsistent_index(client: TestClient, api_settings: Settings) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["ready"] is True and ready.json()["documents"] == 3
    # What the served index reflects: the newest committed change, none waiting.
    assert ready.json()["index_updated_at"] and ready.json()["pending_changes"] == 0
    index = Index(api_settings)
    vector = load_embedder(api_settings).embed_query("stray")
    index.vectors.upsert(["ghost-chunk"], np.stack([vector]), ["plant/ghost.md"])
    index.close()
    problem = assert_problem(client.get("/readyz"), 503)
    assert problem["ready"] is False and problem["checks"]["index"] == "inconsistent"
    assert any("inconsistent" in reason for reason in problem["reasons"])


def test_readyz_names_a_missing_generator(api_settings: Settings) -> None:
    settings = api_settings.model_copy(
        update={"generator": GeneratorSettings.model_validate({"model": "no-such-model"})}
    )
    app = create_app(settings)  # the real answerer: its generator is not loaded
    problem = assert_problem(TestClient(app, client=LOOPBACK_CLIENT).get("/readyz"), 503)
    assert problem["checks"]["generator"] == "failed" and "no-such-model" in problem["detail"]


_SAMPLE = re.compile(
    r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\"(,[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\")*\})? \S+$"
)


def test_metrics_are_prometheus_text(client: TestClient) -> None:
    client.post("/v1/ask", json={"question": QUESTION})
    client.post("/v1/search", json={"query": "gasket"})
    client.get("/nowhere")
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    samples: dict[str, float] = {}
    for line in response.text.strip().split("\n"):
        if line.startswith("#"):
            assert line.startswith(("# HELP ", "# TYPE ")), line
            continue
        assert _SAMPLE.match(line), line
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    assert samples['appliance_requests_total{endpoint="/v1/ask",status="200"}'] == 1
    assert samples['appliance_requests_total{endpoint="other",status="404"}'] == 1
    assert samples['appliance_request_duration_seconds_count{endpoint="/v1/search"}'] == 1
    for stage in ("retrieve", "first_token", "total"):
        assert samples[f'appliance_stage_duration_seconds_count{{stage="{stage}"}}'] == 1
    assert samples["appliance_generator_queue_depth"] == 0
    assert samples["appliance_index_documents"] == 3 and samples["appliance_index_chunks"] >= 3
    assert QUESTION not in response.text


# --- audit and logs ------------------------------------------------------------------------------


def test_audit_keeps_a_short_question_preview_and_never_the_answer(
    api_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    client = make_client(api_settings)
    long_question = QUESTION + " Which valve on the chlorine cylinder is closed first, and which gauge?" * 8
    assert len(long_question) > 500
    with caplog.at_level(logging.DEBUG):
        for i in range(30):
            kind = i % 6
            if kind == 0:
                client.post("/v1/ask", json={"question": long_question})
            elif kind == 1:
                client.post("/v1/ask", json={"question": long_question, "stream": True})
            elif kind == 2:
                client.post("/v1/search", json={"query": long_question})
            elif kind == 3:
                client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": long_question}]})
            elif kind == 4:
                client.get("/v1/documents")
            else:
                client.post("/v1/ask", content=b"{broken", headers={"Content-Type": "application/json"})
    files = sorted(api_settings.audit_dir.glob("audit-*.jsonl"))
    raw = "".join(path.read_text() for path in files)
    records = [json.loads(line) for line in raw.splitlines()]
    assert len(records) == 30
    assert {r["endpoint"] for r in records} == {"ask", "search", "chat", "documents"}
    for record in records:
        assert record["question_preview"] is None or len(record["question_preview"]) <= 80
        assert record["principal"] == "local" or record["status"] == 422
        assert record["client"] == "127.0.0.1" and record["request_id"]
    assert ANSWER not in raw and "vacuum regulator gauge reads zero" not in raw
    asks = [r for r in records if r["endpoint"] == "ask" and r["status"] == 200]
    assert asks and all(r["sources"] and r["sources"][0]["path"] == "plant/SOP-CL-004.md" for r in asks)
    assert all(r["models"]["generator"] == "scripted" and r["refused"] is False for r in asks)
    assert all({"request", "retrieve", "total"} <= set(r["latency_ms"]) for r in asks)
    assert sum(r["status"] == 422 for r in records) == 5
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "which gauge?" not in logged and "reads zero" not in logged


def test_a_sane_request_id_is_echoed_and_an_odd_one_replaced(client: TestClient) -> None:
    assert client.get("/healthz", headers={"X-Request-ID": "abc-123"}).headers["x-request-id"] == "abc-123"
    replaced = client.get("/healthz", headers={"X-Request-ID": "bad id<x>" * 20}).headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", replaced)


# --- disconnects ---------------------------------------------------------------------------------


def _asgi_scope(path: str, headers: list[tuple[bytes, bytes]], spec_version: str) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": spec_version},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": LOOPBACK_CLIENT,
        "server": ("127.0.0.1", 8080),
    }


@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])  # 2.3: an http.disconnect message; 2.4: send fails
def test_a_client_that_disconnects_stops_the_generation(api_settings: Settings, spec_version: str) -> None:
    generator = ScriptedGenerator(" ".join(["word"] * 300) + " [1].", delay_s=0.002)
    app = create_app(api_settings, answerer=Answerer(api_settings, generator=generator))  # type: ignore[arg-type]
    body = json.dumps({"question": QUESTION, "stream": True}).encode()
    sent: list[dict[str, Any]] = []

    async def main() -> None:
        gone = anyio.Event()
        body_read = False

        async def receive() -> dict[str, Any]:
            nonlocal body_read
            if not body_read:
                body_read = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if gone.is_set() and spec_version == "2.4":
                raise OSError("the client went away")
            sent.append(message)
            if sum(m["type"] == "http.response.body" for m in sent) >= 3:  # evidence and a token or two
                gone.set()

        scope = _asgi_scope("/v1/ask", [(b"content-type", b"application/json")], spec_version)
        with anyio.fail_after(10):
            await app(scope, receive, send)  # type: ignore[arg-type]

    anyio.run(main)
    assert generator.closed.wait(5), "the generation was not stopped"
    assert generator.produced < 300
    state: AppState = app.state.appliance
    # Every slot is free again: the thread released its place.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        taken = [state.asks_in_flight.acquire(blocking=False) for _ in range(MAX_ASKS_IN_FLIGHT)]
        for ok in taken:
            if ok:
                state.asks_in_flight.release()
        if all(taken):
            break
        time.sleep(0.01)
    else:
        pytest.fail("a slot of asks_in_flight was never released")


class GatedGenerator(ScriptedGenerator):
    """Writes one word, then waits for `release` before it writes the rest."""

    def __init__(self) -> None:
        super().__init__("first second third [1].")
        self.release = threading.Event()

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        def pieces() -> Iterator[str]:
            try:
                yield "first"
                self.release.wait(timeout=30)
                yield " second"
                yield " third [1]."
            finally:
                self.closed.set()

        return GenerationStream(pieces(), StatsBox())  # type: ignore[arg-type]


def test_once_the_listener_has_left_the_answer_thread_no_longer_calls_into_the_event_loop(
    api_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A call scheduled on a loop that is shutting down is never run: the thread would wait on it forever.
    generator = GatedGenerator()
    app = create_app(api_settings, answerer=Answerer(api_settings, generator=generator))  # type: ignore[arg-type]
    state: AppState = app.state.appliance
    calls_after_leaving: list[object] = []
    left = threading.Event()
    run_in_loop = anyio.from_thread.run

    def watched_run(func: Any, *args: Any, **kwargs: Any) -> Any:
        if left.is_set():
            calls_after_leaving.append(args)
        return run_in_loop(func, *args, **kwargs)

    monkeypatch.setattr(anyio.from_thread, "run", watched_run)

    async def main() -> None:
        events = answer_events(state, QUESTION, k=None, filters=NO_FILTERS)
        async for event in events:
            if event.kind == "token":
                break
        await events.aclose()
        left.set()
        generator.release.set()  # the thread now has more tokens to hand over, to nobody
        await anyio.sleep(0.3)

    anyio.run(main)
    assert generator.closed.wait(5), "the generation was not stopped"
    assert calls_after_leaving == []
    assert state.asks_in_flight.acquire(blocking=False), "the thread kept its slot"
    state.asks_in_flight.release()


class CountedGenerator(GatedGenerator):
    """Counts its request in its queue depth from the first piece to the end, as the remote backend does."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        def pieces() -> Iterator[str]:
            self.in_flight += 1
            try:
                yield "first"
                self.release.wait(timeout=30)
                yield " second [1]."
            finally:
                self.in_flight -= 1
                self.closed.set()

        return GenerationStream(pieces(), StatsBox())  # type: ignore[arg-type]

    def queue_depth(self) -> int:
        return self.in_flight


def test_the_queue_depth_follows_each_generation_in_and_out_without_a_scrape(api_settings: Settings) -> None:
    # With several workers a scrape reaches one of them: the others' depth must be current already.
    generator = CountedGenerator()
    app = create_app(api_settings, answerer=Answerer(api_settings, generator=generator))  # type: ignore[arg-type]
    state: AppState = app.state.appliance

    def depth() -> float:
        found = re.search(r"^appliance_generator_queue_depth (\S+)$", state.metrics.render({}).decode(), re.MULTILINE)
        assert found
        return float(found.group(1))

    during: list[float] = []

    async def main() -> None:
        async for event in answer_events(state, QUESTION, k=None, filters=NO_FILTERS):
            if event.kind == "token" and not during:
                during.append(depth())
                generator.release.set()

    anyio.run(main)
    assert during == [1]
    started = time.monotonic()
    while depth() != 0 and time.monotonic() - started < 5:
        time.sleep(0.01)
    assert depth() == 0


def test_leaving_while_queued_takes_the_request_out_of_the_queue(api_settings: Settings) -> None:
    generator = QueuedGenerator()
    app = create_app(api_settings, answerer=Answerer(api_settings, generator=generator))  # type: ignore[arg-type]
    state: AppState = app.state.appliance

    async def main() -> None:
        events = answer_events(state, QUESTION, k=None, filters=NO_FILTERS)
        first = await events.__anext__()
        assert first.kind == "evidence"
        started = time.monotonic()
        while not generator.waiting.is_set() and time.monotonic() - started < 5:
            await anyio.sleep(0.01)
        await events.aclose()

    started = time.monotonic()
    anyio.run(main)
    assert generator.cancelled.wait(5) and generator.closed.wait(5)
    assert time.monotonic() - started < 10, "the queued request waited for its turn instead of leaving"
