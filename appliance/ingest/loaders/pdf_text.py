"""Turning one PDF page's extracted text into blocks: paragraphs, lists, tables, numbered headings.

Works on pypdf's layout-mode text, which keeps the page geometry on a character grid: vertical
gaps become blank lines (in proportion to the gap) and horizontal position becomes leading and
inner spaces. All of the rules below are heuristics, tuned to stay conservative:

- Paragraph breaks: the smallest gap on a page is ordinary line spacing (0 single-spaced, 1+ double-
  spaced), so any larger gap is a break. A gap equal to it is ambiguous (double-spaced text and
  one-line paragraphs look alike) and breaks only after a line that ends a sentence or did not wrap.
  Without a gap, a short line followed by a capitalised one also ends a paragraph (it is a heading
  or a paragraph's last line: wrapped lines are full).
- Lists: a line starting with a bullet or "1." starts an item; lines indented past the marker
  continue it; a line back at the marker's indentation ends the list.
- Tables: two or more lines with wide inner gaps (columns) in a row; columns are cut where every
  line of the run has spaces, rows at blank lines.
- Headings: a lone short line numbered like "2." or "4.1" whose neighbours are not the next/previous
  number at the same depth (that would be a numbered list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from appliance.ingest.document import BlockKind

from .common import collapse_whitespace, continued, pipe_table

_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
# Control characters other than tab and newline, and the soft hyphen: never meaningful text.
_JUNK = re.compile("[\x00-\x08\x0b-\x1f\x7f\u00ad]")
LIST_ITEM = re.compile(r"^(?:[•◦▪▫●○■□‣⁃∙·\-–—*]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])\s")
_PAGE_NUMBER = re.compile(r"^[\s\-–—]*(?:page\s+)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?[\s\-–—]*$", re.IGNORECASE)
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+(\S)")
_HEADING_NUMBER = re.compile(r"^\d{1,2}\.(?:\d{1,2}(?:\.\d{1,2}){0,3}\.?)?\s+[A-Z]")  # 2. / 4.1 / 4.1.
_MAX_HEADING_CHARS = 80
_COLUMN_GAP = re.compile(r"\S {3,}\S")
# A line shorter than this share of the page's longest line did not wrap: something ended there.
_SHORT_LINE = 0.6
# Body text wraps at 60+ characters; a page whose longest line is shorter holds no wrapped lines.
_FULL_LINE_MIN = 60
_SENTENCE_END = (".", "!", "?", ":")
# Lines whose type differs in size by this factor are not one paragraph.
_SIZE_STEP = 1.1


@dataclass(frozen=True)
class LineStyle:
    """The type a line is set in, where the text layer says (pdf_lines)."""

    size: float | None  # points
    bold: bool
    mono: bool = False  # a fixed-pitch font: code, a listing


@dataclass(frozen=True)
class PageBlock:
    kind: BlockKind
    text: str
    level: int = 0
    line_count: int = 1  # how many extracted lines it was made of
    style: LineStyle | None = None  # the type of its first line, when known
    uniform: bool = True  # every line of it is set in that type


@dataclass
class _Line:
    gap: int  # blank lines above it
    indent: int  # leading spaces: the horizontal position in layout mode
    raw: str  # as extracted, trailing spaces removed
    text: str  # whitespace collapsed
    style: LineStyle | None = None

    @property
    def is_item(self) -> bool:
        return bool(LIST_ITEM.match(self.text))

    @property
    def is_columnar(self) -> bool:
        return not self.is_item and bool(_COLUMN_GAP.search(self.raw.strip()))


@dataclass
class _Group:
    lines: list[_Line] = field(default_factory=list)
    list_indent: int | None = None  # the first item marker's indentation, for a list


def clean_page_text(text: str) -> str:
    return _JUNK.sub("", text.replace("\r\n", "\n").replace("\r", "\n").translate(_LIGATURES))


def _lines(text: str, styles: list[LineStyle | None] | None = None) -> list[_Line]:
    result: list[_Line] = []
    gap = 0
    for index, raw in enumerate(clean_page_text(text).expandtabs().split("\n")):
        collapsed = collapse_whitespace(raw)
        if not collapsed:
            gap += 1
            continue
        raw = raw.rstrip()
        style = styles[index] if styles is not None and index < len(styles) else None
        result.append(_Line(gap if result else 0, len(raw) - len(raw.lstrip()), raw, collapsed, style))
        gap = 0
    return result


def _table_end(lines: list[_Line], start: int) -> int:
    """Index after the table run starting at `start` (== start when there is no table there)."""
    end = start
    while end < len(lines):
        line = lines[end]
        wrapped_cell = line.gap == 0 and end > start and (line.indent > 0 or _next_columnar(lines, end))
        if not (line.is_columnar or wrapped_cell):
            break
        end += 1
    columnar = sum(1 for line in lines[start:end] if line.is_columnar)
    return end if columnar >= 2 else start


def _code_end(lines: list[_Line], start: int) -> int:
    """Index after the run of fixed-pitch lines starting at `start` (== start when there is none)."""
    end = start
    while end < len(lines) and lines[end].style is not None and lines[end].style.mono:  # type: ignore[union-attr]
        if end > start and lines[end].gap > 1:
            break
        end += 1
    return end


def _render_code(lines: list[_Line]) -> str:
    """Fixed-pitch lines as written: their spaces and relative indentation kept."""
    indent = min(line.indent for line in lines)
    rows: list[str] = []
    for line in lines:
        rows += [""] * min(line.gap, 1) if rows else []
        rows.append(line.raw[indent:])
    return "\n".join(rows)


def _next_columnar(lines: list[_Line], index: int) -> bool:
    return index + 1 < len(lines) and lines[index + 1].is_columnar


def _render_table(lines: list[_Line]) -> str:
    width = max(len(line.raw) for line in lines)
    padded = [line.raw.ljust(width) for line in lines]
    blank = [all(row[col] == " " for row in padded) for col in range(width)]
    spans: list[tuple[int, int]] = []  # column character ranges, split at 2+ all-blank columns
    col = 0
    while col < width:
        if blank[col]:
            col += 1
            continue
        start = col
        while col < width and not (blank[col] and (col + 1 >= width or blank[col + 1])):
            col += 1
        spans.append((start, col))
    has_gaps = any(line.gap for line in lines[1:])
    rows: list[list[list[str]]] = []
    for index, line in enumerate(lines):
        if not rows or not has_gaps or line.gap:
            rows.append([[] for _ in spans])
        for cell, (start, end) in zip(rows[-1], spans, strict=True):
            cell.append(padded[index][start:end])
    return pipe_table([[" ".join(parts) for parts in row] for row in rows])


def _join_lines(lines: list[_Line]) -> str:
    text = lines[0].text
    for line in lines[1:]:
        if line.is_item:
            nested = line.indent > lines[0].indent + 1  # a sub-item, further right than the first
            text += "\n" + ("  " if nested else "") + line.text
        else:
            text = continued(text, line.text)
    return text


def _same_bullet(first: _Line, line: _Line) -> bool:
    marker = first.text[:1]
    return line.is_item and not marker.isalnum() and marker != "(" and line.text[:1] == marker


def _looks_like_heading(text: str) -> bool:
    """Short, numbered like a section ("2. Scope", "4.1 Detectors"), not ending like a sentence."""
    return (
        len(text) <= _MAX_HEADING_CHARS
        and _HEADING_NUMBER.match(text) is not None
        and not text.endswith((".", ";", ",", ":"))
    )


def _restarts_numbering(group: _Group, line: _Line) -> bool:
    """'2. Steps' then '1. Open the valve': the first line was a heading, not the list's first item."""
    items = [_numbering(item.text) for item in group.lines if item.is_item]
    last, number = items[-1] if items else None, _numbering(line.text)
    if last is None or number is None or len(last) != len(number):
        return False
    return not _adjacent_number(last, number)


