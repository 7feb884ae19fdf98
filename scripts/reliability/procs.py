"""Process helpers shared by the harnesses: clean environments, free ports, waiting for a server,
the children of a process, and a child's own peak RSS."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
VENV_APPLIANCE = str(Path(sys.executable).parent / "appliance")
# Variables that would make a run look offline (or online) by the caller's doing rather than the appliance's.
_STRIPPED_PREFIXES = (
    "APPLIANCE_",
    "PIP_",
    "HF_",
    "HUGGINGFACE",
    "TRANSFORMERS_",
    "SENTENCE_TRANSFORMERS",
    "ANONYMIZED_TELEMETRY",
    "CHROMA_",
    "ORT_",
)
# ONNX Runtime stays silent wherever one of these CI markers is set (its telemetry_environment.h), so a run
# under the guard in CI would pass whether or not the appliance turned telemetry off: an operator's host has none.
_CI_MARKERS = frozenset(
    {
        "CI",
        "TF_BUILD",
        "GITHUB_ACTIONS",
        "GITLAB_CI",
        "CIRCLECI",
        "TRAVIS",
        "JENKINS_URL",
        "CODEBUILD_BUILD_ID",
        "BUILDKITE",
        "TEAMCITY_VERSION",
        "APPVEYOR",
        "BITBUCKET_BUILD_NUMBER",
        "SYSTEM_TEAMFOUNDATIONCOLLECTIONURI",
    }
)


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without any APPLIANCE_*, hub, telemetry, pip or CI variable, plus `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.upper().startswith(_STRIPPED_PREFIXES) and key.upper() not in _CI_MARKERS
    }
    env.update(extra)
    return env


def appliance_env(home: Path, models_dir: Path | None = None, **settings: str) -> dict[str, str]:
    """clean_env for an appliance with its state in `home` (and models in `models_dir`), plus APPLIANCE_* settings."""
    values = {"APPLIANCE_HOME": str(home), **({"APPLIANCE_MODELS_DIR": str(models_dir)} if models_dir else {})}
    return clean_env(**values, **settings)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def children(pid: int) -> list[int]:
    """Direct children of `pid` (every thread's), from /proc."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
        except OSError:
            continue
        found.extend(int(item) for item in text.split())
    return found


def descendants(pid: int) -> list[int]:
    out: list[int] = []
    queue = children(pid)
    while queue:
        child = queue.pop(0)
        out.append(child)
        queue.extend(children(child))
    return out


def wait_http(url: str, process: subprocess.Popen[bytes], timeout_s: float = 180.0) -> None:
    """Wait until GET url answers 200, or fail when the process dies or the time is up."""
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode} before {url} answered")
        try:
            response = httpx.get(url, timeout=2.0)
            if response.status_code == 200:
                return
            last = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            last = type(exc).__name__
        time.sleep(0.25)
    raise RuntimeError(f"{url} did not answer 200 within {timeout_s:.0f} s ({last})")


def start_serve(
    env: dict[str, str], log: Path, *, appliance: str = VENV_APPLIANCE, prefix: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    """`appliance serve` on a free 127.0.0.1 port (behind `prefix`, e.g. strace), once /healthz answers:
    (the process, its base URL). Its output is appended to `log`."""
    port = free_port()
    with log.open("ab") as output:
        process = subprocess.Popen(
            [*prefix, appliance, "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{base}/healthz", process)
    except RuntimeError:
        for pid in [*descendants(process.pid), process.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=60)
        raise
    return process, base


def serving_pid(process: subprocess.Popen[bytes], traced: bool) -> int:
    """The pid of the server itself: the Popen's own, or strace's (only) child when it runs under strace."""
    if not traced:
        return process.pid
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = children(process.pid)
        if found:
            return found[0]
        time.sleep(0.05)
    raise RuntimeError("strace started no child")


def stop(process: subprocess.Popen[bytes], pid: int | None = None, timeout_s: float = 30.0) -> int:
    """SIGTERM the server (uvicorn shuts down gracefully), SIGKILL it after timeout_s; its exit status."""
    target = pid or process.pid
    with contextlib.suppress(ProcessLookupError):
        os.kill(target, signal.SIGTERM)
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.kill(target, signal.SIGKILL)
        return process.wait(timeout=timeout_s)


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_bytes: int  # the child's own high-water mark (and its waited-for children's)
    seconds: float


# Linux hands a vforked child's maxrss the parent's high-water mark when the child execs (exec_mmap:
# setmax_mm_hiwater_rss of the old mm), so wait4 on a direct child of a big test process reports the
# test process's memory (measured: /bin/true "peaked" at 2,061 MB under a 2 GiB parent, 13 MB under this
# launcher). The command is therefore started by a small launcher, which reports the command's own peak.
_MEASURING_LAUNCHER = """
import os, signal, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
if code < 0:  # died of a signal: so does the launcher, so the caller sees the same status
    if -code != signal.SIGKILL:
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def run_measured(command: list[str], env: dict[str, str], workdir: Path, timeout_s: float = 900.0) -> Finished:
    """Run a command to its end; return its output and its own peak RSS (the high-water mark of the command
    and the children it waited for, taken by a small launcher: nothing of this process is counted)."""
    out, err, rss = workdir / "stdout.txt", workdir / "stderr.txt", workdir / "peak_rss_kb.txt"
    rss.unlink(missing_ok=True)
    started = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        launcher = [sys.executable, "-c", _MEASURING_LAUNCHER, str(rss), *command]
        process = subprocess.Popen(launcher, env=env, stdout=stdout, stderr=stderr, start_new_session=True)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    peak_kb = int(rss.read_text()) if rss.is_file() and rss.read_text().strip() else 0
    return Finished(
        returncode=process.returncode,
        stdout=out.read_text(errors="replace"),
        stderr=err.read_text(errors="replace"),
        peak_rss_bytes=peak_kb * 1024,  # Linux reports kilobytes
        seconds=time.monotonic() - started,
    )


def own_peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
