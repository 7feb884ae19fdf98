"""Tables in the terminal: `appliance ask` prints a table answer with its columns aligned, within the
terminal's width, never as raw `| --- |` text and never with a cell cut short."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from appliance.cli.main import cli
from appliance.cli.table_layout import aligned, display_width, table_lines
from appliance.config import Settings
from appliance.ingest.pipeline import ingest
from appliance.text.pipe_tables import tables

TROUBLESHOOTING = "\n".join(
    [
        "| Symptom | Probable cause | Action |",
        "| --- | --- | --- |",
        "| AIT-403 low, day tank use normal | Analyzer electrode fouled | Grab sample; clean electrode; recalibrate |",
        "| AIT-403 low, day tank not dropping | Pump air-locked (FSA off-gases), suction strainer blocked "
        "| Prime pump; switch to P-CHM-461B |",
        "| Pumps will not start | Interlock: flow below 2 MGD, FSL-461 not proving, FEED STOP latched "
        "| Check interlock list on HMI page FLUORIDE |",
    ]
)

SOP = f"""# SOP-CHM-002 Fluoride feed

## 3. Limits

| Item | Value |
| --- | --- |
| Target at entry point (AIT-403) | 0.7 mg/L |
| Operating range | 0.6–0.9 mg/L |
| Maximum contaminant level (public notice) | 4.0 mg/L |

## 9. Troubleshooting

{TROUBLESHOOTING}
"""


def _words(text: str) -> list[str]:
    return [word for cell in re.split(r"[|\n]", text) for word in cell.split() if not set(word) <= set("-+")]


def _columns(line: str) -> list[int]:
    """Where the column separators of a laid-out line stand."""
    return [m.start() for m in re.finditer(r" \| |-\+-", line)]


def _aligned(lines: list[str]) -> bool:
    """Whether every line's separators stand where the rule's do (a line may end before the last column)."""
    rule = _columns(next(line for line in lines if set(line) <= set("-+")))
    return all(_columns(line) == rule[: len(_columns(line))] for line in lines)


def test_a_table_that_fits_is_padded_into_aligned_columns() -> None:
    lines = table_lines(TROUBLESHOOTING, 200)
    assert lines[0].split(" | ")[0].rstrip() == "Symptom"
    assert set(lines[1]) <= set("-+")  # the rule under the header
    assert len(lines) == 5  # header, rule, one line a row: nothing wrapped
    assert _aligned(lines) and all(len(_columns(line)) == 2 for line in lines)
    assert "| ---" not in "\n".join(lines)


def test_a_wide_table_wraps_its_cells_within_the_width_and_keeps_every_word_in_order() -> None:
    width = 60
    lines = table_lines(TROUBLESHOOTING, width)
    assert max(display_width(line) for line in lines) <= width
    assert _aligned(lines)
    assert "P-CHM-461B" in "\n".join(lines)  # an identifier is never split over two lines
    (table,) = tables(TROUBLESHOOTING)
    for column in range(3):  # read down one column, the wrapped pieces give back its cells' words in order
        cells = [line.split(" | ") for line in lines if not set(line) <= set("-+")]
        pieces = [row[column] for row in cells if len(row) > column]
        expected = [(table.header or ())[column], *(row.cells[column] for row in table.rows)]
        assert " ".join(pieces).split() == " ".join(expected).split()


def test_a_table_too_wide_to_wrap_is_printed_a_row_at_a_time_under_its_header_names() -> None:
    lines = table_lines(TROUBLESHOOTING, 28)
    assert max(display_width(line) for line in lines) <= 28
    text = "\n".join(lines)
    assert "Symptom: AIT-403 low, day" in text
    assert "Action: Prime pump; switch" in text
    assert "P-CHM-461B" in text
    assert lines.count("") == 2  # a blank line between the three rows
    assert _words(text.replace("Symptom:", "").replace("Probable cause:", "").replace("Action:", "")) == _words(
        "\n".join(TROUBLESHOOTING.split("\n")[2:])
    )


def test_rows_without_a_header_are_aligned_without_one() -> None:
    (table,) = tables("| ALM-FL-LOW-01 | P3 |\n| ALM-FL-HIGH-02 | P1 |")
    assert aligned(table, 80) == ["ALM-FL-LOW-01  | P3", "ALM-FL-HIGH-02 | P1"]


@pytest.fixture
def fluoride(settings: Settings, tmp_path: Path, cli_env: dict[str, str]) -> Settings:
    root = tmp_path / "plant"
    root.mkdir()
    (root / "SOP-CHM-002.md").write_text(SOP)
    ingest(settings, [root])
    return settings


def test_appliance_ask_prints_a_table_row_answer_as_an_aligned_table(
    fluoride: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "72")
    printed = CliRunner().invoke(cli, ["ask", "What is the fluoride operating range?"])
    assert printed.exit_code == 0, printed.output
    output = printed.output
    assert "| ---" not in output and "| Operating range |" not in output, output
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"Item\s+\| Value$", line))
    assert set(lines[header + 1]) <= set("-+"), output
    row = next(line for line in lines[header + 2 :] if line.startswith("Operating range"))
    assert row.index("| 0.6–0.9 mg/L") == lines[header].index("| Value"), "the value stands under its header"
    assert max(display_width(line) for line in lines) <= 72 or "open:" in output
