"""`appliance install`: a verified bundle → a working appliance, with no network at all.

Standard library only: this module also runs inside install.pyz on a host where nothing is
installed yet. Order matters:
  1. verify every archive member against MANIFEST.json (nothing written yet);
  2. extract into a private staging folder under the prefix (hashing again);
  3. `python -m venv` + `pip install --no-index --find-links wheels` (host pip config ignored);
  4. swap venv/, models/ and share/ into place (the previous ones are kept until the end and put
     back if anything fails), write bin/appliance and INSTALLED.json;
  5. the home: created if missing; appliance.toml written only if absent; the index, tokens and
     audit log are never touched, so a re-install or upgrade keeps them;
  6. systemd units rendered, installed and enabled (skippable).
`verify_installation` re-checks an installed prefix against its manifest, including every file
pip installed (each wheel's RECORD hashes).
"""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance.offline.archive import extract_archive, verify_archive
from appliance.offline.manifest import (
    MANIFEST_NAME,
    BundleError,
    Manifest,
    parse_manifest,
    record_digest,
    verify_tree,
)

Progress = Callable[[str], None]
SWAPPED = ("venv", "models", "share")
SHARE_PARTS = ("docs/", "licenses/", "systemd/", "recipe/", "config/", "INSTALL.txt", "install.pyz")
INSTALLED_NAME = "INSTALLED.json"


@dataclass(frozen=True)
class InstallOptions:
    archive: Path
    prefix: Path = Path("/opt/appliance")
    home: Path = Path("/var/lib/appliance")
    docs: Path | None = None  # default: HOME/docs
    systemd: bool = True
    dry_run: bool = False
    manifest_sha256: str | None = None
    python: str = sys.executable
    host: str = "127.0.0.1"
    port: int = 8080
    operator_subnet: str | None = None
    user: str = "appliance"
    unit_dir: Path = Path("/etc/systemd/system")

    @property
    def docs_dir(self) -> Path:
        return self.docs or self.home / "docs"


def _quiet(_: str) -> None:
    pass


def check_target(manifest: Manifest, python: str) -> None:
    """The wheels were built for one Python and machine: refuse another before writing anything."""
    build = manifest.data.get("build", {})
    wanted_python, wanted_machine = build.get("python_tag"), build.get("machine")
    probe = subprocess.run(
        [python, "-c", "import platform,sys; print('%d.%d' % sys.version_info[:2], platform.machine())"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise BundleError(f"cannot run the target Python {python!r}: {probe.stderr.strip()}")
    have_python, have_machine = probe.stdout.split()
    if wanted_python and have_python != wanted_python:
        raise BundleError(f"this bundle's wheels are for Python {wanted_python}; {python} is Python {have_python}")
    if wanted_machine and have_machine != wanted_machine:
        raise BundleError(f"this bundle's wheels are for {wanted_machine}; this host is {have_machine}")


# Environment that would make the new venv's Python see other packages: pip would take a package found
# on the admin's PYTHONPATH or user site for installed and skip the bundle's wheel.
_FOREIGN_PYTHON_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONSTARTUP")


def _offline_pip_env() -> dict[str, str]:
    # The host's pip configuration (index URLs, find-links, constraints) must not apply: only the
    # bundle's wheels, never an index, into a venv that sees nothing but itself.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k not in _FOREIGN_PYTHON_ENV}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _run(command: list[str], what: str, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise BundleError(f"{what} failed (exit {result.returncode}): {result.stderr.strip()[-800:]}")


def build_venv(staging: Path, venv: Path, python: str, progress: Progress) -> None:
    progress(f"create {venv}")
    _run([python, "-m", "venv", str(venv)], "creating the virtual environment", env=_offline_pip_env())
    wheels = staging / "wheels"
    direct = sorted(str(w) for w in wheels.glob("*.whl") if w.name.startswith(("appliance-", "llama_cpp_python-")))
    progress(f"pip install {len(list(wheels.glob('*.whl')))} wheels (offline)")
    _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            # pip byte-compiles file by file on one core (torch alone is thousands of files): compiled
            # below on every core instead, 140 s → 86 s for the cpu-small bundle on 2 cores.
            "--no-compile",
            "--find-links",
            str(wheels),
            "-r",
            str(staging / "recipe" / "requirements.lock"),
            *direct,
        ],
        "offline pip install from the bundle's wheelhouse",
        env=_offline_pip_env(),
    )
    pip_check(venv)
    byte_compile(venv, progress)


