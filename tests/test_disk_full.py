"""A full disk loses nothing: each writer fails with DiskFull naming the path, the space needed and what is free,
leaves what was there as it was, and the next run, once there is room, completes. The faults: a real tmpfs that
fills up (root only: mounting needs it) and ENOSPC injected at a named write point (appliance.faults).

A short round of scripts/reliability/disk_full.py runs here (one round per operation); `make reliability` runs
50 and more."""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from appliance import faults
from appliance.audit.verify import verify_audit
from appliance.audit.writer import AuditLog
from appliance.cli.main import cli
from appliance.config import Settings
from appliance.durable import is_disk_full, write_atomically
from appliance.errors import DiskFull
from scripts.reliability.disk_full import OPERATIONS, audit_request, fill, run_disk_full_rounds, small_disk
from tests.test_api import TWO_SOPS, assert_problem, indexed_home, make_client

Inject = Callable[[str], None]


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs; the test is skipped where it cannot be mounted (not root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    with small_disk(tmp_path / "disk", 2) as mounted:
        if not mounted:
            pytest.skip("a tmpfs could not be mounted here")
        yield tmp_path / "disk"


@pytest.fixture
def inject(monkeypatch: pytest.MonkeyPatch) -> Iterator[Inject]:
    """ENOSPC from a named write point on (APPLIANCE_FAULT_DISK_FULL_AT), for this test only."""

    def at(spec: str) -> None:
        monkeypatch.setenv(faults.DISK_FULL_ENV, spec)
        faults.reset()

    yield at
    monkeypatch.delenv(faults.DISK_FULL_ENV, raising=False)
    faults.reset()


def record(log: AuditLog, number: int) -> dict[str, object]:
    return audit_request(log, f"req-{number}", number)


# ------------------------------------------------------------------------------------------ atomic writes


def test_an_atomic_write_on_a_full_disk_keeps_the_old_file_and_names_what_it_needed(tiny_disk: Path) -> None:
    path = tiny_disk / "manifest.json"
    write_atomically(path, "the old version\n")
    fill(tiny_disk, 0)
    with pytest.raises(DiskFull) as caught:
        write_atomically(path, "x" * 200_000)
    assert str(caught.value).startswith(f"{path}: no space left on the device: writing manifest.json needs about ")
    assert "195.3 KiB" in str(caught.value) and "free there" in str(caught.value)
    assert path.read_text() == "the old version\n"
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["ballast", "manifest.json"]  # no temporary left


def test_a_full_disk_at_the_rename_leaves_the_old_file_and_no_temporary(tmp_path: Path, inject: Inject) -> None:
    path = tmp_path / "CHAIN"
    write_atomically(path, "old\n", mode=0o600)
    inject("atomic_write")
    with pytest.raises(DiskFull, match=r"CHAIN: no space left on the device: writing CHAIN needs about 4 bytes"):
        write_atomically(path, "new\n", mode=0o600)
    assert [p.name for p in tmp_path.iterdir()] == ["CHAIN"] and path.read_text() == "old\n"


def test_errors_that_say_the_disk_is_full_are_told_from_others() -> None:
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert is_disk_full(sqlite3.OperationalError("database or disk is full"))
    assert is_disk_full(RuntimeError("Query error: (code: 13) database or disk is full"))  # the vector store's words
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            raise RuntimeError("the batch failed") from exc
    except RuntimeError as wrapped:
        assert is_disk_full(wrapped)
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))


# ------------------------------------------------------------------------------------------ the audit log


def test_an_audit_record_the_disk_has_no_room_for_is_taken_back_whole(tiny_disk: Path) -> None:
    settings = Settings(home=tiny_disk / "home")
    log = AuditLog(settings)
    written = [record(log, number) for number in range(1, 4)]
    fill(tiny_disk, 100)  # less than a page: the current file's last page takes a few records, then none
    with pytest.raises(DiskFull) as caught:
        for number in range(4, 200):
            written.append(record(log, number))
    current = sorted(settings.audit_dir.glob("audit-*.jsonl"))[-1]
    assert str(caught.value).startswith(f"{current}: no space left on the device: an audit record (not written")
    assert "(not written; the chain is intact)" in str(caught.value)
    report = verify_audit(settings.audit_dir)
    assert report.ok and not report.torn_last_line, report.problems
    assert report.records == len(written) and current.read_bytes().endswith(b"\n")

    (tiny_disk / "ballast").unlink()
    after = record(log, 500)
    assert after["seq"] == len(written) + 1
    assert verify_audit(settings.audit_dir).ok


