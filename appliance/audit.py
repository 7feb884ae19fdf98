"""The audit log: one JSON Lines record per API request, hash-chained, rotated and pruned.

Files are ``settings.audit_dir/audit-YYYYMMDDTHHMMSSZ.jsonl`` (UTC creation time; the newest is the
current one). Every record carries ``seq`` (1, 2, 3… across all files) and ``prev``, the sha256 hex of
the previous record's exact line bytes, newline included (64 zeros before the first record ever), so
``sed -n 3p FILE | sha256sum`` is the ``prev`` of line 4. An edited, deleted or reordered record
breaks the chain and `verify_audit` names the file and line.

What a record holds, and never more: a question preview (at most ``audit.question_preview_chars``,
≤ 80 characters) plus the sha256 of the full question, the sources' path/chunk_id/score, status,
latencies, model names and a few small scalars. Never the answer, chunk text, the full question or a
token secret: `record` refuses values that could carry them.

Appends are serialized by an flock on ``audit.lock`` (threads and processes alike): read the chain
head, write the line with a single ``write()`` on an O_APPEND descriptor, fsync, release.
Rotation starts a new file when the current one reaches ``audit.max_file_bytes`` or
``audit.max_file_age_days``; the chain continues across files. Retention deletes the oldest rotated
files whose last write is older than ``audit.retention_days`` and notes each one (name, seqs, last
hash) in ``audit/CHAIN`` first, so `verify_audit` can tell pruning from a file deleted by hand.

Limits, by design of a hash chain: the newest record can be altered or removed without a trace, and
someone who can write here can also rewrite CHAIN; copy the head hash (`appliance audit verify`)
somewhere else to anchor it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import numbers
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from appliance.config import Settings
from appliance.errors import ApplianceError

GENESIS = "0" * 64
LOCK_NAME = "audit.lock"
CHAIN_NAME = "CHAIN"
FILE_RE = re.compile(r"audit-(\d{8}T\d{6}Z)\.jsonl")
_STAMP = "%Y%m%dT%H%M%SZ"
_HASH_RE = re.compile(r"[0-9a-f]{64}")
# A token secret (see appliance.server.auth) must never reach the log, whatever field it hides in:
# its random part is masked (the replacement is never longer, so a preview stays within its limit).
_SECRET_RE = re.compile(r"apl_([0-9a-f]{8})_[A-Za-z0-9_-]+")
MAX_EXTRA_KEYS = 32
MAX_EXTRA_STRING = 200
MAX_FIELD_CHARS = 512


class AuditError(ApplianceError):
    """A record was refused (a field that could carry answer or chunk text) or could not be written."""


@dataclass
class AuditProblem:
    file: str
    line: int
    problem: str


@dataclass
class AuditReport:
    ok: bool
    files: int
    records: int
    problems: list[AuditProblem]
    torn_last_line: bool
    notes: list[str] = field(default_factory=list)  # e.g. what retention pruned
    last_seq: int = 0  # the chain head: copy it elsewhere to anchor the log
    last_hash: str = GENESIS

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------- writing


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
        """Append one record and return it as written (with time, seq and prev).

        `comment` (an operator's remark on an answer) is kept like the question: a preview and its sha256,
        and only on records that have one, so every other record keeps its shape.
        """
        body = {
            "request_id": _text("request_id", request_id),
            "principal": _optional_text("principal", principal),
            "client": _optional_text("client", client),
            "endpoint": _text("endpoint", endpoint),
            "status": _int("status", status),
            "question_preview": None if question is None else _preview(question, self.config.question_preview_chars),
            "question_sha256": None if question is None else _sha256(question.encode("utf-8", "surrogatepass")),
            "sources": [_source(source) for source in sources],
            "refused": None if refused is None else bool(refused),
            "latency_ms": _latencies(latency_ms),
            "models": _models(models),
            "extra": _extra(extra),
        }
        if comment is not None:
            body["comment_preview"] = _preview(comment, self.config.question_preview_chars)
            body["comment_sha256"] = _sha256(comment.encode("utf-8", "surrogatepass"))
        with self._lock, _flock(self.dir, exclusive=True, create=True):
            return self._append(body)

    def prune(self) -> list[str]:
        """Apply retention now (it also runs at every rotation); return the file names deleted."""
        with self._lock, _flock(self.dir, exclusive=True, create=True):
            return self._prune(_list_files(self.dir))

    def _append(self, body: dict[str, Any]) -> dict[str, Any]:
        now = self._clock()
        files = _list_files(self.dir)
        seq, prev = _chain_head(self.dir, files)
        rotated = False
        if not files or self._must_rotate(files[-1], now):
            files.append(self.dir / _new_file_name(now, files[-1].name if files else None))
            rotated = True
        record = {"seq": seq + 1, "time": _iso(now), "prev": prev, **body}
        line = (json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n").encode("ascii")
        _append_line(files[-1], line, new_file=rotated)
        if rotated:
            # Retention is housekeeping: the record is already written, never fail the request over it.
            with contextlib.suppress(OSError, AuditError):
                self._prune(files)
        return record

    def _must_rotate(self, current: Path, now: float) -> bool:
        data_size = current.stat().st_size
        if data_size and _ends_torn(current):
            return True  # a writer died mid-line: leave the fragment where it is, go on in a new file
        if data_size >= self.config.max_file_bytes:
            return True
        return now - _file_created(current) >= self.config.max_file_age_days * 86400

    def _prune(self, files: list[Path]) -> list[str]:
        """Delete the oldest rotated files past retention, oldest first, so the rest stays contiguous."""
        cutoff = self._clock() - self.config.retention_days * 86400
        chain = _read_chain(self.dir)
        deleted: list[str] = []
        for path in files[:-1]:  # never the current file
            if path.stat().st_mtime >= cutoff:
                break
            entry = _summarize(path, chain, self._clock())
            chain = [item for item in chain if item["file"] != path.name] + [entry]
            _write_chain(self.dir, chain)  # note it first: a crash now leaves a noted file, not a silent gap
            path.unlink()
            deleted.append(path.name)
        if deleted:
            _fsync_dir(self.dir)
        return deleted


def _append_line(path: Path, line: bytes, new_file: bool) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if new_file else 0)
    fd = os.open(path, flags, 0o600)
    try:
        written = os.write(fd, line)  # one write per line: readers never see two records interleaved
        if written != len(line):
            raise AuditError(f"short write to {path} ({written} of {len(line)} bytes): is the disk full?")
        os.fsync(fd)
    finally:
        os.close(fd)
    if new_file:
        _fsync_dir(path.parent)


def _new_file_name(now: float, newest: str | None) -> str:
    """audit-<UTC now>.jsonl, or one second after the newest file, so names always sort in chain order."""
    stamp = time.gmtime(now)
    name = f"audit-{time.strftime(_STAMP, stamp)}.jsonl"
    if newest is not None and name <= newest:
        name = f"audit-{time.strftime(_STAMP, time.gmtime(_file_created(Path(newest)) + 1))}.jsonl"
    return name


def _file_created(path: Path) -> float:
    match = FILE_RE.fullmatch(path.name)
    if match is None:
        return 0.0
    return datetime.strptime(match.group(1), _STAMP).replace(tzinfo=UTC).timestamp()


def _chain_head(audit_dir: Path, files: list[Path]) -> tuple[int, str]:
    """(seq, hash) of the last complete record: in the files, newest first, else in CHAIN, else genesis."""
    for path in reversed(files):
        last = _last_complete_line(path)
        if last is not None:
            return _seq_after(path, last), _sha256(last)
    chain = _read_chain(audit_dir)
    if chain:
        return int(chain[-1]["last_seq"]), str(chain[-1]["last_hash"])
    return 0, GENESIS


def _seq_after(path: Path, last: bytes) -> int:
    """The seq of the last line; if that line is damaged, count lines from the last good record."""
    record = _parse(last)
    if record is not None:
        return int(record["seq"])
    seq = 0
    for raw in _complete_lines(path.read_bytes()):
        parsed = _parse(raw)
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


def _summarize(path: Path, chain: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """The CHAIN entry of a file about to be pruned: enough to check the next file's first record."""
    records = [(raw, _parse(raw)) for raw in _complete_lines(path.read_bytes())]
    valid = [(raw, rec) for raw, rec in records if rec is not None]
    before_seq, before_hash = (chain[-1]["last_seq"], chain[-1]["last_hash"]) if chain else (0, GENESIS)
    return {
        "file": path.name,
        "records": len(records),
        "first_seq": valid[0][1]["seq"] if valid else None,
        "first_prev": valid[0][1]["prev"] if valid else None,
        "last_seq": int(valid[-1][1]["seq"]) if valid else before_seq,
        "last_hash": _sha256(records[-1][0]) if records else before_hash,
        "pruned_at": _iso(now),
    }


def _read_chain(audit_dir: Path) -> list[dict[str, Any]]:
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


def _chain_entry_ok(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("file"), str)
        and isinstance(entry.get("last_seq"), int)
        and isinstance(entry.get("last_hash"), str)
        and _HASH_RE.fullmatch(entry["last_hash"]) is not None
    )


