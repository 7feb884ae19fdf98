"""Backup and restore of a home, in process: what a backup holds, that a restore into a fresh home answers the
same questions with the same citations (an uploaded document included) and keeps the tokens and an audit
chain that verifies, and everything a restore refuses: a partial backup, an edited manifest, a changed,
missing or added file, a running appliance, a home that already holds state (unless --force, which moves it
aside). Real SQLite, Chroma and embedder; answers are the default quoted ones (no model).
Under load and during a reindex, against a real server: tests/test_backup_under_load.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from appliance.audit.verify import verify_audit
from appliance.backup.manifest import MANIFEST_NAME
from appliance.backup.restore import restore_backup, verify_backup
from appliance.backup.snapshot import create_backup
from appliance.cli.main import cli
from appliance.config import GeneratorSettings, Settings
from appliance.errors import BackupError
from appliance.index.lock import writer_lock
from appliance.index.ownership import local_store
from appliance.ingest.pipeline import ingest
from appliance.server.auth import TokenStore
from tests.test_api import CHLORINE, OFF_TOPIC, PUMP, make_client
from tests.test_uploads import BACKWASH

QUESTIONS = [
    "What do I close before the chlorine cylinder change?",
    "What do I check before starting the raw water pump?",
    "How long does the backwash of sand filter SF-9 run?",
    OFF_TOPIC,
]


def settings_for(home: Path, models_dir: Path) -> Settings:
    return Settings(
        home=home, models_dir=models_dir, generator=GeneratorSettings.model_validate({"model": "smollm2-135m-instruct"})
    )


def answers(client: TestClient, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """What an operator sees of each question: the answer, refused or not, and the citations."""
    seen = []
    for question in QUESTIONS:
        response = client.post("/v1/ask", json={"question": question}, headers=headers or {})
        assert response.status_code == 200, response.text
        data = response.json()
        citations = [(c["path"], c["chunk_id"]) for c in data["citations"]]
        seen.append({"answer": data["answer"], "refused": data["refused"], "citations": citations})
    return seen


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> dict[str, Any]:
    """A home with two SOPs, one uploaded document, two tokens and audit records; its answers; a backup."""
    base = tmp_path_factory.mktemp("backup")
    plant = base / "plant"
    plant.mkdir()
    (plant / "SOP-CL-004.md").write_text(CHLORINE)
    (plant / "SOP-RW-001.md").write_text(PUMP)
    settings = settings_for(base / "home", models_dir)
    ingest(settings, [plant])
    with TokenStore(settings.tokens_path) as store:
        _, admin = store.create("admin", "boss")
        store.create("operator", "desk")
    client = make_client(settings)
    headers = {"Authorization": f"Bearer {admin}"}
    uploaded = client.post("/v1/documents", files={"file": ("SOP-SF-009.md", BACKWASH.encode())}, headers=headers)
    assert uploaded.status_code == 201, uploaded.text
    seen = answers(client, headers)
    assert seen[2]["citations"][0][0] == "uploads/SOP-SF-009.md" and seen[3]["refused"]
    report = create_backup(settings, base / "backup")
    return {"settings": settings, "admin": admin, "answers": seen, "backup": base / "backup", "report": report}


@pytest.fixture
def backup(original: dict[str, Any], tmp_path: Path) -> Path:
    """A copy of the module's backup, to tamper with."""
    copy = tmp_path / "backup"
    shutil.copytree(original["backup"], copy)
    return copy


# --- what a backup holds ---------------------------------------------------------------------------


