"""The audit log on disk: the one place its format is written down (writer, verify and reader all use it).

Folder ``settings.audit_dir`` (HOME/audit), mode 0700:

* ``audit-YYYYMMDDTHHMMSSZ.jsonl`` (mode 0600): the records, one per line. The name is the file's UTC
  creation time; names sort in chain order and the newest file is the current one (a new file is named
  one second after the newest when the clock says otherwise).
* ``CHAIN``: written only by retention, atomically, before it deletes a file:
  ``{"version": 1, "pruned": [{"file", "records", "first_seq", "first_prev", "last_seq", "last_hash",
  "pruned_at"}, …]}`` (JSON, indent 1), oldest first: where the remaining chain attaches.
* ``audit.lock``: the flock every append (exclusive), verify and copy (shared) hold.

A line is one JSON object, ``json.dumps(record, ensure_ascii=True, separators=(",", ":"),
allow_nan=False)`` plus ``\\n`` (ASCII only), keys in this order: ``seq`` (1, 2, 3… across all files),
``time`` (UTC, milliseconds, ``Z``: ``2025-10-10T04:03:00.645Z``), ``prev``, then the body
(appliance.audit.fields: request_id, principal, client, endpoint, status, question_preview,
question_sha256, sources, refused, latency_ms, models, extra, and comment_preview, comment_sha256 only
on records that have a comment).

The chain: ``prev`` is the sha256 hex of the previous record's exact line bytes, newline included (64
zeros before the first record ever), so ``sed -n 3p FILE | sha256sum`` is the ``prev`` of line 4, and
the first record of a file follows the last complete line of the file before it (or the last CHAIN
entry when that file was pruned). An edited, deleted or reordered record breaks it at a named file and
line. A line is written with one ``write()`` on an O_APPEND descriptor: a reader never sees two records
interleaved; a writer that dies mid-line leaves a fragment without newline (a torn line), after which
the next writer goes on in a new file. A write the disk has no room for is undone (the file is cut back
to its last complete line) and fails: a full disk never leaves a torn line.

Limits, by design of a hash chain: the newest record can be altered or removed without a trace, and
someone who can write here can also rewrite CHAIN; copy the head hash (`appliance audit verify`)
somewhere else to anchor it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from appliance.errors import ApplianceError

GENESIS = "0" * 64
LOCK_NAME = "audit.lock"
CHAIN_NAME = "CHAIN"
CHAIN_VERSION = 1
FILE_RE = re.compile(r"audit-(\d{8}T\d{6}Z)\.jsonl")
STAMP = "%Y%m%dT%H%M%SZ"
HASH_RE = re.compile(r"[0-9a-f]{64}")


class AuditError(ApplianceError):
    """A record was refused (a field that could carry answer or chunk text) or could not be written."""


def encode_line(record: dict[str, Any]) -> bytes:
    """A record as its line: the bytes the next record's `prev` hashes."""
    return (json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")


def parse_line(raw: bytes) -> dict[str, Any] | None:
    """The record on a line, or None if the line is not one (invalid JSON, no seq/prev)."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    seq, prev = record.get("seq"), record.get("prev")
    if isinstance(seq, bool) or not isinstance(seq, int) or not isinstance(prev, str) or not HASH_RE.fullmatch(prev):
        return None
    return record


def line_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def complete_lines(data: bytes) -> list[bytes]:
    """Newline-terminated lines, newline included; a trailing fragment without newline is left out."""
    lines = data.split(b"\n")[:-1]
    return [line + b"\n" for line in lines]


def list_files(audit_dir: Path) -> list[Path]:
    """The record files, oldest first."""
    if not audit_dir.is_dir():
        return []
    return sorted(path for path in audit_dir.iterdir() if FILE_RE.fullmatch(path.name))


def file_created(path: Path) -> float:
    """A record file's creation time, from its name (0 for a name that is not one)."""
    match = FILE_RE.fullmatch(path.name)
    if match is None:
        return 0.0
    return datetime.strptime(match.group(1), STAMP).replace(tzinfo=UTC).timestamp()


def iso_time(timestamp: float) -> str:
    """A time as records write it (UTC, milliseconds, Z): records compare with it as strings."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def read_chain(audit_dir: Path) -> list[dict[str, Any]]:
    """CHAIN's entries, oldest first (none when retention never pruned); AuditError when it is damaged."""
    try:
        data = json.loads((audit_dir / CHAIN_NAME).read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise AuditError(f"{audit_dir / CHAIN_NAME} is unreadable: {exc}") from None
    pruned = data.get("pruned") if isinstance(data, dict) else None
    if not isinstance(pruned, list) or not all(_chain_entry_ok(item) for item in pruned):
        raise AuditError(f"{audit_dir / CHAIN_NAME} is not a CHAIN file (a 'pruned' list of file, last_seq, last_hash)")
    return pruned


def encode_chain(entries: list[dict[str, Any]]) -> bytes:
    return (json.dumps({"version": CHAIN_VERSION, "pruned": entries}, indent=1) + "\n").encode()


def _chain_entry_ok(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("file"), str)
        and isinstance(entry.get("last_seq"), int)
        and isinstance(entry.get("last_hash"), str)
        and HASH_RE.fullmatch(entry["last_hash"]) is not None
    )


@contextlib.contextmanager
def audit_lock(audit_dir: Path, exclusive: bool, create: bool) -> Iterator[None]:
    """The audit lock, opened per use: a descriptor inherited across fork would share the lock."""
    if create:
        audit_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(audit_dir / LOCK_NAME, (os.O_RDWR | os.O_CREAT) if create else os.O_RDONLY, 0o600)
    except (FileNotFoundError, PermissionError):
        if create:
            raise
        # No log yet, or a copy of one to read: there is no writer to wait for.
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing releases the lock
