"""One writer at a time: a second reindex waits for the first, or refuses with a clear message."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from appliance.config import IndexSettings, Settings
from appliance.errors import IndexBusy
from appliance.index import lock as lock_module
from appliance.index.lock import writer_lock
from appliance.ingest.pipeline import ingest, reindex
from appliance.ingest.writer import IngestReport


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nLift station LS-4 wet well alarm at 2.1 m.\n")
    return root


def test_a_second_writer_is_refused_after_the_timeout(settings: Settings, small_corpus: Path) -> None:
    ingest(settings, [small_corpus])
    impatient = settings.model_copy(update={"index": IndexSettings(lock_timeout_s=0.3)})
    with writer_lock(settings.lock_path, timeout_s=0), pytest.raises(IndexBusy, match="another reindex is running"):
        reindex(impatient)


def test_a_second_writer_waits_for_the_first_to_finish(
    settings: Settings, small_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest(settings, [small_corpus])
    waiting = threading.Event()  # the second writer found the lock taken and is waiting for it

    class WatchedTime:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            waiting.set()
            time.sleep(seconds)

    monkeypatch.setattr(lock_module, "time", WatchedTime)
    reports: list[IngestReport] = []
    with writer_lock(settings.lock_path, timeout_s=0):
        second = threading.Thread(target=lambda: reports.append(reindex(settings)))
        second.start()
        assert waiting.wait(timeout=30), "the second writer never waited for the lock"
        # What the first writer does while it holds the lock, the second one sees: it ran after it.
        (small_corpus / "b.md").write_text("# B\n\nLift station LS-5 wet well alarm at 1.8 m.\n")
        assert second.is_alive() and not reports
    second.join(timeout=120)
    assert len(reports) == 1 and reports[0].added == 1 and reports[0].unchanged == 1


def test_a_concurrent_cli_reindex_refuses_with_a_message_and_exit_1(
    settings: Settings, small_corpus: Path, cli_env: dict[str, str]
) -> None:
    ingest(settings, [small_corpus])
    with writer_lock(settings.lock_path, timeout_s=0):
        result = subprocess.run(
            [sys.executable, "-m", "appliance.cli.main", "reindex"],
            env={**cli_env, "APPLIANCE_INDEX_LOCK_TIMEOUT_S": "0.5"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 1
    assert "another reindex is running" in result.stderr
    assert "index.lock_timeout_s" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_killed_writer_never_leaves_a_stale_lock(settings: Settings, tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from appliance.index.lock import writer_lock\n"
            "with writer_lock(Path(sys.argv[1]), 0):\n    print('held', flush=True); time.sleep(60)",
            str(settings.lock_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    with writer_lock(settings.lock_path, timeout_s=1):
        pass