def _starts_block(group: _Group, line: _Line, usual_gap: int, short: float, layout: bool) -> bool:
    if not group.lines:
        return True
    previous = group.lines[-1]
    if _size_changes(previous, line):
        return True  # a title over its subtitle, a heading over its text: type set apart is a block
    if line.gap > usual_gap:
        # Bullets spaced apart are still one list; numbered lines after a gap may be headings, unless the
        # type says otherwise: the next number, set like the item before it, is the list's next item.
        if group.list_indent is None:
            return True
        return not (_same_bullet(group.lines[0], line) or _next_item_alike(group, line))
    if group.list_indent is not None:
        if line.is_item:
            # "12. References" then "- SOP-FLT-002 ...": bullets under a numbered heading.
            under_heading = len(group.lines) == 1 and _looks_like_heading(previous.text)
            return _restarts_numbering(group, line) or (under_heading and _numbering(line.text) is None)
        # Inside a list: indented past the marker continues the item; back at the margin ends it.
        if layout:
            return line.indent <= group.list_indent
        return previous.text.endswith(_SENTENCE_END) and line.text[:1].isupper()
    if line.is_item:
        return True
    unwrapped = len(previous.text) < short
    if line.gap > 0 and (unwrapped or previous.text.endswith(_SENTENCE_END)):
        return True
    return unwrapped and line.text[:1].isupper()


