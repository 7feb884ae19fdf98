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


# A line that ends in a hyphen straight after a letter or digit: a word or a tag broken at the line end;
# the word's letters before the hyphen (and what precedes them in the token), the next line's first letters.
_BROKEN_AT_HYPHEN = re.compile(r"[^\W_]-$")
_LAST_WORD = re.compile(r"(\S*?)([^\W\d_]+)-$")
_FIRST_LETTERS = re.compile(r"[^\W\d_]+")


def continued(text: str, line: str) -> str:
    """`text` followed by the next wrapped line: a space between them, except where the line end broke
    a word at a hyphen. The hyphen stays where it is the word's own: a tag ("RWTP-F-" + "051" ->
    "RWTP-F-051"), a compound ("point-of-" + "use", "light-" + "load": joined, no English word); it
    goes where software hyphenated a word ("mainte-" + "nance" -> "maintenance", "opera-" + "tor")."""
    if not text or not line:
        return text or line
    if _BROKEN_AT_HYPHEN.search(text) and line[0].isalnum():
        return text[:-1] + line if _hyphenated(text, line) else text + line
    return f"{text} {line}"


def _hyphenated(text: str, line: str) -> bool:
    """Whether the hyphen ending `text` is one that hyphenation put there (see `continued`)."""
    before, after = _LAST_WORD.search(text), _FIRST_LETTERS.match(line)
    if before is None or after is None or not line[0].islower() or "-" in before.group(1):
        return False  # a tag, a capital or digit after the break, or a compound's second hyphen
    from appliance.text.english import english_words

    return english_words().knows(before.group(2) + after.group(0))


def joined_lines(lines: Sequence[str]) -> str:
    """A wrapped cell's lines as one line (see `continued`)."""
    text = ""
    for line in lines:
        text = continued(text, collapse_whitespace(line))
    return text


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
