"""The audit log's on-disk format does not change: a log written by the single-module audit.py of commit
4231392 (tests/data/audit-log-v1, made by tests/audit_reference.py) verifies, reads and continues with
today's package, and today's writer writes the same records byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from appliance.audit.format import GENESIS, line_hash
from appliance.audit.reader import find_record, read_records, tail_audit
from appliance.audit.verify import verify_audit
from appliance.audit.writer import AuditLog
from tests.audit_reference import DAY, RETENTION_DAYS, START, FrozenClock, reference_settings, write_reference_log

FIXTURE = Path(__file__).resolve().parent / "data" / "audit-log-v1"
HEAD_SEQ = 31
HEAD_HASH = "a3bec50e4ae348ac8e520158a0c59b0e352fd1d94e9f6e05e1dff789c18bf0d0"
PRUNED = "audit-20251009T085320Z.jsonl"


@pytest.fixture
def old_log(tmp_path: Path) -> Path:
    """A copy of the old code's log (tests never touch the committed one)."""
    audit_dir = tmp_path / "home" / "audit"
    shutil.copytree(FIXTURE / "audit", audit_dir)
    return audit_dir


def test_a_log_written_before_the_split_verifies_from_where_retention_pruned_it(old_log: Path) -> None:
    report = verify_audit(old_log)
    assert report.ok, report.problems
    assert (report.files, report.records) == (4, 22)
    assert (report.last_seq, report.last_hash) == (HEAD_SEQ, HEAD_HASH)
    assert report.notes == [
        "1 file(s) with 9 record(s) up to seq 9 were pruned by retention (noted in CHAIN); the chain is checked "
        "from there"
    ]


def test_with_its_pruned_file_back_the_old_log_verifies_from_genesis(old_log: Path) -> None:
    shutil.copy(FIXTURE / "pruned" / PRUNED, old_log / PRUNED)
    report = verify_audit(old_log)
    assert report.ok, report.problems
    assert (report.files, report.records, report.notes) == (5, 31, [])
    first = (old_log / PRUNED).read_bytes().splitlines(keepends=True)[0]
    assert b'"seq":1,' in first and f'"prev":"{GENESIS}"'.encode() in first
    assert (report.last_seq, report.last_hash) == (HEAD_SEQ, HEAD_HASH)


def test_an_edit_to_the_old_log_is_still_caught_at_its_line(old_log: Path) -> None:
    path = old_log / "audit-20251010T210456Z.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"status":200', b'"status":201')
    path.write_bytes(b"".join(lines))
    problems = [(p.file, p.line) for p in verify_audit(old_log).problems]
    assert problems == [(path.name, 3)]


def test_todays_writer_writes_the_same_bytes_as_the_old_one(tmp_path: Path) -> None:
    audit_dir = write_reference_log(tmp_path / "home")
    written = sorted(path.name for path in audit_dir.iterdir())
    assert written == sorted(path.name for path in (FIXTURE / "audit").iterdir())
    for name in written:
        assert (audit_dir / name).read_bytes() == (FIXTURE / "audit" / name).read_bytes(), name
    assert (tmp_path / "home" / "pruned" / PRUNED).read_bytes() == (FIXTURE / "pruned" / PRUNED).read_bytes()


def test_todays_writer_continues_the_old_chain(old_log: Path) -> None:
    settings = reference_settings(old_log.parent)
    newest = sorted(old_log.glob("audit-*.jsonl"))[-1]
    an_hour_later = FrozenClock(START + (RETENTION_DAYS + 1) * DAY + 3600)  # the current file is not due to rotate
    record = AuditLog(settings, clock=an_hour_later).record(
        endpoint="search", status=200, request_id="req-new", principal=None, client="::1", question="gasket?"
    )
    assert (record["seq"], record["prev"]) == (HEAD_SEQ + 1, HEAD_HASH)
    assert line_hash(newest.read_bytes().splitlines(keepends=True)[-2]) == HEAD_HASH
    report = verify_audit(old_log)
    assert report.ok and report.records == 23 and report.last_seq == HEAD_SEQ + 1


def test_the_readers_read_the_old_log(old_log: Path) -> None:
    assert [record["seq"] for record in tail_audit(old_log, 3)] == [29, 30, 31]
    found = find_record(old_log, "req-0030", ["ask"])
    assert found is not None and found["seq"] == 30 and found["sources"][0]["chunk_id"] == "c30a"
    since = [record["seq"] for record in read_records(old_log, since="2025-10-11T00:00:00.000Z")]
    assert since == list(range(since[0], HEAD_SEQ + 1)) and since[0] > 10
    masked = [record["question_preview"] for record in read_records(old_log, marker=b'"endpoint":"search"')]
    assert masked and all(preview.endswith("apl_0123abcd_*") for preview in masked)