def test_a_full_disk_as_a_new_audit_file_starts_leaves_no_empty_file(tmp_path: Path, inject: Inject) -> None:
    settings = Settings(home=tmp_path / "home")
    log = AuditLog(settings)
    inject("audit_append")
    with pytest.raises(DiskFull, match=r"audit-\d{8}T\d{6}Z\.jsonl: no space left on the device: an audit record"):
        record(log, 1)
    assert list(settings.audit_dir.glob("audit-*.jsonl")) == []
    inject("nowhere")
    assert record(log, 2)["seq"] == 1
    assert verify_audit(settings.audit_dir).ok


# ------------------------------------------------------------------------------------------ front ends


def test_reindex_on_a_full_disk_says_so_in_one_line_and_the_next_run_completes(
    tmp_path: Path, models_dir: Path, inject: Inject, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = indexed_home(tmp_path, models_dir, TWO_SOPS)
    monkeypatch.setenv("APPLIANCE_HOME", str(home))
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(models_dir))
    first = sorted((tmp_path / "plant").iterdir())[0]
    first.write_text(first.read_text() + "\n## Addendum\n\nCheck valve VLV-7781-C before restart.\n")
    inject("inside_catalog_transaction")
    failed = CliRunner().invoke(cli, ["reindex"])
    assert failed.exit_code == 1, failed.output
    said = f"Error: {home}: no space left on the device: writing 1 document(s) to the index needs about"
    assert said in failed.output
    assert "Traceback" not in failed.output
    inject("nowhere")
    done = CliRunner().invoke(cli, ["reindex", "--json"])
    assert done.exit_code == 0, done.output
    searched = CliRunner().invoke(cli, ["search", "VLV-7781-C", "--json"])
    assert first.name in searched.output


def test_an_upload_on_a_full_disk_is_a_507_naming_the_file_and_leaves_nothing(
    tmp_path: Path, models_dir: Path, inject: Inject
) -> None:
    settings = Settings(home=indexed_home(tmp_path, models_dir, TWO_SOPS), models_dir=models_dir)
    client = make_client(settings)
    data = b"# Backwash\n\nOpen valve VLV-9120 for 7 minutes.\n"
    inject("upload_file")
    body = assert_problem(client.post("/v1/documents", files={"file": ("backwash.md", data)}), 507)
    assert body["title"] == "Disk full"
    assert body["detail"].startswith(f"{settings.upload_dir.resolve() / 'backwash.md'}: no space left on the device")
    needs = f"storing the upload uploads/backwash.md ({len(data)} bytes) and indexing it needs about 1.0 MiB"
    assert needs in body["detail"]
    assert list(settings.upload_dir.iterdir()) == []
    inject("nowhere")
    assert client.post("/v1/documents", files={"file": ("backwash.md", data)}).status_code == 201


# ------------------------------------------------------------------------------------------ random rounds


@pytest.mark.slow
def test_a_round_of_each_operation_on_a_disk_that_fills_loses_nothing(tmp_path: Path, models_dir: Path) -> None:
    faults_in_turn = ["full", "filling", "injected", "injected", "injected"]
    report = run_disk_full_rounds(
        tmp_path, models_dir, rounds=len(OPERATIONS), seed=7, initial_documents=6, fault_order=faults_in_turn
    )
    assert not report.problems, report.problems
    assert not report.round_problems, report.round_problems
    assert [r.operation for r in report.rounds] == list(OPERATIONS)
    assert all(r.outcome in ("disk full", "completed") for r in report.rounds), report.rounds
    assert report.failed_rounds >= 3, report.rounds  # the disk did run out under most of them
    assert report.equals_clean_build
