"""Crash consistency: SIGKILL `appliance reindex` at random moments, and `appliance serve` mid-request.

`run_crash_rounds(work, models_dir, kills)`: a generated corpus is ingested, then each round changes
it (adds, edits, moves, deletes), starts `appliance reindex` and kills it with SIGKILL after a random
delay — anywhere: while Python imports, while it embeds, between or inside the writes to Chroma and
SQLite. After every kill the index is checked as a reader would find it:

* the catalog agrees with itself: FTS5 integrity, each document's chunk rows = its chunk count, no
  (document, position) twice, no id twice in Chroma;
* catalog ↔ FTS5 ↔ Chroma agree (`Index.check`, what `appliance status --json` reports as "consistent"),
  or the kill is flagged as an interrupted write that the next reindex repairs first;
* every document in the catalog is found by a lexical and a hybrid search for its own tag, and no hit
  names a document the catalog does not hold; no chunk id twice in a result.

The next round's reindex runs on top of the wreck (repair, then the round's own changes). After the
last round one reindex runs to the end; its state must equal a clean build of the same folder from
scratch: the same documents with the same chunk ids, and Chroma's ids = the catalog's.

`run_serve_kills(work, models_dir, kills)`: `appliance serve` under a burst of concurrent requests is
SIGKILLed at a random moment; `appliance audit verify` must still find every record that was written
intact. A torn last line (what a power cut in the middle of a write leaves) is then appended: verify
must report it by file and line and keep counting the records before it, and the next server start
must continue the chain in a new file.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from appliance.config import Settings
from appliance.index.catalog import Catalog, DocumentRow
from appliance.index.index import Index
from appliance.ingest.pipeline import ingest
from appliance.retrieve.search import Searcher
from scripts.reliability.procs import VENV_APPLIANCE, appliance_env, start_serve, stop

TAG_RE = re.compile(r"\bRLY-\d{4}\b")
Snapshot = tuple[list[tuple[str, tuple[str, ...]]], set[str]]

_EQUIPMENT = ["pump P-{n}", "valve VLV-{n}-A", "filter SF-{n}", "blower B-{n}", "clarifier CL-{n}", "tank T-{n}"]
_ACTIONS = [
    "Close {e} and confirm the pressure gauge reads zero before opening the casing.",
    "Open {e} slowly over thirty seconds and watch the discharge pressure for surges.",
    "Record the runtime hours of {e} on the shift log and report any vibration above 7 mm/s.",
    "Isolate {e} electrically, apply a personal lock and try the start button before work begins.",
    "Flush {e} with potable water for ten minutes and take a chlorine residual sample afterwards.",
    "Inspect the gasket of {e}; a gasket is never reused once the flange has been opened.",
    "Check the oil level of {e} weekly and top it up with ISO VG 68 turbine oil only.",
    "Calibrate the level transmitter on {e} against a dipstick reading every quarter.",
]
_TOPICS = ["Purpose", "Isolation", "Start-up", "Shutdown", "Inspection", "Records", "Emergencies", "Lubrication"]


@dataclass
class RoundRecord:
    round: int
    changes: dict[str, int]
    delay_s: float
    killed: bool  # False: the reindex finished before the kill was due
    # starting / holding the lock, before a write / mid-write (repair pending) / after the last write / finished
    phase: str
    documents: int
    chunks: int
    vectors: int
    consistent: bool
    interrupted_write: bool
    problems: list[str]


@dataclass
class CrashReport:
    rounds: list[RoundRecord] = field(default_factory=list)
    final_documents: int = 0
    final_chunks: int = 0
    equals_clean_build: bool = False
    final_status: dict[str, Any] = field(default_factory=dict)
    reference_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return sum(1 for record in self.rounds if record.killed)

    @property
    def ok(self) -> bool:
        return not self.problems and self.equals_clean_build and not any(r.problems for r in self.rounds)

    def phases(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self.rounds:
            counts[record.phase] = counts.get(record.phase, 0) + 1
        return counts


class Corpus:
    """A folder of generated SOPs, each carrying a tag of its own (RLY-0001…) that no edit removes."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.next_tag = 1
        root.mkdir(parents=True, exist_ok=True)

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_file())

    def text(self, tag: str, suffix: str) -> str:
        rng = self.rng
        sections = rng.sample(_TOPICS, rng.randint(2, 4))
        parts: list[str] = []
        if suffix == ".md":
            parts.append(f"# Procedure {tag}\n\nThis procedure is filed as {tag}.")
        else:
            parts.append(f"Procedure {tag}\n\nThis procedure is filed as {tag}.")
        for section in sections:
            sentences = []
            for _ in range(rng.randint(3, 9)):
                equipment = rng.choice(_EQUIPMENT).format(n=rng.randint(100, 999))
                sentences.append(rng.choice(_ACTIONS).format(e=equipment))
            heading = f"## {section}" if suffix == ".md" else section.upper()
            parts.append(heading + "\n\n" + " ".join(sentences))
        return "\n\n".join(parts) + "\n"

    def add(self) -> Path:
        tag = f"RLY-{self.next_tag:04d}"
        self.next_tag += 1
        suffix = self.rng.choice([".md", ".md", ".txt"])
        folder = self.root / self.rng.choice(["", "", "area-a", "area-b/sub"])
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"sop-{tag.lower()}{suffix}"
        path.write_text(self.text(tag, suffix))
        return path

    def edit(self, path: Path) -> None:
        match = TAG_RE.search(path.read_text())
        assert match is not None, path
        path.write_text(self.text(match.group(0), path.suffix))

    def move(self, path: Path) -> Path:
        folder = self.root / self.rng.choice(["", "area-a", "area-c", "area-b/sub"])
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"moved-{self.rng.randint(0, 10**6)}-{path.name}"
        path.rename(target)
        return target

    def change(self, minimum: int = 6, maximum: int = 20) -> dict[str, int]:
        """A round of changes: adds, edits, a move and a delete, keeping the size within bounds."""
        counts = {"added": 0, "edited": 0, "moved": 0, "deleted": 0}
        files = self.files()
        rng = self.rng
        if len(files) > minimum:
            rng.choice(files).unlink()
            counts["deleted"] += 1
        files = self.files()
        for path in rng.sample(files, min(len(files), rng.randint(1, 3))):
            self.edit(path)
            counts["edited"] += 1
        files = self.files()
        if files:
            self.move(rng.choice(files))
            counts["moved"] += 1
        for _ in range(rng.randint(1, 2) if len(self.files()) < maximum else 0):
            self.add()
            counts["added"] += 1
        return counts


