"""`appliance bundle`: models + wheels + units + docs + licenses → MANIFEST.json → one archive.

Runs on the connected build host. The staging folder mirrors the archive:
    MANIFEST.json  install.pyz  INSTALL.txt
    models/        the model store (store.json + files), exactly as the appliance reads it
    wheels/        every runtime wheel (locked deps, llama-cpp-python for the target, appliance)
    systemd/       unit templates          config/appliance.toml   the profile's settings (reference)
    recipe/        models.toml + requirements.lock as used      licenses/   one file per model
    docs/          README, CHANGELOG, the operators' and admins' guides, reference, architecture, scaling
"""

from __future__ import annotations

import platform
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import appliance
from appliance.models.store import ModelStore
from appliance.offline.archive import write_archive
from appliance.offline.installer import render_config
from appliance.offline.manifest import BundleError, Manifest, build_manifest
from appliance.offline.recipe import ModelSpec, Recipe, load_recipe
from appliance.offline.sources import fetch_model
from appliance.offline.wheelhouse import build_wheelhouse, wheel_versions

Progress = Callable[[str], None]
PROJECT_ROOT = Path(appliance.__file__).resolve().parents[1]
# The installer's own modules, standard library only, zipped into install.pyz.
BOOTSTRAP_MODULES = (
    "appliance/__init__.py",
    "appliance/offline_env.py",
    "appliance/errors.py",
    "appliance/faults.py",
    "appliance/durable.py",
    "appliance/offline/__init__.py",
    "appliance/offline/manifest.py",
    "appliance/offline/archive.py",
    "appliance/offline/installer.py",
    "appliance/offline/install_main.py",
    "appliance/offline/systemd_units.py",
)
DOCS = (
    "README.md",
    "CHANGELOG.md",
    "docs/operators.md",
    "docs/admins.md",
    "docs/admin-page-and-reports.md",
    "docs/backup-and-upload.md",
    "docs/offline.md",
    "docs/scaling.md",
    "docs/architecture.md",
    "docs/reference/settings.md",
    "docs/reference/cli.md",
    "docs/reference/api.md",
)
ZIP_EPOCH = (2024, 1, 1, 0, 0, 0)


@dataclass
class BundleOptions:
    profile: str = "cpu-small"
    output: Path | None = None
    recipe: Path = PROJECT_ROOT / "bundle" / "models.toml"
    lock: Path = PROJECT_ROOT / "bundle" / "requirements.lock"
    project_root: Path = PROJECT_ROOT
    gpu: str | None = None
    compression: str = "zstd"
    wheels_from: Path | None = None
    llama_wheel: Path | None = None
    llama_cache: Path | None = None
    allow_unpinned: bool = False
    hf_endpoint: str | None = None
    work_dir: Path | None = None


@dataclass
class BundleResult:
    output: Path
    manifest: Manifest
    parts: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "output": str(self.output),
            "bytes": self.output.stat().st_size,
            "manifest_sha256": self.manifest.sha256,
            "profile": self.manifest.data["profile"]["name"],
            "files": len(self.manifest.files),
            "parts_bytes": self.parts,
            "seconds": self.seconds,
        }


def default_output(profile: str, gpu: str | None, compression: str) -> Path:
    suffix = ".tar.zst" if compression == "zstd" else ".tar.gz"
    return Path(f"appliance-{appliance.__version__}-{profile}{'-' + gpu if gpu else ''}{suffix}")


