"""Helpers for tests that bundle, install and run the appliance as an admin would: subprocesses with
a clean environment, the network cut off (`unshare -n`) and, optionally, every network system call
recorded by strace for the zero-network checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.reliability.netguard import guard_prefix

ROOT = Path(__file__).resolve().parents[1]
APPLIANCE = str(Path(sys.executable).parent / "appliance")
WHEELHOUSE = Path(os.environ.get("APPLIANCE_WHEELHOUSE", Path.home() / ".cache" / "appliance" / "wheelhouse"))


def network_cut() -> list[str]:
    """Prefix for a command that must run with no network: a namespace holding only a downed loopback."""
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.fail("`unshare -n` is needed to cut the network off (run the tests as root)")
    return ["unshare", "-n"]


def traced(log: Path) -> list[str]:
    """Prefix that records every network system call of the command and its children into log."""
    # The zero-network guard's own prefix: with --seccomp-bpf only the network calls stop the tracee, so
    # the install's pip (tens of thousands of file calls) runs at nearly full speed.
    return guard_prefix(log)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APPLIANCE_", "PIP_"))}
    env.update(extra)
    return env


def run(command: list[str], env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, env=env or clean_env(), timeout=900)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{command} failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
        )
    return result


def require_wheelhouse() -> Path:
    if not any(WHEELHOUSE.glob("torch-*.whl")):
        pytest.fail(f"no wheelhouse at {WHEELHOUSE}: run `make wheelhouse` (make test does)")
    return WHEELHOUSE


def foreign_site(folder: Path, package: bool = False) -> Path:
    """A folder an admin's PYTHONPATH might name: an `appliance` distribution's metadata (pip takes a
    package found on sys.path for installed) and, with `package`, an `appliance` package that fails loudly
    when it is imported instead of the installed one."""
    info = folder / "appliance-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: appliance\nVersion: 0.1.0\n")
    (info / "RECORD").write_text("")
    if package:
        (folder / "appliance").mkdir(exist_ok=True)
        (folder / "appliance" / "__init__.py").write_text('raise SystemExit("a foreign appliance package ran")\n')
    return folder
