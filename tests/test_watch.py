"""`appliance watch`: documents that land anywhere under a source folder, also in folders created after it
started, are noticed (real inotify); hidden files are not; a burst of changes is one action."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from appliance.config import Settings
from appliance.index.index import Index
from appliance.ingest.watch import TreeWatcher, watch, write_trigger

REPO = Path(__file__).resolve().parent.parent
SETTLE_JSON = ["--settle", "0.3", "--json"]


class Recorder:
    """`watch()` in a thread; each call of its callback kept."""

    def __init__(self, roots: list[Path], settle_s: float = 0.3) -> None:
        self.calls: list[list[Path]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=watch,
            args=(roots, self.calls.append),
            kwargs={"settle_s": settle_s, "should_stop": self._stop.is_set, "poll_s": 0.05},
            daemon=True,
        )

    def __enter__(self) -> Recorder:
        self._thread.start()
        time.sleep(0.3)  # the watches are in place
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def until(self, done: Callable[[list[list[Path]]], bool], timeout_s: float = 10.0) -> list[list[Path]]:
        deadline = time.monotonic() + timeout_s
        while not done(self.calls) and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.calls


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "area-a").mkdir(parents=True)
    return root


def changed(calls: list[list[Path]]) -> set[Path]:
    return {path for call in calls for path in call}


def test_a_file_in_a_subfolder_created_after_the_start_is_noticed(docs: Path) -> None:
    with Recorder([docs]) as recorder:
        new = docs / "area-b" / "pumps" / "SOP-P-7.md"
        new.parent.mkdir(parents=True)
        time.sleep(0.1)  # a copy tool creates the folders first, the files a moment later
        new.write_text("# Pump P-7\n")
        calls = recorder.until(lambda calls: new in changed(calls))
    assert new in changed(calls)


def test_changes_are_noticed_when_the_process_already_holds_over_1024_files(docs: Path) -> None:
    """A long-lived process (or a test run) holds many descriptors; select() cannot wait on one numbered
    1024 or more, so the watcher must not use it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"this machine allows {hard} open files; the watcher cannot get a descriptor over 1024")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200) if hard == resource.RLIM_INFINITY else hard, hard))
    held = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        with TreeWatcher([docs]) as watcher:
            assert watcher._fd >= 1024
            new = docs / "area-a" / "SOP-P-8.md"
            new.write_text("# Pump P-8\n")
            assert new in watcher.changes(5.0)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_folder_moved_in_brings_its_files_and_is_watched_from_then_on(docs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "staging" / "area-c"
    outside.mkdir(parents=True)
    (outside / "first.md").write_text("# First\n")
    with Recorder([docs]) as recorder:
        shutil.move(str(outside), str(docs / "area-c"))
        recorder.until(lambda calls: docs / "area-c" / "first.md" in changed(calls))
        later = docs / "area-c" / "later.md"
        later.write_text("# Later\n")
        calls = recorder.until(lambda calls: later in changed(calls))
    assert {docs / "area-c" / "first.md", later} <= changed(calls)


def test_edits_deletes_and_renames_are_noticed_hidden_files_are_not(docs: Path) -> None:
    kept = docs / "area-a" / "kept.md"
    kept.write_text("v1\n")
    gone = docs / "area-a" / "gone.md"
    gone.write_text("v1\n")
    with Recorder([docs]) as recorder:
        (docs / "area-a" / ".~lock.kept.md#").write_text("editor lock file\n")
        recorder.until(lambda calls: bool(calls), timeout_s=1.0)
        assert recorder.calls == [], "a hidden file alone is no change"
        kept.write_text("v2\n")
        gone.unlink()
        (docs / "area-a" / "renamed.md").write_text("x\n")
        (docs / "area-a" / "renamed.md").rename(docs / "top.md")
        calls = recorder.until(lambda calls: {kept, gone, docs / "top.md"} <= changed(calls))
    assert {kept, gone, docs / "top.md"} <= changed(calls)
    assert all(not path.name.startswith(".") for path in changed(calls))


def test_a_burst_of_changes_is_one_action_once_it_settles(docs: Path) -> None:
    with Recorder([docs], settle_s=0.5) as recorder:
        for n in range(20):
            (docs / "area-a" / f"bulk-{n}.md").write_text(f"# {n}\n")
            time.sleep(0.01)
        calls = recorder.until(lambda calls: len(changed(calls)) >= 20)
        time.sleep(0.7)
    assert len(recorder.calls) == 1 and len(calls[0]) >= 20


def test_watches_cover_every_folder_but_hidden_ones(docs: Path) -> None:
    (docs / "area-a" / "sub").mkdir()
    (docs / ".git" / "objects").mkdir(parents=True)
    with TreeWatcher([docs]) as watcher:
        assert watcher.folders == [docs, docs / "area-a", docs / "area-a" / "sub"]
        assert watcher.unwatched == []


@pytest.fixture
def watcher_process(docs: Path, tmp_path: Path, cli_env: dict[str, str]) -> Iterator[tuple[Path, Path]]:
    """`appliance watch DOCS --trigger FILE --json` as its own process, as appliance-watch.service runs it."""
    trigger, output = tmp_path / "home" / "run" / "docs-changed", tmp_path / "watch.out"
    with output.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "appliance.cli.main", "watch", str(docs), "--trigger", str(trigger), *SETTLE_JSON],
            env={**cli_env, "PYTHONPATH": str(REPO)},
            stdout=out,
            stderr=subprocess.PIPE,
        )
    assert process.stderr is not None
    started = process.stderr.readline().decode()
    assert started.startswith("watching 2 folders under"), started
    yield trigger, output
    process.terminate()
    process.wait(timeout=30)


