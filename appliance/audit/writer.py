"""Appending audit records: one line per request, chained to the last one, in the current file.

Appends are serialized by an flock on ``audit.lock`` (threads and processes alike): read the chain head,
write the line with a single ``write()`` on an O_APPEND descriptor, fsync, release. A full disk undoes
the write (the file is cut back to where it ended) and raises DiskFull naming the file and the record's
size, so the chain stays whole and the next record, once there is room, follows the last one written.
Rotation starts a new file when the current one reaches ``audit.max_file_bytes`` or
``audit.max_file_age_days``, or ends in a torn line; the chain continues across files, and retention
(appliance.audit.retention) runs at every rotation. The format: appliance.audit.format.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from appliance.audit.fields import record_body
from appliance.audit.format import (
    GENESIS,
    STAMP,
    AuditError,
    audit_lock,
    complete_lines,
    encode_line,
    file_created,
    iso_time,
    line_hash,
    list_files,
    parse_line,
    read_chain,
)
from appliance.audit.retention import prune_files
from appliance.config import Settings
from appliance.durable import disk_full, fsync_dir, is_disk_full
from appliance.errors import DiskFull
from appliance.faults import crash_point


class AuditLog:
    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.dir = settings.audit_dir
        self.config = settings.audit
        self._clock = clock
        self._lock = threading.Lock()  # flock excludes processes; this one keeps threads from queueing on it

    def record(
        self,
        *,
        endpoint: str,
        status: int,
        request_id: str,
        principal: str | None,
        client: str | None,
        question: str | None = None,
        sources: Sequence[Mapping[str, Any]] = (),
        refused: bool | None = None,
        latency_ms: Mapping[str, float] | None = None,
        models: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
        comment: str | None = None,
    ) -> dict[str, Any]:
        """Append one record and return it as written (with time, seq and prev); the fields' rules:
        appliance.audit.fields."""
        body = record_body(
            endpoint=endpoint,
            status=status,
            request_id=request_id,
            principal=principal,
            client=client,
            question=question,
            sources=sources,
            refused=refused,
            latency_ms=latency_ms,
            models=models,
            extra=extra,
            comment=comment,
            preview_chars=self.config.question_preview_chars,
        )
        try:
            with self._lock, audit_lock(self.dir, exclusive=True, create=True):
                return self._append(body)
        except OSError as exc:  # the folder or its lock file could not be made: nothing was written
            if is_disk_full(exc):
                raise _full(self.dir, None) from exc
            raise

    def prune(self) -> list[str]:
        """Apply retention now (it also runs at every rotation); return the file names deleted."""
        with self._lock, audit_lock(self.dir, exclusive=True, create=True):
            return prune_files(self.dir, list_files(self.dir), self._clock(), self.config.retention_days)

    def _append(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self._clock()
        files = list_files(self.dir)
        seq, prev = _chain_head(self.dir, files)
        rotated = False
        if not files or self._must_rotate(files[-1], now):
            files.append(self.dir / _new_file_name(now, files[-1].name if files else None))
            rotated = True
        record = {"seq": seq + 1, "time": iso_time(now), "prev": prev, **body}
        _append_line(files[-1], encode_line(record), new_file=rotated)
        if rotated:
            # Retention is housekeeping: the record is already written, never fail the request over it.
            with contextlib.suppress(OSError, AuditError, DiskFull):
                prune_files(self.dir, files, self._clock(), self.config.retention_days)
        return record

    def _must_rotate(self, current: Path, now: float) -> bool:
        data_size = current.stat().st_size
        if data_size and _ends_torn(current):
            return True  # a writer died mid-line: leave the fragment where it is, go on in a new file
        if data_size >= self.config.max_file_bytes:
            return True
        return now - file_created(current) >= self.config.max_file_age_days * 86400


def _append_line(path: Path, line: bytes, new_file: bool) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if new_file else 0)
        fd = os.open(path, flags, 0o600)
        try:
            _write_line(fd, path, line, new_file)
        finally:
            os.close(fd)
        if new_file:
            fsync_dir(path.parent)
    except OSError as exc:
        if is_disk_full(exc):
            raise _full(path, len(line)) from exc
        raise


def _write_line(fd: int, path: Path, line: bytes, new_file: bool) -> None:
    end = os.fstat(fd).st_size  # under the exclusive lock: nobody else appends meanwhile
    try:
        crash_point("audit_append", path)
        written = os.write(fd, line)  # one write per line: readers never see two records interleaved
        if written != len(line):  # the disk filled up within the line
            raise OSError(errno.ENOSPC, f"short write ({written} of {len(line)} bytes)", str(path))
        os.fsync(fd)
    except OSError:
        # Take the line back: no torn fragment, no empty new file (cutting and unlinking need no space).
        os.ftruncate(fd, end)
        if new_file:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        raise


def _full(path: Path, size: int | None) -> DiskFull:
    return disk_full(path, size, "an audit record (not written; the chain is intact)")


def _new_file_name(now: float, newest: str | None) -> str:
    """audit-<UTC now>.jsonl, or one second after the newest file, so names always sort in chain order."""
    stamp = time.gmtime(now)
    name = f"audit-{time.strftime(STAMP, stamp)}.jsonl"
    if newest is not None and name <= newest:
        name = f"audit-{time.strftime(STAMP, time.gmtime(file_created(Path(newest)) + 1))}.jsonl"
    return name


def _chain_head(audit_dir: Path, files: list[Path]) -> tuple[int, str]:
    """(seq, hash) of the last complete record: in the files, newest first, else in CHAIN, else genesis."""
    for path in reversed(files):
        last = _last_complete_line(path)
        if last is not None:
            return _seq_after(path, last), line_hash(last)
    chain = read_chain(audit_dir)
    if chain:
        return int(chain[-1]["last_seq"]), str(chain[-1]["last_hash"])
    return 0, GENESIS


def _seq_after(path: Path, last: bytes) -> int:
    """The seq of the last line; if that line is damaged, count lines from the last good record."""
    record = parse_line(last)
    if record is not None:
        return int(record["seq"])
    seq = 0
    for raw in complete_lines(path.read_bytes()):
        parsed = parse_line(raw)
        seq = int(parsed["seq"]) if parsed is not None else seq + 1
    return seq


def _last_complete_line(path: Path, block: int = 65536) -> bytes | None:
    """The last newline-terminated line of a file (newline included), reading only its tail."""
    with path.open("rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        buffer = b""
        pos = end
        while pos > 0:
            step = min(block, pos)
            pos -= step
            handle.seek(pos)
            buffer = handle.read(step) + buffer
            stop = buffer.rfind(b"\n")
            if stop < 0:
                continue
            start = buffer.rfind(b"\n", 0, stop) + 1
            if start > 0 or pos == 0:
                return buffer[start : stop + 1]
    return None


def _ends_torn(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) != b"\n"
