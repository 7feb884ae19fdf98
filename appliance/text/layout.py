"""The layout of a section's text as an operator reads it: steps, list items, warnings, tables, code.

An answer shows the SOP's own text, item by item, each with its citation. An item is what an
operator acts on or must read as one piece: a numbered step with its wrapped lines and nothing of
the next step, a bullet, a whole table, a whole code block, a paragraph. A line that opens with a
signal word (WARNING, CAUTION, DANGER, HOLD POINT, NOTE…) is marked as such, inside a list or out of
it, so the page can set it apart; its words are never changed.

The loaders write lists as "1. …" / "- …" lines (Markdown, HTML, DOCX) and PDFs keep the numbers as
printed, so the markers read here are the same for every format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from appliance.text.sentences import fenced_blocks

ItemKind = Literal["step", "item", "text", "table", "code", "warning", "caution", "hold", "note"]

# A numbered step (1. 1) a. a) i.) or "Step 3:"; a bullet.
_NUMBERED = re.compile(
    r"[ \t]*(?:\d{1,3}(?:\.\d{1,3})*[.)]|[A-Za-z][.)]|\(?[ivx]{1,4}\)|step\s+\d{1,3}\s*[:.)-])[ \t]+(?=\S)", re.I
)
_BULLET = re.compile(r"[ \t]*[-*+•▪◦‣][ \t]+(?=\S)")
_TABLE_LINE = re.compile(r"[ \t]*\|")
# The signal words of procedures (ANSI Z535, ISO 3864, the plants' "hold point"), with or without
# Markdown emphasis and a colon: in capitals, in bold, or as a label ("Warning:"). "Note that…" in
# running text is no signal.
_SIGNAL = re.compile(
    r"[ \t]*(?:[-*+•]\s+|\d{1,3}[.)]\s+)?(?:\*\*|__)?\s*(?P<word>DANGER|WARNING|CAUTION|HOLD POINT|HOLD|STOP|"
    r"NOTE|IMPORTANT|ATTENTION)\b(?:\*\*|__)?\s*[:!.\-–—]"
    r"|[ \t]*(?:[-*+•]\s+|\d{1,3}[.)]\s+)?(?:\*\*|__)(?P<bold>Danger|Warning|Caution|Hold point|Note|Important)"
    r"\b[:.!]?(?:\*\*|__)"
    r"|[ \t]*(?:[-*+•]\s+|\d{1,3}[.)]\s+)?(?P<title>Danger|Warning|Caution|Hold point|Note|Important)\s*:",
)
_SIGNAL_KIND: dict[str, ItemKind] = {
    "danger": "warning",
    "warning": "warning",
    "stop": "warning",
    "caution": "caution",
    "attention": "caution",
    "hold point": "hold",
    "hold": "hold",
    "note": "note",
    "important": "note",
}
_SENTENCE_END = re.compile(r"[.!?:;)\]]\s*$")


@dataclass(frozen=True)
class TextItem:
    """text[start:end] of the laid-out text: one item, stripped of surrounding blank lines."""

    kind: ItemKind
    start: int
    end: int
    level: int = 0  # nesting of a list item (its indent, two spaces a level)
    numbered: bool = False  # a numbered step or sub-step, as opposed to a bullet or a paragraph


def list_marker(line: str) -> tuple[bool, int] | None:
    """(numbered?, indent) when `line` opens a list item, else None."""
    match = _NUMBERED.match(line) or _BULLET.match(line)
    if match is None:
        return None
    indent = len(line) - len(line.lstrip(" \t"))
    return match.re is _NUMBERED, indent


def signal_kind(text: str) -> ItemKind | None:
    """The signal word an item opens with (WARNING, CAUTION, HOLD POINT, NOTE…), as an item kind."""
    match = _SIGNAL.match(text)
    if match is None:
        return None
    word = (match.group("word") or match.group("bold") or match.group("title") or "").lower()
    return _SIGNAL_KIND.get(word)


def ends_sentence(text: str) -> bool:
    return bool(_SENTENCE_END.search(text))


def layout_items(text: str) -> list[TextItem]:
    """The items of `text` in order: fenced code whole, tables whole, list items with their wrapped
    lines, paragraphs; blank lines separate blocks."""
    items: list[TextItem] = []
    fences = fenced_blocks(text)
    position = 0
    for fence_start, fence_end in [*fences, (len(text), len(text))]:
        items.extend(_blocks(text, position, fence_start))
        if fence_end > fence_start:
            items.append(TextItem("code", *_stripped(text, fence_start, fence_end)))
        position = fence_end
    return [item for item in items if item.end > item.start]


def _stripped(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _blocks(text: str, start: int, end: int) -> list[TextItem]:
    items: list[TextItem] = []
    for match in re.finditer(r"(?:[^\n]|\n(?![ \t]*\n))+", text[start:end]):
        block_start, block_end = _stripped(text, start + match.start(), start + match.end())
        if block_end > block_start:
            items.extend(_block_items(text, block_start, block_end))
    return items


def _block_items(text: str, start: int, end: int) -> list[TextItem]:
    """One block (no blank line inside): a table, a list, or a paragraph (which may end in a list)."""
    lines = [(m.start() + start, m.end() + start) for m in re.finditer(r"[^\n]+", text[start:end])]
    if all(_TABLE_LINE.match(text[s:e]) for s, e in lines):
        return [TextItem("table", start, end)]
    items: list[TextItem] = []
    current: tuple[int, int, bool, int, str] | None = None  # start, end, numbered, level, kind
    for line_start, line_end in lines:
        line = text[line_start:line_end]
        marker = list_marker(line)
        table_line = _TABLE_LINE.match(line) is not None
        continues = current is not None and marker is None and (table_line == (current[4] == "table"))
        if current is not None and continues:
            current = (current[0], line_end, current[2], current[3], current[4])
            continue
        if current is not None:
            items.append(_item(text, *current))
        numbered, indent = marker if marker is not None else (False, 0)
        kind = "table" if table_line else "text" if marker is None else "step" if numbered else "item"
        current = (line_start, line_end, numbered, indent // 2, kind)
    if current is not None:
        items.append(_item(text, *current))
    return items


def _item(text: str, start: int, end: int, numbered: bool, level: int, kind: str) -> TextItem:
    start, end = _stripped(text, start, end)
    signal = signal_kind(text[start:end]) if kind in ("step", "item", "text") else None
    final: ItemKind = signal or kind  # type: ignore[assignment]
    return TextItem(final, start, end, level, numbered)
