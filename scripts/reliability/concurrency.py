"""Concurrency: many clients searching and asking a real `appliance serve` while a reindex edits and
deletes documents.

`serve_corpus(work, models_dir, generator)` builds a generated corpus (crash_harness.Corpus) with one
"victim" document, indexes it, creates an operator and an admin token and starts `appliance serve` on
a free 127.0.0.1 port. `run_load(server, clients, seconds)` then runs the clients: searches (lexical,
dense, hybrid; some for the victim's own tag), asks the documents cannot answer (refused before any
model call) and asks that generate, while one admin request edits two documents, deletes the victim
and calls POST /v1/reindex. What must hold:

* no 5xx except 503 from the bounded generation queue (counted: that is how a full queue answers);
* once the reindex has answered (its removal committed), no search started afterwards names the
  victim; before it, the victim is found (so the check could fail);
* the figures: requests per kind and status, p50/p95 latency per kind.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from scripts.reliability.crash_harness import Corpus
from scripts.reliability.procs import VENV_APPLIANCE, appliance_env, start_serve, stop

ANSWERABLE = [
    "Which turbine oil is used when topping up the oil level?",
    "How often is the level transmitter calibrated?",
    "Can a gasket be reused after the flange was opened?",
]
REFUSED = [
    "How do I restart the Zabbix agent on the bastion hosts?",
    "What is the Kerberos ticket lifetime on the Active Directory domain controllers?",
]
SEARCHES = ["gasket flange opened", "chlorine residual sample flush", "personal lock start button", "turbine oil"]
VICTIM_TAG = "RLY-0001"  # the first document the corpus writes


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    base: str
    home: Path
    env: dict[str, str]
    corpus: Corpus
    victim: Path
    victim_path: str  # as the index shows it
    operator: str
    admin: str
    log: Path

    def stop(self) -> int:
        return stop(self.process)


def create_token(env: dict[str, str], role: str, name: str) -> str:
    """`appliance token create`: the secret."""
    result = subprocess.run(
        [VENV_APPLIANCE, "token", "create", "--role", role, "--name", name, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    secret: str = json.loads(result.stdout)["secret"]
    return secret


def serve_corpus(
    work: Path,
    models_dir: Path,
    *,
    generator: str = "smollm2-135m-instruct",
    documents: int = 8,
    max_tokens: int = 16,
    seed: int = 3,
    extra_env: dict[str, str] | None = None,
) -> Server:
    corpus = Corpus(work / "plant", random.Random(seed))
    victim = corpus.add()
    for _ in range(documents - 1):
        corpus.add()
    home = work / "home"
    env = appliance_env(
        home,
        models_dir,
        APPLIANCE_GENERATOR_MODEL=generator,
        APPLIANCE_GENERATOR_MAX_TOKENS=str(max_tokens),
        **(extra_env or {}),
    )
    subprocess.run([VENV_APPLIANCE, "ingest", str(corpus.root)], env=env, capture_output=True, timeout=900, check=True)
    operator, admin = create_token(env, "operator", "load-operator"), create_token(env, "admin", "load-admin")
    log = work / "serve.log"
    process, base = start_serve(env, log)
    victim_path = f"{corpus.root.name}/{victim.relative_to(corpus.root).as_posix()}"
    return Server(process, base, home, env, corpus, victim, victim_path, operator, admin, log)


@dataclass
class Sample:
    kind: str
    status: int
    started: float
    seconds: float
    names_victim: bool = False


@dataclass
class LoadReport:
    clients: int
    seconds: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    reindex: dict[str, Any] = field(default_factory=dict)
    reindex_started: float = 0.0
    reindex_done: float = 0.0
    victim_found_before: int = 0
    victim_hits_after: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # transport failures and unexpected statuses
    answers: list[str] = field(default_factory=list)  # generated answer texts (none may reach a log)
    generations: list[dict[str, float]] = field(default_factory=list)  # the server's own timings of each

    def generation_medians(self) -> dict[str, float]:
        """Median queue wait, prefill and decode (ms) and tokens of the answers the model generated."""
        keys = ("queue_wait_ms", "prefill_ms", "decode_ms", "completion_tokens")
        return {
            key: round(statistics.median(g[key] for g in self.generations), 1)
            for key in keys
            if self.generations and all(isinstance(g.get(key), int | float) for g in self.generations)
        }

    @property
    def requests(self) -> int:
        return len(self.samples)

    @property
    def busy(self) -> int:
        return sum(1 for sample in self.samples if sample.status == 503)

    @property
    def server_errors(self) -> list[Sample]:
        return [sample for sample in self.samples if sample.status >= 500 and sample.status != 503]

    def statuses(self) -> dict[str, dict[int, int]]:
        table: dict[str, Counter[int]] = {}
        for sample in self.samples:
            table.setdefault(sample.kind, Counter())[sample.status] += 1
        return {kind: dict(sorted(counter.items())) for kind, counter in sorted(table.items())}

    def latencies(self) -> dict[str, dict[str, float]]:
        """p50/p95 in ms per kind of request, 503 answers counted apart ("ask busy")."""
        groups: dict[str, list[float]] = {}
        for sample in self.samples:
            kind = f"{sample.kind} (503 busy)" if sample.status == 503 else sample.kind
            groups.setdefault(kind, []).append(sample.seconds * 1000.0)
        return {kind: _percentiles(values) for kind, values in sorted(groups.items())}

    @property
    def ok(self) -> bool:
        return (
            not self.errors and not self.server_errors and not self.victim_hits_after and self.victim_found_before > 0
        )


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if len(ordered) == 1:
        return {"n": 1, "p50": round(ordered[0], 1), "p95": round(ordered[0], 1)}
    cuts = statistics.quantiles(ordered, n=100, method="inclusive")
    return {"n": len(ordered), "p50": round(cuts[49], 1), "p95": round(cuts[94], 1)}


def run_load(
    server: Server,
    *,
    clients: int = 32,
    seconds: float = 10.0,
    reindex_at: float = 0.3,
    after_s: float = 2.0,
    seed: int = 5,
    log: Callable[[str], None] = print,
) -> LoadReport:
    report = LoadReport(clients=clients)
    lock = threading.Lock()
    with httpx.Client(
        base_url=server.base, headers={"Authorization": f"Bearer {server.operator}"}, timeout=900.0
    ) as http:
        # The first search loads the embedder, the first answer the model: not what the figures measure.
        for route, body in (("/v1/search", {"query": VICTIM_TAG}), ("/v1/ask", {"question": ANSWERABLE[0]})):
            warm = http.post(route, json=body)
            if warm.status_code != 200:
                report.errors.append(f"warm-up {route}: HTTP {warm.status_code}: {warm.text[:200]}")
    begin = time.monotonic()
    done = threading.Event()  # the reindex answered
    finished = threading.Event()  # the clients stop

    def controller() -> None:
        """Stop the clients after `seconds`, but never before `after_s` past the reindex's answer."""
        while not finished.is_set():
            now = time.monotonic()
            if now - begin >= seconds and done.is_set() and now - begin >= report.reindex_done + after_s:
                finished.set()
            time.sleep(0.05)

    def record(sample: Sample) -> None:
        with lock:
            report.samples.append(sample)

    def client(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        headers = {"Authorization": f"Bearer {server.operator}"}
        with httpx.Client(base_url=server.base, headers=headers, timeout=600.0) as http:
            while not finished.is_set():
                roll = rng.random()
                if roll < 0.2:
                    kind, route = "search victim", "/v1/search"
                    body: dict[str, Any] = {"query": VICTIM_TAG, "mode": rng.choice(["lexical", "hybrid"]), "k": 20}
                elif roll < 0.55:
                    kind, route = "search", "/v1/search"
                    body = {"query": rng.choice(SEARCHES), "mode": rng.choice(["lexical", "dense", "hybrid"])}
                elif roll < 0.75:
                    kind, route, body = "ask refused", "/v1/ask", {"question": rng.choice(REFUSED)}
                elif roll < 0.88:
                    # The default answer: the documents' own text, no model.
                    kind, route, body = "ask quoted", "/v1/ask", {"question": rng.choice(ANSWERABLE)}
                else:
                    body = {"question": rng.choice(ANSWERABLE), "mode": "generated"}
                    kind, route = "ask generated", "/v1/ask"
                started = time.monotonic()
                try:
                    response = http.post(route, json=body)
                except httpx.HTTPError as exc:
                    with lock:
                        report.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                    continue
                elapsed = time.monotonic() - started
                sample = Sample(kind, response.status_code, started - begin, elapsed)
                if response.status_code == 200:
                    data = response.json()
                    if route == "/v1/search":
                        sample.names_victim = server.victim_path in {hit["path"] for hit in data["hits"]}
                    elif kind == "ask refused" and not data["refused"]:
                        with lock:
                            report.errors.append(f"{body['question']!r} was answered instead of refused")
                    elif kind == "ask quoted" and not data["refused"] and not data["steps"]:
                        with lock:
                            report.errors.append(f"{body['question']!r}: a quoted answer without steps")
                    elif not data["refused"]:
                        with lock:
                            report.answers.append(data["answer"])
                            report.generations.append(data.get("generation") or {})
                elif response.status_code != 503:
                    with lock:
                        report.errors.append(f"{kind}: HTTP {response.status_code}: {response.text[:200]}")
                record(sample)

    def admin() -> None:
        try:
            time.sleep(seconds * reindex_at)
            # Not before a search has found the victim: otherwise its absence afterwards proves nothing.
            waited = time.monotonic()
            while time.monotonic() - waited < 60 and not any(
                sample.kind == "search victim" and sample.names_victim for sample in list(report.samples)
            ):
                time.sleep(0.05)
            files = [path for path in server.corpus.files() if path != server.victim]
            for path in files[:2]:
                server.corpus.edit(path)
            server.victim.unlink()
            headers = {"Authorization": f"Bearer {server.admin}"}
            with httpx.Client(base_url=server.base, headers=headers, timeout=900.0) as http:
                report.reindex_started = time.monotonic() - begin
                response = http.post("/v1/reindex")
                report.reindex_done = time.monotonic() - begin
            duration = report.reindex_done - report.reindex_started
            record(Sample("reindex", response.status_code, report.reindex_started, duration))
            if response.status_code == 200:
                report.reindex = response.json()
            else:
                with lock:
                    report.errors.append(f"reindex: HTTP {response.status_code}: {response.text[:300]}")
        except Exception as exc:
            with lock:
                report.errors.append(f"reindex: {type(exc).__name__}: {exc}")
            report.reindex_done = time.monotonic() - begin
        finally:
            done.set()

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    threads += [threading.Thread(target=admin), threading.Thread(target=controller)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 900)
    report.seconds = time.monotonic() - begin
    if not done.is_set():
        report.errors.append("the reindex did not finish")
    for sample in report.samples:
        if sample.kind != "search victim" or not sample.names_victim:
            continue
        if report.reindex_done and sample.started > report.reindex_done:
            report.victim_hits_after.append(
                f"a search sent {sample.started - report.reindex_done:.2f} s after the reindex"
            )
        elif sample.started + sample.seconds < report.reindex_started:
            report.victim_found_before += 1
    log(
        f"load: {report.requests} requests from {clients} clients in {report.seconds:.1f} s, "
        f"{report.busy} busy (503), reindex {report.reindex_started:.1f}–{report.reindex_done:.1f} s"
    )
    return report


def cross_process_reindex_seen(server: Server) -> tuple[list[str], str]:
    """Add a document unlike the others, reindex it from another process (as appliance-reindex.service
    does), then ask the running server's dense search for it: (paths it returns, the new path)."""
    new = server.corpus.root / "hot-work-permit.md"
    new.write_text(
        "# Hot work permit\n\nWelding, cutting and grinding need a hot work permit signed by the shift "
        "supervisor. A fire watch with an extinguisher stays for thirty minutes after the work ends.\n"
    )
    subprocess.run([VENV_APPLIANCE, "reindex"], env=server.env, capture_output=True, timeout=900, check=True)
    headers = {"Authorization": f"Bearer {server.operator}"}
    body = {"query": "welding fire watch hot work permit", "mode": "dense", "k": 5}
    response = httpx.post(f"{server.base}/v1/search", json=body, headers=headers, timeout=300.0)
    response.raise_for_status()
    return [hit["path"] for hit in response.json()["hits"]], f"{server.corpus.root.name}/{new.name}"
