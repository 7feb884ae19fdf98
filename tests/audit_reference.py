"""A reference audit log: the same records, written at the same (frozen) times, every time.

`tests/data/audit-log-v1/` holds what the audit writer of commit 4231392 (the last single-module
`appliance/audit.py`) wrote from `write_reference_log`: `audit/` the log, `pruned/` the file retention
deleted from it; tests/test_audit_format.py checks that today's
code verifies it, reads it, continues its chain, and writes it again byte for byte. Never regenerate the
committed copy: its point is that it was written by the old code.

    .venv/bin/python -m tests.audit_reference DEST    # write the log into DEST (an empty folder)

The records touch every rule of the format: a question longer than the preview, non-ASCII text (escaped),
a token secret (masked), a comment, sources, latencies as a number and as stages, a role without a model,
every kind of `extra` scalar; files rotated by size and by age; the oldest file pruned by retention and
noted in CHAIN.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from appliance.audit.writer import AuditLog
from appliance.config import Settings

START = 1_760_000_000.0  # 2025-10-09T08:53:20Z
DAY = 86400.0
RETENTION_DAYS = 30.0
RECORDS = 31


class FrozenClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def reference_settings(home: Path) -> Settings:
    return Settings.model_validate(
        {
            "home": home,
            "audit": {"max_file_bytes": 4096, "max_file_age_days": 1.0, "retention_days": RETENTION_DAYS},
        }
    )


def _one(log: AuditLog, number: int) -> None:
    kind = number % 5
    question = f"How is the chlorine ton container on bank {number} changed, and which gasket is used? " * (
        1 + kind % 2
    )
    if kind == 0:
        log.record(
            endpoint="ask",
            status=200,
            request_id=f"req-{number:04d}",
            principal="tok_desk",
            client="10.0.0.7",
            question=question,
            sources=[
                {"path": "docs/SOP-CL-004.md", "chunk_id": f"c{number}a", "score": 0.8125 + number / 1000},
                {"path": "docs/SOP-CL-005.md", "chunk_id": f"c{number}b", "score": 0.5, "text": "never logged"},
            ],
            refused=False,
            latency_ms={"retrieve": 12.5, "answer": 230.25},
            models={"embedder": "all-MiniLM-L6-v2", "generator": None},
            extra={"grounded": True, "citations": 2, "evidence_confidence": 0.91, "answer_kind": "procedure"},
        )
    elif kind == 1:
        log.record(
            endpoint="search",
            status=200,
            request_id=f"req-{number:04d}",
            principal=None,
            client="::1",
            question=f"Ventil VLV-3042-B prüfen — 点検 {number} apl_0123abcd_SeCrEtPaRt-xyz",
            sources=[{"path": "docs/valves.md", "chunk_id": None, "score": -1.5e-3}],
            refused=True,
            latency_ms=41,
            extra={"mode": "hybrid", "hits": 0, "reranked": None},
        )
    elif kind == 2:
        log.record(
            endpoint="feedback",
            status=204,
            request_id=f"req-{number:04d}",
            principal="tok_desk",
            client="10.0.0.8",
            comment=f"Step 4 of answer {number} names the wrong valve; apl_89abcdef_another-secret",
            extra={"rating": -1, "for_request": f"req-{number - 2:04d}"},
        )
    elif kind == 3:
        log.record(
            endpoint="reindex",
            status=200,
            request_id=f"req-{number:04d}",
            principal="tok_admin",
            client="127.0.0.1",
            latency_ms={"total": 1534.0},
            extra={"updated": 2, "removed": 1},
        )
    else:
        log.record(
            endpoint="ask",
            status=401,
            request_id=f"req-{number:04d}",
            principal=None,
            client="192.0.2.10",
            question="",
        )


def write_reference_log(home: Path) -> Path:
    """Write the reference log under `home`; return its audit folder (without the lock file)."""
    settings = reference_settings(home)
    clock = FrozenClock(START)
    log = AuditLog(settings, clock=clock)
    for number in range(1, RECORDS):  # three days of records: rotation by age, and by size within a day
        clock.now = START + (number - 1) * (2.75 * DAY / RECORDS)
        _one(log, number)
        _age_files(settings.audit_dir, clock.now)
    # A month later the next record opens a new file, and retention prunes what is older than 30 days: a
    # copy of what it deletes goes to HOME/pruned, so a test can put it back and check from genesis.
    before = {path.name: path.read_bytes() for path in settings.audit_dir.glob("audit-*.jsonl")}
    clock.now = START + RETENTION_DAYS * DAY + 1.0 * DAY
    _one(log, RECORDS)
    (settings.audit_dir / "audit.lock").unlink()
    pruned = home / "pruned"
    pruned.mkdir()
    for name, data in before.items():
        if not (settings.audit_dir / name).exists():
            (pruned / name).write_bytes(data)
    return settings.audit_dir


def _age_files(audit_dir: Path, now: float) -> None:
    """Give the newest file the frozen time as its mtime (retention reads mtimes), as a real clock would."""
    newest = sorted(audit_dir.glob("audit-*.jsonl"))[-1]
    os.utime(newest, (now, now))


if __name__ == "__main__":
    destination = Path(sys.argv[1])
    print(write_reference_log(destination))
    for path in sorted(destination.glob("*/*")):
        print(path.relative_to(destination), path.stat().st_size)
