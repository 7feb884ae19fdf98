"""A full disk loses nothing: ingest, upload, backup, restore and the audit writer on a small file system that
fills up mid-way.

`run_disk_full_rounds(work, models_dir, rounds)`: the home (catalog, vectors, audit log, uploads), the backups and
a restore target live on a tmpfs of `size_mb` MiB (mounting it needs root; without root every round injects its
fault, and the report says so). Rounds take turns over the five operations; each draws one of three faults:

* full: a ballast file fills the file system until a random number of bytes is left, from none to what the
  operation took the last time it ran (the checks before a write meet this one);
* filling: with room for the operation and 3 MiB more, another writer fills the file system while it runs, in
  a random share of the time the operation took last time, so that the disk runs out at a random point of it,
  past the checks before its writes;
* injected: APPLIANCE_FAULT_DISK_FULL_AT=*:<n> (appliance.faults): ENOSPC from the n-th named write point on, n
  random, for the moments a real disk rarely hits (between a commit and the vectors, the backup's manifest,
  the audit line itself).

The operation runs in this process, as the server runs uploads and audit records; a reader opened before the
fault stands for the running server. While the disk is still full:
* the operation failed with DiskFull, whose message names a path and the space needed (or it completed);
* the reader finds, by a lexical and a hybrid search for its tag, every document the catalog holds;
* the audit log verifies (a record the disk had no room for is not there, torn or whole);
* the upload folder and the catalog agree (each file indexed with its very content, each upload's file
  there), and no hidden temporary is left;
* every backup folder has a manifest that verifies, and no partial one is left behind;
* a failed restore left its target as it was.
Then the space is freed: the index is checked as a fresh reader finds it (crash_harness.check_index), and the
same operation runs again and must complete. After the last round, a reindex equals a clean build.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance import faults
from appliance.audit.verify import verify_audit
from appliance.audit.writer import AuditLog
from appliance.backup.restore import restore_backup, verify_backup
from appliance.backup.snapshot import create_backup
from appliance.config import Settings
from appliance.errors import ApplianceError, DiskFull
from appliance.ingest.pipeline import ingest, reindex
from appliance.retrieve.search import Searcher
from appliance.uploads.store import store_upload
from scripts.reliability.crash_harness import (
    Corpus,
    check_index,
    document_tags,
    fresh_chroma,
    search_problems,
    snapshot,
)

OPERATIONS = ("ingest", "upload", "backup", "restore", "audit")
AUDIT_RECORDS = 120  # records the audit operation writes (what a busy minute of requests writes)
# ENOSPC from the n-th named write point on: n is drawn up to about the points an operation reaches.
INJECTED_POINTS = {"ingest": 8, "upload": 6, "backup": 3, "restore": 5, "audit": AUDIT_RECORDS}
OPERATION_TIMEOUT_S = 300.0  # an operation still running after this has hung on the full disk
_INJECTED_AT = re.compile(r"injected at (\w+)")


class Hung(RuntimeError):
    """An operation did not return: a write waits forever on the full disk. The suite stops there."""


@dataclass
class DiskFullRound:
    round: int
    operation: str
    fault: str  # full | filling | injected
    left_bytes: int | None  # full: what the ballast left free; filling: what was free when the filling began
    from_point: int | None  # injected: ENOSPC from this point on
    outcome: str  # "disk full" (DiskFull, as it should) | "completed" (the room sufficed) | what else it raised
    where: str  # the injected point that fired, else the path the error named
    message: str
    problems: list[str]
    seconds: float


@dataclass
class DiskFullReport:
    file_system: str
    rounds: list[DiskFullRound] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    final_documents: int = 0
    final_chunks: int = 0
    equals_clean_build: bool = False

    @property
    def round_problems(self) -> list[str]:
        return [f"round {r.round} ({r.operation}, {r.fault}): {p}" for r in self.rounds for p in r.problems]

    @property
    def ok(self) -> bool:
        return not self.problems and not self.round_problems and self.equals_clean_build

    @property
    def failed_rounds(self) -> int:
        """Rounds in which the disk really ran out under the operation (it raised DiskFull)."""
        return sum(1 for r in self.rounds if r.outcome == "disk full")

    def table(self) -> dict[str, dict[str, int]]:
        """operation -> {"full": n, "filling": n, "injected": n, "disk full": n, "completed": n}."""
        counts: dict[str, dict[str, int]] = {}
        for record in self.rounds:
            row = counts.setdefault(
                record.operation, {"full": 0, "filling": 0, "injected": 0, "disk full": 0, "completed": 0}
            )
            row[record.fault] += 1
            outcome = record.outcome if record.outcome in ("disk full", "completed") else "other"
            row[outcome] = row.get(outcome, 0) + 1
        return counts

    def points(self) -> dict[str, int]:
        """Where the injected faults fired, by point."""
        counts: dict[str, int] = {}
        for record in self.rounds:
            if record.fault == "injected" and record.outcome == "disk full":
                counts[record.where] = counts.get(record.where, 0) + 1
        return counts


# ------------------------------------------------------------------------------------- the small disk


@contextlib.contextmanager
def small_disk(mount_point: Path, size_mb: int) -> Iterator[bool]:
    """A tmpfs of `size_mb` MiB at `mount_point` (True), or a plain folder where it cannot be mounted (False)."""
    mount_point.mkdir(parents=True, exist_ok=True)
    mounted = os.geteuid() == 0 and (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(mount_point)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


def free_bytes(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def fill(disk: Path, leave: int) -> Path:
    """Fill the file system of `disk` with a ballast file until about `leave` bytes are free."""
    ballast = disk / "ballast"
    block = b"\0" * (1 << 20)
    with ballast.open("wb") as handle:
        while (excess := free_bytes(disk) - leave) > 0:
            try:
                handle.write(block[: min(len(block), excess)])
                handle.flush()
            except OSError:
                break
    return ballast


class Filler(threading.Thread):
    """Another writer that fills the file system of `disk` in about `seconds`, then holds it full."""

    def __init__(self, disk: Path, seconds: float) -> None:
        super().__init__(daemon=True)
        self.path = disk / "ballast"
        self.free = free_bytes(disk)
        self.seconds = seconds

    def run(self) -> None:
        block = b"\0" * (64 << 10)
        started, written = time.monotonic(), 0
        with self.path.open("wb") as handle:
            while True:
                share = 1.0 if self.seconds <= 0 else min(1.0, (time.monotonic() - started) / self.seconds)
                while written < share * self.free or share == 1.0:  # at full share: on until the disk is full
                    try:
                        handle.write(block)
                        handle.flush()
                    except OSError:
                        return
                    written += len(block)
                time.sleep(0.005)


# ------------------------------------------------------------------------------------- the lab


class Lab:
    """The appliance on the small disk, its documents, and the state each operation works on."""

    def __init__(self, work: Path, disk: Path, models_dir: Path, rng: random.Random) -> None:
        self.work = work
        self.disk = disk
        self.rng = rng
        self.corpus = Corpus(work / "plant", rng)
        self.settings = Settings(home=disk / "home", models_dir=models_dir)
        self.restored = Settings(home=disk / "restored", models_dir=models_dir)
        self.backups = disk / "backups"
        self.backups.mkdir(exist_ok=True)
        self.audit = AuditLog(self.settings)
        self.uploads: dict[str, bytes] = {}
        self.used = dict.fromkeys(OPERATIONS, 2 << 20)  # bytes each operation took when it last completed
        self.seconds = dict.fromkeys(OPERATIONS, 2.0)  # and how long it took

    # --- each operation: prepare (before the fault), then the call that may meet the full disk

    def prepare(self, operation: str, number: int) -> Callable[[int], None]:
        """The round's operation, made ready before the fault; called with the attempt (0: on the full disk,
        1: once the space is freed)."""
        if operation == "ingest":
            self.corpus.change()
            return lambda attempt: _discard(reindex(self.settings))
        if operation == "upload":
            replace = bool(self.uploads) and self.rng.random() < 0.5
            name = self.rng.choice(sorted(self.uploads)) if replace else f"upload-{number:03d}.md"
            tag = f"RLY-{self.corpus.next_tag:04d}"
            self.corpus.next_tag += 1
            data = self.corpus.text(tag, ".md").encode()
            return lambda attempt: self._upload(name, data)
        if operation == "backup":
            return lambda attempt: _discard(
                create_backup(self.settings, self.backups / f"backup-{number:03d}-{attempt}", wait_s=10.0)
            )
        if operation == "restore":
            source = self.latest_backup() or self._backup_now(number)
            shutil.rmtree(self.restored.home, ignore_errors=True)
            return lambda attempt: self._restore(source, attempt)
        return lambda attempt: self._audit_burst(number, attempt)

    def _upload(self, name: str, data: bytes) -> None:
        store_upload(self.settings, name, data, replace=(self.settings.upload_dir / name).exists())
        self.uploads[name] = data

    def _restore(self, source: Path, attempt: int) -> None:
        if attempt:  # the first attempt may have completed: the next one restores into an empty home again
            shutil.rmtree(self.restored.home, ignore_errors=True)
        restore_backup(self.restored, source)

    def _audit_burst(self, number: int, attempt: int) -> None:
        for i in range(AUDIT_RECORDS):
            audit_request(self.audit, f"round-{number}-{attempt}-{i}", i)

    def latest_backup(self) -> Path | None:
        complete = sorted(p for p in self.backups.iterdir() if not p.name.startswith(".") and p.is_dir())
        return complete[-1] if complete else None

    def _backup_now(self, number: int) -> Path:
        return create_backup(self.settings, self.backups / f"backup-{number:03d}-r", wait_s=10.0).path

    def after_retry(self, operation: str) -> list[str]:
        """Once the operation completed after the space was freed: what it made is whole (and old backups go)."""
        problems: list[str] = []
        if operation == "backup":
            newest = self.latest_backup()
            for old in sorted(p for p in self.backups.iterdir() if p != newest):
                shutil.rmtree(old)
        if operation == "restore":
            report = verify_audit(self.restored.audit_dir)
            if not report.ok:
                problems.append(f"the restored audit log does not verify: {report.problems[:2]}")
            shutil.rmtree(self.restored.home, ignore_errors=True)
        return problems

    # --- what must hold while the disk is still full

    def checks_while_full(self, reader: Searcher, restore_before: list[str] | None) -> list[str]:
        """`restore_before`: the restore target's entries before a restore that failed (None: no failed restore)."""
        problems: list[str] = []
        documents: dict[str, Any] = {}
        try:
            catalog = reader.index.catalog
            documents = {doc.path: doc for doc in catalog.documents()}
            indexed = [doc for doc in documents.values() if doc.status == "indexed"]
            tags, missing = document_tags(catalog, indexed)
            problems += missing
            problems += search_problems(reader, tags, set(documents))
        except Exception as exc:  # the running server could not answer: the first thing that must hold
            problems.append(f"the running reader failed: {type(exc).__name__}: {str(exc)[:300]}")
        audit = verify_audit(self.settings.audit_dir)
        if not audit.ok:
            problems.append(f"audit verify: {[f'{p.file}:{p.line}: {p.problem}' for p in audit.problems[:3]]}")
        problems += self._uploads_agree(documents)
        problems += self._backups_whole()
        if restore_before is not None and restore_before != _entries(self.restored.home):
            problems.append(f"the failed restore changed its target: {_entries(self.restored.home)}")
        return problems

    def _uploads_agree(self, documents: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        folder = self.settings.upload_dir
        entries = sorted(folder.iterdir()) if folder.is_dir() else []
        for path in entries:
            if path.name.startswith("."):
                problems.append(f"{path} left in the upload folder")
                continue
            row = documents.get(f"uploads/{path.name}")
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            if row is None or row.status != "indexed" or row.sha256 != sha:
                problems.append(f"{path} is in the upload folder, but the catalog does not hold this content")
        for shown in documents:
            if shown.startswith("uploads/") and not (folder / shown.split("/", 1)[1]).is_file():
                problems.append(f"{shown} is in the catalog without its file")
        return problems

    def _backups_whole(self) -> list[str]:
        problems: list[str] = []
        for path in sorted(self.backups.iterdir()):
            if path.name.startswith("."):
                problems.append(f"a partial backup was left behind: {path}")
                continue
            try:
                verify_backup(path)
            except ApplianceError as exc:
                problems.append(f"{path} looks like a backup and is not a whole one: {exc}")
        return problems


def audit_request(log: AuditLog, request_id: str, number: int) -> dict[str, Any]:
    """The record a search request writes."""
    return log.record(
        endpoint="search",
        status=200,
        request_id=request_id,
        principal="tok_desk",
        client="10.0.0.7",
        question=f"how is the gasket of pump P-{number} changed?",
        sources=[{"path": "plant/sop.md", "chunk_id": f"c{number}", "score": 0.5}],
        latency_ms={"total": 12.5},
    )


def _discard(_: object) -> None:
    return None


def _entries(home: Path) -> list[str]:
    """A home's entries, the locks a restore holds left out."""
    if not home.is_dir():
        return []
    return sorted(p.name for p in home.iterdir() if p.name not in ("index.lock", "chroma.owner"))


def run_in_time(
    call: Callable[[int], None], attempt: int, timeout_s: float = OPERATION_TIMEOUT_S
) -> BaseException | None:
    """Run `call`; the exception it raised, or None. Hung when it has not returned within timeout_s."""
    outcome: dict[str, BaseException | None] = {"error": None}

    def target() -> None:
        try:
            call(attempt)
        except BaseException as exc:  # reported to the caller, whatever it is
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise Hung(f"the operation has not returned after {timeout_s:.0f} s")
    return outcome["error"]


def classify(error: BaseException | None) -> tuple[str, str, str, list[str]]:
    """(outcome, where, message, problems) of what an operation did on the full disk."""
    if error is None:
        return "completed", "", "", []
    message = str(error)
    chain: list[str] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 10:  # the error and those it was raised from
        chain.append(str(current))
        current = current.__cause__ or current.__context__
    injected = _INJECTED_AT.search(" ".join(chain))
    where = injected.group(1) if injected else ""
    if not isinstance(error, DiskFull):
        return type(error).__name__, where, message[:300], [f"not DiskFull: {type(error).__name__}: {message[:300]}"]
    names_path = message.startswith("/") or f": {error.path}:" in message
    if not names_path or "needs" not in message or "free there" not in message:
        return (
            "disk full",
            where,
            message,
            [f"the message does not name the path, the space needed, what is free: {message}"],
        )
    return "disk full", where or error.path, message, []


def run_disk_full_rounds(
    work: Path,
    models_dir: Path,
    rounds: int,
    *,
    seed: int = 42,
    size_mb: int = 16,
    initial_documents: int = 10,
    fault_order: Sequence[str] | None = None,
    log: Callable[[str], None] = print,
) -> DiskFullReport:
    """`rounds` rounds over OPERATIONS in turn; each round's fault drawn at random, or taken in turn from
    `fault_order` (full, filling, injected). Each operation runs once first, with room, to measure what it takes."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    disk = work / "disk"
    with small_disk(disk, size_mb) as mounted:
        report = DiskFullReport(f"tmpfs of {size_mb} MiB" if mounted else "none (not root): every fault injected")
        lab = Lab(work, disk, models_dir, rng)
        for _ in range(initial_documents):
            lab.corpus.add()
        ingest(lab.settings, [lab.corpus.root])
        _measure(lab)
        log(f"disk full: {initial_documents} documents indexed on {report.file_system}; took {lab.used} bytes")
        try:
            for number in range(1, rounds + 1):
                operation = OPERATIONS[(number - 1) % len(OPERATIONS)]
                if not mounted:
                    fault = "injected"
                elif fault_order:
                    fault = fault_order[(number - 1) % len(fault_order)]
                else:
                    fault = rng.choice(["full", "filling", "injected"])
                record = _round(lab, number, operation, fault, rng)
                report.rounds.append(record)
                shown = record.where or record.message[:80]
                log(
                    f"disk full: round {number} {operation} ({record.fault}"
                    + (f", {record.left_bytes} bytes free" if record.left_bytes is not None else "")
                    + (f", from point {record.from_point}" if record.from_point is not None else "")
                    + f"): {record.outcome} {shown} in {record.seconds:.1f} s"
                    + (f"; PROBLEMS {record.problems}" if record.problems else "")
                )
        except Hung as exc:
            report.problems.append(f"round {len(report.rounds) + 1}: {exc}")
            return report
        _final(lab, report, models_dir)
    return report


def _measure(lab: Lab) -> None:
    """Run each operation once with room: the space and time it takes draw the first faults."""
    for operation in OPERATIONS:
        call = lab.prepare(operation, 0)
        before, started = free_bytes(lab.disk), time.monotonic()
        run_in_time(call, 1)
        lab.used[operation] = max(64 << 10, before - free_bytes(lab.disk))
        lab.seconds[operation] = time.monotonic() - started
        lab.after_retry(operation)


def _round(lab: Lab, number: int, operation: str, fault: str, rng: random.Random) -> DiskFullRound:
    started = time.monotonic()
    call = lab.prepare(operation, number)
    restore_before = _entries(lab.restored.home)
    reader = Searcher(lab.settings)  # the running server: its stores opened (by a search) before the disk fills
    reader.search("pump", k=1, mode="hybrid")
    left = rng.randint(0, lab.used[operation]) if fault == "full" else None
    point = rng.randint(1, INJECTED_POINTS[operation]) if fault == "injected" else None
    filler = None
    try:
        if left is not None:
            fill(lab.disk, left)
        elif fault == "filling":
            fill(lab.disk, lab.used[operation] + (3 << 20))
            filler = Filler(lab.disk, rng.uniform(0.0, 0.8 * lab.seconds[operation]))
            left = filler.free
            filler.start()
        else:
            os.environ[faults.DISK_FULL_ENV] = f"*:{point}"
            faults.reset()
        error = run_in_time(call, 0)
        if filler is not None:
            filler.join(OPERATION_TIMEOUT_S)  # the operation may have finished first: the disk is full now
        outcome, where, message, problems = classify(error)
        failed_restore = operation == "restore" and error is not None
        problems += lab.checks_while_full(reader, restore_before if failed_restore else None)
    finally:
        os.environ.pop(faults.DISK_FULL_ENV, None)
        faults.reset()
        (lab.disk / "ballast").unlink(missing_ok=True)
        reader.close()
    _, found = check_index(lab.settings)
    problems += [f"after the space was freed: {problem}" for problem in found]
    before, retry_started = free_bytes(lab.disk), time.monotonic()
    retried = run_in_time(call, 1)
    if retried is not None:
        problems.append(f"the next run, with space freed, failed: {type(retried).__name__}: {retried}")
    else:
        lab.used[operation] = max(64 << 10, before - free_bytes(lab.disk))
        lab.seconds[operation] = time.monotonic() - retry_started
        problems += lab.after_retry(operation)
    fresh_chroma()
    return DiskFullRound(
        number,
        operation,
        fault,
        left,
        point,
        outcome,
        where,
        message,
        problems,
        time.monotonic() - started,
    )


def _final(lab: Lab, report: DiskFullReport, models_dir: Path) -> None:
    """One more reindex; it must equal a clean build of the same folders."""
    reindex(lab.settings)
    figures, problems = check_index(lab.settings, allow_interrupted=False)
    report.problems += [f"after the final reindex: {problem}" for problem in problems]
    report.final_documents, report.final_chunks = figures["documents"], figures["chunks"]
    sources = lab.work / "clean-sources"
    shutil.rmtree(sources, ignore_errors=True)
    shutil.copytree(lab.corpus.root, sources / lab.corpus.root.name)
    folders = [sources / lab.corpus.root.name]
    if lab.settings.upload_dir.is_dir():
        shutil.copytree(lab.settings.upload_dir, sources / "uploads")
        folders.append(sources / "uploads")
    clean = Settings(home=lab.work / "clean-home", models_dir=models_dir)
    shutil.rmtree(clean.home, ignore_errors=True)
    ingest(clean, folders)
    report.equals_clean_build = snapshot(lab.settings) == snapshot(clean)
    if not report.equals_clean_build:
        report.problems.append("the final state differs from a clean build of the same folders")
