"""Small helpers shared by several loaders: titles, whitespace, tables as pipe-table text."""

from __future__ import annotations

import re
from collections.abc import Sequence

# A first line longer than this is prose, not a title.
MAX_TITLE_CHARS = 100

_STEM_SEPARATORS = re.compile(r"[\s_\-.]+")


def collapse_whitespace(text: str) -> str:
    """Inline text as a reader sees it: runs of whitespace (newlines included) become one space."""
    return " ".join(text.split())


def title_from_stem(stem: str) -> str:
    """'pump-maintenance_SOP' -> 'pump maintenance SOP'; the last resort when a document has no title."""
    words = _STEM_SEPARATORS.sub(" ", stem).strip()
    return words or stem


def short_line_title(text: str) -> str | None:
    """The first non-empty line of `text` if it is short enough to be a title, else None."""
    for line in text.split("\n"):
        line = collapse_whitespace(line)
        if line:
            return line if len(line) < MAX_TITLE_CHARS else None
    return None


def _cell(text: str) -> str:
    return collapse_whitespace(text).replace("|", "\\|")


def pipe_table(rows: Sequence[Sequence[str]]) -> str:
    """Render rows as a Markdown pipe table (first row as header); '' if every cell is empty.

    One textual table format for every loader, so the chunker treats HTML, DOCX and Markdown
    tables alike.
    """
    cleaned = [[_cell(cell) for cell in row] for row in rows if row]
    if not any(cell for row in cleaned for cell in row):
        return ""
    width = max(len(row) for row in cleaned)
    lines = []
    for index, row in enumerate(cleaned):
        padded = row + [""] * (width - len(row))
        lines.append("| " + " | ".join(padded) + " |")
        if index == 0:
            lines.append("|" + " --- |" * width)
    return "\n".join(lines)