def _write_chain(audit_dir: Path, chain: list[dict[str, Any]]) -> None:
    temporary = audit_dir / f".{CHAIN_NAME}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (json.dumps({"version": 1, "pruned": chain}, indent=1) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, audit_dir / CHAIN_NAME)
    _fsync_dir(audit_dir)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _flock(audit_dir: Path, exclusive: bool, create: bool) -> Iterator[None]:
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


# ---------------------------------------------------------------------------------------- field checks


def _text(name: str, value: str) -> str:
    """A short string field; request-derived values are cut, not refused, so a request is always logged."""
    if not isinstance(value, str):
        raise AuditError(f"audit field {name} must be a string, not {type(value).__name__}")
    return _redact(value[:MAX_FIELD_CHARS])


def _redact(value: str) -> str:
    return _SECRET_RE.sub(r"apl_\1_*", value)


def _preview(question: str, chars: int) -> str:
    if not isinstance(question, str):
        raise AuditError(f"audit field question must be a string, not {type(question).__name__}")
    return _redact(question[:chars])


def _optional_text(name: str, value: str | None) -> str | None:
    return None if value is None else _text(name, value)


def _int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise AuditError(f"audit field {name} must be an integer, not {type(value).__name__}")
    return int(value)


def _number(name: str, value: Any) -> float | int:
    """A finite number as a plain int or float (numpy scalars from retrieval included)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise AuditError(f"audit field {name} must be a finite number, not {value!r:.40}")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def _source(source: Mapping[str, Any]) -> dict[str, Any]:
    """path, chunk_id and score only: whatever else a hit carries (its text) stays out."""
    path, chunk_id, score = source.get("path"), source.get("chunk_id"), source.get("score")
    return {
        "path": None if path is None else _text("sources.path", str(path)),
        "chunk_id": None if chunk_id is None else _text("sources.chunk_id", str(chunk_id)),
        "score": None if score is None else _number("sources.score", score),
    }


def _latencies(latency_ms: Mapping[str, float] | None) -> dict[str, float | int] | None:
    if latency_ms is None:
        return None
    if isinstance(latency_ms, numbers.Real):  # a bare number is the whole request's time
        return {"total": _number("latency_ms", latency_ms)}
    if not isinstance(latency_ms, Mapping):
        raise AuditError(f"audit field latency_ms must map stage names to milliseconds, not {latency_ms!r:.40}")
    return {_text("latency_ms key", key): _number(f"latency_ms.{key}", value) for key, value in latency_ms.items()}


def _models(models: Mapping[str, str] | None) -> dict[str, str | None] | None:
    """Model names by role; a role without a model (no reranker, no generator yet) is null."""
    if models is None:
        return None
    return {
        _text("models key", key): None if value is None else _text(f"models.{key}", value)
        for key, value in models.items()
    }


def _extra(extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Small scalars only, so an answer or a chunk can never slip in through here."""
    if extra is None:
        return None
    if len(extra) > MAX_EXTRA_KEYS:
        raise AuditError(f"audit extra has {len(extra)} keys; at most {MAX_EXTRA_KEYS}")
    checked: dict[str, Any] = {}
    for key, value in extra.items():
        if not isinstance(key, str) or len(key) > 64:
            raise AuditError(f"audit extra key {key!r:.70} must be a string of at most 64 characters")
        if value is None or isinstance(value, bool):
            checked[key] = value
        elif isinstance(value, numbers.Real):
            checked[key] = _number(f"extra.{key}", value)
        elif isinstance(value, str):
            if len(value) > MAX_EXTRA_STRING:
                raise AuditError(
                    f"audit extra.{key} is a {len(value)}-character string; at most {MAX_EXTRA_STRING} "
                    "(answer or chunk text never goes into the audit log)"
                )
            checked[key] = _redact(value)
        else:
            raise AuditError(
                f"audit extra.{key} is a {type(value).__name__}; only null, booleans, numbers and short strings"
            )
    return checked


