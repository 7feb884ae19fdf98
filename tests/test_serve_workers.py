"""`appliance serve --workers N`: refused on the local Chroma store; with a real `chroma run` server, a
real multi-process server whose workers all answer, share the token store, the audit chain and the
metrics (either worker's /metrics counts both), and stop cleanly. Also: a worker that cannot start
stops the command instead of being restarted forever.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from click.testing import CliRunner

from appliance.audit.verify import verify_audit
from appliance.cli.main import cli
from appliance.config import Settings, VectorSettings
from appliance.ingest.pipeline import ingest
from appliance.server.app import STARTUP_FAILURE, create_app_from_environment
from appliance.server.auth import TokenStore
from tests.chroma_server import (
    ChromaServer,
    free_port,
    running_chroma,
    stop_process,
    unique_collection,
    wait_for_http,
)

WORKERS = 2
READY_TIMEOUT_S = 120.0  # two workers import torch and load the embedder on a small shared machine
REQUESTS = 20
CHLORINE = """# Chlorine cylinder change

## Isolation

Close the cylinder valve VLV-3042-B and wait until the vacuum regulator gauge reads zero.
Replace the lead gasket RW-GSK-0410 at every connection; a gasket is never reused.
"""
PUMP = """# Raw water pump start

Open the suction valve VLV-1100-A fully and vent the pump casing until water flows without air.
"""
T = TypeVar("T")
# One line per request from the middleware; LOG_FORMAT puts the worker's pid after the logger name.
SEARCH_LINE = re.compile(r"appliance\.server\[(\d+)\]: request_id=\S+ method=POST endpoint=/v1/search status=(\d+)")


# --- refusals, before anything listens -------------------------------------------------------------


def _nothing_listens(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
    except urllib.error.URLError as exc:
        return isinstance(exc.reason, ConnectionRefusedError)
    return False


def test_several_workers_are_refused_on_the_local_chroma_store(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    calls: list[Any] = []
    monkeypatch.delenv("APPLIANCE_VECTORS_URL", raising=False)
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: calls.append((args, kwargs)))
    monkeypatch.setattr(uvicorn, "Config", lambda *args, **kwargs: calls.append((args, kwargs)))
    port = free_port()
    result = CliRunner().invoke(cli, ["serve", "--workers", "2", "--port", str(port)])
    assert result.exit_code == 1, result.output
    assert "Chroma's PersistentClient is single-process: set vectors.url to a `chroma run` server" in result.output
    assert "--workers N" in result.output and "Traceback" not in result.output
    assert not calls and _nothing_listens(port)
    assert "APPLIANCE_SERVER_PORT" not in os.environ


def test_several_workers_still_need_a_token_beyond_loopback(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    calls: list[Any] = []
    monkeypatch.setenv("APPLIANCE_VECTORS_URL", "http://127.0.0.1:9")  # never contacted: refused before
    monkeypatch.setattr(uvicorn, "Config", lambda *args, **kwargs: calls.append((args, kwargs)))
    result = CliRunner().invoke(cli, ["serve", "--workers", "2", "--host", "0.0.0.0", "--port", str(free_port())])
    assert result.exit_code == 1 and "no API token exists" in result.output and not calls


def test_the_worker_factory_applies_the_bind_check_itself(
    cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLIANCE_SERVER_HOST", "0.0.0.0")
    with pytest.raises(SystemExit) as exited:
        create_app_from_environment()
    assert exited.value.code == STARTUP_FAILURE


def test_serve_help_names_the_workers_rules() -> None:
    text = CliRunner().invoke(cli, ["serve", "--help"]).output
    assert "--workers" in text and "vectors.url" in text and 'generator.backend = "openai"' in text


# --- a real multi-process server -------------------------------------------------------------------


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    settings: Settings


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with running_chroma(tmp_path_factory.mktemp("chroma")) as server:  # skips without the chroma CLI
        yield server


def serve_env(cli_env: dict[str, str], settings: Settings) -> dict[str, str]:
    return {
        **cli_env,
        "APPLIANCE_VECTORS_URL": settings.vectors.url,
        "APPLIANCE_VECTORS_COLLECTION": settings.vectors.collection,
        "APPLIANCE_GENERATOR_MODEL": "smollm2-135m-instruct",  # the one in the test model store (/readyz checks it)
    }


def start_serve(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "appliance.cli.main", "serve", *args],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


@pytest.fixture
def served(settings: Settings, cli_env: dict[str, str], chroma: ChromaServer, tmp_path: Path) -> Iterator[Served]:
    remote = settings.model_copy(
        update={"vectors": VectorSettings.model_validate({"url": chroma.url, "collection": unique_collection()})}
    )
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "SOP-CL-004.md").write_text(CHLORINE)
    (plant / "SOP-RW-001.md").write_text(PUMP)
    ingest(remote, [plant])
    port = free_port()
    log = tmp_path / "serve.log"
    process = start_serve(
        serve_env(cli_env, remote), log, "--workers", str(WORKERS), "--host", "127.0.0.1", "--port", str(port)
    )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for_http(url + "/readyz", READY_TIMEOUT_S, process)
        except (RuntimeError, TimeoutError) as exc:
            raise AssertionError(f"{exc}\n{log.read_text(errors='replace')[-3000:]}") from None
        yield Served(url, process, log, remote)
    finally:
        stop_process(process, timeout_s=60)


def post_search(url: str, query: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(
        url + "/v1/search", data=json.dumps({"query": query, "k": 3}).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def searches_counted(url: str) -> float:
    """The server's count of answered searches, from /metrics (any worker may answer the scrape)."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    found = re.search(r'^appliance_requests_total\{endpoint="/v1/search",status="200"\} (\S+)$', text, re.MULTILINE)
    assert found, text
    return float(found.group(1))


