"""Which llama-cpp-python build a `make` goal waits for (Makefile; docs/measurements/first-run.md):
a first `make run` compiles for this CPU only, `make test` and the bundle's goals the portable build
with every CPU variant, and a venv never trades the portable build for the host one. Read from
`make -n` (nothing runs) against an empty wheel cache."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHEEL = "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"


def planned(cache: Path, *goals: str) -> str:
    """What `make -n GOALS` would run with this wheel cache (MAKEFLAGS of an outer make left out)."""
    if shutil.which("make") is None:
        pytest.fail("make is needed: the Makefile is how the project is set up")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    result = subprocess.run(
        ["make", "-n", *goals, f"WHEEL_CACHE={cache}"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def builds(plan: str) -> list[str]:
    return [line for line in plan.splitlines() if "pip wheel" in line and "llama-cpp-python==" in line]


def test_a_first_make_run_compiles_llama_cpp_for_this_cpu_only(tmp_path: Path) -> None:
    (build,) = builds(planned(tmp_path, "run"))
    assert "-DGGML_NATIVE=ON" in build and "GGML_CPU_ALL_VARIANTS" not in build
    assert "-DLLAVA_BUILD=OFF" in build and "scripts/llama_cpp_host.cmake" in build  # no mtmd, no common
    assert f"-w {tmp_path}/cpu-host-" in build


@pytest.mark.parametrize("goal", ["test", "bundle", "bench"])
def test_the_tests_and_the_bundle_wait_for_the_portable_build(tmp_path: Path, goal: str) -> None:
    plan = planned(tmp_path, goal)
    (build,) = builds(plan)
    assert "-DGGML_CPU_ALL_VARIANTS=ON" in build and f"-w {tmp_path}/cpu-all-variants/" in build
    assert f"--force-reinstall {tmp_path}/cpu-all-variants/{WHEEL}" in plan


def test_once_the_portable_wheel_is_built_make_run_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "cpu-all-variants").mkdir()
    (tmp_path / "cpu-all-variants" / WHEEL).write_bytes(b"")
    plan = planned(tmp_path, "run")
    assert builds(plan) == []
    assert f"--force-reinstall {tmp_path}/cpu-all-variants/{WHEEL}" in plan


def test_the_host_build_is_keyed_by_the_cpu_and_the_flags(tmp_path: Path) -> None:
    (first,) = builds(planned(tmp_path, "run"))
    (again,) = builds(planned(tmp_path, "run"))
    assert first == again  # the same CPU and flags: one cache folder
    (other,) = builds(planned(tmp_path, "run", "LLAMA_HOST_FLAGS=-DGGML_NATIVE=ON"))
    folder = first.split(" -w ")[1]
    assert folder != other.split(" -w ")[1]  # other flags: another folder, never the wrong wheel