# A requirement the bundle meets with another distribution of the same module: rapidocr-onnxruntime
# names opencv-python (GUI build: needs the target's libGL); the bundle ships opencv-python-headless,
# the same cv2 without GUI libraries (bundle/requirements.lock, scripts/lock_requirements.py).
SAME_MODULE = {"opencv-python": "opencv-python-headless"}
_MISSING = re.compile(r"^\S+ \S+ requires (\S+), which is not installed\.$")


def pip_check(venv: Path) -> None:
    """`pip check`, less the missing requirements that SAME_MODULE says are met under another name."""
    command = [str(venv / "bin" / "python"), "-m", "pip", "check"]
    result = subprocess.run(command, capture_output=True, text=True, env=_offline_pip_env())
    if result.returncode == 0:
        return
    problems = []
    for line in result.stdout.splitlines():
        missing = _MISSING.match(line.strip())
        if missing and missing.group(1).lower() in SAME_MODULE:
            continue
        if line.strip():
            problems.append(line.strip())
    if problems or not result.stdout.strip():
        shown = "\n".join(problems) or result.stderr.strip()
        raise BundleError(f"pip check failed (exit {result.returncode}): {shown[-800:]}")


def package_tests(site_packages: Path) -> str:
    """compileall's -x: a path inside a `test` or `tests` folder below site-packages (a package's own test
    suite), whatever folders the prefix itself is under."""
    return re.escape(str(site_packages)) + r"/(.*/)?tests?/"


WARM_TIMEOUT_S = 900  # importing the whole stack once takes about 30 s on one core


def byte_compile(venv: Path, progress: Progress) -> None:
    """The bytecode of what the appliance runs, written once, here: the units run the venv read-only, where each
    start would otherwise compile every module it imports again. The new venv's Python imports what the
    appliance names (offline/warm_imports.py: 4,194 of 16,467 files of the cpu-small bundle, 29 s on one core)
    and the appliance's own package is compiled whole. Where that cannot run (a venv without this appliance),
    every file is compiled instead, less the packages' own test suites (`test/`, `tests/`), which nothing
    imports. A file that does not compile (a package's Python 2 test data) stays source only, as pip leaves it."""
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in _offline_pip_env().items() if k != "PYTHONDONTWRITEBYTECODE"}
    progress("byte-compile what the appliance imports")
    with tempfile.TemporaryDirectory(prefix="appliance-warm-") as scratch:
        # Run in a scratch folder with a scratch home: importing must not touch the admin's files.
        scratch_env = {**env, "APPLIANCE_HOME": scratch, "APPLIANCE_CONFIG": str(Path(scratch) / "absent.toml")}
        try:
            warmed = subprocess.run(
                [python, "-m", "appliance.offline.warm_imports"],
                capture_output=True,
                text=True,
                env=scratch_env,
                cwd=scratch,
                timeout=WARM_TIMEOUT_S,
            )
            report = json.loads(warmed.stdout.strip().splitlines()[-1]) if warmed.returncode == 0 else None
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            report = None
    own = site_packages / "appliance"
    if report is not None and own.is_dir():
        skipped = ", ".join(report["failed"]) or "none"
        progress(f"  {report['loaded']} modules imported (skipped: {skipped})")
        targets, excluded = [str(own)], []
    else:
        progress("  the appliance's imports could not run: every file compiled")
        targets, excluded = [str(site_packages)], ["-x", package_tests(site_packages)]
    result = subprocess.run(
        [python, "-m", "compileall", "-q", "-j", "0", *excluded, *targets],
        capture_output=True,
        text=True,
        env=env,
    )
    if result.returncode != 0:
        failed = sum(1 for line in result.stdout.splitlines() if line.startswith("*** Error compiling"))
        progress(f"  {failed or 'some'} file(s) left as source: they do not compile")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))


def render_config(profile: dict[str, Any], prefix: Path) -> str:
    """The installed appliance.toml: the model store of this prefix plus the profile's settings."""
    lines = [
        f"# Written by `appliance install` (profile {profile.get('name', '?')}). Edit freely: a re-install",
        "# keeps this file. Every setting and its default: appliance config show",
        f"models_dir = {_toml_value(str(prefix / 'models'))}",
    ]
    sections: dict[str, list[str]] = {}
    for key, value in sorted(profile.get("config", {}).items()):
        section, _, field = key.partition(".")
        sections.setdefault(section, []).append(f"{field} = {_toml_value(value)}")
    for section, fields in sections.items():
        lines += ["", f"[{section}]", *fields]
    return "\n".join(lines) + "\n"


