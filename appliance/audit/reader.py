"""Reading the audit log: records since a time, one request's record, the last n, and a consistent copy.

Readers take no lock except `copy_audit_log` (the shared one, so the copy is one state of the chain):
a writer appends whole lines, and a trailing fragment without newline is never read as a record. The
format: appliance.audit.format.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from appliance.audit.format import (
    CHAIN_NAME,
    audit_lock,
    complete_lines,
    file_created,
    list_files,
    parse_iso,
    parse_line,
)


def read_records(audit_dir: Path, since: str | None = None, marker: bytes | None = None) -> Iterator[dict[str, Any]]:
    """Every record, oldest first, with `time` at or after `since` (an ISO time as records write it).

    Files whose successor was created before `since` are skipped unread (names are creation times);
    `marker`, when given, must occur in a line's bytes before it is parsed: a cheap filter over a
    large log (e.g. b'"endpoint":"ask"').
    """
    files = list_files(audit_dir)
    cutoff = parse_iso(since) if since else None
    for index, path in enumerate(files):
        if cutoff is not None and index + 1 < len(files) and file_created(files[index + 1]) < cutoff:
            continue  # every record of this file was written before the next file began
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # pruned meanwhile
            continue
        for raw in complete_lines(data):
            if marker is not None and marker not in raw:
                continue
            record = parse_line(raw)
            if record is not None and (since is None or str(record.get("time", "")) >= since):
                yield record


def find_record(audit_dir: Path, request_id: str, endpoints: Sequence[str]) -> dict[str, Any] | None:
    """The newest record of `request_id` on one of `endpoints`, reading from the newest file back."""
    needle = json.dumps({"request_id": request_id}, ensure_ascii=True, separators=(",", ":"))[1:-1].encode("ascii")
    for path in reversed(list_files(audit_dir)):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        if needle not in data:
            continue
        for raw in reversed(complete_lines(data)):
            if needle in raw:
                record = parse_line(raw)
                if (
                    record is not None
                    and record.get("request_id") == request_id
                    and record.get("endpoint") in endpoints
                ):
                    return record
    return None


def copy_audit_log(audit_dir: Path, dest: Path) -> list[Path]:
    """Copy the log (its files and CHAIN) into `dest` as one consistent snapshot: under the shared lock no
    record is appended meanwhile (writers wait a moment, nobody is refused). The files copied, in `dest`."""
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    copied: list[Path] = []
    with audit_lock(audit_dir, exclusive=False, create=False):
        names = [path.name for path in list_files(audit_dir)]
        if (audit_dir / CHAIN_NAME).exists():
            names.append(CHAIN_NAME)
        for name in names:
            target = dest / name
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write((audit_dir / name).read_bytes())
            copied.append(target)
    return copied


def tail_audit(audit_dir: Path, n: int = 20) -> list[dict[str, Any]]:
    """The last n records, oldest first (lines that are not records are skipped)."""
    if n <= 0:
        return []
    found: list[dict[str, Any]] = []
    for path in reversed(list_files(audit_dir)):
        for raw in reversed(complete_lines(path.read_bytes())):
            record = parse_line(raw)
            if record is not None:
                found.append(record)
                if len(found) == n:
                    return found[::-1]
    return found[::-1]
