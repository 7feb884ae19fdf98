"""A BEIR corpus enters its index through the pipeline's own reindex loop: the same repair, change detection,
chunker, embedder and writer as files, so `appliance eval` and the benchmarks measure the code that serves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from appliance.config import Settings
from appliance.evaluate.beir_index import build_beir_index
from appliance.index.index import Index

RECORDS = [
    {"_id": "seal", "title": "Pump seal", "text": "Replace the mechanical seal when it weeps."},
    {"_id": "sump", "title": "Sump float", "text": "Test the sump float switch monthly.\n\nLift it by hand."},
    {"_id": "title-only", "title": "Standby generator", "text": ""},
]


def write_corpus(folder: Path, records: list[dict[str, str]]) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    write_corpus(tmp_path / "tinybeir", RECORDS)
    return tmp_path / "tinybeir"


def test_each_record_is_one_document_of_its_corpus_file(settings: Settings, corpus: Path) -> None:
    own, report = build_beir_index(settings, corpus)
    assert (report.added, report.chunks_total) == (3, 3)
    index = Index(own)
    try:
        documents = {doc.path: doc for doc in index.documents()}
        assert set(documents) == {"seal", "sump", "title-only"}
        assert {doc.source for doc in documents.values()} == {str((corpus / "corpus.jsonl").resolve())}
        assert documents["title-only"].title == "Standby generator" and documents["title-only"].chunk_count == 1
    finally:
        index.close()


def test_vectors_lost_behind_the_catalogs_back_are_repaired_as_a_reindex_repairs_them(
    settings: Settings, corpus: Path
) -> None:
    own, _ = build_beir_index(settings, corpus)
    index = Index(own)
    lost = sorted(index.catalog.all_chunk_ids())[:2]
    index.vectors.delete(lost)  # a wiped or damaged store: no interrupted write to flag it
    index.close()
    _, report = build_beir_index(settings, corpus)
    assert report.repaired == {"vectors_added": 2, "vectors_deleted": 0, "fts_rebuilt": False}
    index = Index(own)
    try:
        assert index.check().consistent
    finally:
        index.close()


def test_an_edit_that_keeps_the_texts_length_is_re_embedded(settings: Settings, corpus: Path) -> None:
    build_beir_index(settings, corpus)
    edited = [dict(r, text=r["text"].replace("weeps", "drips")) if r["_id"] == "seal" else r for r in RECORDS]
    write_corpus(corpus, edited)
    _, report = build_beir_index(settings, corpus)
    assert (report.updated, report.unchanged, report.chunks_embedded) == (1, 2, 1)


def test_progress_is_reported_every_hundred_documents(settings: Settings, tmp_path: Path) -> None:
    write_corpus(tmp_path / "wide", [{"_id": f"d{n}", "title": "", "text": f"record {n}"} for n in range(201)])
    seen: list[int] = []
    build_beir_index(settings, tmp_path / "wide", seen.append)
    assert seen == [0, 100, 200]
