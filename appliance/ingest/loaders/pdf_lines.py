"""A PDF page's text as lines with their place and type: pdfium's characters grouped by baseline.

pdfium reports, for each character of a page's text layer, its box, its baseline origin, its font size
and its font; and it marks the spaces it inferred between words (pypdf's layout mode often runs words
together where a word processor set its spaces as gaps, "Identifytoolsand remediation"). Characters on
one baseline are one visual line whatever order the content stream drew them in; a wide gap cuts a line
into segments (table cells, columns, a box beside the text). Each line keeps the size and weight most
of its characters are set in, which is what a reader sees as a heading.

Text drawn at an angle (a stamp, a margin note) is set apart: it is page furniture, not body text. A
character drawn twice at the same place (a word processor's fake bold) is read once.
"""

from __future__ import annotations

import ctypes
import itertools
import math
import re
import statistics
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

# A gap this many ems wide between two characters of a line cuts it into segments (cells, columns).
SEGMENT_GAP_EM = 1.2
# A gap that many times the line's usual word space, and at least _MIN_CUT_EM, also cuts it (where the line
# has _MIN_SPACES word spaces to tell the usual one).
_STANDS_OUT = 3.0
_MIN_CUT_EM = 0.8
_MIN_SPACES = 3
# A gap this wide (ems) between the advance boxes of two characters is a word space even where pdfium
# inferred none (a word processor that positions words instead of writing spaces).
_SPACE_GAP_EM = 0.2
# Characters whose baselines differ by less than this (ems) are on one line (super- and subscripts too).
_SAME_LINE_EM = 0.5
# A font size pdfium reports at or below this is none (generated characters, broken font tables).
_NO_SIZE = 1.0
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demibold|demi\b|extrabold", re.IGNORECASE)
_FORCE_BOLD_FLAG = 1 << 18
_FIXED_PITCH_FLAG = 1 << 0
_MONO_NAME = re.compile(r"courier|mono|consol|menlo|typewriter|fixed", re.IGNORECASE)
# A lone list marker before a wide gap ("•      Open the valve") belongs to the text after it.
_MARKER = re.compile(r"^(?:[•◦▪▫●○■□‣⁃∙·\-–—*➢►✓]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)]|\(?[ivxIVX]{1,4}[.)])$")
_BOLD_WEIGHT = 600
_ANGLE_TOLERANCE = 0.05  # radians
# Symbol and Wingdings bullets that word processors write as private-use characters: a bullet to a reader.
_PRIVATE_BULLETS = frozenset({0xF0B7, 0xF0A7, 0xF076, 0xF0D8, 0xF0FC, 0xF0A8, 0xF06E, 0xF0E0, 0xF0B2, 0xF0A1, 0xF0D2})


@dataclass(frozen=True)
class Segment:
    """A run of a line's text with no wide gap inside, and the type most of its characters are set in."""

    left: float
    right: float
    text: str
    size: float | None  # points; None when the file gives none
    bold: bool
    mono: bool = False  # set in a fixed-pitch font (code, a terminal's output)


@dataclass(frozen=True)
class PdfLine:
    """One visual line: its segments left to right, its vertical place (PDF points, larger is higher)."""

    segments: tuple[Segment, ...]
    baseline: float
    top: float
    bottom: float

    @property
    def text(self) -> str:
        return " ".join(segment.text for segment in self.segments)

    @property
    def left(self) -> float:
        return self.segments[0].left

    @property
    def right(self) -> float:
        return self.segments[-1].right

    @property
    def size(self) -> float | None:
        """The size most of its characters are set in."""
        sizes: Counter[float] = Counter()
        for segment in self.segments:
            if segment.size is not None:
                sizes[segment.size] += len(segment.text)
        return sizes.most_common(1)[0][0] if sizes else None

    @property
    def bold(self) -> bool:
        bold = sum(len(segment.text) for segment in self.segments if segment.bold)
        return bold * 2 > sum(len(segment.text) for segment in self.segments)

    @property
    def mono(self) -> bool:
        return all(segment.mono for segment in self.segments)

    def part(self, segments: tuple[Segment, ...]) -> PdfLine:
        """The same line with only these of its segments (a column's share of it)."""
        return PdfLine(segments, self.baseline, self.top, self.bottom)


