"""A PDF read as its reader sees it: headings from its bookmarks, then its type, then its numbering; the
running header and footer kept apart as the document's furniture; two columns read one after the other;
a boxed note beside a step list kept as a block of its own; and damaged outlines, missing bookmark
pages, a font table without sizes and a thousand pages each read, with a warning where a rule fell back."""

from __future__ import annotations

from pathlib import Path

from appliance.ingest.chunker import chunk_document
from appliance.ingest.document import LoadedDocument
from appliance.ingest.loaders import load_document
from tests import pdf_fixtures


def headings(doc: LoadedDocument) -> list[tuple[int, str]]:
    return [(block.level, block.text) for block in doc.blocks if block.kind == "heading"]


def texts(doc: LoadedDocument) -> list[str]:
    return [block.text for block in doc.blocks]


def word_tokens(texts: object) -> list[int]:
    return [len(str(text).split()) + 1 for text in texts]  # type: ignore[attr-defined]


def test_bookmarks_are_the_headings_even_where_the_type_says_nothing(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.outlined_manual(tmp_path / "manual.pdf"))
    assert headings(doc) == [
        (1, "Installation"),
        (2, "Mounting"),
        (2, "Wiring"),
        (1, "Operation"),
        (2, "Start-up"),
        (2, "Running"),
        (2, "Shutdown"),
    ]
    assert doc.warnings == []


def test_headings_set_in_larger_or_bold_type_are_found_without_numbers(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.typographic_sop(tmp_path / "sop.pdf"))
    assert doc.title == "Chemical Dosing Skid Checks"
    assert headings(doc) == [
        (2, "Purpose"),
        (2, "Scope"),
        (2, "Procedure"),
        (3, "Before the shift"),
        (3, "After the shift"),
        (2, "Records"),
    ]


def test_a_step_in_body_type_stays_a_step_and_step_n_is_never_a_heading(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.typographic_sop(tmp_path / "sop.pdf"))
    lists = [block.text for block in doc.blocks if block.kind == "list"]
    assert any("2. Weight-based dosing" in text for text in lists)
    assert "Step 4: record the readings on form RWTP-F-031." in texts(doc)


def test_running_header_and_footer_leave_the_text_and_become_furniture(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.typographic_sop(tmp_path / "sop.pdf"))
    body = "\n".join(texts(doc))
    assert "Riverbend Water Treatment Plant" not in body
    assert "Uncontrolled" not in body and "Page 2 of 3" not in body
    assert "Riverbend Water Treatment Plant SOP-CHM-007 Rev 3" in doc.furniture
    assert any(line.startswith("Uncontrolled when printed") for line in doc.furniture)
    chunks = chunk_document(doc, word_tokens)
    assert not any("Uncontrolled" in chunk.text for chunk in chunks)


def test_the_control_block_is_read_from_the_running_header_and_the_first_page(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.typographic_sop(tmp_path / "sop.pdf"))
    control = doc.control
    assert (control.number, control.revision) == ("SOP-CHM-007", "3")
    assert (control.effective, control.review) == ("2024-03-01", "2025-03-01")
    assert control.label() == "SOP-CHM-007 rev 3, effective 2024-03-01"


def test_two_columns_are_read_one_after_the_other(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.two_columns(tmp_path / "columns.pdf"))
    text = " ".join(texts(doc))
    left = [text.index(f"Left column sentence {n} ") for n in range(1, 9)]
    right = [text.index(f"Right column sentence {n} ") for n in range(1, 9)]
    assert left == sorted(left) and right == sorted(right)
    assert max(left) < min(right)


def test_a_boxed_note_beside_the_steps_is_a_block_of_its_own(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.note_beside_steps(tmp_path / "note.pdf"))
    steps = [block for block in doc.blocks if block.kind == "list"]
    assert len(steps) == 1
    assert steps[0].text.splitlines()[0] == "1. Stop the feed pump P-101 at its local panel."
    assert len(steps[0].text.splitlines()) == 5 and "NOTE" not in steps[0].text
    note = "NOTE: The housing holds 12 litres of treated water. Wear gloves and goggles."
    assert note in texts(doc)
    assert not any(block.kind == "table" for block in doc.blocks)


def test_a_bookmark_to_a_page_the_file_lacks_is_left_out_with_a_warning(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.with_outline_to_a_missing_page(tmp_path / "manual.pdf"))
    assert (2, "Start-up") in headings(doc)
    assert (2, "Shutdown") not in headings(doc)
    assert "Shutdown" in texts(doc)  # its text is still there, only not a heading
    assert doc.warnings == ["bookmarks without a page in this file ignored: “Shutdown”"]


def test_a_damaged_outline_costs_the_bookmarks_not_the_document(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.with_a_broken_outline(tmp_path / "manual.pdf"))
    assert "Paragraph 7 is about the screen" in " ".join(texts(doc))
    assert doc.warnings == ["the outline (bookmarks) is damaged and was not read: headings found from the text"]


def test_an_outline_that_names_no_heading_of_the_text_is_set_aside_with_a_warning(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.typographic_sop(tmp_path / "scanned.pdf", page_bookmarks=True))
    assert headings(doc) == headings(load_document(pdf_fixtures.typographic_sop(tmp_path / "plain.pdf")))
    assert doc.warnings == [
        "the outline's bookmarks are not headings of the text (0 of 3 found): headings found from the text's "
        "type and numbering"
    ]


def test_a_font_table_without_sizes_reads_sizes_from_the_glyphs(tmp_path: Path) -> None:
    path = tmp_path / "unsized.pdf"
    path.write_bytes(pdf_fixtures.unsized_fonts_pdf())
    doc = load_document(path)
    assert "Isolate the pump" in " ".join(texts(doc))
    assert (1, "Isolate the pump") in headings(doc)
    assert doc.warnings == ["the fonts give no sizes on 1 page(s): sizes read from the glyphs' height"]


def test_a_thousand_page_manual_is_read_whole(tmp_path: Path) -> None:
    doc = load_document(pdf_fixtures.long_manual(tmp_path / "manual.pdf", 1000))
    found = headings(doc)
    assert len(found) == 1000
    assert found[-1] == (1, "1000. Inspecting the pump of bay 1000")
    assert doc.blocks[-1].page == 1000
    assert doc.furniture == ["Pump station manual", "Issue 4 Page 1 of 1000"]
