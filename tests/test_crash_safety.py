"""A reindex killed with SIGKILL at any step leaves an index that answers correctly, and the next
reindex converges to exactly the state of a clean build."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from appliance.config import Settings
from appliance.faults import ENV as FAULT_ENV
from appliance.index import vector_sync
from appliance.index.catalog import Catalog
from appliance.index.index import Index
from appliance.ingest.pipeline import ingest, reindex
from appliance.retrieve.search import Searcher

DOCS = {
    "intake.md": "# Intake screens\n\nClean bar screen BS-1 when differential level exceeds 0.4 m.\n",
    "ozone.md": "# Ozone generator\n\nOzone generator OZ-2 trips on dew point above -60 C; purge the dryer.\n",
    "lab/turbidity.md": "# Turbidimeter calibration\n\nCalibrate AIT-310 monthly with 20 NTU formazin standard.\n",
    "lab/ph.md": "# pH probe\n\nReplace the pH probe AIT-220 electrolyte every 90 days.\n",
}


def write_corpus(root: Path, docs: dict[str, str]) -> None:
    for name, text in docs.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def change_corpus(root: Path) -> None:
    """One of each: an add, an edit, a delete and a move."""
    (root / "new-generator-test.md").write_text("# Generator test\n\nRun GEN-1 on load bank for 30 minutes.\n")
    (root / "intake.md").write_text(DOCS["intake.md"].replace("0.4 m", "0.5 m") + "\nLog it on form F-112.\n")
    (root / "ozone.md").unlink()
    shutil.move(root / "lab" / "ph.md", root / "ph-moved.md")


def snapshot(settings: Settings) -> tuple[list[tuple[str, tuple[str, ...]]], set[str]]:
    index = Index(settings)
    try:
        docs = [(doc.path, tuple(sorted(index.catalog.chunk_ids_of(doc.path)))) for doc in index.catalog.documents()]
        return docs, index.vectors.ids()
    finally:
        index.close()


def assert_answers_correctly_after_crash(settings: Settings) -> None:
    index = Index(settings)
    try:
        assert index.catalog.fts_integrity() == []
        for doc in index.catalog.documents():
            # Each document is wholly one version: its chunk rows match its recorded count.
            assert len(index.catalog.chunk_ids_of(doc.path)) == doc.chunk_count
        catalog_paths = {doc.path for doc in index.catalog.documents()}
    finally:
        index.close()
    searcher = Searcher(settings)
    try:
        for query in ("bar screen differential level", "turbidimeter formazin", "pH probe electrolyte"):
            for mode in ("lexical", "dense", "hybrid"):
                hits = searcher.search(query, k=10, mode=mode).hits  # type: ignore[arg-type]
                assert all(hit.path in catalog_paths for hit in hits)
                assert len({hit.chunk_id for hit in hits}) == len(hits), "no duplicate hits"
    finally:
        searcher.close()


def reindex_killed_at(point: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "appliance.cli.main", "reindex", "--json"],
        env={**env, FAULT_ENV: point},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def clean_state(tmp_path: Path, models_dir: Path) -> tuple[list[tuple[str, tuple[str, ...]]], set[str]]:
    """The index a clean build of the changed corpus produces (in its own home)."""
    root = tmp_path / "clean" / "plant"
    root.mkdir(parents=True)
    write_corpus(root, DOCS)
    change_corpus(root)
    clean = Settings(home=tmp_path / "clean-home", models_dir=models_dir)
    ingest(clean, [root])
    return snapshot(clean)


@pytest.mark.parametrize(
    "point",
    [
        "after_vectors_upsert",
        "inside_catalog_transaction",
        "after_catalog_commit",
        "after_vectors_delete",
        "after_catalog_remove",
    ],
)
def test_sigkill_during_reindex_then_repair(
    point: str, settings: Settings, cli_env: dict[str, str], tmp_path: Path, clean_state: object
) -> None:
    root = tmp_path / "plant"
    root.mkdir()
    write_corpus(root, DOCS)
    ingest(settings, [root])
    change_corpus(root)

    killed = reindex_killed_at(point, cli_env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert_answers_correctly_after_crash(settings)

    report = reindex(settings)
    assert report.failed == []
    check = Index(settings).check()
    assert check.consistent and not check.interrupted_write, check
    assert snapshot(settings) == clean_state


@pytest.mark.parametrize("next_owner", ["a reindex", "a search"])
def test_a_crash_during_repair_is_repaired_by_the_next_owner(
    next_owner: str, settings: Settings, cli_env: dict[str, str], tmp_path: Path, clean_state: object
) -> None:
    root = tmp_path / "plant"
    root.mkdir()
    write_corpus(root, DOCS)
    ingest(settings, [root])
    change_corpus(root)
    assert reindex_killed_at("after_catalog_commit", cli_env).returncode == -signal.SIGKILL
    assert reindex_killed_at("during_reconcile", cli_env).returncode == -signal.SIGKILL
    catalog = Catalog(settings.catalog_path)
    try:
        assert vector_sync.interrupted(catalog.conn), "the killed runs left committed changes nobody applied"
    finally:
        catalog.close()
    # The next process that owns the local vector store repairs it before anything else: a reindex
    # (and reports it), or a search, which applies the catalog's change log before it reads.
    if next_owner == "a reindex":
        assert reindex(settings).repaired is not None
    assert_answers_correctly_after_crash(settings)
    report = reindex(settings)
    assert report.failed == [] and snapshot(settings) == clean_state