def _next_item_alike(group: _Group, line: _Line) -> bool:
    items = [item for item in group.lines if item.is_item]
    last = items[-1] if items else None
    return (
        last is not None
        and last.style is not None
        and last.style == line.style
        and line.indent == last.indent
        and _adjacent_number(_numbering(last.text), _numbering(line.text))
    )


def _size_changes(previous: _Line, line: _Line) -> bool:
    before, after = previous.style, line.style
    if before is None or after is None or before.size is None or after.size is None:
        return False
    return max(before.size, after.size) >= _SIZE_STEP * min(before.size, after.size)


def _paragraphs(lines: list[_Line], layout: bool) -> list[PageBlock]:
    usual_gap = min((line.gap for line in lines[1:]), default=0)
    short = _SHORT_LINE * max(_FULL_LINE_MIN, *(len(line.text) for line in lines))
    blocks: list[PageBlock] = []
    group = _Group()

    def close() -> None:
        if group.lines:
            text = _join_lines(group.lines)
            kind: BlockKind = "list" if group.list_indent is not None else "paragraph"
            if not _PAGE_NUMBER.match(text):
                style = group.lines[0].style
                uniform = all(line.style == style for line in group.lines)
                blocks.append(PageBlock(kind, text, line_count=len(group.lines), style=style, uniform=uniform))
        group.lines.clear()
        group.list_indent = None

    index = 0
    while index < len(lines):
        end = _code_end(lines, index)
        if end > index:
            close()
            blocks.append(PageBlock("code", _render_code(lines[index:end]), line_count=end - index))
            index = end
            continue
        end = _table_end(lines, index)
        if end > index:
            close()
            blocks.append(PageBlock("table", _render_table(lines[index:end])))
            index = end
            continue
        line = lines[index]
        if _starts_block(group, line, usual_gap, short, layout):
            close()
            if line.is_item:
                group.list_indent = line.indent
        group.lines.append(line)
        index += 1
    close()
    return blocks


def _numbering(text: str) -> tuple[int, ...] | None:
    match = _NUMBERED.match(text)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def _adjacent_number(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> bool:
    """True when b is the number right after a at the same depth (2 -> 3, 4.1 -> 4.2)."""
    return a is not None and b is not None and len(a) == len(b) and a[:-1] == b[:-1] and b[-1] == a[-1] + 1


def _mark_headings(blocks: list[PageBlock]) -> list[PageBlock]:
    # First-line numbers only: a section's steps often end at n-1 just before heading "n. Title".
    numbers = [_numbering(block.text) for block in blocks]
    result = []
    for index, block in enumerate(blocks):
        number = numbers[index]
        before = numbers[index - 1] if index > 0 else None
        after = numbers[index + 1] if index + 1 < len(numbers) else None
        is_heading = (
            block.line_count == 1
            and number is not None
            and block.kind in ("paragraph", "list")
            and _looks_like_heading(block.text)
            and not _adjacent_number(before, number)
            and not _adjacent_number(number, after)
        )
        if is_heading and number is not None:
            result.append(PageBlock("heading", block.text, len(number)))
        else:
            result.append(PageBlock(block.kind, block.text))
    return result


def page_blocks(
    text: str, *, layout: bool = True, styles: list[LineStyle | None] | None = None, headings: bool = True
) -> list[PageBlock]:
    """Blocks of one page in reading order; bare page numbers ('3', 'Page 3 of 9') are dropped.

    `layout` says the text is layout text (indentation and columns are meaningful); `styles` gives the type
    of each of its lines where known. With `headings` off, numbered lines are left to the document's own
    heading rules (pdf_headings) instead of this page's.
    """
    lines = _lines(text, styles)
    if not lines:
        return []
    blocks = _paragraphs(lines, layout)
    return _mark_headings(blocks) if headings else blocks
