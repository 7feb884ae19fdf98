"""Hostile inputs, all in ONE `appliance ingest` run (tests/test_loaders.py checks each loader's reason
one file at a time): zero-byte, a sparse 200 MB text file, binary with a .md suffix, NUL bytes, invalid
UTF-8, UTF-16 with a BOM, Latin-1 HTML, a broken-xref / truncated / encrypted / fake / text-less PDF, a
zip-bomb and a fake .docx, HTML with scripts 10,000 deep, 10,000 Markdown headings and 10,000 quote
levels, a 30 KB word, file names with a newline, spaces, non-ASCII, 255 bytes and invalid UTF-8, a
symlink loop and a dangling link, a named pipe, an unsupported type and a mode-000 file.

Root reads any file whatever its mode, so the run goes as uid 65534 through setpriv when the tests run
as root (the work folder is made under /tmp, reachable by that user). Each file must end indexed (and
be found by a search for its own word) or be reported with its reason; the run must exit 0; its own
peak RSS (wait4, through a small launcher so that none of the test process's memory counts) must stay
bounded (scripts/reliability/hostile.py).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from appliance.ingest.scan import scan_source
from scripts.reliability.hostile import HostileReport, hostile_workdir, remove_workdir, run_hostile_ingest
from scripts.reliability.procs import clean_env, run_measured

GIB = 1024**3


@pytest.fixture(scope="module")
def hostile_run() -> Iterator[tuple[Path, HostileReport]]:
    work = hostile_workdir()
    try:
        yield work, run_hostile_ingest(work)
    finally:
        remove_workdir(work)


@pytest.fixture(scope="module")
def hostile(hostile_run: tuple[Path, HostileReport]) -> HostileReport:
    return hostile_run[1]


@pytest.mark.slow
def test_one_ingest_over_every_kind_of_hostile_file(hostile: HostileReport) -> None:
    report = hostile
    print(
        f"\n{report.files} files of {report.kinds} kinds in {report.seconds:.1f} s, peak RSS "
        f"{report.peak_rss_bytes / 2**20:.0f} MB, {report.permission_case}"
    )
    for outcome in report.outcomes:
        mark = "ok " if outcome.ok else "BAD"
        print(f"  {mark} {outcome.kind:32} {outcome.file!r:48} {outcome.status}: {outcome.reason}")
    assert report.returncode == 0, report.stderr_tail
    assert not report.problems, report.problems
    assert [outcome for outcome in report.outcomes if not outcome.ok] == []
    assert report.kinds - 1 >= 15, "at least 15 hostile kinds besides the good files"
    assert report.good_indexed == report.good_total == 5, "every good file is still indexed"
    # torch + the embedder take ~0.9-1.1 GB alone; since ingest parses the next documents while a batch embeds,
    # a pathological file's parse can coincide with a forward pass (2.16 GB seen once in the suite). The
    # harness's own 3 GiB bound: a file read whole several times over, or the bomb inflated, still shows.
    assert report.peak_rss_bytes < 3 * GIB
    if os.geteuid() == 0 and shutil.which("setpriv"):
        assert report.unprivileged, report.permission_case
    unreadable = [outcome for outcome in report.outcomes if outcome.kind.startswith("unreadable")]
    assert unreadable or report.permission_case.startswith("not tested"), report.permission_case


@pytest.mark.slow
def test_a_named_pipe_in_a_source_folder_is_never_opened(hostile: HostileReport) -> None:
    assert not hostile.fifo_opened


def test_a_file_name_that_is_not_utf8_is_skipped_with_its_reason(tmp_path: Path) -> None:
    root = tmp_path / "sops"
    root.mkdir()
    (root / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Cafe\n\ntext\n")
    (root / "good.md").write_text("# Good\n\ntext\n")
    found = {item.display_path: item for item in scan_source(root)}
    assert set(found) == {"sops/caf\\xe9.md", "sops/good.md"}
    odd = found["sops/caf\\xe9.md"]
    assert odd.skip == "file name is not valid UTF-8 (byte 0xe9): rename the file to index it"
    odd.display_path.encode("utf-8")  # printable, storable: no lone surrogate left
    assert found["sops/good.md"].skip is None and found["sops/good.md"].error is None


@pytest.mark.slow
def test_every_hostile_document_is_served_or_refused_without_running_anything_or_hanging(
    hostile_run: tuple[Path, HostileReport],
) -> None:
    """GET /v1/documents/{id}/file and POST …/view on every document the hostile ingest left in the catalog."""
    import json
    import sqlite3
    import threading
    from typing import Any

    from appliance.config import Settings
    from appliance.documents.tree import TAGS
    from tests.test_api import make_client

    work, report = hostile_run
    assert report.returncode == 0, report.stderr_tail
    settings = Settings(home=work / "home", models_dir=work / "models")
    client = make_client(settings)  # no token: single-host mode, loopback
    with sqlite3.connect(settings.catalog_path) as conn:
        documents = conn.execute("SELECT id, path, status FROM documents ORDER BY id").fetchall()
    served = 0
    deep_view = {"sentences": ["deepest hotelnesting text"]}
    for doc_id, path, status in documents:
        for method, url, body in (
            ("GET", f"/v1/documents/{doc_id}/file", None),
            ("POST", f"/v1/documents/{doc_id}/view", deep_view),
        ):
            answers: list[Any] = []
            thread = threading.Thread(target=_request, args=(client, method, url, body, answers), daemon=True)
            thread.start()
            thread.join(timeout=120)
            assert not thread.is_alive(), f"{method} {url} ({path}) hung"
            response = answers[0]
            expected = (200,) if status == "indexed" else (404,)
            assert response.status_code in expected, (path, status, response.status_code, response.text[:200])
            if response.status_code != 200:
                continue
            served += 1
            if method == "GET":
                assert response.headers["content-security-policy"].startswith("sandbox;"), path
            else:
                view = response.json()
                text = json.dumps(view)
                assert "scriptpayloadzulu" not in text, f"script content of {path} reached the view"
                stack = [view["body"]]
                while stack:
                    node = stack.pop()
                    assert node["t"] in TAGS, (path, node["t"])
                    stack.extend(child for child in node.get("c", []) if isinstance(child, dict))
                if path.endswith("deep.html"):
                    assert view["highlighted"] == 1, "the deepest text is still found"
    assert served >= 2 * report.good_total


def _request(client: object, method: str, url: str, body: object, answers: list[object]) -> None:
    answers.append(client.request(method, url, json=body))  # type: ignore[attr-defined]


def test_a_measured_peak_is_the_commands_own_never_the_test_processs(tmp_path: Path) -> None:
    # A child forked from a big process used to be charged that process's high-water mark at its exec
    # (the hostile run read 3,078 MB in a suite whose own process held about 3 GB; 1,300 MB alone).
    ballast = bytearray(768 * 2**20)
    ballast[::4096] = b"\x01" * len(ballast[::4096])
    small = run_measured(["/bin/true"], clean_env(), tmp_path)
    grown = run_measured(
        [sys.executable, "-c", "x = bytearray(300 * 2**20); x[::4096] = b'1' * len(x[::4096])"], clean_env(), tmp_path
    )
    del ballast
    assert small.returncode == 0 and small.peak_rss_bytes < 64 * 2**20, small.peak_rss_bytes
    assert grown.returncode == 0 and 300 * 2**20 <= grown.peak_rss_bytes < 700 * 2**20, grown.peak_rss_bytes
    killed = run_measured(
        [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], clean_env(), tmp_path
    )
    assert killed.returncode == -9
