"""Backup, restore and upload on the runbooks index, against a real `appliance serve` (not part of `make test`).

1. backup: `appliance backup DEST --json` of the runbooks home while the server answers: seconds and size
   of each; the ask latency of --clients clients asking the held-out runbook questions while backups run
   back to back (--phase-s) against a quiet phase of the same length just before (p50/p95 side by side, and
   their ratios), --trials times.
2. restore: the last backup restored into a fresh home (`appliance restore`), a second server on it, and
   the golden questions (scripts/qa/runbooks_heldout.jsonl) asked of both: how many answers and citations
   are identical, and `appliance audit verify` on the restored home.
3. upload: POST /v1/documents of a new runbook (a tag of its own) to the first answer that cites it:
   the upload's own response time (it indexes before answering) and the time to the first /v1/ask citing it;
   each trial's document is deleted afterwards (DELETE /v1/documents/{id}).

The runbooks home is copied first (--home, default /tmp/bench_homes/runbooks: never modified).

Usage: .venv/bin/python -m scripts.bench_backup [--home /tmp/bench_homes/runbooks] [--trials 3] [--phase-s 45]
       [--clients 2] [--questions 10] [--uploads 3] [--out scripts/results/bench_backup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from scripts.reliability.procs import REPO, VENV_APPLIANCE, appliance_env, start_serve, stop

QUESTIONS_FILE = REPO / "scripts" / "qa" / "runbooks_heldout.jsonl"
MODELS = REPO / "models"
UPLOAD_TEXT = """# Standby compressor {tag} changeover

## Steps

