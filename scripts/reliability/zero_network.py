"""The whole life of an installed appliance under the network guard: ingest, serve, ask (a real answer
from the installed model and a refusal), search, reindex — every process under strace, and the install
log too. The verdict is netguard's: nothing but loopback, AF_UNIX and AF_NETLINK, and no DNS at all.

`offender_report()` runs the same guard over code that does reach out (a raw connect to a TEST-NET
address, a posthog host look-up, a huggingface_hub call without HF_HUB_OFFLINE), to prove the guard
would catch the appliance if it did the same.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from scripts.reliability.netguard import NetReport, guard_prefix, parse_log
from scripts.reliability.procs import REPO, clean_env, serving_pid, start_serve, stop

DOCS = [
    "SOP-CL-004-chlorine-cylinder-change.md",
    "SOP-OPS-002-emergency-contacts-directory.html",
    "SOP-ELC-001-generator-load-test.pdf",
]
QUESTION = "Which gasket is used on the chlorine regulator, and can it be reused?"
REFUSED = "How do I restart the Zabbix agent on the bastion hosts?"
SEARCH = "chlorine cylinder change gasket"

# A TEST-NET-3 address (RFC 5737): routed nowhere, so the attempt fails fast but is still a connect.
OFFENDERS = {
    "raw-connect": "import socket\ntry:\n    socket.create_connection(('203.0.113.1', 443), timeout=1)\n"
    "except OSError:\n    pass\n",
    "posthog-lookup": "import socket\ntry:\n    socket.getaddrinfo('us.i.posthog.com', 443)\n"
    "except OSError:\n    pass\n",
    "huggingface-hub": "from huggingface_hub import model_info\ntry:\n"
    "    model_info('sentence-transformers/all-MiniLM-L6-v2', timeout=2)\nexcept Exception:\n    pass\n",
}

# ONNX Runtime (>= 1.29) starts a telemetry uploader on Linux: it looks up mobile.events.data.microsoft.com
# about 9 s into the process here. Bare, with the model's session run once; and through the appliance's
# own encoder, with both opt-outs inherited as 0 (importing appliance must force them on). clean_env drops
# the CI markers that would silence ONNX Runtime whatever the appliance does.
ONNX_RUNTIME_BARE = (
    "import sys, time\nimport numpy as np\nimport onnxruntime as ort\n"
    "session = ort.InferenceSession(sys.argv[1] + '/onnx/model.onnx', providers=['CPUExecutionProvider'])\n"
    "session.run(None, {i.name: np.ones((1, 8), dtype=np.int64) for i in session.get_inputs()})\n"
    "time.sleep(float(sys.argv[2]))\n"
)
ONNX_RUNTIME_APPLIANCE = (
    "import sys, time\nfrom pathlib import Path\nfrom appliance.models.onnx_encoder import OnnxEncoder\n"
    "OnnxEncoder(Path(sys.argv[1]), 'onnx', max_tokens=64, threads=1, query_threads=1).encode(['close the valve'], 8)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


@dataclass
class Lifecycle:
    report: NetReport
    steps: dict[str, Any] = field(default_factory=dict)
    answer: dict[str, Any] = field(default_factory=dict)  # the model's (mode generated)
    quoted: dict[str, Any] = field(default_factory=dict)  # the documents' own text (the default)
    refusal: dict[str, Any] = field(default_factory=dict)
    search_hits: int = 0
    requests: int = 0


def _guarded(log: Path, command: list[str], env: dict[str, str], timeout_s: float = 900) -> dict[str, Any]:
    result = subprocess.run(
        [*guard_prefix(log), *command], env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{command} failed ({result.returncode}):\n{result.stdout[-1500:]}\n{result.stderr[-3000:]}")
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def run_lifecycle(
    prefix: Path,
    installed_home: Path,
    work: Path,
    *,
    install_log: Path | None = None,
    max_tokens: int = 16,
    prompt_tokens: int = 512,
    log: Callable[[str], None] = print,
) -> Lifecycle:
    """Every step of the installed appliance (prefix/bin/appliance) in its own fresh home under `work`,
    with the installed config (models_dir = the prefix's models) copied in."""
    appliance = str(prefix / "bin" / "appliance")
    home, docs, logs = work / "home", work / "docs", work / "strace"
    for folder in (home, docs, logs):
        folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(installed_home / "appliance.toml", home / "appliance.toml")
    for name in DOCS:
        shutil.copy(REPO / "docs_corpus" / name, docs / name)
    env = clean_env(
        APPLIANCE_HOME=str(home),
        # Small enough for a couple of shared cores: the point is that a real generation runs.
        APPLIANCE_GENERATOR_MAX_TOKENS=str(max_tokens),
        APPLIANCE_ANSWER_MAX_PROMPT_TOKENS=str(prompt_tokens),
        APPLIANCE_ANSWER_MAX_SOURCES="1",
        APPLIANCE_GENERATOR_N_CTX="1024",
    )
    result = Lifecycle(report=NetReport())
    if install_log is not None:
        result.report = result.report.merge(parse_log(install_log))

    started = time.monotonic()
    result.steps["ingest"] = _guarded(logs / "ingest.strace", [appliance, "ingest", str(docs), "--json"], env)
    log(f"zero-network: ingest {time.monotonic() - started:.1f} s")

    server, base = start_serve(env, work / "serve.log", appliance=appliance, prefix=guard_prefix(logs / "serve.strace"))
    try:
        log(f"zero-network: serving on {base} after {time.monotonic() - started:.1f} s")
        with httpx.Client(base_url=base, timeout=600.0) as client:
            for path in ("/readyz", "/", "/docs", "/openapi.json", "/metrics"):
                assert client.get(path).status_code in (200, 503), path
                result.requests += 1
            search = client.post("/v1/search", json={"query": SEARCH})
            result.requests += 1
            assert search.status_code == 200, search.text
            result.search_hits = len(search.json()["hits"])
            refusal = client.post("/v1/ask", json={"question": REFUSED})
            result.requests += 1
            assert refusal.status_code == 200, refusal.text
            result.refusal = refusal.json()
            quoted = client.post("/v1/ask", json={"question": QUESTION})
            result.requests += 1
            assert quoted.status_code == 200, quoted.text
            result.quoted = quoted.json()
            answer = client.post("/v1/ask", json={"question": QUESTION, "mode": "generated"})
            result.requests += 1
            assert answer.status_code == 200, answer.text
            result.answer = answer.json()
            log(f"zero-network: real answer after {time.monotonic() - started:.1f} s: {result.answer['answer']!r}")
            documents = client.get("/v1/documents")
            result.requests += 1
            assert documents.status_code == 200
    finally:
        result.steps["serve_exit"] = stop(server, serving_pid(server, traced=True) if server.poll() is None else None)

    (docs / DOCS[0]).write_text((docs / DOCS[0]).read_text() + "\n\n## Addendum\n\nLog every change on form F-112.\n")
    (docs / DOCS[1]).unlink()
    result.steps["reindex"] = _guarded(logs / "reindex.strace", [appliance, "reindex", "--json"], env)
    result.steps["status"] = _guarded(logs / "status.strace", [appliance, "status", "--json"], env)
    log(f"zero-network: reindex and status after {time.monotonic() - started:.1f} s")

    for name in ("ingest", "serve", "reindex", "status"):
        result.report = result.report.merge(parse_log(logs / f"{name}.strace"))
    return result


def offender_report(work: Path) -> dict[str, NetReport]:
    """The guard over code that does reach out: each must fail the check, naming what it contacted."""
    work.mkdir(parents=True, exist_ok=True)
    reports = {}
    for name, code in OFFENDERS.items():
        log = work / f"offender-{name}.strace"
        subprocess.run(
            [*guard_prefix(log), sys.executable, "-c", code],
            env=clean_env(),
            capture_output=True,
            timeout=120,
            check=False,
        )
        reports[name] = parse_log(log)
    return reports


def onnx_runtime_reports(work: Path, embedder: Path, watch_s: float = 20.0) -> dict[str, NetReport]:
    """ONNX Runtime bare and through the appliance's encoder, side by side under the guard for `watch_s`
    (twice the time its uploader took to start here): the bare one must be caught, the appliance's clean."""
    work.mkdir(parents=True, exist_ok=True)
    env = clean_env(ORT_DISABLE_TELEMETRY="0", ORT_TELEMETRY_DISABLED="0")
    runs = {}
    for name, code in (("onnxruntime-bare", ONNX_RUNTIME_BARE), ("onnxruntime-appliance", ONNX_RUNTIME_APPLIANCE)):
        log = work / f"{name}.strace"
        command = [*guard_prefix(log), sys.executable, "-c", code, str(embedder), str(watch_s)]
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
        runs[name] = (process, log)
    reports = {}
    for name, (process, log) in runs.items():
        _, stderr = process.communicate(timeout=watch_s + 120)
        if process.returncode != 0:
            raise RuntimeError(f"{name} failed ({process.returncode}): {stderr.decode(errors='replace')[-2000:]}")
        reports[name] = parse_log(log)
    return reports


def ocr_ingest_report(work: Path, docs: Path, models_dir: Path) -> tuple[dict[str, Any], NetReport]:
    """`appliance ingest DOCS --json` from this checkout under the guard, with the models (the OCR model
    among them) in `models_dir`: the ingest report and the guard's verdict. For folders of scans: OCR
    loads its models from the store and must fetch nothing (rapidocr's own defaults never run)."""
    work.mkdir(parents=True, exist_ok=True)
    env = clean_env(APPLIANCE_HOME=str(work / "home"), APPLIANCE_MODELS_DIR=str(models_dir), PYTHONPATH=str(REPO))
    code = "from appliance.cli.main import main; main()"
    log = work / "ocr-ingest.strace"
    report = _guarded(log, [sys.executable, "-c", code, "ingest", str(docs), "--json"], env)
    return report, parse_log(log)
