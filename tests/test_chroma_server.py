"""Vectors on a real `chroma run` server (vectors.url): ingest, search in every mode, status, repair of
vectors lost on the server behind the catalog's back, and one clear error when the server is not there.

One server per module; each test uses its own collection (a collection belongs to one catalog).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient

from appliance.answer.answerer import Answerer
from appliance.cli.main import cli
from appliance.config import Settings, VectorSettings
from appliance.errors import ConfigError
from appliance.index.filters import Filters
from appliance.index.vectors import VectorIndex, VectorStoreUnavailable, parse_server_url
from appliance.ingest.pipeline import ingest, reindex
from appliance.retrieve.modes import MODES
from appliance.retrieve.search import Searcher
from appliance.server.app import create_app
from tests.chroma_server import ChromaServer, free_port, requires_chroma_cli, running_chroma, unique_collection
from tests.fakes import ScriptedGenerator

pytestmark = requires_chroma_cli

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
CHLORINE_QUESTION = "Which gasket do I replace when changing the chlorine cylinder?"
LOOPBACK_CLIENT = ("127.0.0.1", 50000)


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with running_chroma(tmp_path_factory.mktemp("chroma")) as server:
        yield server


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "SOP-CL-004.md").write_text(CHLORINE)
    (plant / "SOP-RW-001.md").write_text(PUMP)
    (plant / "filter-backwash.txt").write_text(FILTER)
    return plant


@pytest.fixture
def remote(
    settings: Settings, cli_env: dict[str, str], chroma: ChromaServer, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    """The test home with its vectors on the server, in its own collection; the CLI sees the same."""
    vectors = VectorSettings.model_validate({"url": chroma.url, "collection": unique_collection()})
    monkeypatch.setenv("APPLIANCE_VECTORS_URL", vectors.url)
    monkeypatch.setenv("APPLIANCE_VECTORS_COLLECTION", vectors.collection)
    return settings.model_copy(update={"vectors": vectors})


def run_cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def status_json(expect_exit: int) -> dict[str, Any]:
    result = run_cli("status", "--json")
    assert result.exit_code == expect_exit, result.output
    status: dict[str, Any] = json.loads(result.stdout)
    return status


def server_collection(chroma: ChromaServer, settings: Settings) -> Any:
    return chroma.client().get_collection(settings.vectors.collection)  # type: ignore[attr-defined]


def top_path(searcher: Searcher, query: str, **kwargs: Any) -> str:
    result = searcher.search(query, k=3, **kwargs)
    assert result.hits, (query, kwargs)
    return result.hits[0].path


def test_ingest_search_and_status_with_the_vectors_on_a_chroma_server(
    remote: Settings, corpus: Path, chroma: ChromaServer
) -> None:
    report = ingest(remote, [corpus])
    assert report.added == 3 and not report.failed and report.chunks_total > 0
    assert server_collection(chroma, remote).count() == report.chunks_total
    assert not remote.chroma_path.exists()  # nothing local: the vectors live on the server

    searcher = Searcher(remote)
    try:
        for mode in MODES:
            assert top_path(searcher, CHLORINE_QUESTION, mode=mode) == "plant/SOP-CL-004.md", mode
        assert top_path(searcher, "how do I vent the pump casing before start", mode="dense") == "plant/SOP-RW-001.md"
        # Filters reach Chroma as a metadata filter on the document paths.
        only_txt = searcher.search(CHLORINE_QUESTION, k=5, mode="dense", filters=Filters(doc_types=("txt",)))
        assert {hit.path for hit in only_txt.hits} == {"plant/filter-backwash.txt"}
        prefixed = searcher.search("valve", k=10, mode="dense", filters=Filters(path_prefix="plant/SOP-RW"))
        assert prefixed.hits and {hit.path for hit in prefixed.hits} == {"plant/SOP-RW-001.md"}
        # Telemetry is off for the HttpClient too.
        client_settings = searcher.index.vectors.client.get_settings()
        assert client_settings.anonymized_telemetry is False
        assert os.environ["ANONYMIZED_TELEMETRY"] == "False"
    finally:
        searcher.close()

    status = status_json(expect_exit=0)
    assert status["consistent"] is True
    assert status["documents"] == 3 and status["vectors"] == status["chunks"] == report.chunks_total

    result = run_cli("search", "VLV-3042-B", "--mode", "hybrid", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"][0]["path"] == "plant/SOP-CL-004.md"


def test_vectors_lost_on_the_server_are_reported_and_reindex_restores_them(
    remote: Settings, corpus: Path, chroma: ChromaServer
) -> None:
    chunks = ingest(remote, [corpus]).chunks_total
    searcher = Searcher(remote)  # a long-lived reader, like a server worker
    try:
        assert top_path(searcher, CHLORINE_QUESTION, mode="dense") == "plant/SOP-CL-004.md"

        # Behind the catalog's back: three vectors deleted, one stray added.
        collection = server_collection(chroma, remote)
        ids = sorted(collection.get(include=[])["ids"])
        assert len(ids) == chunks
        kept = collection.get(ids=[ids[0]], include=["embeddings"])
        collection.delete(ids=ids[:3])
        collection.add(ids=["stray-vector"], embeddings=np.asarray(kept["embeddings"]), metadatas=[{"path": "gone"}])
        status = status_json(expect_exit=1)
        assert status["consistent"] is False
        assert status["consistency"]["missing_vectors"] == 3 and status["consistency"]["stray_vectors"] == 1

        report = reindex(remote)
        assert report.repaired == {"vectors_added": 3, "vectors_deleted": 1, "fts_rebuilt": False}
        assert status_json(expect_exit=0)["consistent"] is True
        assert set(server_collection(chroma, remote).get(include=[])["ids"]) == set(ids)

        # The whole collection wiped (a server restored empty): everything comes back from the catalog.
        chroma.client().delete_collection(remote.vectors.collection)  # type: ignore[attr-defined]
        assert status_json(expect_exit=1)["consistency"]["missing_vectors"] == chunks
        result = run_cli("reindex", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["repaired"]["vectors_added"] == chunks
        assert status_json(expect_exit=0)["vectors"] == chunks
        # The long-lived reader opens the recreated collection by itself.
        assert top_path(searcher, CHLORINE_QUESTION, mode="dense") == "plant/SOP-CL-004.md"
    finally:
        searcher.close()


def test_an_unreachable_chroma_server_is_one_clear_error(
    settings: Settings, cli_env: dict[str, str], corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    monkeypatch.setenv("APPLIANCE_VECTORS_URL", url)
    for args in (["search", "chlorine"], ["status"], ["ingest", str(corpus)]):
        result = run_cli(*args)
        assert result.exit_code == 1, (args, result.output)
        assert f"the Chroma server at {url}" in result.output and "vectors.url" in result.output, args
        assert "cannot be reached" in result.output and "Traceback" not in result.output, args
        assert result.exception is None or isinstance(result.exception, SystemExit), args

    remote = settings.model_copy(update={"vectors": VectorSettings.model_validate({"url": url})})
    app = create_app(remote, answerer=Answerer(remote, generator=ScriptedGenerator()))  # type: ignore[arg-type]
    with TestClient(app, client=LOOPBACK_CLIENT, raise_server_exceptions=False) as client:
        for path, body in (("/v1/search", {"query": "chlorine"}), ("/v1/ask", {"question": CHLORINE_QUESTION})):
            response = client.post(path, json=body)
            assert response.status_code == 503, (path, response.text)
            assert response.headers["content-type"].startswith("application/problem+json")
            problem = response.json()
            assert problem["title"] == "Vector store unavailable" and url in problem["detail"], path
            assert "vectors.url" in problem["detail"] and "Traceback" not in response.text
        ready = client.get("/readyz")
        assert ready.status_code == 503 and url in ready.json()["detail"]


def test_a_server_that_stops_answering_is_a_clear_error_until_it_is_back(tmp_path: Path) -> None:
    with running_chroma(tmp_path / "chroma") as server:
        vectors = VectorIndex(
            VectorSettings.model_validate({"url": server.url, "collection": unique_collection()}), tmp_path / "unused"
        )
        vectors.upsert(["a", "b"], np.eye(2, 8, dtype=np.float32), ["x.md", "y.md"])
        assert vectors.count() == 2
        server.stop()
        with pytest.raises(VectorStoreUnavailable, match="does not answer") as caught:
            vectors.query(np.eye(1, 8, dtype=np.float32)[0], 2)
        assert server.url in str(caught.value) and "vectors.url" in str(caught.value)
        port = server.port
    with running_chroma(tmp_path / "chroma", port=port):  # the same data, back on the same port
        hits = vectors.query(np.eye(1, 8, dtype=np.float32)[0], 2)
        assert hits and hits[0].chunk_id == "a"
    assert not (tmp_path / "unused").exists()


@pytest.mark.parametrize(
    "url", ["ftp://host:8000", "http://", "http://host:99999", "http://host:8000/chroma", "http://u:p@host:8000"]
)
def test_a_malformed_vectors_url_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match=r"vectors\.url must look like http://HOST:PORT"):
        parse_server_url(url)


def test_vectors_url_defaults() -> None:
    assert parse_server_url("http://chroma.internal").base == "http://chroma.internal:8000"
    assert parse_server_url("https://chroma.internal/").base == "https://chroma.internal:443"
    assert parse_server_url("http://[::1]:9000").base == "http://[::1]:9000"


def test_a_server_that_is_not_chroma_is_named_as_such(tmp_path: Path) -> None:
    import http.server
    import threading

    class NotChroma(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), NotChroma)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        with pytest.raises(VectorStoreUnavailable, match=r"does not answer like a Chroma 1\.x server"):
            VectorIndex(VectorSettings.model_validate({"url": url}), tmp_path / "unused")
    finally:
        httpd.shutdown()
        httpd.server_close()