1. Confirm the standby compressor {tag} shows READY on the local panel.
2. Open the isolation valve of {tag} and start it from the panel.
3. Stop the duty compressor once {tag} holds the header pressure for 5 minutes.
"""


def load_questions(limit: int) -> list[str]:
    rows = [json.loads(line) for line in QUESTIONS_FILE.read_text().splitlines() if line.strip()]
    return [row["question"] for row in rows[:limit]]


def percentiles(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "p50_ms": None, "p95_ms": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"n": len(values), "p50_ms": round(statistics.median(ordered) * 1000, 1), "p95_ms": round(p95 * 1000, 1)}


class Askers:
    """`clients` threads asking the questions in turn until stopped; every sample is (start, end, status)."""

    def __init__(self, base: str, questions: list[str], clients: int) -> None:
        self.samples: list[tuple[float, float, int]] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(base, questions, n), daemon=True) for n in range(clients)
        ]

    def _run(self, base: str, questions: list[str], number: int) -> None:
        position = number
        with httpx.Client(base_url=base, timeout=600.0) as http:
            while not self._stop.is_set():
                started = time.monotonic()
                status = http.post("/v1/ask", json={"question": questions[position % len(questions)]}).status_code
                self.samples.append((started, time.monotonic(), status))
                position += len(self._threads)

    def __enter__(self) -> Askers:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def started_between(self, start: float, end: float) -> list[float]:
        """Seconds each answered ask took that started within [start, end)."""
        return [b - a for a, b, status in self.samples if start <= a < end and status == 200]


def run(env: dict[str, str], *args: str) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    done = subprocess.run([VENV_APPLIANCE, *args], env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"appliance {' '.join(args)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout), time.monotonic() - started


def answers(base: str, questions: list[str]) -> list[dict[str, Any]]:
    seen = []
    with httpx.Client(base_url=base, timeout=600.0) as http:
        for question in questions:
            data = http.post("/v1/ask", json={"question": question}).json()
            citations = [(c["path"], c["chunk_id"]) for c in data.get("citations", [])]
            seen.append({"answer": data.get("answer"), "refused": data.get("refused"), "citations": citations})
    return seen


def bench_backups(base: str, env: dict[str, str], work: Path, questions: list[str], args: argparse.Namespace) -> Any:
    """Alternate a quiet phase and a backup phase (backups back to back) of --phase-s seconds each, --trials
    times; every ask counts for the phase it started in (asks take seconds here: few start and end in one)."""
    trials: list[dict[str, Any]] = []
    quiet: list[float] = []
    during: list[float] = []
    with Askers(base, questions, args.clients) as askers:
        time.sleep(5.0)  # every client past its first (cold) question
        for trial in range(args.trials):
            quiet_start = time.monotonic()
            time.sleep(args.phase_s)
            backup_start = time.monotonic()
            backups: list[dict[str, Any]] = []
            while not backups or time.monotonic() - backup_start < args.phase_s:
                dest = work / f"backup-{trial}-{len(backups)}"
                made, seconds = run(env, "backup", str(dest), "--json")
                backups.append({"seconds": round(seconds, 2), "own_seconds": made["seconds"], "bytes": made["bytes"]})
                last = dest
                if time.monotonic() - backup_start < args.phase_s:
                    shutil.rmtree(dest)
            backup_end = time.monotonic()
            trial_quiet = askers.started_between(quiet_start, backup_start)
            trial_during = askers.started_between(backup_start, backup_end)
            quiet += trial_quiet
            during += trial_during
            trials.append(
                {
                    "backups": backups,
                    "asks_quiet": percentiles(trial_quiet),
                    "asks_during_backup": percentiles(trial_during),
                }
            )
            print(json.dumps(trials[-1]), flush=True)
            if trial < args.trials - 1:
                shutil.rmtree(last)
        statuses = sorted({status for _, _, status in askers.samples})
    quiet_p, during_p = percentiles(quiet), percentiles(during)
    ratios = {
        key: round(during_p[key] / quiet_p[key], 2) if quiet_p[key] and during_p[key] else None
        for key in ("p50_ms", "p95_ms")
    }
    all_backups = [b for t in trials for b in t["backups"]]
    return {
        "trials": trials,
        "backups": len(all_backups),
        "seconds_median": round(statistics.median(b["seconds"] for b in all_backups), 2),
        "own_seconds_median": round(statistics.median(b["own_seconds"] for b in all_backups), 2),
        "bytes": all_backups[-1]["bytes"],
        "megabytes": round(all_backups[-1]["bytes"] / 1e6, 1),
        "asks": {"quiet": quiet_p, "during_backup": during_p, "ratio_during_to_quiet": ratios, "statuses": statuses},
        "last_backup": str(last),
    }


def bench_restore(backup: Path, work: Path, base: str, questions: list[str]) -> Any:
    env = appliance_env(work / "restored-home", MODELS)
    restored, seconds = run(env, "restore", str(backup), "--json")
    verified, _ = run(env, "audit", "verify", "--json")
    process, restored_base = start_serve(env, work / "restored-serve.log")
    try:
        before, after = answers(base, questions), answers(restored_base, questions)
    finally:
        stop(process)
    return {
        "seconds": round(seconds, 2),
        "documents": restored["documents"],
        "chunks": restored["chunks"],
        "audit_verify_ok": verified["ok"],
        "questions": len(questions),
        "identical_answers": sum(a["answer"] == b["answer"] for a, b in zip(before, after, strict=True)),
        "identical_citations": sum(a["citations"] == b["citations"] for a, b in zip(before, after, strict=True)),
        "differences": [q for q, a, b in zip(questions, before, after, strict=True) if a != b],
    }


def bench_uploads(base: str, trials: int) -> Any:
    rows: list[dict[str, Any]] = []
    with httpx.Client(base_url=base, timeout=600.0) as http:
        for trial in range(trials):
            tag = f"CMP-{7100 + trial}"
            name = f"compressor-{tag}.md"
            started = time.monotonic()
            response = http.post("/v1/documents", files={"file": (name, UPLOAD_TEXT.format(tag=tag).encode())})
            uploaded = time.monotonic() - started
            if response.status_code != 201:
                raise SystemExit(f"upload failed: {response.status_code} {response.text}")
            document = response.json()
            served = None
            while served is None and time.monotonic() - started < 120:
                data = http.post("/v1/ask", json={"question": f"How do I change over to standby compressor {tag}?"})
                if any(c["path"] == document["path"] for c in data.json().get("citations", [])):
                    served = time.monotonic() - started
            http.delete(f"/v1/documents/{document['document_id']}")
            rows.append({"upload_s": round(uploaded, 3), "served_s": round(served, 3) if served else None})
            print(json.dumps(rows[-1]), flush=True)
    served_times = [row["served_s"] for row in rows if row["served_s"] is not None]
    return {
        "trials": rows,
        "upload_s_median": round(statistics.median(row["upload_s"] for row in rows), 3),
        "served_s_median": round(statistics.median(served_times), 3) if served_times else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/bench_homes/runbooks"))
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--phase-s", type=float, default=45.0, help="Seconds of each quiet and backup phase.")
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--uploads", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "scripts" / "results" / "bench_backup.json")
    args = parser.parse_args()
    questions = load_questions(args.questions)
    with tempfile.TemporaryDirectory(prefix="bench-backup-") as scratch:
        work = Path(scratch)
        home = work / "home"
        shutil.copytree(args.home.resolve(), home, ignore=shutil.ignore_patterns("*.lock", "*.owner"))
        env = appliance_env(home, MODELS)
        process, base = start_serve(env, work / "serve.log")
        try:
            backups = bench_backups(base, env, work, questions, args)
            restore = bench_restore(Path(backups.pop("last_backup")), work, base, questions)
            uploads = bench_uploads(base, args.uploads)
        finally:
            stop(process)
    figures = {
        "what": "appliance backup/restore and uploads on the runbooks index (scripts/bench_backup.py)",
        "machine": {"cpus": os.cpu_count(), "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "settings": {"trials": args.trials, "clients": args.clients, "questions": len(questions)},
        "backup": backups,
        "restore": restore,
        "upload": uploads,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=1) + "\n")
    print(json.dumps({k: v for k, v in figures.items() if k != "backup"} | {"backup": backups["asks"]}, indent=1))


if __name__ == "__main__":
    main()
