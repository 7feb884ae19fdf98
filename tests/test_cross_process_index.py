"""What another process indexes is what the running server answers from: a real `appliance serve` (one
process on the local vector store; two workers on a real `chroma run` server) and a separate
`appliance ingest DOCS` process, as appliance-reindex.service runs it. A document added (into a
subfolder), modified, moved and deleted is served within 5 s of that process's commit, found by a
search worded unlike the document, passes the evidence decision and reaches an answer's sources; the
old version, the old path and the deleted file are gone, and no hit ever mixes two versions.

The ingest runs with index.serve_wait_s = 0, so it returns right after its commit and the 5 s are the
server's own doing (its sync thread, or the search itself), not the ingest waiting for it.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from scripts.reliability.procs import VENV_APPLIANCE, appliance_env, free_port, wait_http
from tests.chroma_server import running_chroma, stop_process, unique_collection

pytestmark = pytest.mark.slow

SERVED_WITHIN_S = 5.0
DOCS = {
    "SOP-CL-004.md": "# Chlorine cylinder change\n\n## Isolation\n\nClose the cylinder valve VLV-3042-B and wait "
    "until the vacuum regulator gauge reads zero. Replace the lead gasket at every connection.\n",
    "area-a/SOP-RW-001.md": "# Raw water pump start\n\nOpen the suction valve VLV-1100-A fully and vent the pump "
    "casing until water flows without air. Check that the discharge valve is closed before starting.\n",
    "area-a/filter-backwash.txt": "Backwash of sand filter SF-2\n\nStop the filter feed, open the backwash outlet "
    "and run the backwash pump for 8 minutes.\n",
}
HOT_WORK = (
    "# Hot work permit HW-1100\n\n## Before the work\n\nWelding, cutting and grinding need a hot work permit signed "
    "by the shift supervisor. Clear combustible material for eleven metres around the work.\n\n## Fire watch\n\n"
    "A fire watch with a charged extinguisher stays for thirty minutes after the work ends.\n"
)
HOT_WORK_V2 = (
    "# Hot work permit HW-2207\n\n## Before the work\n\nWelding, cutting and grinding need a hot work permit signed "
    "by the operations manager. Clear combustible material for fifteen metres around the work.\n\n## Fire watch\n\n"
    "A fire watch with a charged extinguisher stays for sixty minutes after the work ends.\n"
)
# Worded unlike the document: no "hot work", "permit", "welding" or "fire watch".
PARAPHRASE = "Who has to approve torch or grinder jobs, and how long must someone stay to look for flames afterwards?"
QUESTION = "Who signs off before welding and how long does the fire watch stay afterwards?"


@dataclass
class Running:
    base: str
    docs: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log: Path
    mode: str

    def search(self, query: str, mode: str, k: int = 5) -> dict[str, Any]:
        try:
            response = httpx.post(f"{self.base}/v1/search", json={"query": query, "mode": mode, "k": k}, timeout=300)
        except httpx.TransportError as error:
            raise AssertionError(self.gone(error)) from error
        assert response.status_code == 200, response.text[:500]
        body: dict[str, Any] = response.json()
        return body

    def gone(self, error: Exception) -> str:
        """Why a request got no answer: the server's exit status and the end of its log."""
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        tail = "\n".join(line for line in lines if '"POST /v1/' not in line and '"GET /' not in line)[-4000:]
        status = self.process.poll()
        return f"{self.mode}: the server did not answer ({error!r}); exit status {status}; its log:\n{tail}"

    def paths(self, query: str, mode: str) -> list[str]:
        return [hit["path"] for hit in self.search(query, mode)["hits"]]

    def ingest(self) -> dict[str, Any]:
        """`appliance ingest DOCS --json` as its own process (the reindex unit's command)."""
        result = subprocess.run(
            [VENV_APPLIANCE, "ingest", "--json", str(self.docs)],
            env={**self.env, "APPLIANCE_INDEX_SERVE_WAIT_S": "0"},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        report: dict[str, Any] = json.loads(result.stdout)
        return report


def display(docs: Path, relative: str) -> str:
    return f"{docs.name}/{relative}"


def within(seconds: float, check: Callable[[], Any]) -> tuple[Any, float]:
    """Poll `check()` until it returns something truthy or `seconds` pass: (its last value, seconds taken)."""
    started = time.monotonic()
    value = check()
    while not value and time.monotonic() - started < seconds:
        time.sleep(0.1)
        value = check()
    return value, time.monotonic() - started


@pytest.fixture(scope="module", params=["local", "chroma-server"])
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, models_dir: Path
) -> Iterator[Running]:
    mode = request.param
    work = tmp_path_factory.mktemp(f"cross-{mode}")
    docs = work / "plant"
    for name, text in DOCS.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text)
    with contextlib.ExitStack() as stack:
        extra: dict[str, str] = {}
        if mode == "chroma-server":  # skipped without the chroma CLI
            chroma = stack.enter_context(running_chroma(work / "chroma"))
            extra = {"APPLIANCE_VECTORS_URL": chroma.url, "APPLIANCE_VECTORS_COLLECTION": unique_collection()}
        env = appliance_env(
            work / "home",
            models_dir,
            APPLIANCE_GENERATOR_MODEL="smollm2-135m-instruct",
            APPLIANCE_GENERATOR_MAX_TOKENS="24",
            **extra,
        )
        subprocess.run([VENV_APPLIANCE, "ingest", str(docs)], env=env, capture_output=True, timeout=600, check=True)
        port, log = free_port(), work / "serve.log"
        workers = ["--workers", "2"] if mode == "chroma-server" else []
        with log.open("ab") as output:
            process = subprocess.Popen(
                [VENV_APPLIANCE, "serve", "--host", "127.0.0.1", "--port", str(port), *workers],
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        running = Running(f"http://127.0.0.1:{port}", docs, env, process, log, mode)
        try:
            wait_http(f"{running.base}/readyz", process, timeout_s=240)
            assert running.paths("chlorine cylinder gasket", "dense"), "a first dense search, before any change"
            yield running
        finally:
            stop_process(process, timeout_s=60)


def hits_of(body: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return [hit for hit in body["hits"] if hit["path"] == path]


def test_add_modify_move_delete_reach_the_running_server(running: Running) -> None:
    docs = running.docs
    # Added, into a subfolder of a plant area.
    added = docs / "area-b" / "permits" / "hot-work-permit.md"
    added.parent.mkdir(parents=True)
    added.write_text(HOT_WORK)
    report = running.ingest()
    assert report["added"] == 1
    if running.mode == "local":
        # The running server owns the local store and applies what this process committed.
        assert report["vectors"]["applied_by"].startswith("pid ") and "serve" in report["vectors"]["applied_by"]
    new = display(docs, "area-b/permits/hot-work-permit.md")
    found, seconds = within(SERVED_WITHIN_S, lambda: new in running.paths(PARAPHRASE, "dense"))
    assert found, f"{running.mode}: dense search did not return {new} within {SERVED_WITHIN_S} s"
    hybrid = running.search(QUESTION, "hybrid")
    assert hybrid["hits"][0]["path"] == new and hybrid["evidence"]["sufficient"], hybrid["evidence"]
    answer = httpx.post(f"{running.base}/v1/ask", json={"question": QUESTION}, timeout=600).json()
    assert new in {item["path"] for item in answer["evidence"]}, answer

    # Modified: the new version only, never a mix of the two.
    added.write_text(HOT_WORK_V2)
    assert running.ingest()["updated"] == 1

    def new_version_only() -> bool:
        body = running.search("hot work permit fire watch extinguisher combustible", "hybrid", k=10)
        texts = [hit["text"] for hit in hits_of(body, new)]
        assert not any("sixty" in t for t in texts) or not any("thirty" in t for t in texts), texts
        dense = running.search("operations manager signs; watch for flames sixty minutes", "dense", k=10)
        return bool(texts) and all("thirty" not in t for t in texts) and bool(hits_of(dense, new))

    served, _ = within(SERVED_WITHIN_S, new_version_only)
    assert served, f"{running.mode}: the modified document was not served within {SERVED_WITHIN_S} s"
    # The old version's permit number is nowhere (a lexical search may still match its parts elsewhere).
    old_number = running.search("HW-1100", "lexical", k=10)["hits"]
    assert not any("HW-1100" in f"{hit['title']} {hit['text']}" for hit in old_number), old_number

    # Moved to another folder: the new path, and the old one nowhere.
    moved = docs / "area-c" / "hot-work-permit.md"
    moved.parent.mkdir()
    added.rename(moved)
    assert running.ingest()["removed"] == 1
    new_path = display(docs, "area-c/hot-work-permit.md")

    def moved_only() -> bool:
        paths = running.paths(PARAPHRASE, "dense") + running.paths(QUESTION, "hybrid")
        return new_path in paths and new not in paths

    served, _ = within(SERVED_WITHIN_S, moved_only)
    assert served, f"{running.mode}: the move was not served within {SERVED_WITHIN_S} s"

    # Deleted: gone from every retriever.
    moved.unlink()
    assert running.ingest()["removed"] == 1

    def gone() -> bool:
        paths = [*running.paths(PARAPHRASE, "dense"), *running.paths(QUESTION, "hybrid")]
        paths += running.paths("HW-2207 hot work", "lexical")
        return new_path not in paths

    served, _ = within(SERVED_WITHIN_S, gone)
    assert served, f"{running.mode}: the deleted document was still returned after {SERVED_WITHIN_S} s"
    readiness = httpx.get(f"{running.base}/readyz", timeout=120).json()
    assert readiness["ready"] and readiness["pending_changes"] == 0 and readiness["index_updated_at"], readiness
    print(f"\n{running.mode}: first dense hit for the added file after {seconds:.2f} s")


KILL_WINDOWS_S = ((0.5, 2.0), (2.0, 3.5), (3.5, 5.0))
KILLED_ROUNDS = len(KILL_WINDOWS_S)
RAW_WATER_V2 = (
    "# Raw water pump start\n\nOpen the suction valve VLV-1100-A fully and vent the pump casing for two "
    "minutes. Revision two: the discharge valve opens a quarter turn before starting.\n"
)


# Each on its own topic, so a dense search for one's own sentence ranks it first.
TAGGED_SENTENCES = (
    "rinse the belt of the sludge dewatering press and log the polymer dose in the shift book",
    "top up the standby diesel generator's day tank and record the fuel level before the weekly test run",
    "lock out the grit conveyor at its isolator before clearing a jam from the discharge chute",
    "check the cooling water flow of the ozone generator and its dew point before raising the output",
)


def tagged_sop(number: int) -> str:
    return f"# Procedure KX-{4100 + number}\n\nBefore the shift ends, {TAGGED_SENTENCES[number]}.\n"


def committed_documents(home: Path) -> dict[str, str]:
    """The catalog as its last commit left it: display path → the text of its chunks, in order."""
    with contextlib.closing(sqlite3.connect(f"file:{home / 'catalog.sqlite'}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT d.path, c.text FROM documents d JOIN chunks c ON c.document_id = d.id ORDER BY d.path, c.ord"
        ).fetchall()
    texts: dict[str, str] = {}
    for path, text in rows:
        texts[path] = f"{texts.get(path, '')} {text}"
    return texts


class Querier:
    """Searches the running server without pause from a thread, recording every failure."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.failures: list[str] = []
        self.requests = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        with httpx.Client(timeout=60) as client:
            while not self.stopped.is_set():
                try:
                    response = client.post(
                        f"{self.base}/v1/search", json={"query": "rinse the press belt polymer dose", "mode": "hybrid"}
                    )
                    if response.status_code != 200:
                        self.failures.append(f"{response.status_code}: {response.text[:200]}")
                except httpx.HTTPError as error:
                    self.failures.append(repr(error))
                self.requests += 1

    def __enter__(self) -> Querier:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=120)


def serves_exactly(running: Running, committed: dict[str, str], tagged: dict[str, int]) -> list[str]:
    """What the server serves that the last commit does not say: empty when they agree."""
    wrong: list[str] = []
    for path, number in tagged.items():
        lexical = {hit["path"] for hit in running.search(f"KX-{4100 + number}", "lexical", k=10)["hits"]}
        dense = running.search(TAGGED_SENTENCES[number], "dense", k=2)["hits"]
        if (path in committed) != (path in lexical):
            wrong.append(f"{path}: committed {path in committed}, lexical {path in lexical}")
        if path in committed and path not in {hit["path"] for hit in dense}:
            wrong.append(f"{path}: committed but not in the dense top 2")
    raw_water = display(running.docs, "area-a/SOP-RW-001.md")
    revised = "Revision two" in committed[raw_water]
    for hit in hits_of(running.search("raw water pump suction valve vent the casing", "hybrid", k=10), raw_water):
        if ("Revision two" in hit["text"]) != revised:
            wrong.append(f"{raw_water}: served {'the old' if revised else 'the new'} version")
    served_paths = {hit["path"] for hit in running.search("before the shift ends", "hybrid", k=10)["hits"]}
    wrong += [f"{path}: served but not in the catalog" for path in served_paths - committed.keys()]
    return wrong


def agrees_with(running: Running, committed: dict[str, str], tagged: dict[str, int]) -> bool:
    return not serves_exactly(running, committed, tagged)


def test_a_reindex_killed_at_random_leaves_the_server_serving_the_last_commit(running: Running) -> None:
    # The reindex unit's process SIGKILLed at a random moment (loading, embedding, writing, after its commit)
    # while clients search: no failed request, and within 5 s the server serves exactly what the catalog's
    # last commit holds; the next complete run converges.
    rng = random.Random(2017)
    home = Path(running.env["APPLIANCE_HOME"])
    tagged: dict[str, int] = {}
    for round_number in range(KILLED_ROUNDS):
        # Each round adds one SOP, edits another, and the last one also deletes the first round's SOP.
        relative = f"area-k/round-{round_number}/sop-kx-{round_number}.md"
        (running.docs / relative).parent.mkdir(parents=True, exist_ok=True)
        (running.docs / relative).write_text(tagged_sop(round_number))
        tagged[display(running.docs, relative)] = round_number
        raw_water = RAW_WATER_V2 if round_number % 2 == 0 else DOCS["area-a/SOP-RW-001.md"]
        (running.docs / "area-a" / "SOP-RW-001.md").write_text(raw_water)
        if round_number == KILLED_ROUNDS - 1:
            (running.docs / "area-k/round-0/sop-kx-0.md").unlink()
        # A run over these few files takes 3-6 s here: one kill early (imports, models), one in the middle
        # (parsing, embedding, writing), one late (the writes, or just after the commit).
        delay = rng.uniform(*KILL_WINDOWS_S[round_number])
        with Querier(running.base) as querier:
            process = subprocess.Popen(
                [VENV_APPLIANCE, "ingest", "--json", str(running.docs)],
                env={**running.env, "APPLIANCE_INDEX_SERVE_WAIT_S": "0"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(delay)
            process.kill()
            returncode = process.wait(timeout=60)
        killed = "killed" if returncode == -signal.SIGKILL else f"had exited {returncode}"
        assert not querier.failures, (round_number, killed, querier.failures[:5])
        committed = committed_documents(home)
        moment = f"round {round_number}: the ingest {killed} after {delay:.1f} s"
        agrees, _ = within(SERVED_WITHIN_S, partial(agrees_with, running, committed, tagged))
        assert agrees, (moment, serves_exactly(running, committed, tagged))
        landed = "committed" if display(running.docs, relative) in committed else "not committed"
        print(f"\n{running.mode} {moment} ({landed}), {querier.requests} searches meanwhile")

    report = running.ingest()
    assert not report["failed"], report
    committed = committed_documents(home)
    on_disk = {path for path in tagged if (running.docs.parent / path).exists()}
    assert on_disk <= committed.keys() and not (set(tagged) - on_disk) & committed.keys(), sorted(committed)
    served, _ = within(SERVED_WITHIN_S, partial(agrees_with, running, committed, tagged))
    assert served, serves_exactly(running, committed, tagged)
