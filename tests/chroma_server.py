"""A real `chroma run` server for tests: started on a free loopback port, ready once its heartbeat
answers, stopped (and reaped) afterwards. Used by test_chroma_server.py and test_serve_workers.py."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMA = Path(sys.executable).parent / "chroma"
HEARTBEAT = "/api/v2/heartbeat"
START_TIMEOUT_S = 60.0

NO_CHROMA_CLI = f"the chroma CLI is not installed ({CHROMA})"
requires_chroma_cli = pytest.mark.skipif(not CHROMA.exists(), reason=NO_CHROMA_CLI)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_http(url: str, timeout_s: float, process: subprocess.Popen[bytes] | None = None) -> None:
    """Until GET url answers 200; fail early when `process` exits first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the process serving {url} exited with status {process.returncode}")
        last = "no answer"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read()[:500]!r}"
        except OSError as exc:
            last = str(exc)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not answer 200 within {timeout_s:g} s (last: {last})")
        time.sleep(0.1)


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    """SIGTERM (its whole process group when it leads one), then SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout_s)


@dataclass
class ChromaServer:
    url: str
    host: str
    port: int
    path: Path
    log: Path
    process: subprocess.Popen[bytes]

    def client(self) -> object:
        """A chromadb HttpClient on this server (telemetry off, like the appliance's)."""
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        return chromadb.HttpClient(host=self.host, port=self.port, settings=ChromaSettings(anonymized_telemetry=False))

    def stop(self) -> None:
        stop_process(self.process)


@contextlib.contextmanager
def running_chroma(folder: Path, port: int | None = None) -> Iterator[ChromaServer]:
    """`chroma run --path folder/data --host 127.0.0.1 --port PORT` (a free one by default), until the block ends."""
    if not CHROMA.exists():
        pytest.skip(NO_CHROMA_CLI)
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = folder / "chroma.log"
    with log.open("ab") as output:
        process = subprocess.Popen(
            [str(CHROMA), "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: a Ctrl-C on pytest does not reach it first
        )
    server = ChromaServer(f"http://127.0.0.1:{port}", "127.0.0.1", port, folder / "data", log, process)
    try:
        try:
            wait_for_http(server.url + HEARTBEAT, START_TIMEOUT_S, process)
        except (RuntimeError, TimeoutError) as exc:
            raise RuntimeError(f"{exc}; its log:\n{log.read_text(errors='replace')[-2000:]}") from None
        yield server
    finally:
        server.stop()


def unique_collection() -> str:
    """One collection per test home: homes sharing a collection would delete each other's vectors as strays."""
    return f"t{uuid.uuid4().hex[:16]}"
