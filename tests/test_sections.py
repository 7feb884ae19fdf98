"""Sections rebuilt from indexed chunks: the text an answer shows is the indexed text, whole and in order."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from appliance.answer.quoted.sections import Section, document_sections, is_within
from appliance.index.records import ChunkRow
from appliance.ingest.chunker import chunk_document
from appliance.ingest.document import DocumentBuilder
from appliance.ingest.loaders import load_document

SOP = """# SOP-CL-004 Chlorine Container Change

## 1. Purpose

To change empty containers safely.

## 6. Procedure

The steps below are written for bank A.

### 6.1 Prepare

1. Tell the control room (ext. 2100) that a container change on bank A is starting.
2. Record the serial numbers on RWTP-F-043.
3. Confirm that AIT-452 is below 0.5 ppm.

### 6.2 Isolate the empty bank

1. Close the bank header isolation valve VLV-4501-A.
2. Close the gas valve of CYL-1 with the container valve wrench, turning clockwise until it seats.
3. Close the gas valve of CYL-2 the same way.
4. Wait until both regulator gauges read zero, normally within 5 minutes.

**WARNING:** never open a container valve more than one full turn.

## 9. Records

Keep RWTP-F-043 for 5 years.
"""


def words(texts: list[str]) -> int:
    return len(texts)


def count(texts: list[str]) -> list[int]:
    return [len(text.split()) for text in texts]


def rows_of(tmp_path: Path, text: str, *, max_tokens: int = 40, overlap: int = 12) -> list[ChunkRow]:
    """The document as the catalog holds it: the real loader and chunker (small chunks, so that steps are cut
    across chunks and neighbours overlap), one word a token."""
    path = tmp_path / "SOP-CL-004.md"
    path.write_text(text)
    doc = load_document(path, "plant/SOP-CL-004.md")
    chunks = chunk_document(doc, count, max_tokens=max_tokens, overlap_tokens=overlap)
    return [ChunkRow(**asdict(chunk), rowid=i, type="md") for i, chunk in enumerate(chunks)]


def sections_of(tmp_path: Path) -> dict[str, Section]:
    return document_sections(rows_of(tmp_path, SOP))


def test_every_heading_path_is_a_section_and_the_empty_path_is_the_whole_document(tmp_path: Path) -> None:
    sections = sections_of(tmp_path)
    title = "SOP-CL-004 Chlorine Container Change"
    assert "" in sections and f"{title} › 6. Procedure" in sections
    assert f"{title} › 6. Procedure › 6.2 Isolate the empty bank" in sections
    procedure = sections[f"{title} › 6. Procedure"]
    assert all(is_within(chunk.section, procedure.heading) for chunk in procedure.chunks)
    assert procedure.name == "6. Procedure" and procedure.label == f"{title} › 6. Procedure"


def test_a_section_shows_each_step_once_in_order_though_its_chunks_overlap(tmp_path: Path) -> None:
    rows = rows_of(tmp_path, SOP)
    procedure = document_sections(rows)["SOP-CL-004 Chlorine Container Change › 6. Procedure"]
    assert len(procedure.chunks) > 3, "the test needs a section cut into several chunks"
    overlaps = [b.start < a.end for a, b in zip(procedure.chunks, procedure.chunks[1:], strict=False)]
    assert any(overlaps), "the test needs neighbours that overlap"
    texts = [item.text for item in procedure.items]
    assert [t for t in texts if t[:2] in ("1.", "2.", "3.", "4.")] == [
        "1. Tell the control room (ext. 2100) that a container change on bank A is starting.",
        "2. Record the serial numbers on RWTP-F-043.",
        "3. Confirm that AIT-452 is below 0.5 ppm.",
        "1. Close the bank header isolation valve VLV-4501-A.",
        "2. Close the gas valve of CYL-1 with the container valve wrench, turning clockwise until it seats.",
        "3. Close the gas valve of CYL-2 the same way.",
        "4. Wait until both regulator gauges read zero, normally within 5 minutes.",
    ]


def test_the_headings_of_subsections_stand_where_they_start(tmp_path: Path) -> None:
    procedure = sections_of(tmp_path)["SOP-CL-004 Chlorine Container Change › 6. Procedure"]
    headings = [(item.text, item.level) for item in procedure.items if item.kind == "heading"]
    assert headings == [("6. Procedure", 0), ("6.1 Prepare", 1), ("6.2 Isolate the empty bank", 1)]
    kinds = [item.kind for item in procedure.items]
    assert kinds[0] == "heading" and kinds[-1] == "warning"


def test_every_item_is_the_indexed_text_of_the_chunk_it_cites(tmp_path: Path) -> None:
    for section in sections_of(tmp_path).values():
        for item in section.items:
            if item.kind == "heading":
                assert item.text in item.chunk.section
                continue
            first_line = item.text.split("\n")[0]
            assert first_line in item.chunk.text, (item.text, item.chunk.text)


def _pdf_like_rows(first: str, second: str) -> list[ChunkRow]:
    """Two chunks of one section on two pages, as a PDF page break cuts a step in two."""
    builder = DocumentBuilder("plant/SOP.pdf", "pdf")
    builder.add("heading", "6.2 Response", level=2, page=1)
    builder.add("list", first, page=1)
    builder.add("paragraph", second, page=2)
    doc = builder.build("SOP")
    chunks = chunk_document(doc, count, max_tokens=200)
    return [ChunkRow(**asdict(chunk), rowid=i, type="pdf") for i, chunk in enumerate(chunks)]


def test_a_step_cut_by_a_page_break_reads_as_one_item() -> None:
    rows = _pdf_like_rows(
        "7. Stop the leak.\n8. Leave the room and confirm that the room is below", "0.5 ppm before anyone enters."
    )
    assert [row.page for row in rows] == [1, 2]
    section = document_sections(rows)["6.2 Response"]
    texts = [item.text for item in section.items if item.kind != "heading"]
    assert texts == [
        "7. Stop the leak.",
        "8. Leave the room and confirm that the room is below\n0.5 ppm before anyone enters.",
    ]


def test_a_new_paragraph_on_the_next_page_stays_its_own_item() -> None:
    rows = _pdf_like_rows("8. Leave the room.", "Record the event on the shift log.")
    texts = [item.text for item in document_sections(rows)["6.2 Response"].items if item.kind != "heading"]
    assert texts == ["8. Leave the room.", "Record the event on the shift log."]


def test_a_document_without_headings_is_one_section() -> None:
    builder = DocumentBuilder("notes.txt", "txt")
    builder.add("paragraph", "Restart the agent with systemctl restart agent.")
    doc = builder.build("notes")
    rows = [ChunkRow(**asdict(c), rowid=0, type="txt") for c in chunk_document(doc, count)]
    sections = document_sections(rows)
    assert list(sections) == [""]
    assert [item.text for item in sections[""].items] == ["Restart the agent with systemctl restart agent."]
