"""Ingest and reindex: incremental by content hash, both stores kept in step, bad files reported."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from appliance.config import Settings
from appliance.errors import ApplianceError
from appliance.index.index import Index
from appliance.ingest.pipeline import ingest, reindex
from appliance.retrieve.search import Searcher

PUMP = """# Pump station PS-2 failover

## When to use

Use this when pump P-HIGH-001 trips on overload and the clearwell level falls below 3.2 m.

## Steps

1. Acknowledge alarm ALM-PS2-TRIP-01 on the SCADA overview.
2. Open valve VLV-3042-B to bring standby pump P-HIGH-002 on line.
3. Confirm discharge pressure above 4.1 bar within two minutes.
"""

CHLORINE = """# Chlorine residual low

If free chlorine at AIT-201 reads below 0.2 mg/L for five minutes, raise the hypochlorite dose by
10 percent and take a grab sample for the lab. Never exceed 4.0 mg/L at the plant outlet.
"""

BACKWASH = """# Filter backwash

Start a backwash of filter F-3 when head loss exceeds 2.4 m or turbidity exceeds 0.3 NTU.
"""


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "sops"
    root.mkdir()
    (root / "pump-failover.md").write_text(PUMP)
    (root / "chlorine.md").write_text(CHLORINE)
    (root / "ops").mkdir()
    (root / "ops" / "backwash.md").write_text(BACKWASH)
    return root


def indexed_paths(settings: Settings) -> list[str]:
    index = Index(settings)
    try:
        return [d.path for d in index.catalog.documents() if d.status == "indexed"]
    finally:
        index.close()


def assert_consistent(settings: Settings) -> None:
    index = Index(settings)
    try:
        check = index.check()
        assert check.consistent, check
    finally:
        index.close()


def search_paths(settings: Settings, query: str, mode: str = "hybrid") -> list[str]:
    searcher = Searcher(settings)
    try:
        return [hit.path for hit in searcher.search(query, k=10, mode=mode).hits]  # type: ignore[arg-type]
    finally:
        searcher.close()


def test_first_ingest_indexes_every_document_in_both_stores(settings: Settings, corpus: Path) -> None:
    report = ingest(settings, [corpus])
    assert (report.added, report.updated, report.removed, report.unchanged) == (3, 0, 0, 0)
    assert report.failed == []
    assert report.chunks_embedded == report.chunks_total > 0
    assert indexed_paths(settings) == ["sops/chlorine.md", "sops/ops/backwash.md", "sops/pump-failover.md"]
    assert_consistent(settings)


def test_an_unchanged_folder_costs_no_embedding_and_changes_nothing(settings: Settings, corpus: Path) -> None:
    ingest(settings, [corpus])
    before = Index(settings)
    ids_before = before.catalog.all_chunk_ids()
    before.close()
    os.utime(corpus / "chlorine.md")  # touched, same content: hashed, found equal, skipped
    report = reindex(settings)
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 3)
    assert report.chunks_embedded == 0
    after = Index(settings)
    assert after.catalog.all_chunk_ids() == ids_before
    after.close()


def test_a_changed_file_is_replaced_and_only_its_new_text_is_embedded(settings: Settings, corpus: Path) -> None:
    ingest(settings, [corpus])
    (corpus / "pump-failover.md").write_text(PUMP.replace("4.1 bar", "4.6 bar"))
    report = reindex(settings)
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 1, 0, 2)
    assert 0 < report.chunks_embedded < report.chunks_total
    assert report.chunks_reused > 0, "the untouched sections keep their embeddings"
    hits = Searcher(settings).search("discharge pressure bar", k=1, mode="lexical").hits
    assert "4.6 bar" in hits[0].text
    assert_consistent(settings)


def test_a_deleted_file_leaves_both_stores(settings: Settings, corpus: Path) -> None:
    ingest(settings, [corpus])
    (corpus / "chlorine.md").unlink()
    report = reindex(settings)
    assert report.removed == 1
    assert "sops/chlorine.md" not in indexed_paths(settings)
    assert "sops/chlorine.md" not in search_paths(settings, "free chlorine hypochlorite dose", "lexical")
    assert "sops/chlorine.md" not in search_paths(settings, "free chlorine hypochlorite dose", "dense")
    assert_consistent(settings)


def test_a_moved_file_is_re_pathed_without_re_embedding(settings: Settings, corpus: Path) -> None:
    ingest(settings, [corpus])
    shutil.move(corpus / "ops" / "backwash.md", corpus / "backwash-moved.md")
    report = reindex(settings)
    assert (report.added, report.removed) == (1, 1)
    assert report.chunks_embedded == 0, "identical text reuses its stored embeddings"
    assert search_paths(settings, "backwash head loss")[0] == "sops/backwash-moved.md"
    assert "sops/ops/backwash.md" not in search_paths(settings, "backwash head loss")
    assert_consistent(settings)


def test_a_bad_file_is_reported_and_every_good_file_is_still_indexed(settings: Settings, corpus: Path) -> None:
    (corpus / "empty.md").write_bytes(b"")
    (corpus / "binary.md").write_bytes(b"\x00\x01\x02PK\x03\x04" * 100)
    (corpus / "latin1.txt").write_bytes("Température élevée".encode("latin-1"))
    (corpus / "drawing.dwg").write_bytes(b"AC1032")
    report = ingest(settings, [corpus])
    failed = {f["path"]: f["error"] for f in report.failed}
    assert set(failed) == {"sops/empty.md", "sops/binary.md", "sops/latin1.txt"}
    assert "empty" in failed["sops/empty.md"]
    assert "binary" in failed["sops/binary.md"]
    assert "UTF-8" in failed["sops/latin1.txt"]
    assert [s["path"] for s in report.skipped] == ["sops/drawing.dwg"]
    assert report.added == 3
    assert_consistent(settings)


def test_a_file_that_turns_bad_keeps_its_last_good_version_searchable(settings: Settings, corpus: Path) -> None:
    ingest(settings, [corpus])
    (corpus / "chlorine.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" * 50)
    report = reindex(settings)
    assert [f["path"] for f in report.failed] == ["sops/chlorine.md"]
    assert search_paths(settings, "hypochlorite dose AIT-201", "lexical")[0] == "sops/chlorine.md"
    (corpus / "chlorine.md").write_text(CHLORINE.replace("10 percent", "15 percent"))
    report = reindex(settings)
    assert report.failed == [] and report.updated == 1


def test_a_missing_source_folder_keeps_its_documents(settings: Settings, corpus: Path) -> None:
    ingest(settings, [corpus])
    shutil.rmtree(corpus)
    report = reindex(settings)
    assert report.removed == 0
    assert "missing" in report.failed[0]["error"]
    assert len(indexed_paths(settings)) == 3


def test_ingest_refuses_a_path_that_does_not_exist(settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(ApplianceError, match="no such file or folder"):
        ingest(settings, [tmp_path / "nope"])


def test_two_sources_with_the_same_folder_name_are_refused(settings: Settings, tmp_path: Path) -> None:
    for parent in ("a", "b"):
        (tmp_path / parent / "docs").mkdir(parents=True)
        (tmp_path / parent / "docs" / "x.md").write_text(f"# {parent}\n\ntext {parent}\n")
    ingest(settings, [tmp_path / "a" / "docs"])
    with pytest.raises(ApplianceError, match="same name"):
        ingest(settings, [tmp_path / "b" / "docs"])


def test_a_single_file_can_be_a_source(settings: Settings, corpus: Path) -> None:
    report = ingest(settings, [corpus / "chlorine.md"])
    assert report.added == 1
    assert indexed_paths(settings) == ["chlorine.md"]
