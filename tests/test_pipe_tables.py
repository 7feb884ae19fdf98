"""Pipe tables read back into header and rows, and shortened for one line without cutting a cell or a row."""

from __future__ import annotations

from appliance.ingest.loaders.common import pipe_table
from appliance.text.pipe_tables import blocks, cells, is_table, one_line, row_at, row_text, tables

LIMITS = pipe_table(
    [
        ["Item", "Value"],
        ["Target at entry point (AIT-403)", "0.7 mg/L"],
        ["Operating range", "0.6–0.9 mg/L"],
        ["ALM-FL-HIGH-02", "above 1.5 mg/L for 2 min (P1) — PLC-400 stops P-CHM-461A/B"],
    ]
)
SECTION = f"Limits for the fluoride feed:\n\n{LIMITS}\n\nCall the Water Quality Manager above 2.0 mg/L."


def test_a_loaders_table_reads_back_as_its_header_and_rows() -> None:
    (table,) = tables(SECTION)
    assert table.header == ("Item", "Value")
    assert [row.cells for row in table.rows] == [
        ("Target at entry point (AIT-403)", "0.7 mg/L"),
        ("Operating range", "0.6–0.9 mg/L"),
        ("ALM-FL-HIGH-02", "above 1.5 mg/L for 2 min (P1) — PLC-400 stops P-CHM-461A/B"),
    ]
    assert all(SECTION[row.start : row.end].startswith("| ") for row in table.rows)
    assert table.columns == 2


def test_an_escaped_pipe_stays_inside_its_cell() -> None:
    written = pipe_table([["Command", "Meaning"], ["ps aux | grep chlor", "a pipe in a command"]])
    assert "\\|" in written
    assert tables(written)[0].rows[0].cells == ("ps aux | grep chlor", "a pipe in a command")
    assert cells("| a \\| b | c |") == ("a | b", "c")


def test_rows_picked_one_by_one_under_a_repeated_header_join_one_table() -> None:
    """An excerpt gives each row it picks under the header: shown, the header comes once."""
    picked = "| Item | Value |\n| --- | --- |\n| Operating range | 0.6–0.9 mg/L |\n"
    picked += "| Item | Value |\n| --- | --- |\n| Maximum | 4.0 mg/L |\n| Other | Header |\n| --- | --- |\n| x | y |"
    first, second = tables(picked)
    assert first.header == ("Item", "Value") and [r.cells[0] for r in first.rows] == ["Operating range", "Maximum"]
    assert second.header == ("Other", "Header") and second.rows[0].cells == ("x", "y")


def test_rows_of_a_passage_that_starts_inside_a_table_have_no_header() -> None:
    (table,) = tables("| ALM-FL-LOW-01 | P3 | AIT-403 |\n| ALM-FL-HIGH-01 | P2 | AIT-403 |")
    assert table.header is None and len(table.rows) == 2 and table.columns == 3


def test_blocks_cover_the_text_and_tell_tables_from_prose() -> None:
    runs = blocks(SECTION)
    assert "".join(SECTION[start:end] for start, end, _ in runs) == SECTION
    assert [table for _, _, table in runs] == [False, True, False]
    assert is_table(LIMITS) and not is_table(SECTION) and not is_table("")


def test_the_row_holding_an_offset_comes_with_its_tables_header() -> None:
    found = row_at(SECTION, SECTION.index("Operating range"))
    assert found is not None
    table, row = found
    assert table.header == ("Item", "Value") and row.cells == ("Operating range", "0.6–0.9 mg/L")
    assert row_at(SECTION, SECTION.index("Call the Water")) is None
    assert row_at(SECTION, SECTION.index("| Item")) is None  # the header is no body row
    assert row_text(table.header, row) == "Item: Operating range · Value: 0.6–0.9 mg/L"


def test_one_line_cuts_a_table_between_rows_never_inside_a_cell() -> None:
    limit = 140
    line = one_line(SECTION, limit)
    assert line.startswith("Limits for the fluoride feed: Item: Target at entry point (AIT-403) · Value: 0.7 mg/L")
    assert line.endswith("Item: Operating range · Value: 0.6–0.9 mg/L…")  # the next row does not fit whole
    assert len(line) <= limit + 1
    assert "|" not in line and "---" not in line
    whole = one_line(SECTION, 1000)
    assert whole.endswith("PLC-400 stops P-CHM-461A/B; Call the Water Quality Manager above 2.0 mg/L.")


def test_one_line_keeps_a_first_row_whole_and_cuts_prose_between_words() -> None:
    row = one_line(LIMITS, 10)
    assert row == "Item: Target at entry point (AIT-403) · Value: 0.7 mg/L…"
    prose = one_line("Close the cylinder valve VLV-3042-B and wait until the gauge reads zero.", 40)
    assert prose == "Close the cylinder valve VLV-3042-B and…"
    assert one_line("x" * 50, 10) == "x" * 9 + "…"  # one word longer than the room is cut, not dropped
