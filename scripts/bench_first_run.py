"""A first `make run` on a fresh clone, timed to its first answer: what a new user waits for.

For each revision given (`--rev LABEL=REV`, one after the other: a llama.cpp build takes both cores), clone
this repository into a temporary folder, run `make run PORT=…` there with HOME and WHEEL_CACHE inside that
folder (an empty pip cache and wheel cache, as on a fresh machine; ~/.cache/appliance is never touched),
and POST the README's question to /v1/ask every few seconds until the clone's own server answers it.
Every output line of make is timed, so the phases are reported (the llama-cpp-python build, the rest of
the venv, the model store, the ingest of docs_corpus/, the server's start), each with its wall seconds and
the CPU seconds of make's process group, with the machine's load average while it ran: on a shared machine
the wall time grows with the load, the CPU seconds hardly do.

Usage: python scripts/bench_first_run.py --rev before=REV --rev after=HEAD [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

from scripts.lib.report import finish

REPO = Path(__file__).resolve().parent.parent
QUESTION = "How do I change a chlorine ton container?"
# The recipe lines make echoes as a phase begins (Makefile): the phase runs until the next one begins.
PHASES = (
    ("llama-cpp-python build", "pip wheel --no-deps"),
    ("venv and packages", "test -x .venv/bin/python"),
    ("model store", ".venv/bin/appliance models init"),
    ("ingest docs_corpus", ".venv/bin/appliance ingest docs_corpus"),
    ("server start and first answer", ".venv/bin/appliance serve"),
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ask(port: int) -> dict[str, Any] | None:
    """The answer to QUESTION, or None while nothing (or an error) answers on the port."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/ask",
        data=json.dumps({"question": QUESTION}).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body: dict[str, Any] = json.loads(response.read())
            return body
    except (OSError, urllib.error.URLError, ValueError):
        return None


def listener_cwd(port: int) -> str | None:
    """The working folder of the process listening on the port: the clone's own server, not another's."""
    out = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True, text=True).stdout
    if "pid=" not in out:
        return None
    pid = out.split("pid=", 1)[1].split(",", 1)[0]
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


class LoadSampler(threading.Thread):
    """The 1-minute load average every 15 s while a run lasts."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.samples.append(os.getloadavg()[0])
            self.stopped.wait(15)


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_of_group(group: int) -> float:
    """CPU seconds of a process group so far: each live member's own and its reaped children's
    (/proc/PID/stat utime, stime, cutime, cstime), so a finished process counts once, in its parent."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # fields after the name: state, ppid, pgrp, …; utime is the 12th
            total += sum(int(value) for value in fields[11:15])
    return total / TICKS


def phases(lines: list[tuple[float, float, str]], end: tuple[float, float]) -> dict[str, dict[str, float]]:
    """Wall and CPU seconds of each phase, from the (seconds, CPU seconds, line) of make's output."""
    starts: list[tuple[str, float, float]] = []
    for name, marker in PHASES:
        at = next(((t, cpu) for t, cpu, line in lines if marker in line), None)
        if at is not None:
            starts.append((name, *at))
    starts.append(("", *end))
    return {
        name: {"wall_s": round(starts[i + 1][1] - t, 1), "cpu_s": round(starts[i + 1][2] - cpu, 1)}
        for i, (name, t, cpu) in enumerate(starts[:-1])
    }


def first_run(label: str, rev: str, timeout: float) -> dict[str, Any]:
    sha = subprocess.run(["git", "rev-parse", rev], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix=f"first-run-{label}-") as scratch:
        base = Path(scratch)
        clone, home = base / "appliance", base / "home"
        home.mkdir()
        subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(REPO), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", sha], cwd=clone, check=True)
        port = free_port()
        env = {**os.environ, "HOME": str(home), "WHEEL_CACHE": str(home / ".cache" / "appliance" / "wheels")}
        env = {k: v for k, v in env.items() if not k.startswith("APPLIANCE_") and k not in ("MAKEFLAGS", "MAKELEVEL")}
        load = LoadSampler()
        load.start()
        start = time.monotonic()
        make = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=clone,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: the server is stopped with it
        )
        lines: list[tuple[float, float, str]] = []  # seconds since the start, CPU seconds of make's group, line
        assert make.stdout is not None
        reader = threading.Thread(
            target=lambda: lines.extend(
                (time.monotonic() - start, cpu_of_group(make.pid), line.rstrip()) for line in make.stdout or ()
            ),
            daemon=True,
        )
        reader.start()
        answer: dict[str, Any] | None = None
        while make.poll() is None and time.monotonic() - start < timeout:
            if listener_cwd(port) == str(clone):
                answer = ask(port)
                if answer is not None:
                    break
            time.sleep(3)
        seconds, cpu = time.monotonic() - start, cpu_of_group(make.pid)
        load.stopped.set()
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGTERM)
        make.wait(timeout=60)
        reader.join(timeout=10)
        result: dict[str, Any] = {
            "revision": sha,
            "answered": answer is not None,
            "first_answer_s": round(seconds, 1) if answer is not None else None,
            "phases": phases(lines, (seconds, cpu)),
            "cpu_s": round(cpu, 1),
            "load_average": {
                "mean": round(statistics.mean(load.samples), 2) if load.samples else None,
                "max": round(max(load.samples), 2) if load.samples else None,
            },
            "answer_kind": answer.get("answer_kind") if answer else None,
        }
        if answer is None:
            result["make_tail"] = [line for _, _, line in lines[-20:]]
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", action="append", default=[], help="LABEL=REV, measured in the order given.")
    parser.add_argument(
        "--timeout", type=float, default=7200, help="Seconds a run may take before it counts as failed."
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    revisions = [tuple(item.split("=", 1)) for item in args.rev] or [("after", "HEAD")]
    report: dict[str, Any] = {"machine": {"cpus": os.cpu_count(), "question": QUESTION}, "runs": {}}
    for label, rev in revisions:
        report["runs"][label] = run = first_run(label, rev, args.timeout)
        print(
            f"{label} ({run['revision'][:10]}): first answer after {run['first_answer_s']} s, "
            f"{run['cpu_s']} CPU s, load average {run['load_average']['mean']} (max {run['load_average']['max']}); "
            + ", ".join(f"{name} {p['wall_s']} s ({p['cpu_s']} CPU s)" for name, p in run["phases"].items()),
            file=sys.stderr,
            flush=True,
        )
    runs = list(report["runs"].values())
    if len(runs) == 2 and all(r["first_answer_s"] for r in runs):
        report["first_answer_ratio"] = round(runs[0]["first_answer_s"] / runs[1]["first_answer_s"], 2)
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
