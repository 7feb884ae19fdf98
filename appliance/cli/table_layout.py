"""Pipe tables printed in a terminal: columns padded and aligned, within the terminal's width.

A table that fits is printed with each column as wide as its widest cell. A wider one has its widest
columns narrowed until it fits, their cells wrapped between words (continuation lines stay in their
column, and a rule separates the rows so a wrapped row reads as one). A table whose columns cannot all
be as wide as their longest word (an identifier split over two lines is misread) is printed a row at
a time instead, each cell after its header's name. No cell is ever cut short: a narrowed cell only wraps.
"""

from __future__ import annotations

import shutil
import textwrap
import unicodedata
from collections.abc import Callable

from appliance.text.pipe_tables import PipeTable, tables

MIN_COLUMN = 8  # narrowest column worth wrapping into
LONG_WORD = 24  # a word longer than this (a URL, a path) may be broken across lines
GAP = " | "
CROSS = "-+-"
FALLBACK_WIDTH = 100  # when the output is not a terminal and COLUMNS is unset


def terminal_width() -> int:
    return shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: wide East Asian characters 2, combining marks 0."""
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text
    )


def table_lines(text: str, width: int, header: Callable[[str], str] = str) -> list[str]:
    """Every table of the pipe lines in `text`, laid out within `width` columns, a blank line between two
    tables; `header` styles the header lines (bold in a terminal)."""
    lines: list[str] = []
    for table in tables(text):
        if lines:
            lines.append("")
        lines.extend(aligned(table, width, header))
    return lines


def aligned(table: PipeTable, width: int, header: Callable[[str], str] = str) -> list[str]:
    """One table as aligned lines of at most `width` columns (see the module docstring)."""
    columns = table.columns
    head = _padded(table.header, columns) if table.header is not None else None
    rows = [_padded(row.cells, columns) for row in table.rows]
    by_column = list(zip(*[*([head] if head else []), *rows], strict=True))
    natural = [max(display_width(cell) for cell in column) for column in by_column]
    floors = [min(natural[i], max(MIN_COLUMN, _longest_word(column))) for i, column in enumerate(by_column)]
    widths = _fitted(natural, floors, width - len(GAP) * (columns - 1))
    if widths is None:
        return _records(head, rows, width, header)
    rule = CROSS.join("-" * w for w in widths)
    lines: list[str] = []
    if head is not None:
        lines.extend(header(line) for line in _row_lines(head, widths))
        lines.append(rule)
    for number, row in enumerate(rows):
        if number and widths != natural:
            lines.append(rule)  # a wrapped row reads as one
        lines.extend(_row_lines(row, widths))
    return lines


def _padded(cells: tuple[str, ...], columns: int) -> tuple[str, ...]:
    return cells + ("",) * (columns - len(cells))


def _longest_word(cells: tuple[str, ...]) -> int:
    """The longest word of a column, up to LONG_WORD: narrower, a column would cut words (VLV-3042-B) in two."""
    return min(max((display_width(word) for cell in cells for word in cell.split()), default=0), LONG_WORD)


def _fitted(natural: list[int], floors: list[int], room: int) -> list[int] | None:
    """Column widths summing to at most `room`, none below its floor, or None when the floors do not fit:
    every column over a common cap is cut down to it, the cap as high as fits (the narrow columns keep
    their width, the wide ones share the rest)."""
    if sum(natural) <= room:
        return natural
    if sum(floors) > room:
        return None
    low, high = 0, max(natural)
    while low < high:
        cap = (low + high + 1) // 2
        if sum(max(f, min(w, cap)) for w, f in zip(natural, floors, strict=True)) <= room:
            low = cap
        else:
            high = cap - 1
    widths = [max(f, min(w, low)) for w, f in zip(natural, floors, strict=True)]
    spare = room - sum(widths)
    for index, w in enumerate(natural):  # what the cap leaves over goes to the first wide columns
        extra = min(spare, w - widths[index])
        widths[index] += extra
        spare -= extra
    return widths


def _wrapped(cell: str, width: int) -> list[str]:
    if display_width(cell) <= width:
        return [cell]
    return textwrap.wrap(cell, width, break_on_hyphens=False) or [""]


def _row_lines(cells: tuple[str, ...], widths: list[int]) -> list[str]:
    pieces = [_wrapped(cell, w) for cell, w in zip(cells, widths, strict=True)]
    height = max(len(piece) for piece in pieces)
    lines = []
    for line in range(height):
        texts = [piece[line] if line < len(piece) else "" for piece in pieces]
        while len(texts) > 1 and not texts[-1]:  # no separator dangling after the last cell with words
            texts.pop()
        parts = [text + " " * (w - display_width(text)) for text, w in zip(texts, widths, strict=False)]
        lines.append(GAP.join(parts).rstrip())
    return lines


def _records(
    head: tuple[str, ...] | None, rows: list[tuple[str, ...]], width: int, header: Callable[[str], str]
) -> list[str]:
    """A table too wide for the terminal: each row as `Header: cell` lines, a blank line between rows."""
    names = [f"{name}: " if name else "" for name in head] if head is not None else [""] * len(rows[0] if rows else ())
    lines: list[str] = []
    for number, row in enumerate(rows):
        if number:
            lines.append("")
        for name, cell in zip(names, row, strict=True):
            if not cell:
                continue
            text = textwrap.wrap(cell, max(width - len(name), MIN_COLUMN), break_on_hyphens=False) or [""]
            lines.append(header(name) + text[0] if name else text[0])
            lines.extend(" " * len(name) + more for more in text[1:])
    return lines