def write_bootstrap(project_root: Path, output: Path) -> None:
    """install.pyz: the stdlib-only installer, runnable with `python3 install.pyz BUNDLE`."""
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as pyz:
        for module in BOOTSTRAP_MODULES:
            info = zipfile.ZipInfo(module, date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            pyz.writestr(info, (project_root / module).read_bytes())
        main = zipfile.ZipInfo("__main__.py", date_time=ZIP_EPOCH)
        pyz.writestr(main, "from appliance.offline.install_main import main\n\nmain()\n")


def _license_text(spec: ModelSpec, recipe_dir: Path) -> str:
    header = [
        f"Model: {spec.name} ({spec.role})",
        f"Source: {spec.source}",
        f"License: {spec.license}",
        *([f"Attribution: {spec.attribution}"] if spec.attribution else []),
        "",
    ]
    body = ""
    if spec.license_file:
        path = recipe_dir / spec.license_file
        if not path.is_file():
            raise BundleError(f"model {spec.name}: license_file {path} not found")
        body = path.read_text(encoding="utf-8")
    return "\n".join(header) + "\n" + body


def _install_text(output_name: str, manifest_hint: str) -> str:
    return f"""Installing this appliance bundle on a host without network access
======================================================================

Needs: Python {manifest_hint} with venv (Debian: python3-venv), and zstd for a .tar.zst bundle.

    tar -xf {output_name} install.pyz
    sudo python3 install.pyz {output_name} --prefix /opt/appliance --home /var/lib/appliance

(or, where an appliance is already installed: appliance install {output_name})

The installer checks every file against MANIFEST.json before it writes anything, installs the
wheels with pip --no-index, places the models, writes /var/lib/appliance/appliance.toml if absent,
and installs and enables the systemd units (appliance.service, appliance-reindex.path/.timer,
appliance-watch.service).
Put documents into /var/lib/appliance/docs; check an installed appliance with `appliance verify`.
"""


def _copy_docs(project_root: Path, destination: Path) -> None:
    for relative in DOCS:
        source = project_root / relative
        if source.is_file():
            # docs/reference/cli.md stays reference/cli.md: the pages link to each other that way.
            inside = Path(relative)
            target = destination / (inside.relative_to("docs") if inside.parts[0] == "docs" else inside.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _fetch_models(recipe: Recipe, options: BundleOptions, staging: Path, progress: Progress) -> list[dict[str, Any]]:
    profile = recipe.profile(options.profile)
    store = ModelStore(staging / "models")
    (staging / "models").mkdir(parents=True)
    (staging / "licenses").mkdir()
    fetched = []
    for spec in recipe.models_of(profile):
        model = fetch_model(
            spec,
            store,
            recipe_dir=recipe.path.parent,
            wheels_from=options.wheels_from,
            hf_endpoint=options.hf_endpoint,
            allow_unpinned=options.allow_unpinned,
            progress=progress,
        )
        (staging / "licenses" / f"{spec.role}-{spec.name}.txt").write_text(
            _license_text(spec, recipe.path.parent), encoding="utf-8"
        )
        fetched.append(
            {
                "role": spec.role,
                "name": spec.name,
                "source": spec.source,
                "license": spec.license,
                "origin": model.origin,
                "bytes": sum(f.size for f in model.stored.files),
            }
        )
    return fetched


def _build_facts(gpu: str | None) -> dict[str, Any]:
    libc, libc_version = platform.libc_ver()
    return {
        "python_tag": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "machine": platform.machine(),
        "system": platform.system(),
        "libc": f"{libc} {libc_version}".strip(),
        "gpu": gpu,
    }


def _part_sizes(manifest: Manifest) -> dict[str, int]:
    parts: dict[str, int] = {}
    for entry in manifest.files.values():
        head = entry.path.split("/", 1)[0] if "/" in entry.path else "other"
        parts[head] = parts.get(head, 0) + entry.size
    return parts


def build_bundle(options: BundleOptions, progress: Progress = lambda _: None) -> BundleResult:
    started = time.monotonic()
    seconds: dict[str, float] = {}
    recipe = load_recipe(options.recipe)
    profile = recipe.profile(options.profile)
    output = options.output or default_output(options.profile, options.gpu, options.compression)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="appliance-bundle-", dir=options.work_dir) as work:
        staging = Path(work) / "bundle"
        staging.mkdir()
        mark = time.monotonic()
        models = _fetch_models(recipe, options, staging, progress)
        seconds["models"] = round(time.monotonic() - mark, 2)
        mark = time.monotonic()
        wheels = build_wheelhouse(
            options.lock,
            staging / "wheels",
            project_root=options.project_root,
            wheels_from=options.wheels_from,
            gpu=options.gpu,
            llama=options.llama_wheel,
            llama_cache=options.llama_cache,
            progress=progress,
        )
        seconds["wheels"] = round(time.monotonic() - mark, 2)
        (staging / "systemd").mkdir()
        for unit in sorted((options.project_root / "systemd").glob("appliance*")):
            shutil.copy2(unit, staging / "systemd" / unit.name)
        (staging / "recipe").mkdir()
        shutil.copy2(options.recipe, staging / "recipe" / "models.toml")
        shutil.copy2(options.lock, staging / "recipe" / "requirements.lock")
        _copy_docs(options.project_root, staging / "docs")
        write_bootstrap(options.project_root, staging / "install.pyz")
        build = _build_facts(options.gpu)
        (staging / "INSTALL.txt").write_text(_install_text(output.name, build["python_tag"]), encoding="utf-8")
        meta: dict[str, Any] = {
            "appliance_version": appliance.__version__,
            "profile": {
                "name": profile.name,
                "description": profile.description,
                "models": profile.models,
                "notes": list(profile.notes),
                "config": profile.config,
            },
            "models": models,
            "versions": wheel_versions(wheels),
            "build": build,
        }
        # The reference config is rendered with the default prefix; the installer writes the real one.
        (staging / "config").mkdir()
        (staging / "config" / "appliance.toml").write_text(
            render_config(meta["profile"], Path("/opt/appliance")), encoding="utf-8"
        )
        manifest = build_manifest(staging, meta)
        mark = time.monotonic()
        write_archive(staging, manifest, output, options.compression, progress)
        seconds["pack"] = round(time.monotonic() - mark, 2)
    seconds["total"] = round(time.monotonic() - started, 2)
    return BundleResult(output=output, manifest=manifest, parts=_part_sizes(manifest), seconds=seconds)