def test_a_backup_holds_the_catalog_tokens_vectors_uploads_and_audit_with_a_manifest(
    original: dict[str, Any],
) -> None:
    manifest = json.loads((original["backup"] / MANIFEST_NAME).read_text())
    files = {entry["path"] for entry in manifest["files"]}
    assert {"catalog.sqlite", "tokens.sqlite", "uploads/SOP-SF-009.md"} <= files
    assert any(path.startswith("chroma/") for path in files)
    assert any(path.startswith("audit/audit-") for path in files)
    assert all(len(entry["sha256"]) == 64 for entry in manifest["files"])
    assert manifest["catalog"]["documents"] == 3 and manifest["vectors"]["count"] == manifest["catalog"]["chunks"]
    assert manifest["tokens"] == 2 and manifest["uploads"]["files"] == 1
    head = verify_audit(original["settings"].audit_dir)
    assert (manifest["audit"]["last_seq"], manifest["audit"]["last_hash"]) == (head.last_seq, head.last_hash)
    assert head.last_seq >= 5  # the upload and the asks were audited
    assert not any(p.name.startswith(".") for p in original["backup"].parent.iterdir())  # no partial left


def test_a_backup_never_goes_into_an_existing_folder_or_the_home(original: dict[str, Any], tmp_path: Path) -> None:
    settings = original["settings"]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(BackupError, match="exists and is not an empty folder"):
        create_backup(settings, tmp_path / "full")
    with pytest.raises(BackupError, match="is inside the home"):
        create_backup(settings, settings.home / "backups" / "b1")


# --- restoring -------------------------------------------------------------------------------------


def test_a_restored_appliance_answers_the_same_questions_with_the_same_citations(
    original: dict[str, Any], models_dir: Path, tmp_path: Path
) -> None:
    restored = settings_for(tmp_path / "fresh-home", models_dir)
    report = restore_backup(restored, original["backup"])
    assert (report.documents, report.files) == (3, len(original["report"].manifest["files"]))

    client = make_client(restored)
    headers = {"Authorization": f"Bearer {original['admin']}"}  # the tokens came back too
    assert answers(client, headers) == original["answers"]
    # The uploaded document moved with the home: its original is served from the new upload folder.
    listed = {d["path"]: d["id"] for d in client.get("/v1/documents", headers=headers).json()["documents"]}
    response = client.get(f"/v1/documents/{listed['uploads/SOP-SF-009.md']}/file", headers=headers)
    assert response.status_code == 200 and response.text == BACKWASH
    assert (tmp_path / "fresh-home" / "uploads" / "SOP-SF-009.md").exists()

    verified = CliRunner().invoke(cli, ["audit", "verify", "--json"], env={"APPLIANCE_HOME": str(restored.home)})
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.output)["ok"] is True


def test_restore_refuses_a_home_with_state_unless_forced_and_then_moves_it_aside(
    original: dict[str, Any], models_dir: Path, tmp_path: Path
) -> None:
    target = settings_for(tmp_path / "home", models_dir)
    shutil.copytree(original["settings"].home, target.home)
    (target.home / "catalog.sqlite").write_bytes(b"the state that was here")
    with pytest.raises(BackupError, match=r"already holds an appliance \(audit, catalog.sqlite, .*--force"):
        restore_backup(target, original["backup"])
    assert (target.home / "catalog.sqlite").read_bytes() == b"the state that was here"

    report = restore_backup(target, original["backup"], force=True)
    assert report.moved_aside is not None and report.moved_aside.parent == target.home
    assert (report.moved_aside / "catalog.sqlite").read_bytes() == b"the state that was here"
    assert answers(make_client(target), {"Authorization": f"Bearer {original['admin']}"}) == original["answers"]


def test_restore_refuses_a_running_appliance(original: dict[str, Any], models_dir: Path, tmp_path: Path) -> None:
    target = settings_for(tmp_path / "home", models_dir)
    store = local_store(target.chroma_path)
    assert store.enter()  # what `appliance serve` holds for its whole life
    try:
        with pytest.raises(BackupError, match=r"the appliance is running: pid \d+ .* holds its vector store"):
            restore_backup(target, original["backup"])
    finally:
        store.leave()
    with writer_lock(target.lock_path, 1.0), pytest.raises(BackupError, match="restore onto a stopped appliance"):
        restore_backup(target, original["backup"])
    assert not (target.home / "catalog.sqlite").exists()


# --- refusing a tampered or partial backup, naming the file ----------------------------------------


