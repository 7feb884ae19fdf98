"""Ruled tables in a PDF's text layer keep their rows and columns, as the same pipe table as DOCX, HTML
and Markdown tables, so that a row is found with its header even when its cells wrap."""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF

from appliance.config import Settings
from appliance.ingest.loaders import load_document
from appliance.ingest.loaders.common import joined_lines
from appliance.ingest.loaders.pdf_tables import PageTable, table_lines
from appliance.ingest.pipeline import ingest
from appliance.retrieve.search import Searcher

SETPOINTS = [
    ("Tag", "Service", "Low-level alarm", "High-level alarm", "High-high trip", "Units"),
    ("T-449", "Alum day tank", "0.8", "3.6", "3.9", "m"),
    ("T-450", "Caustic soda storage tank", "1.2", "4.1", "4.5", "m"),
    ("T-451", "Fluoride saturator, with a description long enough to wrap in its cell", "0.5", "2.2", "2.4", "m"),
]
ROW_T450 = "| T-450 | Caustic soda storage tank | 1.2 | 4.1 | 4.5 | m |"
HEADER = "| Tag | Service | Low-level alarm | High-level alarm | High-high trip | Units |"


def setpoint_pdf(path: Path) -> Path:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    pdf.cell(0, 8, "5. Chemical tank level setpoints", new_x="LMARGIN", new_y="NEXT")
    intro = "The level alarms of the chemical storage tanks are set in PLC-400 as follows."
    pdf.multi_cell(0, 6, intro, new_x="LMARGIN", new_y="NEXT")
    with pdf.table() as table:  # every cell drawn as its own rectangle
        for values in SETPOINTS:
            row = table.row()
            for value in values:
                row.cell(value)
    pdf.multi_cell(0, 6, "Do not change a setpoint without the approval of the operations superintendent.")
    pdf.output(str(path))
    return path


def test_a_ruled_table_keeps_its_rows_when_cells_wrap(tmp_path: Path) -> None:
    doc = load_document(setpoint_pdf(tmp_path / "setpoints.pdf"))
    tables = [block.text for block in doc.blocks if block.kind == "table"]
    assert len(tables) == 1
    lines = tables[0].split("\n")
    assert lines[0] == HEADER and ROW_T450 in lines
    assert any(line.startswith("| T-451 | Fluoride saturator, with a description long enough") for line in lines)
    # The text around the table is still there, in order, and not repeated inside it.
    kinds = [block.kind for block in doc.blocks]
    assert kinds == ["heading", "paragraph", "table", "paragraph"]
    assert "Caustic soda" not in " ".join(b.text for b in doc.blocks if b.kind != "table")


def test_a_table_drawn_with_lines_is_found_too(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    xs, top, height = [20, 60, 120, 170], 40, 10
    rows = [("Pump", "Trip", "Reset"), ("P-101", "high vibration", "local"), ("P-102", "low suction", "remote")]
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            pdf.text(xs[c] + 2, top + r * height + 7, value)
    for r in range(len(rows) + 1):
        pdf.line(xs[0], top + r * height, xs[-1], top + r * height)
    for x in xs:
        pdf.line(x, top, x, top + len(rows) * height)
    pdf.output(str(tmp_path / "trips.pdf"))
    tables = [b.text for b in load_document(tmp_path / "trips.pdf").blocks if b.kind == "table"]
    expected = ["| Pump | Trip | Reset |", "| --- | --- | --- |", "| P-101 | high vibration | local |"]
    assert tables == ["\n".join([*expected, "| P-102 | low suction | remote |"])]


def test_a_boxed_note_is_not_a_table(tmp_path: Path) -> None:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    warning = "WARNING: chlorine gas is heavier than air. Leave the room by the upper door."
    pdf.multi_cell(0, 6, warning, border=1, new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 6, "Then call the control room on extension 2100 and wait at the muster point.")
    pdf.output(str(tmp_path / "note.pdf"))
    doc = load_document(tmp_path / "note.pdf")
    assert [b.kind for b in doc.blocks if b.kind == "table"] == []
    assert "heavier than air" in doc.text


def test_the_high_level_alarm_of_t450_is_found_with_its_header(tmp_path: Path, settings: Settings) -> None:
    docs = tmp_path / "plant"
    docs.mkdir()
    setpoint_pdf(docs / "SOP-CHM-009-tank-setpoints.pdf")
    (docs / "SOP-CHM-010-caustic-delivery.md").write_text(
        "# Caustic delivery\n\nUnload caustic soda into T-450 through the fill line; check the tank level first.\n",
        encoding="utf-8",
    )
    ingest(settings, [docs])
    searcher = Searcher(settings)
    try:
        hits = searcher.search("what is the high-level alarm of T-450?", k=3).hits
    finally:
        searcher.index.close()
    best = hits[0]
    assert best.path.endswith("SOP-CHM-009-tank-setpoints.pdf") and best.page == 1
    assert HEADER in best.text and ROW_T450 in best.text


# --- wrapped cells: a tag broken at its hyphen stays one tag ------------------------------------------------


def test_a_line_broken_at_a_hyphen_joins_back_as_the_page_reads() -> None:
    assert joined_lines(["backwash log RWTP-F-", "051"]) == "backwash log RWTP-F-051"
    assert joined_lines(["CW-1/CW-2 levels (LIT-", "420A/B), CT ratio"]) == "CW-1/CW-2 levels (LIT-420A/B), CT ratio"
    assert joined_lines(["keep the mainte-", "nance log"]) == "keep the maintenance log"  # a hyphenated word
    assert joined_lines(["change point-of-", "use filters"]) == "change point-of-use filters"  # a compound
    assert joined_lines(["wet stacking from light-", "load running"]) == "wet stacking from light-load running"
    assert joined_lines(["close the valve -", "then wait"]) == "close the valve - then wait"  # a dash, spaced
    assert joined_lines(["Weak batteries,", "cold engine"]) == "Weak batteries, cold engine"


def test_layout_lines_split_inside_a_tag_are_still_the_tables() -> None:
    table = PageTable(0.0, [["Topic", "Where to check"], ["Filters", "HMI page FILTERS; backwash log RWTP-F-051"]])
    lines = [
        "Intro paragraph that is not in the table at all.",
        "Topic    Where to check",
        "Filters  HMI page FILTERS;",
        "         backwash log RWTP-F-",
        "         051",
        "",
        "After the table.",
    ]
    assert table_lines(lines, table, set()) == range(1, 5)