# ----------------------------------------------------------------------------------- reading, verifying


def _list_files(audit_dir: Path) -> list[Path]:
    if not audit_dir.is_dir():
        return []
    return sorted(path for path in audit_dir.iterdir() if FILE_RE.fullmatch(path.name))


def _complete_lines(data: bytes) -> list[bytes]:
    """Newline-terminated lines, newline included; a trailing fragment without newline is left out."""
    lines = data.split(b"\n")[:-1]
    return [line + b"\n" for line in lines]


def _parse(raw: bytes) -> dict[str, Any] | None:
    """The record on a line, or None if the line is not one (invalid JSON, no seq/prev)."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    seq, prev = record.get("seq"), record.get("prev")
    if isinstance(seq, bool) or not isinstance(seq, int) or not isinstance(prev, str) or not _HASH_RE.fullmatch(prev):
        return None
    return record


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Link:
    """The last good record seen, to check the next one against."""

    seq: int
    hash: str
    file: str
    line: int
    skipped: int = 0  # lines since then that were not records (already reported)


def verify_audit(audit_dir: Path) -> AuditReport:
    """Check every file and the chain between them; report each break with its file and line."""
    with _flock(audit_dir, exclusive=False, create=False):
        # A snapshot under the lock: a writer appends whole lines, so these sizes end on a newline.
        files = [(path, path.stat().st_size) for path in _list_files(audit_dir)]
        try:
            chain = _read_chain(audit_dir)
            chain_error = None
        except AuditError as exc:
            chain, chain_error = [], str(exc)
    report = AuditReport(ok=True, files=len(files), records=0, problems=[], torn_last_line=False)
    if chain_error:
        report.problems.append(AuditProblem(CHAIN_NAME, 0, chain_error))
    link = _start_link(chain, {path.name for path, _ in files}, report)
    seen: set[int] = set()
    pending: list[tuple[_Link, int, str, int]] = []  # gaps, classified once every seq is known
    for index, (path, size) in enumerate(files):
        try:
            with path.open("rb") as handle:
                data = handle.read(size)
        except FileNotFoundError:
            report.problems.append(AuditProblem(path.name, 0, "file vanished during verify (pruned?): run it again"))
            continue
        newest = index == len(files) - 1
        link = _verify_file(path.name, data, link, newest, report, seen, pending)
    for before, seq, file, line in pending:
        report.problems.append(AuditProblem(file, line, _gap_message(before, seq, seen)))
    order = {name: index for index, name in enumerate(path.name for path, _ in files)}
    report.problems.sort(key=lambda problem: (order.get(problem.file, -1), problem.line))
    report.last_seq, report.last_hash = link.seq, link.hash
    report.ok = not report.problems
    return report


def _start_link(chain: list[dict[str, Any]], present: set[str], report: AuditReport) -> _Link:
    """Where the first remaining record must attach: genesis, or the end of what retention pruned."""
    link = _Link(0, GENESIS, "the start of the chain (64 zeros)", 0)
    pruned = [entry for entry in chain if entry.get("file") not in present]  # a noted file still here: not gone
    for entry in pruned:
        if entry.get("first_seq") is not None and (
            entry["first_seq"] != link.seq + 1 or entry.get("first_prev") != link.hash
        ):
            report.problems.append(
                AuditProblem(CHAIN_NAME, 0, f"pruned file {entry.get('file')} does not follow {link.file}")
            )
        label = f"the last record of {entry.get('file')} (pruned)"
        link = _Link(int(entry["last_seq"]), str(entry["last_hash"]), label, 0)
    if pruned:
        count = sum(int(entry.get("records", 0)) for entry in pruned)
        report.notes.append(
            f"{len(pruned)} file(s) with {count} record(s) up to seq {link.seq} were pruned by retention "
            f"(noted in {CHAIN_NAME}); the chain is checked from there"
        )
    return link


def _verify_file(
    name: str,
    data: bytes,
    link: _Link,
    newest: bool,
    report: AuditReport,
    seen: set[int],
    pending: list[tuple[_Link, int, str, int]],
) -> _Link:
    lines = _complete_lines(data)
    for number, raw in enumerate(lines, start=1):
        record = _parse(raw)
        if record is None:
            problem = "not valid JSON" if not _is_json(raw) else "not an audit record (no seq or prev)"
            report.problems.append(AuditProblem(name, number, problem))
            link.skipped += 1
            continue
        report.records += 1
        seq, line_hash = int(record["seq"]), _sha256(raw)
        _check_link(link, record, name, number, report, pending)
        seen.add(seq)
        # A record out of order does not move the chain back: what follows is checked against the
        # furthest record so far, so two swapped lines are reported as two lines, not as all the rest.
        if seq > link.seq:
            link = _Link(seq, line_hash, name, number)
    if not data.endswith(b"\n") and data:
        where = len(lines) + 1
        if newest:
            report.torn_last_line = True
            report.problems.append(
                AuditProblem(name, where, "torn last line: a partial record without newline (a writer died mid-write)")
            )
        else:
            report.problems.append(
                AuditProblem(name, where, "torn line at the end of a rotated file (a writer died mid-write)")
            )
    return link


def _check_link(
    link: _Link,
    record: dict[str, Any],
    name: str,
    number: int,
    report: AuditReport,
    pending: list[tuple[_Link, int, str, int]],
) -> None:
    seq, prev = int(record["seq"]), str(record["prev"])
    step = seq - link.seq
    if link.skipped:
        # Lines between were not records: this one may follow them (replaced records) or the last good one.
        if not 1 <= step <= link.skipped + 1:
            pending.append((link, seq, name, number))
        elif step == 1 and prev != link.hash:
            report.problems.append(AuditProblem(name, number, f"prev does not match the record at {_at(link)}"))
        return
    if step == 1:
        if prev != link.hash:
            where = (link.file, link.line) if link.line else (name, number)
            report.problems.append(
                AuditProblem(
                    *where,
                    f"record edited: its hash no longer matches the prev of the next record ({name} line {number})"
                    if link.line
                    else f"prev does not match {link.file}: this record was edited",
                )
            )
        return
    pending.append((link, seq, name, number))


def _gap_message(before: _Link, seq: int, seen: set[int]) -> str:
    if seq <= before.seq:
        return f"out of order: seq {seq} comes after seq {before.seq} ({_at(before)})"
    missing = range(before.seq + 1, seq)
    if all(number in seen for number in missing):
        return f"out of order: seq {seq} follows seq {before.seq} ({_at(before)}); the seqs between are elsewhere"
    span = f"seq {missing[0]}" if len(missing) == 1 else f"seqs {missing[0]}..{missing[-1]}"
    if before.line == 0 and before.seq == 0:
        return f"{span} missing: the log starts at seq {seq} (oldest records deleted, not by retention)"
    if before.line == 0:
        return f"{span} missing after {before.file}"
    return f"{span} missing between {_at(before)} and here (records or a whole file deleted)"


def _at(link: _Link) -> str:
    return f"{link.file} line {link.line}" if link.line else link.file


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True


def read_records(audit_dir: Path, since: str | None = None, marker: bytes | None = None) -> Iterator[dict[str, Any]]:
    """Every record, oldest first, with `time` at or after `since` (an ISO time as records write it).

    Files whose successor was created before `since` are skipped unread (names are creation times);
    `marker`, when given, must occur in a line's bytes before it is parsed: a cheap filter over a
    large log (e.g. b'"endpoint":"ask"').
    """
    files = _list_files(audit_dir)
    cutoff = _parse_iso(since) if since else None
    for index, path in enumerate(files):
        if cutoff is not None and index + 1 < len(files) and _file_created(files[index + 1]) < cutoff:
            continue  # every record of this file was written before the next file began
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # pruned meanwhile
            continue
        for raw in _complete_lines(data):
            if marker is not None and marker not in raw:
                continue
            record = _parse(raw)
            if record is not None and (since is None or str(record.get("time", "")) >= since):
                yield record


def find_record(audit_dir: Path, request_id: str, endpoints: Sequence[str]) -> dict[str, Any] | None:
    """The newest record of `request_id` on one of `endpoints`, reading from the newest file back."""
    needle = json.dumps({"request_id": request_id}, ensure_ascii=True, separators=(",", ":"))[1:-1].encode("ascii")
    for path in reversed(_list_files(audit_dir)):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        if needle not in data:
            continue
        for raw in reversed(_complete_lines(data)):
            if needle in raw:
                record = _parse(raw)
                if (
                    record is not None
                    and record.get("request_id") == request_id
                    and record.get("endpoint") in endpoints
                ):
                    return record
    return None


def _parse_iso(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def iso_time(timestamp: float) -> str:
    """A time as records write it (UTC, milliseconds, Z): records compare with it as strings."""
    return _iso(timestamp)


def copy_audit_log(audit_dir: Path, dest: Path) -> list[Path]:
    """Copy the log (its files and CHAIN) into `dest` as one consistent snapshot: under the shared lock no
    record is appended meanwhile (writers wait a moment, nobody is refused). The files copied, in `dest`."""
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    copied: list[Path] = []
    with _flock(audit_dir, exclusive=False, create=False):
        names = [path.name for path in _list_files(audit_dir)]
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
    for path in reversed(_list_files(audit_dir)):
        for raw in reversed(_complete_lines(path.read_bytes())):
            record = _parse(raw)
            if record is not None:
                found.append(record)
                if len(found) == n:
                    return found[::-1]
    return found[::-1]
