"""Pipe tables, the one way every loader writes a table (Markdown, HTML, DOCX, PDF): `| a | b |` rows with a
`| --- |` rule under the header row (ingest/loaders/common.py `pipe_table`).

Read here into header and rows for the front ends that show them as tables, and shortened for a line
of display text without ever cutting inside a cell or a row. A run of pipe lines may hold several
tables: a row followed by a rule starts a new one, unless its header repeats the table before it (an
excerpt shows each picked row under its header), in which case the rows join that table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ROW = re.compile(r"[ \t]*\|")
_RULE = re.compile(r"[ \t]*\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*$")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_LINE = re.compile(r"[^\n]*")
ROW_SEPARATOR = "; "  # between two rows of one line of text
CELL_SEPARATOR = " · "  # between two cells of a row that has no header


@dataclass(frozen=True)
class Row:
    cells: tuple[str, ...]
    start: int  # text[start:end] is the row's line
    end: int


@dataclass(frozen=True)
class PipeTable:
    header: tuple[str, ...] | None  # None: rows without a header (a chunk that starts inside a table)
    rows: tuple[Row, ...]
    start: int
    end: int

    @property
    def columns(self) -> int:
        return max([len(self.header or ()), *(len(row.cells) for row in self.rows)])


def is_row(line: str) -> bool:
    return _ROW.match(line) is not None


def is_rule(line: str) -> bool:
    return _RULE.match(line) is not None


def cells(line: str) -> tuple[str, ...]:
    """The cells of one row, stripped, escaped pipes (`\\|`) unescaped."""
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return tuple(cell.strip().replace("\\|", "|") for cell in _UNESCAPED_PIPE.split(inner))


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(start + m.start(), start + m.end()) for m in _LINE.finditer(text[start:end]) if m.group().strip()]


def is_table(text: str) -> bool:
    """Whether every non-blank line of `text` is a pipe row (and there is one)."""
    lines = _lines(text, 0, len(text))
    return bool(lines) and all(is_row(text[s:e]) for s, e in lines)


def blocks(text: str) -> list[tuple[int, int, bool]]:
    """`text` cut into runs of whole lines: (start, end, is a table), in order, covering all of it."""
    runs: list[tuple[int, int, bool]] = []
    for match in re.finditer(r"[^\n]*\n?", text):
        if not match.group():
            continue
        table = is_row(match.group())
        if runs and runs[-1][2] == table:
            runs[-1] = (runs[-1][0], match.end(), table)
        else:
            runs.append((match.start(), match.end(), table))
    return runs


def tables(text: str, start: int = 0, end: int | None = None) -> list[PipeTable]:
    """The tables of the pipe lines in text[start:end] (other lines are skipped)."""
    lines = [(s, e) for s, e in _lines(text, start, len(text) if end is None else end) if is_row(text[s:e])]
    found: list[PipeTable] = []
    header: tuple[str, ...] | None = None
    rows: list[Row] = []
    first = lines[0][0] if lines else start
    last = first
    for index, (line_start, line_end) in enumerate(lines):
        line = text[line_start:line_end]
        if is_rule(line):
            continue
        heads = index + 1 < len(lines) and is_rule(text[lines[index + 1][0] : lines[index + 1][1]])
        row = Row(cells(line), line_start, line_end)
        if not heads:
            rows.append(row)
        elif row.cells != header:  # a new table; a repeated header goes on with the one before
            if rows or header is not None:
                found.append(PipeTable(header, tuple(rows), first, last))
            header, rows, first = row.cells, [], line_start
        last = line_end
    if rows or header is not None:
        found.append(PipeTable(header, tuple(rows), first, last))
    return found


def row_at(text: str, offset: int) -> tuple[PipeTable, Row] | None:
    """The table and body row whose line holds text[offset], if any."""
    for start, end, table in blocks(text):
        if table and start <= offset < end:
            for found in tables(text, start, end):
                for row in found.rows:
                    if row.start <= offset < row.end:
                        return found, row
    return None


def row_text(header: tuple[str, ...] | None, row: Row) -> str:
    """A row as one line: `Header: cell · Header: cell` (the header says what each cell is), empty cells left out."""
    if header is None:
        return CELL_SEPARATOR.join(cell for cell in row.cells if cell)
    named = zip(header, row.cells, strict=False)
    parts = [f"{name}: {cell}" if name else cell for name, cell in named if cell]
    return CELL_SEPARATOR.join([*parts, *(cell for cell in row.cells[len(header) :] if cell)])


def one_line(text: str, limit: int) -> str:
    """`text` on one line of at most about `limit` characters, "…" where it stops. Prose is cut between
    words; a table only between rows, each row written with its header (`row_text`), so no cell is cut
    and no value loses what it is. The first table row shown is kept whole even past `limit`."""
    pieces: list[tuple[str, bool]] = []  # (text, may be cut between words)
    for start, end, table in blocks(text):
        if not table:
            prose = " ".join(text[start:end].split())
            if prose:
                pieces.append((prose, True))
            continue
        for found in tables(text, start, end):
            pieces.extend((row_text(found.header, row), False) for row in found.rows)
            if not found.rows and found.header:
                pieces.append((CELL_SEPARATOR.join(found.header), False))
    shown = ""
    for number, (piece, cuttable) in enumerate(pieces):
        separator = "" if not shown else ROW_SEPARATOR if not pieces[number - 1][1] else " "
        if len(shown) + len(separator) + len(piece) <= limit:
            shown += separator + piece
        elif cuttable:
            words = _leading_words(piece, limit - len(shown) - len(separator) - 1, whole=not shown)
            return shown + (separator + words if words else "") + "…"
        else:
            return (shown or piece) + "…"
    return shown


def _leading_words(prose: str, room: int, *, whole: bool) -> str:
    """The words of `prose` that fit `room` characters; with nothing before them (`whole`), a first word too
    long for the room is cut rather than nothing shown."""
    if room <= 0:
        return ""
    if len(prose) > room and prose[room] == " ":
        return prose[:room]
    fitting = prose[:room].rsplit(" ", 1)[0] if " " in prose[:room] else ""
    return fitting or (prose[:room] if whole else "")