def rewrite_manifest(backup: Path, change: Any) -> None:
    manifest = json.loads((backup / MANIFEST_NAME).read_text())
    change(manifest)
    (backup / MANIFEST_NAME).write_text(json.dumps(manifest))


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def chroma_file(backup: Path) -> Path:
    return max((p for p in (backup / "chroma").rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


TAMPERING = [
    pytest.param(lambda b: (b / MANIFEST_NAME).unlink(), "manifest.json is missing", id="no manifest (partial)"),
    pytest.param(lambda b: (b / MANIFEST_NAME).write_text("{"), "manifest.json is damaged", id="manifest not JSON"),
    pytest.param(
        lambda b: rewrite_manifest(b, lambda m: m["files"][0].update(sha256="0" * 64)),
        "manifest.json was modified after the backup was written",
        id="manifest edited",
    ),
    pytest.param(lambda b: flip_a_byte(b / "catalog.sqlite"), "catalog.sqlite does not match its sha256", id="catalog"),
    pytest.param(lambda b: flip_a_byte(chroma_file(b)), "does not match its sha256", id="vectors"),
    pytest.param(
        lambda b: (b / "tokens.sqlite").write_bytes(b""), "tokens.sqlite has 0 bytes, the manifest says", id="tokens"
    ),
    pytest.param(
        lambda b: (b / "catalog.sqlite").unlink(), "catalog.sqlite is missing: the backup is partial", id="gone"
    ),
    pytest.param(lambda b: shutil.rmtree(b / "chroma"), "is missing: the backup is partial", id="vectors gone"),
    pytest.param(
        lambda b: (b / "uploads" / "evil.md").write_text("# Injected\n"),
        "uploads/evil.md is not in manifest.json",
        id="file added",
    ),
]


@pytest.mark.parametrize(("tamper", "says"), TAMPERING)
def test_a_tampered_or_partial_backup_is_refused_naming_the_file(
    backup: Path, models_dir: Path, tmp_path: Path, tamper: Any, says: str
) -> None:
    tamper(backup)
    target = settings_for(tmp_path / "fresh", models_dir)
    with pytest.raises(BackupError, match=says.replace("(", r"\(")):
        restore_backup(target, backup)
    assert not (target.home / "catalog.sqlite").exists() and not (target.home / "audit").exists()


def test_an_audit_log_edited_with_a_recomputed_manifest_is_still_refused(backup: Path) -> None:
    """Someone rewrote a record and every sha256 and the digest: the hash chain still gives it away."""
    from appliance.backup.manifest import write_manifest

    audit_file = next((backup / "audit").glob("audit-*.jsonl"))
    lines = audit_file.read_text().splitlines(keepends=True)
    edited = lines[0].replace('"status":201', '"status":200')
    assert edited != lines[0]
    lines[0] = edited
    audit_file.write_text("".join(lines))
    manifest = json.loads((backup / MANIFEST_NAME).read_text())
    (backup / MANIFEST_NAME).unlink()
    write_manifest(backup, {k: v for k, v in manifest.items() if k not in ("files", "digest", "format", "version")})
    with pytest.raises(BackupError, match="audit"):
        verify_backup(backup)


def test_the_cli_backs_up_checks_and_restores_with_clear_errors(
    original: dict[str, Any], models_dir: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    source_env = {"APPLIANCE_HOME": str(original["settings"].home), "APPLIANCE_MODELS_DIR": str(models_dir)}
    made = runner.invoke(cli, ["backup", str(tmp_path / "b"), "--json"], env=source_env)
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["catalog"]["documents"] == 3

    checked = runner.invoke(cli, ["restore", "--check", str(tmp_path / "b")], env=source_env)
    assert checked.exit_code == 0 and "complete and unchanged" in checked.output
    flip_a_byte(tmp_path / "b" / "catalog.sqlite")
    refused = runner.invoke(cli, ["restore", str(tmp_path / "b")], env={"APPLIANCE_HOME": str(tmp_path / "new")})
    assert refused.exit_code == 1
    assert refused.output.startswith("Error: ") and "catalog.sqlite does not match its sha256" in refused.output
