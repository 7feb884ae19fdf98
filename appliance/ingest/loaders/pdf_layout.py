"""A page's flows of lines written out as layout text: the form the page's block reader (pdf_text) reads.

Layout text keeps the page's geometry on a character grid, as pypdf's layout mode does: a segment
starts at the column its x position falls on (so indentation and table columns show), cells stay at
least three spaces apart, and a vertical gap wider than the page's usual line pitch becomes blank lines.
Flows are separated by two blank lines, so that a column or a box never runs into the text before it.
Beside the text comes each line's type (size, bold), line for line, for the heading rules.
"""

from __future__ import annotations

import itertools
import statistics
from collections import Counter

from .pdf_columns import Flow
from .pdf_lines import PdfLine
from .pdf_text import LineStyle

_CELL_SPACES = 3
_MIN_SEGMENT_CHARS = 8  # segments this long give the page's character width
_FLOW_BREAK = 2  # blank lines between flows
_WIDER = 1.25  # a line gap this many times the usual pitch is a paragraph gap
_LEADING = 1.2  # a line's usual pitch, in sizes of its type
_MIN_PITCH = 0.9  # baselines closer than this (in sizes of their type) are not consecutive lines of text


def layout_text(flows: list[Flow]) -> tuple[str, list[LineStyle | None]]:
    """(layout text, the style of each of its lines: None for blank lines)."""
    lines = [line for flow in flows for line in flow.lines]
    if not lines:
        return "", []
    width = _char_width(lines)
    pitch = _pitch(flows)
    rows: list[str] = []
    styles: list[LineStyle | None] = []
    for number, flow in enumerate(flows):
        if not flow.lines:
            continue
        if number and rows:
            rows += [""] * _FLOW_BREAK
            styles += [None] * _FLOW_BREAK
        origin = min(line.left for line in flow.lines)
        previous: PdfLine | None = None
        for line in flow.lines:
            if previous is not None:
                # Larger type is set on a wider pitch: its lines are as close as the body's, for a reader.
                usual = max(pitch, _LEADING * min(previous.size or 0.0, line.size or 0.0))
                blanks = _blank_lines(previous.baseline - line.baseline, usual)
                rows += [""] * blanks
                styles += [None] * blanks
            rows.append(_row(line, origin, width))
            styles.append(LineStyle(line.size, line.bold, line.mono))
            previous = line
    return "\n".join(rows), styles


def _row(line: PdfLine, origin: float, width: float) -> str:
    text = ""
    for segment in line.segments:
        column = max(0, round((segment.left - origin) / width))
        if text:
            column = max(column, len(text) + _CELL_SPACES)
        text = text.ljust(column) + segment.text
    return text


def _char_width(lines: list[PdfLine]) -> float:
    widths = [
        (segment.right - segment.left) / len(segment.text)
        for line in lines
        for segment in line.segments
        if len(segment.text) >= _MIN_SEGMENT_CHARS
    ]
    if not widths:
        widths = [(s.right - s.left) / max(1, len(s.text)) for line in lines for s in line.segments]
    return max(statistics.median(widths), 0.5)


def _pitch(flows: list[Flow]) -> float:
    """The page's usual distance between baselines (its single line spacing)."""
    gaps: Counter[float] = Counter()
    for flow in flows:
        for above, below in itertools.pairwise(flow.lines):
            gap = above.baseline - below.baseline
            size = min(above.size or 0.0, below.size or 0.0)
            if gap >= _MIN_PITCH * size and gap > 0:  # not the staggered lines of a table's cells
                gaps[round(gap * 2) / 2] += 1
    if not gaps:
        return 12.0
    top = gaps.most_common(1)[0][1]
    # The smallest gap nearly as common as the commonest: single spacing, where lists are spaced wider.
    return min(gap for gap, count in gaps.items() if count >= 0.5 * top)


def _blank_lines(gap: float, pitch: float) -> int:
    if gap < _WIDER * pitch:
        return 0
    return max(1, round(gap / pitch - 1))