def snapshot(settings: Settings) -> Snapshot:
    """(documents with their sorted chunk ids, Chroma's id set)."""
    fresh_chroma()
    index = Index(settings)
    try:
        rows = index.catalog.conn.execute(
            "SELECT d.path, c.id FROM documents d LEFT JOIN chunks c ON c.document_id = d.id ORDER BY d.path, c.id"
        ).fetchall()
        vector_ids = index.vectors.ids()
    finally:
        index.close()
        fresh_chroma()
    grouped: dict[str, list[str]] = {}
    for path, chunk_id in rows:
        grouped.setdefault(path, []).extend([chunk_id] if chunk_id else [])
    return [(path, tuple(ids)) for path, ids in grouped.items()], vector_ids


def fresh_chroma() -> None:
    """Forget every Chroma client of this process: a PersistentClient keeps its HNSW graph in memory and
    would not see what another process (the reindex just killed) wrote."""
    from chromadb.api.client import SharedSystemClient

    SharedSystemClient.clear_system_cache()


def check_index(settings: Settings, allow_interrupted: bool = True) -> tuple[dict[str, Any], list[str]]:
    """What a reader finds: figures and the problems (empty when everything holds)."""
    problems: list[str] = []
    fresh_chroma()
    index = Index(settings)
    try:
        consistency = index.check()
        catalog = index.catalog
        documents = catalog.documents()
        indexed = [doc for doc in documents if doc.status == "indexed"]
        problems += [f"FTS5: {problem}" for problem in consistency.fts_problems]
        if not consistency.consistent and not (allow_interrupted and consistency.interrupted_write):
            problems.append(
                f"catalog and Chroma disagree with no interrupted write flagged: {consistency.missing_vectors} "
                f"missing, {consistency.stray_vectors} stray vectors"
            )
        for doc in documents:
            rows = catalog.chunk_ids_of(doc.path)
            if len(rows) != doc.chunk_count:
                problems.append(f"{doc.path}: {len(rows)} chunk rows, recorded chunk count {doc.chunk_count}")
        doubled = catalog.conn.execute(
            "SELECT document_id, ord, COUNT(*) FROM chunks GROUP BY document_id, ord HAVING COUNT(*) > 1"
        ).fetchall()
        problems += [f"chunk position {row[1]} of document {row[0]} stored {row[2]} times" for row in doubled]
        vector_ids = list(index.vectors.collection.get(include=[])["ids"])
        if len(vector_ids) != len(set(vector_ids)):
            problems.append(f"Chroma holds {len(vector_ids) - len(set(vector_ids))} duplicate ids")
        tags, missing = document_tags(catalog, indexed)
        problems += missing
        figures = {
            "documents": len(indexed),
            "chunks": consistency.catalog_chunks,
            "vectors": consistency.vector_count,
            "consistent": consistency.consistent,
            "interrupted_write": consistency.interrupted_write,
        }
        known = {doc.path for doc in documents}
    finally:
        index.close()
    searcher = Searcher(settings)
    try:
        problems += search_problems(searcher, tags, known)
    finally:
        searcher.close()
        fresh_chroma()
    return figures, problems


