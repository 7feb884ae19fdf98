"""The audit log: what a record may hold, the hash chain and what verify catches, rotation,
retention, concurrent writers, and the `audit` CLI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from appliance.audit.format import GENESIS, AuditError
from appliance.audit.verify import verify_audit
from appliance.audit.writer import AuditLog
from appliance.cli.main import cli
from appliance.config import Settings

REPO = Path(__file__).resolve().parent.parent
RunCli = Callable[..., Result]


@pytest.fixture
def audit_settings(home: Path) -> Settings:
    return Settings(home=home)


def write(log: AuditLog, count: int, start: int = 0, **fields: Any) -> None:
    for i in range(start, start + count):
        log.record(
            endpoint="/ask",
            status=200,
            request_id=f"req-{i}",
            principal="desk",
            client="10.0.0.7",
            question=f"question {i}: how is the chlorine cylinder changed on skid {i}?",
            **fields,
        )


def files_of(settings: Settings) -> list[Path]:
    return sorted(settings.audit_dir.glob("audit-*.jsonl"))


def all_records(settings: Settings) -> list[dict[str, Any]]:
    return [json.loads(line) for path in files_of(settings) for line in path.read_text().splitlines()]


def problems_at(settings: Settings) -> set[tuple[str, int]]:
    return {(p.file, p.line) for p in verify_audit(settings.audit_dir).problems}


# ------------------------------------------------------------------------------------ record contents


def test_records_keep_at_most_80_question_chars_and_refuse_answer_text(audit_settings: Settings) -> None:
    log = AuditLog(audit_settings)
    answer = "To change the cylinder, close the valve, " + "then follow step after step. " * 40
    answer = answer[:1000]
    questions = []
    for i in range(200):
        question = f"Q{i:03d} " + "which gasket fits the header flange on the north ozone skid, and why? " * 8
        questions.append(question)
        with pytest.raises(AuditError, match=r"extra\.answer is a 1000-character string; at most 200"):
            log.record(
                endpoint="/ask", status=200, request_id=f"r{i}", principal="desk", client=None, extra={"answer": answer}
            )
        log.record(
            endpoint="/ask",
            status=200,
            request_id=f"r{i}",
            principal="desk",
            client=None,
            question=question,
            sources=[{"path": "sop/ozone.md", "chunk_id": f"c{i}", "score": 0.71, "text": "CHUNK TEXT " * 20}],
            refused=False,
            latency_ms={"retrieve": 12.5, "generate": 810.0},
            models={"generator": "qwen2.5-coder-1.5b-instruct"},
            extra={"answer_chars": len(answer), "cache": "miss"},
        )
    lines = [line for path in files_of(audit_settings) for line in path.read_bytes().splitlines()]
    assert len(lines) == 200
    for line, question in zip(lines, questions, strict=True):
        record = json.loads(line)
        assert len(record["question_preview"]) <= 80
        assert record["question_preview"] == question[:80]
        assert record["question_sha256"] == hashlib.sha256(question.encode()).hexdigest()
        assert question[80:].encode() not in line and answer[:100].encode() not in line
        assert b"CHUNK TEXT" not in line
        assert record["sources"] == [
            {"path": "sop/ozone.md", "chunk_id": record["sources"][0]["chunk_id"], "score": 0.71}
        ]
    assert [r["seq"] for r in all_records(audit_settings)] == list(range(1, 201))


def test_server_shaped_values_are_accepted(audit_settings: Settings) -> None:
    record = AuditLog(audit_settings).record(
        endpoint="/v1/ask",
        status=200,
        request_id="r1",
        principal="desk",
        client="10.0.0.7",
        sources=[{"path": None, "chunk_id": None, "score": None}],
        latency_ms=412.5,  # type: ignore[arg-type]  # a bare number means the total
        models={"generator": None, "embedder": "all-MiniLM-L6-v2"},  # type: ignore[dict-item]
    )
    assert record["latency_ms"] == {"total": 412.5}
    assert record["models"] == {"generator": None, "embedder": "all-MiniLM-L6-v2"}
    assert record["sources"] == [{"path": None, "chunk_id": None, "score": None}]
    assert record["question_preview"] is None and record["question_sha256"] is None
    assert verify_audit(audit_settings.audit_dir).ok


def test_extra_refuses_nested_structures_and_secrets_are_masked(audit_settings: Settings) -> None:
    log = AuditLog(audit_settings)
    for bad in [{"sources": [{"text": "x"}]}, {"answer": {"text": "x"}}, {"score": float("nan")}]:
        with pytest.raises(AuditError, match="extra"):
            log.record(endpoint="/ask", status=200, request_id="r", principal=None, client=None, extra=bad)
    secret = "apl_0123abcd_" + "S" * 43
    record = log.record(
        endpoint="/ask", status=401, request_id=secret, principal=None, client=None, question=f"my token is {secret}"
    )
    assert secret not in json.dumps(record) and secret not in files_of(audit_settings)[0].read_text()
    assert record["request_id"] == "apl_0123abcd_*"
    assert record["question_preview"] == "my token is apl_0123abcd_*"


def test_record_fields_and_chain(audit_settings: Settings) -> None:
    log = AuditLog(audit_settings)
    hit = {"path": "a.md", "chunk_id": "a#1", "score": np.float32(0.25)}  # retrieval scores are numpy scalars
    write(log, 5, refused=True, latency_ms={"total": np.float64(3.0)}, sources=[hit])
    records = all_records(audit_settings)
    lines = files_of(audit_settings)[0].read_bytes().splitlines(keepends=True)
    assert set(records[0]) == {
        "time",
        "seq",
        "prev",
        "request_id",
        "principal",
        "client",
        "endpoint",
        "status",
        "question_preview",
        "question_sha256",
        "sources",
        "refused",
        "latency_ms",
        "models",
        "extra",
    }
    assert records[0]["prev"] == GENESIS and records[0]["time"].endswith("Z")
    assert records[0]["sources"] == [{"path": "a.md", "chunk_id": "a#1", "score": 0.25}]
    assert records[0]["refused"] is True and records[0]["latency_ms"] == {"total": 3.0}
    for i in range(1, 5):
        assert records[i]["prev"] == hashlib.sha256(lines[i - 1]).hexdigest()
    report = verify_audit(audit_settings.audit_dir)
    assert report.ok and report.records == 5 and report.files == 1 and not report.problems
    assert report.last_seq == 5 and report.last_hash == hashlib.sha256(lines[-1]).hexdigest()
    assert oct(files_of(audit_settings)[0].stat().st_mode & 0o777) == "0o600"


# ------------------------------------------------------------------------------- what verify catches


@pytest.fixture
def ten(audit_settings: Settings) -> tuple[Path, list[bytes]]:
    write(AuditLog(audit_settings), 10)
    (path,) = files_of(audit_settings)
    assert verify_audit(audit_settings.audit_dir).ok
    return path, path.read_bytes().splitlines(keepends=True)


def test_verify_catches_an_edited_record(audit_settings: Settings, ten: tuple[Path, list[bytes]]) -> None:
    path, lines = ten
    lines[4] = lines[4].replace(b"req-4", b"req-X")  # one character of line 5
    path.write_bytes(b"".join(lines))
    report = verify_audit(audit_settings.audit_dir)
    assert not report.ok and [(p.file, p.line) for p in report.problems] == [(path.name, 5)]
    assert "edited" in report.problems[0].problem


def test_verify_catches_a_deleted_line(audit_settings: Settings, ten: tuple[Path, list[bytes]]) -> None:
    path, lines = ten
    del lines[4]
    path.write_bytes(b"".join(lines))
    report = verify_audit(audit_settings.audit_dir)
    assert [(p.file, p.line) for p in report.problems] == [(path.name, 5)]
    assert "seq 5 missing" in report.problems[0].problem


def test_verify_catches_two_swapped_lines(audit_settings: Settings, ten: tuple[Path, list[bytes]]) -> None:
    path, lines = ten
    lines[4], lines[5] = lines[5], lines[4]
    path.write_bytes(b"".join(lines))
    report = verify_audit(audit_settings.audit_dir)
    assert [(p.file, p.line) for p in report.problems] == [(path.name, 5), (path.name, 6)]
    assert all("out of order" in p.problem for p in report.problems)


def test_verify_catches_invalid_json(audit_settings: Settings, ten: tuple[Path, list[bytes]]) -> None:
    path, lines = ten
    lines[6] = lines[6][:40] + b"\n"
    path.write_bytes(b"".join(lines))
    report = verify_audit(audit_settings.audit_dir)
    assert [(p.file, p.line, p.problem) for p in report.problems] == [(path.name, 7, "not valid JSON")]


def test_verify_reports_a_torn_last_line_and_keeps_earlier_records(
    audit_settings: Settings, ten: tuple[Path, list[bytes]]
) -> None:
    path, lines = ten
    with path.open("ab") as handle:
        handle.write(lines[3][: len(lines[3]) // 2])  # a writer died mid-line
    report = verify_audit(audit_settings.audit_dir)
    assert report.torn_last_line and not report.ok and report.records == 10
    assert [(p.file, p.line) for p in report.problems] == [(path.name, 11)]
    assert "torn" in report.problems[0].problem

    # The next writer leaves the fragment alone and continues the chain in a new file.
    write(AuditLog(audit_settings), 3, start=10)
    report = verify_audit(audit_settings.audit_dir)
    assert not report.torn_last_line and report.records == 13 and len(files_of(audit_settings)) == 2
    assert [(p.file, p.line) for p in report.problems] == [(path.name, 11)]
    assert [r["seq"] for r in all_records_lenient(audit_settings)] == list(range(1, 14))


def all_records_lenient(settings: Settings) -> list[dict[str, Any]]:
    records = []
    for path in files_of(settings):
        for line in path.read_bytes().split(b"\n")[:-1]:
            records.append(json.loads(line))
    return records


# --------------------------------------------------------------------------------- rotation, retention


def small_files(home: Path, **audit: Any) -> Settings:
    settings = Settings(home=home)
    settings.audit.max_file_bytes = 4096  # the smallest allowed: a handful of records per file
    for key, value in audit.items():
        setattr(settings.audit, key, value)
    return settings


def test_rotation_by_size_keeps_the_chain_across_files(home: Path) -> None:
    settings = small_files(home)
    write(AuditLog(settings), 60)
    paths = files_of(settings)
    assert len(paths) >= 5
    assert all(p.stat().st_size < 4096 + 1024 for p in paths)  # a file stops growing once it passes the limit
    report = verify_audit(settings.audit_dir)
    assert report.ok and report.files == len(paths) and report.records == 60
    assert [r["seq"] for r in all_records(settings)] == list(range(1, 61))
    first_of_second = json.loads(paths[1].read_bytes().splitlines()[0])
    assert first_of_second["prev"] == hashlib.sha256(paths[0].read_bytes().splitlines(keepends=True)[-1]).hexdigest()


def test_rotation_by_age(home: Path) -> None:
    settings = Settings(home=home)
    now = [1_800_000_000.0]
    log = AuditLog(settings, clock=lambda: now[0])
    write(log, 2)
    now[0] += 0.5 * 86400
    write(log, 1, start=2)
    assert len(files_of(settings)) == 1
    now[0] += 0.6 * 86400  # past audit.max_file_age_days (1) since the file was created
    write(log, 1, start=3)
    assert len(files_of(settings)) == 2 and verify_audit(settings.audit_dir).ok


def test_retention_prunes_old_files_and_verify_still_reports_ok(home: Path) -> None:
    settings = small_files(home, retention_days=30)
    log = AuditLog(settings)
    write(log, 40)
    paths = files_of(settings)
    old = time.time() - 40 * 86400
    for path in paths[:3]:
        os.utime(path, (old, old))
    deleted = log.prune()
    assert deleted == [p.name for p in paths[:3]]
    assert files_of(settings) == paths[3:]
    chain = json.loads((settings.audit_dir / "CHAIN").read_text())
    assert [entry["file"] for entry in chain["pruned"]] == deleted

    report = verify_audit(settings.audit_dir)
    assert report.ok, report.problems
    assert report.notes and "pruned by retention" in report.notes[0]
    write(log, 5, start=40)  # the chain goes on after pruning
    assert verify_audit(settings.audit_dir).ok

    # A CHAIN note that does not match the first remaining record is reported.
    chain_path = settings.audit_dir / "CHAIN"
    genuine = chain_path.read_text()
    chain["pruned"][-1]["last_hash"] = "f" * 64
    chain_path.write_text(json.dumps(chain))
    report = verify_audit(settings.audit_dir)
    assert [(p.file, p.line) for p in report.problems] == [(paths[3].name, 1)]
    assert "(pruned)" in report.problems[0].problem
    chain_path.write_text(genuine)

    # The oldest remaining file deleted by hand is not retention: reported.
    files_of(settings)[0].unlink()
    report = verify_audit(settings.audit_dir)
    assert not report.ok and [(p.file, p.line) for p in report.problems] == [(files_of(settings)[0].name, 1)]


def test_retention_runs_at_rotation(home: Path) -> None:
    settings = small_files(home, retention_days=1)
    log = AuditLog(settings)
    write(log, 20)
    first = files_of(settings)[0]
    old = time.time() - 3 * 86400
    os.utime(first, (old, old))
    write(log, 20, start=20)  # rotates at least once, which applies retention
    assert not first.exists() and verify_audit(settings.audit_dir).ok


def test_a_middle_file_deleted_by_hand_is_reported(home: Path) -> None:
    settings = small_files(home)
    write(AuditLog(settings), 40)
    paths = files_of(settings)
    paths[2].unlink()
    report = verify_audit(settings.audit_dir)
    assert [(p.file, p.line) for p in report.problems] == [(paths[3].name, 1)]
    assert "missing" in report.problems[0].problem

    # The oldest file deleted by hand (no CHAIN note) is reported too.
    paths[0].unlink()
    report = verify_audit(settings.audit_dir)
    assert (paths[1].name, 1) in {(p.file, p.line) for p in report.problems}
    assert "starts at seq" in report.problems[0].problem


# -------------------------------------------------------------------------------------- concurrency


def assert_clean_chain(settings: Settings, count: int) -> None:
    for path in files_of(settings):
        assert path.read_bytes().endswith(b"\n")
        for line in path.read_bytes().splitlines():
            json.loads(line)  # no interleaved partial lines
    report = verify_audit(settings.audit_dir)
    assert report.ok, report.problems
    assert [r["seq"] for r in all_records(settings)] == list(range(1, count + 1))


def test_concurrent_threads_produce_one_verifiable_chain(home: Path) -> None:
    settings = small_files(home)
    log = AuditLog(settings)
    threads = [threading.Thread(target=write, args=(log, 50, t * 1000)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert_clean_chain(settings, 400)
    assert len({r["request_id"] for r in all_records(settings)}) == 400


WRITER = """
import sys
from appliance.audit.writer import AuditLog
from appliance.config import Settings
settings = Settings(home=sys.argv[1])
settings.audit.max_file_bytes = 4096
log = AuditLog(settings)
for i in range(int(sys.argv[3])):
    log.record(endpoint="/search", status=200, request_id=f"{sys.argv[2]}-{i}", principal=None, client=None,
               question="process writer " * 10)