@dataclass
class PageLines:
    width: float
    height: float
    lines: list[PdfLine] = field(default_factory=list)  # top to bottom
    rotated: list[str] = field(default_factory=list)  # text set at an angle: stamps, margin notes
    sizes_missing: bool = False  # the font table gave no sizes: sizes are read from the glyph boxes


@dataclass
class _Glyph:
    char: str
    left: float
    right: float
    baseline: float
    top: float
    bottom: float
    size: float
    bold: bool
    mono: bool
    space_before: bool


class _Fonts:
    """(bold, fixed pitch) of a character's font, cached per font (pdfium returns one handle per font)."""

    def __init__(self) -> None:
        self._kind: dict[int, tuple[bool, bool]] = {}

    def kind(self, raw: Any, textpage: Any, index: int) -> tuple[bool, bool]:
        obj = raw.FPDFText_GetTextObject(textpage, index)
        if not obj:
            return False, False
        font = raw.FPDFTextObj_GetFont(obj)
        key = ctypes.cast(font, ctypes.c_void_p).value or 0
        if key not in self._kind:
            self._kind[key] = _font_kind(raw, font)
        return self._kind[key]


def _font_kind(raw: Any, font: Any) -> tuple[bool, bool]:
    if not font:
        return False, False
    flags = ctypes.c_int(0)
    if not raw.FPDFFont_GetFlags(font, ctypes.byref(flags)):
        flags.value = 0
    name = ""
    length = raw.FPDFFont_GetBaseFontName(font, None, 0)
    if length > 0:
        buffer = ctypes.create_string_buffer(length)
        raw.FPDFFont_GetBaseFontName(font, buffer, length)
        name = buffer.value.decode("latin-1", "replace")
    bold = (
        raw.FPDFFont_GetWeight(font) >= _BOLD_WEIGHT
        or bool(flags.value & _FORCE_BOLD_FLAG)
        or bool(_BOLD_NAME.search(name))
    )
    mono = bool(flags.value & _FIXED_PITCH_FLAG) or bool(_MONO_NAME.search(name))
    return bold, mono


def page_lines(page: Any, textpage: Any) -> PageLines:
    """The lines of a pypdfium2 page (and its text page), top to bottom."""
    import pypdfium2.raw as raw

    width, height = page.get_size()
    result = PageLines(width, height)
    glyphs, rotated, sizes_missing = _glyphs(raw, textpage.raw)
    result.rotated = rotated
    result.sizes_missing = sizes_missing
    result.lines = _lines(glyphs)
    return result


def _glyphs(raw: Any, textpage: Any) -> tuple[list[_Glyph], list[str], bool]:
    fonts = _Fonts()
    glyphs: list[_Glyph] = []
    rotated: list[str] = []
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    origin_x, origin_y = ctypes.c_double(), ctypes.c_double()
    loose = raw.FS_RECTF()
    matrix = raw.FS_MATRIX()
    space = False
    sized = unsized = 0
    for index in range(raw.FPDFText_CountChars(textpage)):
        code = raw.FPDFText_GetUnicode(textpage, index)
        if code in (10, 13):
            space = True
            continue
        char = "-" if code == 2 else chr(code)  # pdfium's mark for a hyphen that ended a line
        if char.isspace() or code == 0:
            space = True
            continue
        if unicodedata.category(char) in ("Co", "Cn", "Cc", "Cs"):
            if code not in _PRIVATE_BULLETS:
                continue  # a symbol font's private glyph (a figure's label font): no text a reader sees
            char = "•"
        if raw.FPDFText_IsGenerated(textpage, index):
            continue
        angle = raw.FPDFText_GetCharAngle(textpage, index)
        if angle > _ANGLE_TOLERANCE and abs(angle - 2 * math.pi) > _ANGLE_TOLERANCE:
            rotated.append(char)
            continue
        raw.FPDFText_GetCharBox(textpage, index, left, right, bottom, top)
        raw.FPDFText_GetCharOrigin(textpage, index, origin_x, origin_y)
        raw.FPDFText_GetLooseCharBox(textpage, index, loose)
        # The size set with the font (Tf) times the text matrix's vertical scale: a page that sets 1-point
        # type and scales it by 10 (common in layout programs) is set in 10 points.
        size = raw.FPDFText_GetFontSize(textpage, index)
        if raw.FPDFText_GetMatrix(textpage, index, matrix):
            size *= math.hypot(matrix.c, matrix.d)
        if size > _NO_SIZE:
            sized += 1
        else:
            unsized += 1
            size = max(loose.top - loose.bottom, top.value - bottom.value, 0.0)
        bold, mono = fonts.kind(raw, textpage, index)
        glyph = _Glyph(
            char,
            loose.left if loose.right > loose.left else left.value,  # the advance box: words have no gaps
            loose.right if loose.right > loose.left else right.value,
            origin_y.value,
            max(loose.top, top.value),
            min(loose.bottom, bottom.value),
            size,
            bold,
            mono,
            space,
        )
        space = False
        previous = glyphs[-1] if glyphs else None
        if (
            previous is not None
            and previous.char == glyph.char
            and abs(previous.left - glyph.left) < 1.0
            and abs(previous.baseline - glyph.baseline) < 1.0
        ):
            continue  # drawn twice at one place: a fake bold
        glyphs.append(glyph)
    if rotated:
        rotated = ["".join(rotated)]
    return glyphs, rotated, unsized > sized


