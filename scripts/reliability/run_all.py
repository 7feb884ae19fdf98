"""`make reliability`: every reliability harness with the long settings, then RELIABILITY.md.

    .venv/bin/python scripts/reliability/run_all.py [--kills 50] [--serve-kills 5] [--clients 32]
        [--load-seconds 60] [--disk-full-rounds 60] [--output RELIABILITY.md] [--keep]

1. zero network: `appliance bundle` (cpu-small) → install under strace with the network cut off → the
   installed appliance's ingest, serve, real answer (Qwen), refusal, search, reindex, status, all traced;
   plus three deliberate offenders the guard must catch;
2. crash: `--kills` SIGKILLs of `appliance reindex` at random moments, `--serve-kills` of a busy
   `appliance serve`, a torn audit tail;
3. concurrency: `--clients` clients for `--load-seconds` against `appliance serve` with the installed
   Qwen while a reindex edits and deletes; and whether another process's reindex reaches the server;
4. hostile inputs: one ingest over every kind of bad file, as an unprivileged user;
5. security: the auth matrix, traversal and headers against a real server, the API fuzz tests
   (schemathesis + hypothesis);
6. disk full: `--disk-full-rounds` rounds of ingest, upload, backup, restore and audit records on a small
   tmpfs that fills at a random point, or with ENOSPC injected at a random named write point;
7. leaks: every log and audit file of the runs above scanned for token secrets and answers.

Exit 0 when everything held. Work files go to a temporary folder, removed unless --keep.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: make `scripts.` importable

from scripts.reliability import concurrency, crash_harness, disk_full, hostile, netguard, security, zero_network
from scripts.reliability.procs import REPO, VENV_APPLIANCE, clean_env

MODELS = REPO / "models"
SECURITY_TESTS = ["tests/test_api_fuzz.py", "tests/test_security_matrix.py"]
WHEELHOUSE = Path(os.environ.get("APPLIANCE_WHEELHOUSE", Path.home() / ".cache" / "appliance" / "wheelhouse"))


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


class Run:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.results: dict[str, dict[str, Any]] = {}
        self.secrets: list[str] = [security.UNKNOWN_SECRET]
        self.answers: list[str] = []
        self.started = time.monotonic()

    def section(self, name: str, body: Callable[[], dict[str, Any]]) -> None:
        log(f"=== {name}")
        started = time.monotonic()
        try:
            result = body()
        except Exception as exc:  # record and go on: the report says what broke
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            log(f"{name} FAILED: {result['error']}")
        result["seconds"] = round(time.monotonic() - started, 1)
        self.results[name] = result
        log(f"=== {name}: {'ok' if result.get('ok') else 'NOT OK'} in {result['seconds']} s")


def zero_network_section(run: Run) -> dict[str, Any]:
    work = run.work / "zero-network"
    work.mkdir()
    archive = work / "appliance-cpu-small.tar.zst"
    wheels = ["--wheels-from", str(WHEELHOUSE)]
    built = subprocess.run(
        [VENV_APPLIANCE, "bundle", "--profile", "cpu-small", "--output", str(archive), *wheels, "--json"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    summary = json.loads(built.stdout)
    prefix, home, install_log = work / "opt" / "appliance", work / "var" / "appliance", work / "install.strace"
    command = [VENV_APPLIANCE, "install", str(archive), "--prefix", str(prefix), "--home", str(home), "--no-systemd"]
    command += ["--manifest-sha256", str(summary["manifest_sha256"]), "--json"]
    subprocess.run(
        [*netguard.guard_prefix(install_log), "unshare", "-n", *command],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    log("zero-network: bundle built and installed with the network cut off")
    life = zero_network.run_lifecycle(
        prefix, home, work / "life", install_log=install_log, max_tokens=32, prompt_tokens=512, log=log
    )
    offenders = zero_network.offender_report(work / "offenders")
    run.answers.append(str(life.answer.get("answer", "")))
    report = life.report
    caught = {name: not item.ok for name, item in offenders.items()}
    names = {name: sorted({e.dns_name for e in item.dns if e.dns_name}) for name, item in offenders.items()}
    return {
        "ok": report.ok and all(caught.values()) and not life.answer.get("refused", True),
        "network_calls": len(report.events),
        "by_address": dict(report.counts().most_common()),
        "by_syscall": dict(report.by_syscall()),
        "violations": [event.line for event in report.violations],
        "dns": [event.line for event in report.dns],
        "processes": ["install (unshare -n)", "ingest", "serve", "reindex", "status"],
        "http_requests": life.requests,
        "answer": life.answer.get("answer"),
        "answer_model": life.answer.get("model"),
        "completion_tokens": (life.answer.get("generation") or {}).get("completion_tokens"),
        "refusal_refused": life.refusal.get("refused"),
        "offenders_caught": caught,
        "offender_names": names,
        "offender_targets": {name: sorted(item.counts()) for name, item in offenders.items()},
    }


def crash_section(run: Run, kills: int, serve_kills: int) -> dict[str, Any]:
    reindex = crash_harness.run_crash_rounds(run.work / "crash", MODELS, kills, seed=2024, log=log)
    served = crash_harness.run_serve_kills(run.work / "serve-kill", MODELS, serve_kills, log=log)
    return {
        "ok": reindex.ok and reindex.kills >= kills and served.ok,
        "reindex_kills": reindex.kills,
        "rounds": len(reindex.rounds),
        "phases": reindex.phases(),
        "round_problems": [p for r in reindex.rounds for p in r.problems],
        "problems": reindex.problems + served.problems,
        "equals_clean_build": reindex.equals_clean_build,
        "final_documents": reindex.final_documents,
        "final_chunks": reindex.final_chunks,
        "reference_seconds": round(reindex.reference_seconds, 1),
        "changes": {
            key: sum(r.changes.get(key, 0) for r in reindex.rounds) for key in ("added", "edited", "moved", "deleted")
        },
        "serve_kills": served.kills,
        "serve_requests_answered": served.requests_answered,
        "serve_requests_cut": served.requests_cut,
        "serve_unrecorded": served.unrecorded,
        "torn_detected": served.torn_detected,
        "torn_problem": served.torn_problem,
        "audit_records": served.records_final,
        "chain_continues": served.chain_continues,
    }


def concurrency_section(run: Run, clients: int, seconds: float) -> dict[str, Any]:
    settings = {
        "APPLIANCE_GENERATOR_QUEUE_SIZE": "4",
        "APPLIANCE_ANSWER_MAX_PROMPT_TOKENS": "512",
        "APPLIANCE_GENERATOR_N_CTX": "1024",
    }
    server = concurrency.serve_corpus(
        run.work / "load", MODELS, generator="qwen2.5-coder-1.5b-instruct", max_tokens=24, extra_env=settings
    )
    try:
        run.secrets += [server.operator, server.admin]
        report = concurrency.run_load(server, clients=clients, seconds=seconds, log=log)
        run.answers += report.answers
        paths, new = concurrency.cross_process_reindex_seen(server)
    finally:
        server.stop()
    return {
        "ok": report.ok,
        "clients": clients,
        "load_seconds": round(report.seconds, 1),
        "generation_medians": report.generation_medians(),
        "requests": report.requests,
        "statuses": {kind: {str(code): n for code, n in table.items()} for kind, table in report.statuses().items()},
        "latency_ms": report.latencies(),
        "busy_503": report.busy,
        "server_errors": len(report.server_errors),
        "errors": report.errors[:20],
        "victim_found_before": report.victim_found_before,
        "victim_hits_after": len(report.victim_hits_after),
        "reindex": {key: report.reindex.get(key) for key in ("updated", "removed", "seconds")},
        "settings": {"model": "qwen2.5-coder-1.5b-instruct", "max_tokens": 24, **settings},
        "cross_process_reindex_seen": new in paths,
    }


def hostile_section(run: Run) -> dict[str, Any]:
    work = hostile.hostile_workdir()
    try:
        report = hostile.run_hostile_ingest(work)
    finally:
        hostile.remove_workdir(work)
    return {
        "ok": report.ok,
        "files": report.files,
        "kinds": report.kinds,
        "good": f"{report.good_indexed}/{report.good_total}",
        "peak_rss_mb": round(report.peak_rss_bytes / 2**20),
        "ingest_seconds": round(report.seconds, 1),
        "returncode": report.returncode,
        "permission_case": report.permission_case,
        "fifo_opened": report.fifo_opened,
        "outcomes": [[o.kind, o.file, o.status, o.reason, o.ok] for o in report.outcomes],
        "problems": report.problems,
    }


def security_section(run: Run) -> dict[str, Any]:
    import httpx

    server = concurrency.serve_corpus(run.work / "security", MODELS, documents=4, seed=9)
    try:
        revoked = concurrency.create_token(server.env, "admin", "matrix-revoked")
        # Revoked through the CLI while the server runs: the server must refuse it from then on.
        subprocess.run([VENV_APPLIANCE, "token", "revoke", "matrix-revoked"], env=server.env, check=True, timeout=120)
        run.secrets += [server.operator, server.admin, revoked]
        tokens = security.callers(server.operator, server.admin, revoked)
        with httpx.Client(base_url=server.base, timeout=600.0) as http:
            report = security.auth_matrix(http, tokens)
            run.answers += report.answers
            security.traversal(http, tokens["admin"], known_prefix=f"{server.corpus.root.name}/", report=report)
    finally:
        server.stop()
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SECURITY_TESTS],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    summary = tests.stdout.strip().splitlines()[-1] if tests.stdout.strip() else tests.stderr[-300:]
    return {
        "ok": report.ok and tests.returncode == 0,
        "matrix_cells": len(report.cells),
        "matrix_failures": [f"{c.caller} {c.method} {c.path}: {c.got} != {c.expected}" for c in report.failures],
        "traversal_probes": report.traversal_probes,
        "responses_checked": report.responses_checked,
        "findings": report.findings,
        "pytest": summary,
    }


def leaks_section(run: Run) -> dict[str, Any]:
    files = security.log_files(run.work)
    scanned, leaks = security.find_leaks(files, run.secrets, run.answers)
    return {
        "ok": not leaks and scanned > 0,
        "files": scanned,
        "secrets": len(set(run.secrets)),
        "answers": len([a for a in run.answers if len(a.strip()) >= 24]),
        "leaks": leaks,
    }


def disk_full_section(run: Run, rounds: int) -> dict[str, Any]:
    report = disk_full.run_disk_full_rounds(run.work / "disk-full", MODELS, rounds, seed=2042, log=log)
    return {
        "ok": report.ok and len(report.rounds) >= rounds,
        "rounds": len(report.rounds),
        "file_system": report.file_system,
        "full": sum(1 for r in report.rounds if r.fault == "full"),
        "filling": sum(1 for r in report.rounds if r.fault == "filling"),
        "injected": sum(1 for r in report.rounds if r.fault == "injected"),
        "disk_full": report.failed_rounds,
        "by_operation": report.table(),
        "points": report.points(),
        "messages": {
            r.operation: r.message for r in report.rounds if r.outcome == "disk full" and r.fault != "injected"
        },
        "round_problems": report.round_problems,
        "problems": report.problems,
        "equals_clean_build": report.equals_clean_build,
        "final_documents": report.final_documents,
        "final_chunks": report.final_chunks,
    }


def _proc_field(path: str, prefix: str) -> str | None:
    try:
        with open(path) as handle:
            return next((line.split(":", 1)[1].strip() for line in handle if line.startswith(prefix)), None)
    except OSError:
        return None


def machine() -> dict[str, str]:
    cpu = _proc_field("/proc/cpuinfo", "model name") or "unknown"
    total = _proc_field("/proc/meminfo", "MemTotal")  # "24563092 kB"
    memory = f"{int(total.split()[0]) / 2**20:.1f} GiB" if total else "unknown"
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": memory,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "user": "root" if os.geteuid() == 0 else str(os.geteuid()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=50, help="SIGKILLs of appliance reindex (at least)")
    parser.add_argument("--serve-kills", type=int, default=5, help="SIGKILLs of a busy appliance serve")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--load-seconds", type=float, default=60.0)
    parser.add_argument("--disk-full-rounds", type=int, default=60, help="rounds of a disk that fills mid-way")
    parser.add_argument("--output", type=Path, default=REPO / "RELIABILITY.md")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--only", nargs="*", default=None, help="run only these sections (for trials)")
    args = parser.parse_args(argv)

    started_at = dt.datetime.now(dt.UTC)
    work = Path(tempfile.mkdtemp(prefix="appliance-reliability-"))
    work.chmod(0o755)
    log(f"work folder {work}")
    run = Run(work)
    host = machine()
    plan: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("zero network", lambda: zero_network_section(run)),
        ("crash", lambda: crash_section(run, args.kills, args.serve_kills)),
        ("concurrency", lambda: concurrency_section(run, args.clients, args.load_seconds)),
        ("hostile inputs", lambda: hostile_section(run)),
        ("security", lambda: security_section(run)),
        ("disk full", lambda: disk_full_section(run, args.disk_full_rounds)),
        ("leaks", lambda: leaks_section(run)),
    ]
    try:
        for name, body in plan:
            if args.only is None or name in args.only:
                run.section(name, body)
    finally:
        (work / "results.json").write_text(json.dumps(run.results, indent=1, default=str))
        from scripts.reliability.report import render

        text = render(run.results, host, started_at, time.monotonic() - run.started, vars(args))
        args.output.write_text(text)
        log(f"wrote {args.output}")
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if all(result.get("ok") for result in run.results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