def test_the_command_writes_the_trigger_file_a_path_unit_watches(
    watcher_process: tuple[Path, Path], docs: Path
) -> None:
    trigger, output = watcher_process
    new = docs / "area-z" / "SOP-Z-1.md"
    new.parent.mkdir()
    new.write_text("# Z\n")
    deadline = time.monotonic() + 15
    while not trigger.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "changed:" in trigger.read_text()
    deadline = time.monotonic() + 5
    while not output.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    line = json.loads(output.read_text())
    assert line["trigger"] == str(trigger) and line["changed"] >= 1


@pytest.mark.slow
def test_without_a_trigger_it_indexes_what_landed(settings: Settings, docs: Path, cli_env: dict[str, str]) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "appliance.cli.main", "watch", str(docs), "--settle", "0.3"],
        env={**cli_env, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None and process.stderr.readline().startswith(b"watching")
        new = docs / "area-b" / "SOP-B-2.md"
        new.parent.mkdir()
        new.write_text("# Blower B-2\n\nGrease the blower bearings weekly.\n")
        index = Index(settings)
        try:
            deadline = time.monotonic() + 120  # the first run loads the embedder
            while index.catalog.document("docs/area-b/SOP-B-2.md") is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert index.catalog.document("docs/area-b/SOP-B-2.md") is not None
        finally:
            index.close()
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_the_trigger_file_is_never_seen_empty_or_half_written(tmp_path: Path) -> None:
    trigger = tmp_path / "run" / "docs-changed"
    seen: list[str] = []
    done = threading.Event()

    def read_while_written() -> None:
        while not done.is_set():
            if trigger.exists():
                seen.append(trigger.read_text())

    reader = threading.Thread(target=read_while_written)
    reader.start()
    try:
        for n in range(300):
            write_trigger(trigger, [tmp_path / f"SOP-{n}.md"])
    finally:
        done.set()
        reader.join()
    assert seen and all(text.endswith("\n") and " changed: " in text for text in seen)
    assert sorted(path.name for path in trigger.parent.iterdir()) == ["docs-changed"]