"""


def test_concurrent_processes_produce_one_verifiable_chain(home: Path) -> None:
    settings = small_files(home)
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(home), name, "150"], cwd=REPO) for name in ("a", "b")
    ]
    write(AuditLog(settings), 50, start=5000)  # and this process at the same time
    assert [writer.wait(timeout=60) for writer in writers] == [0, 0]
    assert_clean_chain(settings, 350)
    ids = {r["request_id"] for r in all_records(settings)}
    assert {f"a-{i}" for i in range(150)} <= ids and {f"b-{i}" for i in range(150)} <= ids


# --------------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def run_cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    monkeypatch.setenv("APPLIANCE_HOME", str(home))
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, list(args))

    return run


def test_cli_audit_verify_and_tail(run_cli: RunCli, audit_settings: Settings) -> None:
    empty = run_cli("audit", "verify", "--json")
    assert empty.exit_code == 0 and json.loads(empty.output)["records"] == 0

    write(AuditLog(audit_settings), 10)
    verified = run_cli("audit", "verify", "--json")
    assert verified.exit_code == 0, verified.output
    report = json.loads(verified.output)
    assert set(report) >= {"ok", "files", "records", "problems", "torn_last_line", "notes", "last_seq", "last_hash"}
    assert report["ok"] is True and report["records"] == 10 and report["problems"] == []

    tail = run_cli("audit", "tail", "-n", "3", "--json")
    assert tail.exit_code == 0
    assert [r["seq"] for r in json.loads(tail.output)["records"]] == [8, 9, 10]
    human = run_cli("audit", "tail")
    assert human.exit_code == 0 and len(human.output.splitlines()) == 10
    assert "#10" in human.output

    (path,) = files_of(audit_settings)
    with path.open("ab") as handle:
        handle.write(b'{"seq": 11, "ti')
    torn = run_cli("audit", "verify", "--json")
    assert torn.exit_code == 1
    report = json.loads(torn.output)
    assert report["ok"] is False and report["torn_last_line"] is True and report["records"] == 10
    assert report["problems"] == [{"file": path.name, "line": 11, "problem": report["problems"][0]["problem"]}]
    assert "torn" in report["problems"][0]["problem"]
    plain = run_cli("audit", "verify")
    assert plain.exit_code == 1 and f"{path.name}:11: torn" in plain.output