def _lines(glyphs: list[_Glyph]) -> list[PdfLine]:
    ordered = sorted(glyphs, key=lambda g: -g.baseline)
    groups: list[list[_Glyph]] = []
    for glyph in ordered:
        if groups:
            line = groups[-1]
            em = max(glyph.size, line[0].size) or 1.0
            if abs(line[0].baseline - glyph.baseline) < _SAME_LINE_EM * em:
                line.append(glyph)
                continue
        groups.append([glyph])
    return [_line(sorted(group, key=lambda g: g.left)) for group in groups]


def _line(glyphs: list[_Glyph]) -> PdfLine:
    sizes = Counter(_size_key(g.size) for g in glyphs)
    size = sizes.most_common(1)[0][0]
    baseline = Counter(round(g.baseline, 1) for g in glyphs if _size_key(g.size) == size).most_common(1)[0][0]
    em = size or 1.0
    wide = _wide_gap(glyphs, em)
    segments: list[Segment] = []
    run = [glyphs[0]]
    text = glyphs[0].char
    for previous, glyph in itertools.pairwise(glyphs):
        gap = glyph.left - previous.right
        if previous.mono and glyph.mono:
            # Fixed pitch (code, a listing): its spaces are its layout; kept as written, no cells.
            advance = max(previous.right - previous.left, 0.1)
            text += " " * max(1 if glyph.space_before else 0, round(gap / advance)) + glyph.char
            run.append(glyph)
            continue
        if gap > wide and not _MARKER.match(text):
            segments.append(_segment(run, text))
            run, text = [glyph], glyph.char
            continue
        if glyph.space_before or gap > _SPACE_GAP_EM * em:
            text += " "
        text += glyph.char
        run.append(glyph)
    segments.append(_segment(run, text))
    return PdfLine(
        segments=tuple(segments),
        baseline=baseline,
        top=max(g.top for g in glyphs),
        bottom=min(g.bottom for g in glyphs),
    )


def _wide_gap(glyphs: list[_Glyph], em: float) -> float:
    """The gap that cuts this line into segments: SEGMENT_GAP_EM, or less where the line's word spaces are
    narrow and one gap stands out (a side heading beside its text, "Types of Kits   This manual…");
    a justified line, whose spaces are all wide, is not cut."""
    spaces = [
        glyph.left - previous.right
        for previous, glyph in itertools.pairwise(glyphs)
        if glyph.space_before or glyph.left - previous.right > _SPACE_GAP_EM * em
    ]
    if len(spaces) < _MIN_SPACES:
        return SEGMENT_GAP_EM * em
    usual = statistics.median(spaces)
    return min(SEGMENT_GAP_EM * em, max(_MIN_CUT_EM * em, _STANDS_OUT * usual))


def _size_key(size: float) -> float:
    return round(size * 2) / 2


def _segment(glyphs: list[_Glyph], text: str) -> Segment:
    size = Counter(_size_key(g.size) for g in glyphs).most_common(1)[0][0]
    bold = sum(1 for g in glyphs if g.bold) * 2 > len(glyphs)
    return Segment(
        left=glyphs[0].left,
        right=max(g.right for g in glyphs),
        text=text,
        size=size if size > _NO_SIZE else None,
        bold=bold,
        mono=all(g.mono for g in glyphs),
    )