def document_tags(catalog: Catalog, indexed: list[DocumentRow]) -> tuple[dict[str, str], list[str]]:
    """Each indexed document's own tag, read from its chunks; the problems (a document whose tag is in none)."""
    tags: dict[str, str] = {}
    problems: list[str] = []
    for doc in indexed:
        texts = catalog.chunks_by_ids(catalog.chunk_ids_of(doc.path))
        found = next((m.group(0) for row in texts.values() if (m := TAG_RE.search(row.text))), None)
        if found is None:
            problems.append(f"{doc.path}: its tag is in none of its chunks")
        else:
            tags[doc.path] = found
    return tags, problems


def search_problems(searcher: Searcher, tags: dict[str, str], known: set[str]) -> list[str]:
    """Every document found by a lexical and a hybrid search for its tag, no chunk twice, nothing unknown."""
    problems: list[str] = []
    for path, tag in tags.items():
        for mode in ("lexical", "hybrid"):
            hits = searcher.search(tag, k=20, mode=mode).hits  # type: ignore[arg-type]
            if path not in {hit.path for hit in hits}:
                problems.append(f"{path}: a {mode} search for its tag {tag} does not find it")
            if len({hit.chunk_id for hit in hits}) != len(hits):
                problems.append(f"a {mode} search for {tag} returned a chunk twice")
            stale = {hit.path for hit in hits} - known
            if stale:
                problems.append(f"a {mode} search for {tag} returned documents not in the catalog: {stale}")
    return problems


def _holds_writer_lock(pid: int, lock_path: Path) -> bool:
    """Whether process `pid` holds the flock on lock_path (from /proc/locks, without touching the lock)."""
    try:
        inode = str(lock_path.stat().st_ino)
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        parts = line.split()  # "1: FLOCK  ADVISORY  WRITE 12345 fd:01:123456 0 EOF"
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[4] == str(pid) and parts[5].rsplit(":", 1)[-1] == inode:
            return True
    return False


def _wait_for_writer_lock(process: subprocess.Popen[bytes], lock_path: Path, timeout_s: float) -> float | None:
    """Seconds from now until `process` holds the writer lock, or None when it ends or the time is up first."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s and process.poll() is None:
        if _holds_writer_lock(process.pid, lock_path):
            return time.monotonic() - started
        time.sleep(0.01)
    return None


def _wait_for_dirty_mark(process: subprocess.Popen[bytes], catalog: Path, timeout_s: float) -> float | None:
    """Seconds from now until the reindex marks the vectors dirty (its first write), read from the catalog
    by a read-only connection (WAL: never in the writer's way), or None when it ends first."""
    started = time.monotonic()
    connection = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True, timeout=0.1)
    try:
        while time.monotonic() - started < timeout_s and process.poll() is None:
            with contextlib.suppress(sqlite3.Error):
                row = connection.execute("SELECT value FROM state WHERE key = 'vectors_dirty'").fetchone()
                if row is not None and row[0] == "1":
                    return time.monotonic() - started
            time.sleep(0.005)
    finally:
        connection.close()
    return None


