"""Service benchmark: a real `appliance serve` on 127.0.0.1 under 16 concurrent clients.

Measures, in one run:
  * POST /v1/search: requests/s and latency p50/p95 over a bounded number of requests, next to the
    same searches called in-process (the naive alternative: no service at all) — the ratio is
    the price of HTTP, auth, audit and the JSON round trip;
  * POST /v1/ask on the refusal path (questions the documents do not cover: no LLM call);
  * POST /v1/ask with quoted answers (procedures and facts the documents hold: the default path, no LLM call),
    each question asked once first, next to the same questions asked again of one in-process Answerer — the
    server should answer a question over documents it has read before as fast as the library does;
  * the server's resident memory (VmRSS, VmHWM) after the load.
Only loopback is contacted; every loop is bounded in count and time.

Usage: python scripts/bench_api.py [--requests 2000] [--clients 16] [--corpus docs_corpus] [--results FILE.json]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401
from appliance.answer.answerer import Answerer
from appliance.config import Settings
from appliance.evaluate.metrics import percentile
from appliance.ingest.pipeline import ingest
from appliance.retrieve.search import Searcher
from scripts.lib.report import finish

REPO = Path(__file__).resolve().parent.parent
SEARCHES = [
    "chlorine residual below 0.2 mg/L",
    "VLV-3042-B",
    "what to do when PS-2 loses communication",
    "filter backwash turbidity limit",
    "lockout tagout who removes a lock",
    "generator load test minimum load",
]
ANSWERED = [
    "How do I change a chlorine ton container?",
    "ALM-GEN-FAIL-START during an outage, what do I do at GCP-601?",
    "fluoride pumps stopped on ALM-FL-HIGH-02 - what has to be true before I restart the feed?",
    "What gasket do I use when reconnecting VR-451 after a container change?",
    "How do I backwash a filter?",
    "need to take one clearwell cell down for cleaning - how much can the plant make with only one cell?",
]
UNCOVERED = [
    "How do I restart the Zabbix agent?",
    "Ozone generator tripped on dew point, what now?",
    "Kubernetes etcd leader changes keep firing",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def memory_kb(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM")):
            name, value = line.split(":")
            values[name] = int(value.split()[0])
    return values


def hammer(url: str, bodies: list[dict[str, Any]], total: int, clients: int, deadline_s: float) -> dict[str, Any]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    counter = iter(range(total))
    stop_at = time.monotonic() + deadline_s

    def worker() -> None:
        with httpx.Client(timeout=60.0) as client:
            while time.monotonic() < stop_at:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                started = time.perf_counter()
                response = client.post(url, json=bodies[i % len(bodies)])
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(elapsed)
                    statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return {
        "requests": len(latencies),
        "requests_per_s": round(len(latencies) / wall, 1),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "statuses": statuses,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--corpus", type=Path, default=REPO / "docs_corpus")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--home", type=Path, default=None, help="Reuse this home's index (default: a new one).")
    parser.add_argument("--results", type=Path, default=None, help="Also write the report to this JSON file.")
    args = parser.parse_args()

    home = args.home or Path(tempfile.mkdtemp(prefix="bench-api-"))
    settings = Settings(home=home, models_dir=args.models_dir.resolve())
    ingest(settings, [args.corpus.resolve()])

    searcher = Searcher(settings)
    searcher.search("warm-up")
    in_process: list[float] = []
    for i in range(200):
        started = time.perf_counter()
        searcher.search(SEARCHES[i % len(SEARCHES)])
        in_process.append((time.perf_counter() - started) * 1000)
    searcher.close()

    answerer = Answerer(settings)
    for question in ANSWERED:  # the first asks embed the documents' section labels: measured below, warm
        answerer.ask(question)
    answered_in_process: list[float] = []
    for i in range(len(ANSWERED) * 5):
        started = time.perf_counter()
        answerer.ask(ANSWERED[i % len(ANSWERED)])
        answered_in_process.append((time.perf_counter() - started) * 1000)
    answerer.close()

    port = free_port()
    env = {**os.environ, "APPLIANCE_HOME": str(home), "APPLIANCE_MODELS_DIR": str(settings.models_dir)}
    server = subprocess.Popen(
        [sys.executable, "-m", "appliance.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        httpx.post(f"{base}/v1/search", json={"query": "warm-up"}, timeout=120)
        search = hammer(f"{base}/v1/search", [{"query": q, "k": 5} for q in SEARCHES], args.requests, args.clients, 300)
        refusals = hammer(
            f"{base}/v1/ask", [{"question": q} for q in UNCOVERED], min(400, args.requests), args.clients, 300
        )
        for question in ANSWERED:
            httpx.post(f"{base}/v1/ask", json={"question": question}, timeout=300)
        answered = hammer(
            f"{base}/v1/ask", [{"question": q} for q in ANSWERED], min(200, args.requests), args.clients, 300
        )
        memory = memory_kb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    in_process_rps = 1000.0 / (sum(in_process) / len(in_process))
    report = {
        "corpus": str(args.corpus),
        "clients": args.clients,
        "search_http": search,
        "search_in_process_single_thread": {
            "requests_per_s": round(in_process_rps, 1),
            "p50_ms": round(percentile(in_process, 50), 1),
            "p95_ms": round(percentile(in_process, 95), 1),
        },
        "http_vs_in_process_throughput": round(search["requests_per_s"] / in_process_rps, 2),
        "ask_refusal_path_http": refusals,
        "ask_quoted_http": answered,
        "ask_quoted_in_process_single_thread": {
            "requests_per_s": round(1000.0 / (sum(answered_in_process) / len(answered_in_process)), 1),
            "p50_ms": round(percentile(answered_in_process, 50), 1),
            "p95_ms": round(percentile(answered_in_process, 95), 1),
        },
        "server_memory_mb": {name: round(kb / 1024, 1) for name, kb in memory.items()},
    }
    return finish(report, args.results, indent=2)


if __name__ == "__main__":
    sys.exit(main())