def searches_per_worker(log: Path) -> Counter[int]:
    return Counter(int(m.group(1)) for m in SEARCH_LINE.finditer(log.read_text(errors="replace")))


def eventually(read: Callable[[], T], done: Callable[[T], bool], timeout_s: float = 10.0) -> T:
    """`read()` until `done` says yes or the time is up; the last value either way."""
    deadline = time.monotonic() + timeout_s
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.1)
        value = read()
    return value


def children(pid: int) -> dict[int, str]:
    """{pid: command line} of the live processes whose parent is `pid` (from /proc)."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found[int(entry.name)] = command
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads worker processes from /proc")
def test_two_workers_answer_share_tokens_and_audit_and_stop_cleanly(served: Served) -> None:
    workers = {pid for pid, command in children(served.process.pid).items() if "spawn_main" in command}
    assert len(workers) == WORKERS, children(served.process.pid)

    def search(_: int) -> tuple[int, str]:
        status, body = post_search(served.url, "Which gasket do I replace on the chlorine cylinder?")
        return status, body["hits"][0]["path"] if status == 200 else json.dumps(body)

    sent = 0
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(search, range(REQUESTS)))
        sent += REQUESTS
        assert results == [(200, "plant/SOP-CL-004.md")] * REQUESTS
        # The kernel picks the worker of each connection; on a busy machine one may take a long run
        # of them, so keep asking (a little) until a second worker has answered.
        while len(searches_per_worker(served.log)) < WORKERS and sent < 5 * REQUESTS:
            assert all(status == 200 for status, _ in pool.map(search, range(10)))
            sent += 10
    per_worker = eventually(lambda: searches_per_worker(served.log), lambda found: sum(found.values()) >= sent)
    assert sum(per_worker.values()) == sent and set(per_worker) == workers, (per_worker, workers)

    # Both workers searched; whichever answers /metrics counts every search of them both.
    scrapes = [searches_counted(served.url) for _ in range(2 * WORKERS)]
    assert scrapes == [sent] * len(scrapes), (scrapes, per_worker)

    # The token store is one SQLite file: a token created now binds every worker at once.
    # (Two tokens: revoking the only one would bring back single-host mode.)
    with TokenStore(served.settings.tokens_path) as store:
        info, secret = store.create("operator", "workers-test")
        _, other = store.create("operator", "workers-other")
    statuses = [post_search(served.url, "chlorine")[0] for _ in range(8)]
    authorized = [post_search(served.url, "chlorine", secret)[0] for _ in range(8)]
    assert statuses == [401] * 8 and authorized == [200] * 8
    with TokenStore(served.settings.tokens_path) as store:
        store.revoke(info.id)
    assert [post_search(served.url, "chlorine", secret)[0] for _ in range(8)] == [401] * 8
    assert [post_search(served.url, "chlorine", other)[0] for _ in range(4)] == [200] * 4

    # Every worker appended to one hash chain (flock): it verifies, one record per audited request.
    # (The middleware writes a request's record after its response: wait for the last ones.)
    audit = eventually(lambda: verify_audit(served.settings.audit_dir), lambda report: report.records >= sent + 28)
    assert audit.ok and not audit.problems, audit.problems
    assert audit.records == sent + 28

    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(timeout=60) == 0
    assert not any(_alive(pid) for pid in workers)
    assert "leaked semaphore" not in served.log.read_text(errors="replace")
    print(f"searches per worker: {dict(per_worker)}")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_worker_that_cannot_start_stops_the_command(
    settings: Settings, cli_env: dict[str, str], chroma: ChromaServer, tmp_path: Path
) -> None:
    remote = settings.model_copy(
        update={"vectors": VectorSettings.model_validate({"url": chroma.url, "collection": unique_collection()})}
    )
    remote.catalog_path.mkdir(parents=True)  # a folder where the catalog file should be: no worker can open it
    log = tmp_path / "serve.log"
    process = start_serve(serve_env(cli_env, remote), log, "--workers", "2", "--port", str(free_port()))
    try:
        code = process.wait(timeout=READY_TIMEOUT_S)
    finally:
        stop_process(process)
    text = log.read_text(errors="replace")
    assert code == 1, text[-3000:]
    assert "cannot start" in text and "could not start" in text
    assert text.count("Started server process") <= 2 * WORKERS  # stopped, not restarted in a loop
