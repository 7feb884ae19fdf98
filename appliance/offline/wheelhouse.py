"""The bundle's wheelhouse: every runtime wheel for the target, from bundle/requirements.lock.

Three kinds of wheel: the locked dependencies (`pip wheel --no-deps -r requirements.lock`: wheels
are copied, the rare sdist is built), llama-cpp-python built for the target (portable CPU build with
every CPU variant, the best one loaded at run time, or CUDA with --gpu cuda; minutes on 2 cores, so a
built wheel is cached in ~/.cache/appliance/wheels/<flavour> and reused), and the appliance itself.
A CPU llama-cpp-python without the variants (the Makefile's quicker build for this host only) is refused.
SOURCE_DATE_EPOCH is fixed while building so the same sources give the same wheel bytes (and so the
same manifest).
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from appliance.offline.archive import DEFAULT_EPOCH
from appliance.offline.manifest import BundleError

GPU_TARGETS = {"cuda": "-DGGML_CUDA=on"}
# The CPU build: portable (no -march=native) with every x86 variant as a loadable library installed
# beside libllama (appliance/models/generation/cpu_backends.py picks one). The Makefile builds the same.
CPU_FLAGS = "-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_INSTALL_BINDIR=llama_cpp/lib"
CPU_CACHE = "cpu-all-variants"
# The variant every x86-64 CPU runs: a CPU wheel without it was built for one CPU (the Makefile's host build).
BASELINE_VARIANT = "llama_cpp/lib/libggml-cpu-x64.so"
BUILD_OPTIONS = ("--no-cache-dir", "--no-binary", "llama-cpp-python")  # a fresh build, from the sdist
Progress = Callable[[str], None]


def default_llama_cache() -> Path:
    return Path(os.environ.get("APPLIANCE_WHEEL_CACHE", Path.home() / ".cache" / "appliance" / "wheels"))


def _pip(args: list[str], *, env: dict[str, str] | None = None, what: str) -> None:
    result = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise BundleError(f"{what} failed: {result.stderr.strip()[-800:]}")


def _build_env() -> dict[str, str]:
    return {**os.environ, "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", str(DEFAULT_EPOCH))}


def locked_wheels(lock: Path, destination: Path, wheels_from: Path | None, progress: Progress) -> None:
    if not lock.is_file():
        raise BundleError(f"requirements lock {lock} not found (write it with scripts/lock_requirements.py)")
    progress(f"wheels from {lock.name}")
    args = ["wheel", "--quiet", "--no-deps", "-r", str(lock), "-w", str(destination)]
    if wheels_from is not None:
        args += ["--no-index", "--find-links", str(wheels_from)]
    _pip(args, env=_build_env(), what=f"pip wheel -r {lock}")


def llama_wheel(
    destination: Path, *, gpu: str | None, given: Path | None, cache: Path | None, progress: Progress
) -> Path:
    """The llama-cpp-python wheel for the target: given, cached, or built now (and cached)."""
    if gpu is not None and gpu not in GPU_TARGETS:
        raise BundleError(f"--gpu {gpu!r}: supported targets are {', '.join(GPU_TARGETS)}")
    if given is not None:
        if not given.is_file() or not given.name.startswith("llama_cpp_python-"):
            raise BundleError(f"--llama-wheel {given}: not a llama_cpp_python wheel")
        if gpu is None:
            require_portable(given, what=f"--llama-wheel {given}", advice="leave it out and the bundle builds one")
        return Path(shutil.copy2(given, destination / given.name))
    version = metadata.version("llama-cpp-python")
    cache = (cache or default_llama_cache()) / (gpu or CPU_CACHE)
    cached = sorted(cache.glob(f"llama_cpp_python-{version}-*.whl"))
    if not cached:
        progress(f"build llama-cpp-python {version} ({gpu or 'portable CPU'}; several minutes)")
        cache.mkdir(parents=True, exist_ok=True)
        flags = f"-DGGML_NATIVE=OFF {GPU_TARGETS[gpu]}" if gpu else CPU_FLAGS
        env = {**_build_env(), "CMAKE_ARGS": flags, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
        _pip(
            # --no-cache-dir: else pip hands back a wheel it built from the same sdist with other flags.
            ["wheel", "--no-deps", *BUILD_OPTIONS, f"llama-cpp-python=={version}", "-w", str(cache)],
            env=env,
            what=f"building llama-cpp-python {version} with {flags}",
        )
        cached = sorted(cache.glob(f"llama_cpp_python-{version}-*.whl"))
    if gpu is None:
        require_portable(cached[-1], what=f"the cached wheel {cached[-1]}", advice="delete it, the bundle builds one")
    return Path(shutil.copy2(cached[-1], destination / cached[-1].name))


def require_portable(wheel: Path, *, what: str, advice: str) -> None:
    """A CPU bundle runs on hosts it was not built on: its llama-cpp-python must carry every CPU variant."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
    except (OSError, zipfile.BadZipFile) as exc:
        raise BundleError(f"{what}: not a readable wheel ({exc})") from exc
    if BASELINE_VARIANT not in names:
        raise BundleError(
            f"{what} was built for one CPU (it has no {BASELINE_VARIANT}): a bundle ships the portable build "
            f"with every CPU variant ({CPU_FLAGS}): {advice}"
        )


# What the appliance wheel is built from (pyproject's readme and packages). setuptools writes build/ and
# *.egg-info beside its sources, so it builds a copy: a read-only checkout bundles, and two bundles built
# from one checkout at once do not trample each other's egg-info.
WHEEL_SOURCES = ("pyproject.toml", "README.md", "appliance")


def copy_wheel_sources(project_root: Path, destination: Path) -> Path:
    destination.mkdir(parents=True)
    for name in WHEEL_SOURCES:
        path = project_root / name
        if path.is_dir():
            shutil.copytree(path, destination / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, destination / name)
    return destination


def appliance_wheel(project_root: Path, destination: Path, progress: Progress) -> Path:
    if not (project_root / "pyproject.toml").is_file():
        raise BundleError(
            f"{project_root} is not the appliance source tree (no pyproject.toml): bundle from a checkout"
        )
    progress("build the appliance wheel")
    with tempfile.TemporaryDirectory(prefix="appliance-source-") as scratch:
        source = copy_wheel_sources(project_root, Path(scratch) / "appliance-src")
        _pip(
            ["wheel", "--quiet", "--no-deps", "--no-build-isolation", str(source), "-w", str(destination)],
            env=_build_env(),
            what="building the appliance wheel",
        )
    built = sorted(destination.glob("appliance-*.whl"))
    if not built:
        raise BundleError("building the appliance wheel produced no file")
    return built[-1]


def build_wheelhouse(
    lock: Path,
    destination: Path,
    *,
    project_root: Path,
    wheels_from: Path | None = None,
    gpu: str | None = None,
    llama: Path | None = None,
    llama_cache: Path | None = None,
    progress: Progress = lambda _: None,
) -> list[Path]:
    destination.mkdir(parents=True, exist_ok=True)
    locked_wheels(lock, destination, wheels_from, progress)
    llama_wheel(destination, gpu=gpu, given=llama, cache=llama_cache, progress=progress)
    appliance_wheel(project_root, destination, progress)
    return sorted(destination.glob("*.whl"))


def wheel_versions(wheels: list[Path]) -> dict[str, str]:
    """name → version from wheel file names (PEP 427: name-version-…)."""
    versions = {}
    for wheel in wheels:
        name, version = wheel.name.split("-")[:2]
        versions[name.lower().replace("_", "-")] = version
    return versions