def _phase(before: dict[str, Any], after: dict[str, Any], killed: bool, locked: bool) -> str:
    """Where the kill landed, from what it left behind. A dirty mark inherited from an earlier kill counts
    only when this run changed something (it was repairing or writing)."""
    if not killed:
        return "finished"
    changed = any(after[key] != before[key] for key in ("documents", "chunks", "vectors"))
    if after["interrupted_write"] and (changed or not before["interrupted_write"]):
        return "mid-write (repair pending)"
    if changed:
        return "after the last write"
    return "holding the lock, before a write" if locked else "starting (before the lock)"


def run_crash_rounds(
    work: Path,
    models_dir: Path,
    kills: int,
    *,
    seed: int = 7,
    initial_documents: int = 12,
    log: Callable[[str], None] = print,
) -> CrashReport:
    rng = random.Random(seed)
    corpus = Corpus(work / "plant", rng)
    for _ in range(initial_documents):
        corpus.add()
    home = work / "home"
    settings = Settings(home=home, models_dir=models_dir)
    env = appliance_env(home, models_dir)
    report = CrashReport()

    started = time.monotonic()
    first = subprocess.run(
        [VENV_APPLIANCE, "ingest", str(corpus.root), "--json"], env=env, capture_output=True, timeout=900
    )
    if first.returncode != 0:
        raise RuntimeError(f"the first ingest failed: {first.stderr.decode()[-2000:]}")
    # A whole reindex takes about this long (imports, model, embedding, writes): kills fall within it.
    report.reference_seconds = time.monotonic() - started
    before, problems = check_index(settings)
    report.problems += problems
    log(f"crash: corpus of {before['documents']} documents indexed in {report.reference_seconds:.1f} s")

    window = report.reference_seconds
    work_window = window / 2  # how long a reindex holds the writer lock (imports and model load come first)
    number = 0
    # Rounds go on until `kills` reindexes were killed (one that finishes before its kill is due is a
    # round too: the next one starts from a finished state); at most 3 rounds per kill. Rounds take turns:
    # a random moment of the whole run; a random moment while it holds the writer lock; and within 40 ms of
    # its first write (the dirty mark), so that even a short run hits the writes themselves.
    while report.kills < kills and number < 3 * kills:
        number += 1
        changes = corpus.change()
        dirty_before = before["interrupted_write"]
        round_started = time.monotonic()
        process = subprocess.Popen(
            [VENV_APPLIANCE, "reindex", "--json"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        locked_at = None
        mode = number % 3
        if mode == 0 and not dirty_before:
            # The writes themselves: about 30 ms of an 8 s run here, from the moment the dirty mark is set.
            # However long it takes: changes left over by earlier kills make this run longer than the last.
            writing_at = _wait_for_dirty_mark(process, settings.catalog_path, timeout_s=600)
            delay = (writing_at or 0.0) + rng.uniform(0.0, 0.04)
        elif mode != 1:
            locked_at = _wait_for_writer_lock(process, settings.lock_path, timeout_s=2 * window)
            delay = (locked_at or 0.0) + rng.uniform(0.0, work_window)
        else:
            delay = rng.uniform(0.2, 1.3 * window)  # some finish: the window follows how long a run takes now
        try:
            process.wait(timeout=max(0.0, delay - (time.monotonic() - round_started)))
            killed = False
        except subprocess.TimeoutExpired:
            locked = _holds_writer_lock(process.pid, settings.lock_path)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
            killed = True
        if not killed:
            locked = False
            window = time.monotonic() - round_started  # a reindex of one round's changes takes about this long
            if locked_at is not None:
                work_window = max(0.2, window - locked_at)
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        if process.stderr:
            process.stderr.close()
        if not killed and process.returncode != 0:
            report.problems.append(f"round {number}: reindex failed on its own ({process.returncode}): {stderr[-800:]}")
        after, problems = check_index(settings)
        record = RoundRecord(
            round=number,
            changes=changes,
            delay_s=round(delay, 2),
            killed=killed,
            phase=_phase(before, after, killed, locked),
            documents=after["documents"],
            chunks=after["chunks"],
            vectors=after["vectors"],
            consistent=after["consistent"],
            interrupted_write=after["interrupted_write"],
            problems=problems,
        )
        report.rounds.append(record)
        before = after
        log(
            f"crash: round {number} (kill {report.kills}/{kills}) {'killed' if killed else 'finished'} "
            f"after {delay:.2f} s "
            f"({record.phase}): {after['documents']} docs, {after['chunks']} chunks, {after['vectors']} vectors"
            + (f"; PROBLEMS {problems}" if problems else "")
        )

    final = subprocess.run([VENV_APPLIANCE, "reindex", "--json"], env=env, capture_output=True, timeout=900)
    if final.returncode != 0:
        report.problems.append(f"the final reindex failed: {final.stderr.decode()[-1500:]}")
        return report
    status = subprocess.run([VENV_APPLIANCE, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    report.final_status = json.loads(status.stdout) if status.stdout.strip() else {}
    if status.returncode != 0 or not report.final_status.get("consistent"):
        report.problems.append(f"status after the final reindex: exit {status.returncode}, {status.stdout[-800:]}")
    if report.final_status.get("consistency", {}).get("interrupted_write"):
        report.problems.append("the final reindex left the interrupted-write mark set")
    figures, problems = check_index(settings, allow_interrupted=False)
    report.problems += [f"after the final reindex: {problem}" for problem in problems]
    report.final_documents, report.final_chunks = figures["documents"], figures["chunks"]

    clean = Settings(home=work / "clean-home", models_dir=models_dir)
    ingest(clean, [corpus.root])
    crashed, reference = snapshot(settings), snapshot(clean)
    report.equals_clean_build = crashed == reference
    if crashed[1] != {chunk for _, chunks in crashed[0] for chunk in chunks}:
        report.problems.append("Chroma's ids differ from the catalog's after the final reindex")
    if not report.equals_clean_build:
        paths = {path for path, _ in crashed[0]} ^ {path for path, _ in reference[0]}
        report.problems.append(f"the final state differs from a clean build (documents differing: {sorted(paths)})")
    log(f"crash: final state {'equals' if report.equals_clean_build else 'DIFFERS FROM'} a clean build")
    return report


# ------------------------------------------------------------------------------------- serve + audit


@dataclass
class ServeKillReport:
    kills: int = 0
    requests_answered: int = 0
    requests_cut: int = 0
    unrecorded: int = 0  # answered requests whose record the kill prevented
    records_written: int = 0  # records the audit verify counted after the last kill
    records_before_torn: int = 0  # the same count, after half a record was appended to the newest file
    records_final: int = 0
    torn_detected: bool = False
    torn_problem: str = ""
    chain_continues: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.torn_detected and self.chain_continues


def _audit_verify(env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    result = subprocess.run(
        [VENV_APPLIANCE, "audit", "verify", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    return result.returncode, json.loads(result.stdout)


def _burst(base: str, stop_flag: threading.Event, questions: list[str]) -> tuple[int, int]:
    """Requests from 8 clients until the server dies: (answered, cut off)."""
    answered = cut = 0
    lock = threading.Lock()

    def client(number: int) -> None:
        nonlocal answered, cut
        with httpx.Client(base_url=base, timeout=120.0) as http:
            turn = 0
            while not stop_flag.is_set():
                turn += 1
                question = questions[(number + turn) % len(questions)]
                route, body = (
                    ("/v1/ask", {"question": question}) if turn % 3 == 0 else ("/v1/search", {"query": question})
                )
                try:
                    response = http.post(route, json=body)
                except httpx.HTTPError:
                    with lock:
                        cut += 1
                    return
                with lock:
                    answered += response.status_code < 500 or response.status_code == 503

    with ThreadPoolExecutor(8) as pool:
        for number in range(8):
            pool.submit(client, number)
    return answered, cut


def run_serve_kills(
    work: Path,
    models_dir: Path,
    kills: int,
    *,
    generator: str = "smollm2-135m-instruct",
    seed: int = 11,
    log: Callable[[str], None] = print,
) -> ServeKillReport:
    """Kill a busy `appliance serve` `kills` times; then a torn tail; then one more start."""
    rng = random.Random(seed)
    corpus = Corpus(work / "plant", rng)
    for _ in range(4):
        corpus.add()
    home = work / "home"
    env = appliance_env(home, models_dir, APPLIANCE_GENERATOR_MODEL=generator, APPLIANCE_GENERATOR_MAX_TOKENS="16")
    subprocess.run([VENV_APPLIANCE, "ingest", str(corpus.root)], env=env, capture_output=True, timeout=900, check=True)
    questions = [
        "How is the gasket on the flange handled?",
        "What oil goes into the pump?",
        "How do I restart the Zabbix agent on the bastion hosts?",
        "When is the level transmitter calibrated?",
    ]
    report = ServeKillReport()
    records = 0
    for number in range(1, kills + 1):
        server, base = start_serve(env, work / "serve.log")
        with httpx.Client(base_url=base, timeout=300.0) as http:
            # Warm up (embedder, model) so that the kill lands among requests, not in a first load.
            warm = [
                http.post("/v1/search", json={"query": questions[0]}),
                http.post("/v1/ask", json={"question": questions[0]}),
            ]
        if any(response.status_code != 200 for response in warm):
            report.problems.append(f"kill {number}: warm-up failed: {[r.status_code for r in warm]}")
        records += len(warm)
        stop_flag = threading.Event()
        with ThreadPoolExecutor(1) as runner:
            burst = runner.submit(_burst, base, stop_flag, questions)
            time.sleep(rng.uniform(1.0, 3.0))
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=60)
            stop_flag.set()
            answered, cut = burst.result(timeout=180)
        report.kills += 1
        report.requests_answered += answered
        report.requests_cut += cut
        code, verified = _audit_verify(env)
        if code != 0 or not verified["ok"]:
            report.problems.append(f"kill {number}: audit verify failed: {verified['problems'][:3]}")
        # The record is written once the response is sent: a kill in between loses it (counted, not failed).
        report.unrecorded += max(0, records + answered - verified["records"])
        records = verified["records"]
        log(f"serve kill {number}/{kills}: {answered} answered, {cut} cut off; audit verify ok, {records} records")

    # A power cut in the middle of write() leaves a partial line: the next verify must say so.
    newest = sorted((home / "audit").glob("audit-*.jsonl"))[-1]
    last_line = newest.read_bytes().splitlines(keepends=True)[-1]
    with newest.open("ab") as handle:
        handle.write(last_line[: len(last_line) // 2])
    report.records_written = records
    code, verified = _audit_verify(env)
    report.records_before_torn = verified["records"]
    torn = [problem for problem in verified["problems"] if "torn" in problem["problem"]]
    report.torn_detected = code == 1 and verified["torn_last_line"] and len(torn) == 1
    report.torn_problem = f"{torn[0]['file']}:{torn[0]['line']}: {torn[0]['problem']}" if torn else ""
    if verified["records"] != records:
        report.problems.append(f"the torn line hid records: {verified['records']} counted, {records} before")

    server, base = start_serve(env, work / "serve.log")
    try:
        with httpx.Client(base_url=base, timeout=120.0) as http:
            for question in questions[:3]:
                assert http.post("/v1/search", json={"query": question}).status_code == 200
    finally:
        stop(server)
    code, verified = _audit_verify(env)
    report.records_final = verified["records"]
    others = [problem for problem in verified["problems"] if "torn" not in problem["problem"]]
    report.chain_continues = (
        verified["records"] == records + 3 and not verified["torn_last_line"] and not others and verified["files"] >= 2
    )
    if others:
        report.problems.append(f"after the restart verify found more than the old torn line: {others}")
    log(f"serve: torn tail reported as {report.torn_problem!r}; {report.records_final} records after a restart")
    return report