def _write_wrapper(prefix: Path, home: Path) -> None:
    wrapper = prefix / "bin" / "appliance"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(
        "#!/bin/sh\n"
        "# Written by `appliance install`: this prefix's appliance, with its state in the installed home.\n"
        f': "${{APPLIANCE_HOME:={home}}}"\n'
        "export APPLIANCE_HOME\n"
        "# Only the installed venv's code runs, whatever the caller's Python environment says.\n"
        "unset PYTHONPATH PYTHONHOME PYTHONUSERBASE PYTHONSTARTUP\n"
        "export PYTHONNOUSERSITE=1\n"
        f'exec "{prefix}/venv/bin/appliance" "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(0o755)


def _place_share(staging: Path, share: Path) -> None:
    share.mkdir(parents=True)
    for part in SHARE_PARTS:
        source = staging / part.rstrip("/")
        if source.exists():
            shutil.move(str(source), str(share / part.rstrip("/")))
    shutil.copy2(staging / MANIFEST_NAME, share / MANIFEST_NAME)


def _prepare_home(options: InstallOptions, manifest: Manifest, actions: list[str]) -> None:
    home = options.home
    home.mkdir(mode=0o750, parents=True, exist_ok=True)
    options.docs_dir.mkdir(parents=True, exist_ok=True)
    config = home / "appliance.toml"
    if config.exists():
        actions.append(f"kept {config}")
    else:
        config.write_text(render_config(manifest.data.get("profile", {}), options.prefix), encoding="utf-8")
        actions.append(f"wrote {config}")


def unit_params(options: InstallOptions) -> Any:
    """The units' parameters, checked before anything is written (a bad subnet names the field)."""
    from appliance.offline.systemd_units import UnitParams

    try:
        return UnitParams(
            prefix=options.prefix,
            home=options.home,
            docs=options.docs_dir,
            user=options.user,
            group=options.user,
            host=options.host,
            port=options.port,
            operator_subnet=options.operator_subnet,
        )
    except ValueError as exc:
        raise BundleError(f"systemd unit settings: {exc}") from None


def _install_systemd(options: InstallOptions, actions: list[str]) -> None:
    from appliance.offline.systemd_units import UnitInstallError, ensure_service_user, install_units, render_units

    units = render_units(options.prefix / "share" / "systemd", unit_params(options))
    message = ensure_service_user(options.user, options.user, options.home)
    if message:
        actions.append(str(message))
    try:
        actions += install_units(units, options.unit_dir, enable=True)
    except UnitInstallError as exc:
        raise BundleError(f"systemd: {exc}") from None


def install(options: InstallOptions, progress: Progress = _quiet) -> dict[str, Any]:
    started = time.monotonic()
    timings: dict[str, float] = {}
    if options.systemd:
        unit_params(options)
    manifest = verify_archive(options.archive, options.manifest_sha256, progress)
    timings["verify_s"] = round(time.monotonic() - started, 2)
    check_target(manifest, options.python)
    prefix = options.prefix
    previous = _installed_record(prefix)
    result: dict[str, Any] = {
        "archive": str(options.archive),
        "manifest_sha256": manifest.sha256,
        "version": manifest.version,
        "profile": manifest.data.get("profile", {}).get("name"),
        "prefix": str(prefix),
        "home": str(options.home),
        "docs": str(options.docs_dir),
        "upgrade_from": previous.get("version") if previous else None,
        "dry_run": options.dry_run,
        "files": len(manifest.files),
        "bytes": sum(entry.size for entry in manifest.files.values()),
    }
    if options.dry_run:
        result["actions"] = [f"verified {len(manifest.files)} files; nothing written (--dry-run)"]
        result["timings_s"] = {**timings, "total_s": round(time.monotonic() - started, 2)}
        return result

    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BundleError(f"cannot create the prefix {prefix}: {exc.strerror}") from None
    staging = prefix / f".staging-{os.getpid()}"
    if staging.exists():
        shutil.rmtree(staging)
    actions: list[str] = []
    moved: list[str] = []
    try:
        mark = time.monotonic()
        extract_archive(options.archive, manifest, staging, progress)
        timings["extract_s"] = round(time.monotonic() - mark, 2)
        for name in SWAPPED:  # keep the previous install until the new one is complete
            if (prefix / name).exists():
                _remove(prefix / f"{name}.previous")
                (prefix / name).rename(prefix / f"{name}.previous")
                moved.append(name)
        mark = time.monotonic()
        build_venv(staging, prefix / "venv", options.python, progress)
        timings["pip_s"] = round(time.monotonic() - mark, 2)
        shutil.move(str(staging / "models"), str(prefix / "models"))
        _place_share(staging, prefix / "share")
        _write_wrapper(prefix, options.home)
        _prepare_home(options, manifest, actions)
        record = {**result, "installed_unix": int(time.time()), "python": options.python}
        (prefix / INSTALLED_NAME).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if options.systemd:
            _install_systemd(options, actions)
        else:
            actions.append("systemd units not installed (--no-systemd)")
    except BaseException as exc:
        for name in SWAPPED:
            _remove(prefix / name)
            if name in moved:
                (prefix / f"{name}.previous").rename(prefix / name)
        if isinstance(exc, OSError):  # a full disk, a read-only prefix: one clear line, not a traceback
            where = f"{exc.filename}: " if exc.filename else ""
            raise BundleError(f"install failed, previous install kept: {where}{exc.strerror or exc}") from exc
        raise
    finally:
        _remove(staging)
    for name in moved:
        _remove(prefix / f"{name}.previous")
    result["actions"] = actions
    result["timings_s"] = {**timings, "total_s": round(time.monotonic() - started, 2)}
    return result


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _installed_record(prefix: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((prefix / INSTALLED_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def default_prefix() -> Path:
    """The prefix of the running appliance: PREFIX/venv/bin/python → PREFIX."""
    return Path(sys.prefix).resolve().parent


def _record_problems(site_packages: Path, dist_info: Path) -> list[str]:
    problems = []
    with (dist_info / "RECORD").open(encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle):
            if len(row) < 2 or not row[1].startswith("sha256=") or "__pycache__" in row[0]:
                continue
            path = (site_packages / row[0]).resolve()
            if not path.is_file():
                problems.append(f"venv: {row[0]} is missing ({dist_info.name})")
                continue
            if record_digest(path) != row[1].removeprefix("sha256="):
                problems.append(f"venv: {row[0]} differs from what pip installed ({dist_info.name})")
    return problems


def verify_installation(prefix: Path) -> dict[str, Any]:
    """Re-check an installed appliance against its manifest: models, shared files and the venv."""
    manifest_path = prefix / "share" / MANIFEST_NAME
    if not manifest_path.is_file():
        raise BundleError(f"{prefix} holds no installed appliance ({manifest_path} missing)")
    manifest = parse_manifest(manifest_path.read_bytes())
    problems = verify_tree(prefix, manifest, only="models/")
    for part in SHARE_PARTS:
        problems += [f"share/{p}" for p in verify_tree(prefix / "share", manifest, only=part)]
    wanted = {
        entry.path.split("/", 1)[1].split("-")[0].lower(): entry.path.split("-")[1]
        for entry in manifest.files.values()
        if entry.path.startswith("wheels/") and entry.path.endswith(".whl")
    }
    site_packages = next((prefix / "venv" / "lib").glob("python*/site-packages"), None)
    checked = 0
    if site_packages is None:
        problems.append("venv: no site-packages (the virtual environment is gone)")
    else:
        installed = {}
        for dist_info in site_packages.glob("*.dist-info"):
            name, version = dist_info.name.removesuffix(".dist-info").rsplit("-", 1)
            installed[name.lower()] = (version, dist_info)
        for name, version in sorted(wanted.items()):
            if name not in installed:
                problems.append(f"venv: {name} {version} is not installed")
            elif installed[name][0] != version:
                problems.append(f"venv: {name} is {installed[name][0]}, the bundle has {version}")
            else:
                problems += _record_problems(site_packages, installed[name][1])
                checked += 1
    return {
        "prefix": str(prefix),
        "version": manifest.version,
        "manifest_sha256": manifest.sha256,
        "files_checked": sum(1 for e in manifest.files.values() if not e.path.startswith("wheels/")),
        "packages_checked": checked,
        "problems": problems,
        "ok": not problems,
        "python": platform.python_version(),
    }
