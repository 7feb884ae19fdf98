"""How soon does the running server answer from what another process indexed? (not part of `make test`)

1. lag: from another process's commit (`appliance ingest DOCS` as appliance-reindex.service runs it, with
   index.serve_wait_s = 0 so it returns at once) to the first answer of the running `appliance serve`
   that serves the new document; per storage mode (the local store, one server process; a real
   `chroma run` server on 127.0.0.1, two workers) and per load (idle; --clients clients searching and
   asking all the while, the concurrency suite's mix). A probe asks the server's dense search, filtered to
   the new document's path, every --probe-ms: the catalog (SQLite) knows the path at once, so a hit means
   the dense side serves it. Commit time: the document's indexed_at, written inside the committing
   transaction. --baseline-pythonpath runs the local-store trials once more against another checkout (the
   code before this change): there the server never serves it (trials time out after --timeout s).
2. landing: from a file written into the docs folder (top level, and a plant-area subfolder created just
   before) to the first answer (POST /v1/ask) that cites it, through `appliance watch --trigger` and an
   emulation of the systemd units (appliance-reindex.path's PathChanged= on the docs folder and on the
   trigger file, inotify like systemd's; then the reindex unit's ExecStartPre sleep and ExecStart; start
   requests during a run merge into a follow-up run, as systemd's do). --old-units: without the watcher
   (the units before this change): a file in an existing subfolder is not noticed at all (the nightly
   timer finds it), one in a folder created at the top level only when the folder's creation fires the
   path unit and the file is written within the unit's settle sleep.

Usage: flock /tmp/appliance-heavy.lock .venv/bin/python -m scripts.bench_index_lag [--trials 20]
       [--clients 32] [--modes local,chroma-server] [--landing-trials 2] [--generator NAME]
       [--baseline-pythonpath DIR] [--out scripts/results/index_lag.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from appliance.ingest.watch import TreeWatcher
from scripts.reliability.concurrency import ANSWERABLE, REFUSED, SEARCHES
from scripts.reliability.crash_harness import Corpus
from scripts.reliability.procs import REPO, VENV_APPLIANCE, appliance_env, free_port, stop, wait_http

TOPICS = [
    ("compressor", "air compressor AC-{n}", "drain the receiver tank and check the belt tension"),
    ("boiler", "steam boiler BLR-{n}", "blow down the water column and test the low-water cut-off"),
    ("crane", "overhead crane CR-{n}", "test the upper limit switch and inspect the hook latch"),
    ("generator", "standby generator GEN-{n}", "run it on the load bank and record the coolant temperature"),
    ("scrubber", "odour scrubber SCR-{n}", "check the caustic dosing pump and the recirculation flow"),
]


def document(n: int) -> tuple[str, str, str]:
    """(file text, a question worded otherwise, its title) for trial n: a subject none of the others has."""
    topic, equipment, action = TOPICS[n % len(TOPICS)]
    name = equipment.format(n=4000 + n)
    text = (
        f"# Weekly check of the {name}\n\n## Procedure\n\nOnce a week the shift technician must {action} on the "
        f"{name}. Sign the {topic} log sheet LOG-{4000 + n} afterwards and report defects to maintenance.\n"
    )
    return text, f"What does the technician do every week on the {topic} {4000 + n}?", name


@dataclass
class Server:
    base: str
    process: subprocess.Popen[bytes]
    env: dict[str, str]
    docs: Path
    home: Path
    baseline: bool = False  # older code, which knows no index.serve_wait_s

    def search(self, body: dict[str, Any], timeout: float = 120.0) -> dict[str, Any]:
        response = httpx.post(f"{self.base}/v1/search", json=body, timeout=timeout)
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def ingest(self) -> float:
        started = time.monotonic()
        subprocess.run(
            [VENV_APPLIANCE, "ingest", "--json", str(self.docs)],
            env=self.env if self.baseline else {**self.env, "APPLIANCE_INDEX_SERVE_WAIT_S": "0"},
            capture_output=True,
            timeout=900,
            check=True,
        )
        return time.monotonic() - started

    def indexed_at(self, display: str) -> float:
        with contextlib.closing(sqlite3.connect(f"file:{self.home / 'catalog.sqlite'}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT indexed_at FROM documents WHERE path = ?", (display,)).fetchone()
        return float(row[0])


@contextlib.contextmanager
def serving(
    work: Path, models_dir: Path, mode: str, generator: str, pythonpath: str | None = None, max_tokens: int = 48
) -> Iterator[Server]:
    corpus = Corpus(work / "plant", random.Random(3))
    for _ in range(8):
        corpus.add()
    with contextlib.ExitStack() as stack:
        extra: dict[str, str] = {}
        if mode == "chroma-server":
            from tests.chroma_server import running_chroma, unique_collection

            chroma = stack.enter_context(running_chroma(work / "chroma"))
            extra = {"APPLIANCE_VECTORS_URL": chroma.url, "APPLIANCE_VECTORS_COLLECTION": unique_collection()}
        env = appliance_env(
            work / "home",
            models_dir,
            APPLIANCE_GENERATOR_MODEL=generator,
            APPLIANCE_GENERATOR_MAX_TOKENS=str(max_tokens),
            APPLIANCE_GENERATOR_QUEUE_SIZE="4",
            **extra,
        )
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        subprocess.run([VENV_APPLIANCE, "ingest", str(corpus.root)], env=env, capture_output=True, check=True)
        port, log = free_port(), work / "serve.log"
        workers = ["--workers", "2"] if mode == "chroma-server" else []
        with log.open("ab") as output:
            process = subprocess.Popen(
                [VENV_APPLIANCE, "serve", "--host", "127.0.0.1", "--port", str(port), *workers],
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        server = Server(f"http://127.0.0.1:{port}", process, env, corpus.root, work / "home", pythonpath is not None)
        try:
            wait_http(f"{server.base}/healthz", process, timeout_s=300)
            server.search({"query": SEARCHES[0], "mode": "dense"})  # loads the embedder
            yield server
        finally:
            stop(process, timeout_s=60)


@dataclass
class Load:
    """`clients` threads searching and asking until stopped; what they got back."""

    server: Server
    clients: int
    statuses: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> Load:
        for number in range(self.clients):
            thread = threading.Thread(target=self._client, args=(number,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=900)

    def _client(self, number: int) -> None:
        rng = random.Random(number)
        with httpx.Client(base_url=self.server.base, timeout=900.0) as http:
            while not self._stop.is_set():
                roll = rng.random()
                if roll < 0.6:
                    kind, route = "search", "/v1/search"
                    body: dict[str, Any] = {
                        "query": rng.choice(SEARCHES),
                        "mode": rng.choice(["lexical", "dense", "hybrid"]),
                    }
                elif roll < 0.9:
                    kind, route, body = "ask refused", "/v1/ask", {"question": rng.choice(REFUSED)}
                else:
                    kind, route, body = "ask generated", "/v1/ask", {"question": rng.choice(ANSWERABLE)}
                try:
                    response = http.post(route, json=body)
                except httpx.HTTPError as exc:
                    self.errors.append(f"{kind}: {type(exc).__name__}")
                    continue
                status = response.status_code
                self.statuses[f"{kind} {status}"] += 1
                # Only the generator's "busy" (503 + Retry-After: one slot, 32 clients) is expected; any other
                # 5xx, a 503 "Vector store unavailable" or "Not ready" included, is an error.
                busy = status == 503 and "Retry-After" in response.headers and kind == "ask generated"
                if status >= 500 and not busy:
                    self.errors.append(f"{kind}: HTTP {status} {response.text[:120]}")


def lag_trial(server: Server, n: int, probe_s: float, timeout_s: float) -> dict[str, Any]:
    text, question, _ = document(n)
    relative = f"area-{n % 3}/lag-{n:03d}.md" if n % 2 else f"lag-{n:03d}.md"
    path = server.docs / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    display = f"{server.docs.name}/{relative}"
    seen: list[float] = []
    stop_probe = threading.Event()

    def probe() -> None:
        body = {"query": question, "mode": "dense", "path_prefix": display, "k": 3}
        with httpx.Client(base_url=server.base, timeout=120.0) as http:
            while not stop_probe.is_set():
                response = http.post("/v1/search", json=body)
                if response.status_code == 200 and response.json()["hits"]:
                    seen.append(time.time())
                    return
                time.sleep(probe_s)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    path.write_text(text)
    ingest_s = server.ingest()
    committed = server.indexed_at(display)
    prober.join(timeout=timeout_s)
    stop_probe.set()
    return {
        "trial": n,
        "path": display,
        "ingest_process_s": round(ingest_s, 2),
        "lag_s": round(seen[0] - committed, 3) if seen else None,
    }


def percentiles(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    if len(values) == 1:
        return {"n": 1, "p50": values[0], "p95": values[0], "max": values[0]}
    cuts = statistics.quantiles(sorted(values), n=100, method="inclusive")
    return {"n": len(values), "p50": round(cuts[49], 3), "p95": round(cuts[94], 3), "max": round(max(values), 3)}


def run_lag(args: argparse.Namespace, work: Path, mode: str, pythonpath: str | None, trials: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with serving(work / mode, args.models_dir, mode, args.generator, pythonpath) as server:
        offset = 0
        for clients in (0, args.clients):
            with Load(server, clients) as load:
                time.sleep(2.0 if clients else 0.0)
                rows = [lag_trial(server, offset + n, args.probe_ms / 1000, args.timeout) for n in range(trials)]
            offset += trials
            lags = [row["lag_s"] for row in rows if row["lag_s"] is not None]
            results[f"{clients} clients"] = {
                "lag_s": percentiles(lags),
                "not_served_within_timeout": len(rows) - len(lags),
                "ingest_process_s": percentiles([row["ingest_process_s"] for row in rows]),
                "load_requests": dict(sorted(load.statuses.items())),
                "load_errors": load.errors[:20],
                "trials": rows,
            }
            print(
                f"{mode} ({'baseline' if pythonpath else 'this tree'}), {clients} clients: "
                f"lag {results[f'{clients} clients']['lag_s']}, not served {len(rows) - len(lags)}, "
                f"5xx/transport errors {len(load.errors)}",
                flush=True,
            )
    return results


class UnitsEmulation:
    """appliance-reindex.path → appliance-reindex.service, as systemd runs them, for one docs folder.

    PathChanged= on the docs folder (top level only: inotify on it, not below) and, with `trigger`, on
    the trigger file; a start while the service runs queues one more run (systemd merges the rest)."""

    def __init__(self, server: Server, trigger: Path | None, settle_s: float) -> None:
        self.server, self.trigger, self.settle_s = server, trigger, settle_s
        self.runs: list[tuple[float, float]] = []
        self._wanted = threading.Event()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._watch, daemon=True),
            threading.Thread(target=self._service, daemon=True),
        ]

    def __enter__(self) -> UnitsEmulation:
        for thread in self._threads:
            thread.start()
        time.sleep(0.5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._wanted.set()

    def _watch(self) -> None:
        roots = [self.server.docs] + ([self.trigger.parent] if self.trigger else [])
        for root in roots:
            root.mkdir(parents=True, exist_ok=True)
        with TreeWatcher(roots, recursive=False) as watcher:  # PathChanged= watches the folder, not below
            while not self._stop.is_set():
                changes = watcher.changes(0.1)
                if any(path.parent == self.server.docs or path == self.trigger for path in changes):
                    self._wanted.set()

    def _service(self) -> None:
        while not self._stop.is_set():
            self._wanted.wait()
            if self._stop.is_set():
                return
            self._wanted.clear()
            started = time.time()
            time.sleep(self.settle_s)  # ExecStartPre=/bin/sleep
            self.server.ingest()  # ExecStart=appliance ingest --json DOCS
            self.runs.append((started, time.time()))


def landing_trial(server: Server, n: int, where: str, timeout_s: float) -> dict[str, Any]:
    text, question, _ = document(100 + n)
    relative = {
        "top level": f"land-{n}.md",
        "existing subfolder": f"area-b/sub/land-{n}.md",  # a plant area that was there at install
        "new subfolder": f"area-new-{n}/pumps/land-{n}.md",  # one created after the watcher started
    }[where]
    display = f"{server.docs.name}/{relative}"
    path = server.docs / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if where == "new subfolder":
        time.sleep(1.0)  # the folders first, the file a moment later (as a copy does)
    landed = time.time()
    path.write_text(text)
    served_at = answered_at = None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and answered_at is None:
        body = server.search({"query": question, "mode": "hybrid", "k": 3})
        if body["hits"] and body["hits"][0]["path"] == display and body["evidence"]["sufficient"]:
            served_at = served_at or time.time()
            answer = httpx.post(f"{server.base}/v1/ask", json={"question": question}, timeout=900).json()
            if display in {citation["path"] for citation in answer.get("citations", [])}:
                answered_at = time.time()
        else:
            time.sleep(0.2)
    return {
        "where": where,
        "path": display,
        "served_s": round(served_at - landed, 2) if served_at else None,
        "first_citing_answer_s": round(answered_at - landed, 2) if answered_at else None,
    }


def run_landing(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for units in ("old units (no watcher)", "this change (watcher)") if args.old_units else ("this change (watcher)",):
        model = args.landing_generator
        with serving(work / units.split()[0], args.models_dir, "local", model, max_tokens=160) as server:
            trigger = server.home / "run" / "docs-changed"
            watcher = None
            if "watcher" in units and "no watcher" not in units:
                watcher = subprocess.Popen(
                    [VENV_APPLIANCE, "watch", "--trigger", str(trigger), "--settle", "2", str(server.docs)],
                    env=server.env,
                    stderr=subprocess.PIPE,
                )
                assert watcher.stderr is not None and watcher.stderr.readline().startswith(b"watching")
            try:
                with UnitsEmulation(server, trigger if watcher else None, args.settle) as emulation:
                    rows: list[dict[str, Any]] = []
                    for _ in range(args.landing_trials):
                        for where in ("top level", "existing subfolder", "new subfolder"):
                            # Without the watcher a subfolder file waits for the nightly timer: give up sooner.
                            timeout = args.landing_timeout if watcher or where == "top level" else 90.0
                            rows.append(landing_trial(server, len(rows), where, timeout))
                            print(f"landing, {units}: {rows[-1]}", flush=True)
                    results[units] = {"trials": rows, "reindex_runs": len(emulation.runs)}
            finally:
                if watcher is not None:
                    watcher.terminate()
                    watcher.wait(timeout=30)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models-dir", type=Path, default=Path(os.environ.get("APPLIANCE_MODELS_DIR", REPO / "models"))
    )
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--modes", default="local,chroma-server")
    parser.add_argument("--probe-ms", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=30.0, help="a trial not served by then counts as not served")
    parser.add_argument("--baseline-pythonpath", default=None)
    parser.add_argument("--baseline-trials", type=int, default=3)
    parser.add_argument("--landing-trials", type=int, default=2)
    parser.add_argument("--landing-timeout", type=float, default=300.0)
    parser.add_argument("--settle", type=float, default=10.0, help="the reindex unit's ExecStartPre sleep")
    parser.add_argument("--old-units", action="store_true", help="also measure landing without the watcher")
    parser.add_argument("--skip-lag", action="store_true")
    parser.add_argument("--skip-landing", action="store_true")
    parser.add_argument("--generator", default="smollm2-135m-instruct", help="the load's answers (lag)")
    parser.add_argument(
        "--landing-generator", default="qwen2.5-coder-1.5b-instruct", help="the answers that must cite the file"
    )
    parser.add_argument("--out", type=Path, default=REPO / "scripts" / "results" / "index_lag.json")
    args = parser.parse_args()
    work = Path(f"/tmp/bench-index-lag-{os.getpid()}")
    report: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "probe_ms": args.probe_ms,
        "generator": args.generator,
        "landing_generator": args.landing_generator,
        "cpus": os.cpu_count(),
        "lag": {},
    }
    try:
        if not args.skip_lag:
            for mode in args.modes.split(","):
                report["lag"][mode] = run_lag(args, work, mode, None, args.trials)
            if args.baseline_pythonpath:
                report["lag"]["local, baseline"] = run_lag(
                    args, work / "baseline", "local", args.baseline_pythonpath, args.baseline_trials
                )
        if not args.skip_landing:
            report["landing"] = run_landing(args, work)
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
