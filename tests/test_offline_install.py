"""End to end across the air gap: `appliance bundle` (cpu-small) → `appliance install` with the network
cut off → the installed appliance indexes and answers a search; re-install keeps the state.

Slow (a real offline pip install of every runtime wheel, twice): about 4–5 minutes on 2 cores. The
wheels come from the wheelhouse `make wheelhouse` fills (bundle --wheels-from), so nothing here
reaches an index.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.offline_target import APPLIANCE, ROOT, clean_env, foreign_site, network_cut, run

pytestmark = pytest.mark.slow
DOCS = ["SOP-CL-004-chlorine-cylinder-change.md", "SOP-SCADA-001-scada-alarm-response-guide.md"]


@pytest.fixture(scope="module")
def bundle(cpu_small_bundle: tuple[Path, dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    return cpu_small_bundle


@pytest.fixture(scope="module")
def installed(installed_appliance: dict[str, Any]) -> dict[str, Path]:
    prefix, home = installed_appliance["prefix"], installed_appliance["home"]
    for name in DOCS:
        shutil.copy(ROOT / "docs_corpus" / name, home / "docs" / name)
    return {"prefix": prefix, "home": home}


def _installed(prefix: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([*network_cut(), str(prefix / "bin" / "appliance"), *args], check=check)


def test_the_bundle_carries_pinned_models_wheels_units_docs_and_licenses(
    bundle: tuple[Path, dict[str, Any]],
) -> None:
    archive, summary = bundle
    parts = summary["parts_bytes"]
    assert isinstance(parts, dict)
    assert parts["models"] > 1_100_000_000  # the Qwen 1.5B GGUF + MiniLM
    assert parts["wheels"] > 100_000_000
    from appliance.offline.archive import verify_archive

    manifest = verify_archive(archive)
    names = set(manifest.files)
    assert "models/generator/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" in names
    assert "models/embedder/all-MiniLM-L6-v2/model.safetensors" in names
    assert "models/store.json" in names
    assert {
        "systemd/appliance.service",
        "systemd/appliance-reindex.path",
        "systemd/appliance-reindex.timer",
        "systemd/appliance-watch.service",
    } <= names
    assert {"licenses/embedder-all-MiniLM-L6-v2.txt", "licenses/generator-qwen2.5-coder-1.5b-instruct.txt"} <= names
    assert any(n.startswith("wheels/llama_cpp_python-") for n in names)
    assert any(n.startswith("wheels/appliance-") for n in names)
    assert not any("reranker" in n for n in names), "cpu-small ships no reranker weights"
    assert manifest.data["profile"]["notes"], "the profile says why there is no reranker"


def test_install_verifies_then_installs_offline_and_the_appliance_answers(installed: dict[str, Path]) -> None:
    prefix, home = installed["prefix"], installed["home"]
    config = (home / "appliance.toml").read_text()
    assert f'models_dir = "{prefix}/models"' in config
    assert 'model = "qwen2.5-coder-1.5b-instruct"' in config
    # Byte-compiled at install time: the units run the venv read-only.
    site_packages = next((prefix / "venv" / "lib").glob("python*/site-packages"))
    assert list((site_packages / "appliance" / "__pycache__").glob("__init__.cpython-*.pyc"))
    assert list((site_packages / "torch" / "__pycache__").glob("__init__.cpython-*.pyc"))

    ingest = json.loads(_installed(prefix, "ingest", str(home / "docs"), "--json").stdout)
    assert ingest["added"] == 2 and not ingest["failed"]
    hits = json.loads(_installed(prefix, "search", "chlorine cylinder change", "--json").stdout)
    assert hits["hits"][0]["path"].endswith("SOP-CL-004-chlorine-cylinder-change.md")


def test_the_installed_command_runs_its_own_code_whatever_the_callers_pythonpath(
    installed: dict[str, Path], tmp_path: Path
) -> None:
    foreign = foreign_site(tmp_path / "site", package=True)
    env = clean_env(PYTHONPATH=str(foreign), PYTHONUSERBASE=str(foreign))
    result = run([str(installed["prefix"] / "bin" / "appliance"), "--help"], env=env)
    assert "a foreign appliance package ran" not in result.stdout + result.stderr
    assert "Usage" in result.stdout


def test_verify_reports_an_intact_install_and_then_a_tampered_file(installed: dict[str, Path]) -> None:
    prefix = installed["prefix"]
    report = json.loads(_installed(prefix, "verify", "--json").stdout)
    assert report["ok"] and report["packages_checked"] > 100

    victim = next((prefix / "venv" / "lib").glob("python*/site-packages/appliance/offline/manifest.py"))
    original = victim.read_bytes()
    victim.write_bytes(original + b"\n# tampered\n")
    try:
        result = _installed(prefix, "verify", check=False)
        assert result.returncode == 1
        assert "appliance/offline/manifest.py differs from what pip installed" in result.stdout
    finally:
        victim.write_bytes(original)


def test_reinstall_keeps_the_index_config_tokens_and_audit_log(
    bundle: tuple[Path, dict[str, Any]], installed: dict[str, Path]
) -> None:
    archive, _ = bundle
    prefix, home = installed["prefix"], installed["home"]
    _installed(prefix, "ingest", str(home / "docs"))
    with (home / "appliance.toml").open("a") as config:
        config.write("\n[audit]\nretention_days = 30\n")
    token = _installed(prefix, "token", "create", "--name", "night-shift", "--role", "operator", "--json")
    token_id = json.loads(token.stdout)["token"]["id"]
    before = {p.relative_to(home) for p in home.rglob("*") if p.is_file()}

    run(
        [
            *network_cut(),
            APPLIANCE,
            "install",
            str(archive),
            "--prefix",
            str(prefix),
            "--home",
            str(home),
            "--no-systemd",
        ],
        env=clean_env(),
    )

    assert "retention_days = 30" in (home / "appliance.toml").read_text()
    assert before <= {p.relative_to(home) for p in home.rglob("*") if p.is_file()}
    tokens = json.loads(_installed(prefix, "token", "list", "--json").stdout)
    assert token_id in json.dumps(tokens)
    status = json.loads(_installed(prefix, "status", "--json").stdout)
    assert status["documents"] == 2 and status["consistent"]
    assert not list(prefix.glob("*.previous")) and not list(prefix.glob(".staging-*"))


def test_the_bootstrap_installer_runs_on_the_standard_library_alone(
    bundle: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    archive, summary = bundle
    from appliance.offline.archive import open_members

    with open_members(archive) as members:
        for member, reader in members:
            if member.name == "install.pyz" and reader is not None:
                (tmp_path / "install.pyz").write_bytes(reader.read())
                break
    # -S: no site-packages at all (so no zstandard module: the zstd command decompresses), -I: isolated.
    result = run(
        [
            sys.executable,
            "-S",
            "-I",
            str(tmp_path / "install.pyz"),
            str(archive),
            "--prefix",
            str(tmp_path / "p"),
            "--home",
            str(tmp_path / "h"),
            "--dry-run",
            "--json",
        ],
        env=clean_env(),
    )
    # A dry run (the CLI's own is in test_offline_archive.py, on a small archive): verified, nothing written.
    assert json.loads(result.stdout)["manifest_sha256"] == summary["manifest_sha256"]
    assert [p.name for p in tmp_path.iterdir()] == ["install.pyz"]
