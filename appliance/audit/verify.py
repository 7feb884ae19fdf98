"""Verifying the audit log: every file, and the chain between them, with each break named by file and line.

What verify tells apart: an edited record (its hash no longer matches the next record's prev), records or
whole files deleted (a gap in seq, told from retention's pruning by CHAIN), records out of order, lines that
are not records, and a torn last line (a writer died mid-write). The format: appliance.audit.format.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from appliance.audit.format import (
    CHAIN_NAME,
    GENESIS,
    AuditError,
    audit_lock,
    complete_lines,
    line_hash,
    list_files,
    parse_line,
    read_chain,
)


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
    with audit_lock(audit_dir, exclusive=False, create=False):
        # A snapshot under the lock: a writer appends whole lines, so these sizes end on a newline.
        files = [(path, path.stat().st_size) for path in list_files(audit_dir)]
        try:
            chain = read_chain(audit_dir)
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
    lines = complete_lines(data)
    for number, raw in enumerate(lines, start=1):
        record = parse_line(raw)
        if record is None:
            problem = "not valid JSON" if not _is_json(raw) else "not an audit record (no seq or prev)"
            report.problems.append(AuditProblem(name, number, problem))
            link.skipped += 1
            continue
        report.records += 1
        seq, hashed = int(record["seq"]), line_hash(raw)
        _check_link(link, record, name, number, report, pending)
        seen.add(seq)
        # A record out of order does not move the chain back: what follows is checked against the
        # furthest record so far, so two swapped lines are reported as two lines, not as all the rest.
        if seq > link.seq:
            link = _Link(seq, hashed, name, number)
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
