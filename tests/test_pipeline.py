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


def test_batches_embedded_while_the_one_before_is_written_embed_each_new_text_once(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One document per batch: each is embedded on the worker while the previous one is written.
    monkeypatch.setattr("appliance.ingest.writer.EMBED_BATCH_CHUNKS", 1)
    root = tmp_path / "copies"
    root.mkdir()
    for name in ("a", "b", "c", "d"):  # the same SOP under four names: the same embedded text
        (root / f"{name}-chlorine.md").write_text(CHLORINE)
    (root / "e-pump.md").write_text(PUMP)
    (root / "f-backwash.md").write_text(BACKWASH)
    report = ingest(settings, [root])
    assert report.added == 6 and report.failed == []
    index = Index(settings)
    try:
        rows = index.catalog.conn.execute("SELECT COUNT(DISTINCT header || char(10) || text) FROM chunks").fetchone()
    finally:
        index.close()
    assert report.chunks_embedded == rows[0] < report.chunks_total
    assert report.chunks_reused == report.chunks_total - report.chunks_embedded
    assert_consistent(settings)
    assert "copies/d-chlorine.md" in search_paths(settings, "free chlorine AIT-201 hypochlorite dose", mode="dense")


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


def test_a_page_with_nothing_to_index_is_skipped_with_its_reason_not_failed(tmp_path: Path, settings: Settings) -> None:
    """Hugo section pages (_index.md) and archetypes hold only front matter: nothing is broken, nothing to index."""
    docs = tmp_path / "runbooks"
    docs.mkdir()
    (docs / "_index.md").write_text("---\ntitle: Alerts\nweight: 10\n---\n")
    (docs / "archetype.md").write_text("---\ntitle: \"{{ replace .Name '-' ' ' }}\"\n---\n\n<!-- write here -->\n")
    (docs / "alert.md").write_text("# KubePodCrashLooping\n\nCheck the pod's logs with kubectl logs.\n")
    report = ingest(settings, [docs])
    assert report.failed == [] and report.added == 1
    assert {s["path"]: s["reason"] for s in report.skipped} == {
        "runbooks/_index.md": "no text content",
        "runbooks/archetype.md": "no text content",
    }


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


def test_a_documents_control_block_furniture_and_warnings_are_kept_in_the_catalog(
    settings: Settings, tmp_path: Path
) -> None:
    from tests import pdf_fixtures

    root = tmp_path / "pdfs"
    root.mkdir()
    pdf_fixtures.typographic_sop(root / "dosing.pdf")
    pdf_fixtures.with_a_broken_outline(root / "manual.pdf")
    report = ingest(settings, [root])
    assert report.warnings == [
        {
            "path": "pdfs/manual.pdf",
            "warning": "the outline (bookmarks) is damaged and was not read: headings found from the text",
        }
    ]
    index = Index(settings)
    try:
        meta = index.document_meta(["pdfs/dosing.pdf", "pdfs/manual.pdf"])
        chunks = index.catalog.chunks_of_documents(["pdfs/dosing.pdf"])["pdfs/dosing.pdf"]
    finally:
        index.close()
    control = meta["pdfs/dosing.pdf"].control
    assert (control.number, control.revision, control.effective, control.review) == (
        "SOP-CHM-007",
        "3",
        "2024-03-01",
        "2025-03-01",
    )
    assert "Riverbend Water Treatment Plant SOP-CHM-007 Rev 3" in meta["pdfs/dosing.pdf"].furniture
    assert not any("Uncontrolled" in chunk.text for chunk in chunks)
    assert {chunk.section for chunk in chunks} >= {"Procedure › Before the shift", "Purpose"}
    assert meta["pdfs/manual.pdf"].warnings == (report.warnings[0]["warning"],)
