"""Which blocks of a document are headings, and at what level: the rules below a file's own outline.

A loader hands over its blocks as pieces: the text, how many lines it took, the type it is set in
(size, bold, where the file says) and a level the file itself gave (a PDF bookmark, a Word heading style
or outline level). Given levels are kept. Below them, in this order of trust:

- Typography, calibrated on the document itself: its body type is the size and weight most of its text
  is set in, and a short piece set larger (by SIZE_RATIO) or bold where the body is not, is a heading
  when text of lower rank follows it before the next heading of its rank ("followed by body text": a
  cover page's lines in large type, one after another, are none).
- Numbering in its common forms ("5", "5.", "5.1", "5.1.2", "A.", "Section 5", "Appendix B"), for short
  pieces that do not end like a sentence. "Step 3" is a step. A numbered piece whose neighbour carries
  the next or previous number at the same depth is a list item, not a heading. In a document whose
  numbered headings are set apart by their type, a numbered piece in body type is a step ("2. Weight-based
  dosing" inside a procedure), and a bare number ("5 Scope") needs that type to be a heading at all.

Levels: a numbered heading's depth; a style (size, bold) takes the depth its numbered headings have, and
other styles rank by size below the given levels. SIZE_RATIO and MAX_HEADING_CHARS were chosen by
scripts/fit_ingest_rules.py on the fitting half of the real-document set (scripts/results/fit_ingest_rules.json:
among the settings within 0.01 of the best heading F1, the one nearest the starting point 1.15 / 100).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from appliance.ingest.document import BlockKind

SIZE_RATIO = 1.2
MAX_HEADING_CHARS = 100
MAX_HEADING_LINES = 2
MAX_LEVEL = 6
MIN_SECTIONS_UNDER_TITLE = 2  # a title apart needs this many headings under it
TITLE = -1  # assign_levels' mark for the piece that is the document's title (not a section)
_SAME_SIZE = 0.95  # bold type at this share of the body size or more counts as the body's size

_DECIMAL = re.compile(r"^(?P<number>\d{1,3}(?:\.\d{1,2}){0,4})(?P<dot>\.?)\)?\s+(?P<rest>\S.*)$")
_LETTER = re.compile(r"^(?P<number>[A-Z])[.)]\s+(?P<rest>[A-Z].*)$")
_ROMAN = re.compile(r"^(?P<number>[IVX]{1,5})[.)]\s+(?P<rest>[A-Z].*)$")
_NAMED = re.compile(
    r"^(?:section|chapter|part|appendix|annex|annexe|attachment)\s+(?P<number>\d{1,2}(?:\.\d{1,2})*|[A-Z]|[IVX]{1,5})"
    r"\b[.:\-–—]?(?:\s+(?P<rest>\S.*))?$",
    re.IGNORECASE,
)
_STEP = re.compile(r"^step\s*\d{1,3}\b", re.IGNORECASE)
# A label set beside a note or a warning: what follows is a NOTE, not a section.
_SIGNAL_WORD = re.compile(
    r"^(?:note|warning|caution|danger|important|tip|hint|attention|hold point|remember)[:!.]?$", re.IGNORECASE
)
_TOC_LINE = re.compile(r"(?:\.\s?){4,}\s*[\dixv]{0,4}\s*$|…{2,}|_{4,}")
_SENTENCE_END = (".", ",", ";", ":", "!")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10}


@dataclass(frozen=True)
class HeadingNumber:
    parts: tuple[int, ...]
    form: str  # "decimal" (5.1, 5.), "bare" (5), "letter" (A.), "roman" (IV.), "named" (Section 5, Appendix B)
    rest: str  # the heading's words after the number

    @property
    def depth(self) -> int:
        return len(self.parts)


@dataclass(frozen=True)
class Piece:
    """A block as the heading rules see it."""

    kind: BlockKind
    text: str
    lines: int = 1
    size: float | None = None
    bold: bool = False
    uniform: bool = True  # all its lines are set in that type
    given_level: int = 0  # a heading level the file gave (outline, heading style); 0 = none


def heading_number(text: str) -> HeadingNumber | None:
    """The number a heading-shaped line opens with, in any of the common forms."""
    text = " ".join(text.split())
    if _STEP.match(text):
        return None
    match = _NAMED.match(text)
    if match:
        return HeadingNumber(_parts(match.group("number")), "named", match.group("rest") or "")
    match = _DECIMAL.match(text)
    if match and match.group("rest")[:1].isalpha() and match.group("rest")[:1].isupper():
        number = match.group("number")
        form = "decimal" if "." in number or match.group("dot") else "bare"
        return HeadingNumber(_parts(number), form, match.group("rest"))
    match = _ROMAN.match(text)
    if match:
        return HeadingNumber(_parts(match.group("number")), "roman", match.group("rest"))
    match = _LETTER.match(text)
    if match:
        return HeadingNumber(_parts(match.group("number")), "letter", match.group("rest"))
    return None


def _parts(number: str) -> tuple[int, ...]:
    if number.isalpha() and len(number) == 1 and number.upper() not in _ROMAN_VALUES:
        return (ord(number.upper()) - ord("A") + 1,)
    if number.isalpha():
        return (_roman(number.upper()),)
    return tuple(int(part) for part in number.split(".") if part)


def _roman(text: str) -> int:
    total = 0
    for index, char in enumerate(text):
        value = _ROMAN_VALUES.get(char, 0)
        following = _ROMAN_VALUES.get(text[index + 1], 0) if index + 1 < len(text) else 0
        total += -value if value < following else value
    return total


def is_step(text: str) -> bool:
    """'Step 3: Open the valve' is a step of a procedure, however it is set."""
    return bool(_STEP.match(text.strip()))


def heading_shaped(text: str) -> bool:
    """Short, with words, not ending like a sentence, not a table-of-contents line, not a signal word."""
    text = " ".join(text.split())
    if not text or len(text) > MAX_HEADING_CHARS or is_step(text) or _SIGNAL_WORD.match(text):
        return False
    if not any(char.isalpha() for char in text) or text[0].islower():
        return False
    if _TOC_LINE.search(text) and not heading_number(text):
        return False
    if "@" in text or "://" in text:
        return False
    return not text.endswith(_SENTENCE_END) or _only_number_dot(text)


def _only_number_dot(text: str) -> bool:
    """'5. Scope.' is rare, but "A." alone ends with a dot too; neither is a sentence."""
    return len(text) <= 3


@dataclass(frozen=True)
class _Style:
    size: float
    bold: bool


def assign_levels(pieces: list[Piece]) -> list[int]:
    """Each piece's heading level (0: not a heading; TITLE: the document's title), the given levels kept."""
    body = body_style(pieces)
    numbers = [heading_number(piece.text) if _candidate_shape(piece) else None for piece in pieces]
    distinct = [_distinct(piece, body) for piece in pieces]
    numbered = [
        i
        for i, number in enumerate(numbers)
        if number is not None and not _in_a_list(numbers, i) and not pieces[i].given_level
    ]
    set_apart = sum(1 for i in numbered if distinct[i])
    # Calibrated per document: where its numbered headings are set apart by type, numbering alone is a step.
    type_decides = body is not None and len(numbered) >= 2 and set_apart * 2 >= len(numbered)
    chosen: dict[int, _Style | None] = {}
    for i, piece in enumerate(pieces):
        if piece.given_level or not _candidate_shape(piece):
            continue
        number = numbers[i]
        if distinct[i] or (i in numbered and number is not None and number.form != "bare" and not type_decides):
            chosen[i] = _style_of(piece)
    chosen = {
        i: style for i, style in chosen.items() if numbers[i] is not None or _has_content(pieces, chosen, i, body)
    }
    return _title_apart(_levels(pieces, numbers, chosen))


def _title_apart(levels: list[int]) -> list[int]:
    """A document that opens with a heading above all the others (its only heading at that level, every
    other one deeper) opens with its title: the document's name, not a section every other one sits in."""
    headings = [i for i, level in enumerate(levels) if level]
    if len(headings) < MIN_SECTIONS_UNDER_TITLE + 1:
        return levels
    first = headings[0]
    if all(levels[i] > levels[first] for i in headings[1:]):
        levels = list(levels)
        levels[first] = TITLE
    return levels


def _candidate_shape(piece: Piece) -> bool:
    return (
        piece.kind in ("paragraph", "list")
        and piece.lines <= MAX_HEADING_LINES
        and "\n" not in piece.text.strip()
        and heading_shaped(piece.text)
    )


def body_style(pieces: list[Piece]) -> _Style | None:
    """The size and weight most of the document's running text is set in (None when sizes are unknown)."""
    weights: Counter[_Style] = Counter()
    for piece in pieces:
        if piece.kind in ("paragraph", "list") and piece.size is not None:
            weights[_Style(piece.size, piece.bold)] += len(piece.text)
    return weights.most_common(1)[0][0] if weights else None


def _style_of(piece: Piece) -> _Style | None:
    return _Style(piece.size, piece.bold) if piece.size is not None else None


def _distinct(piece: Piece, body: _Style | None) -> bool:
    """Set larger than the body, or bold at the body's size where the body is not bold."""
    if body is None or piece.size is None or not piece.uniform or not _candidate_shape(piece):
        return False
    if piece.size >= body.size * SIZE_RATIO:
        return True
    return piece.bold and not body.bold and piece.size >= body.size * _SAME_SIZE


def _in_a_list(numbers: list[HeadingNumber | None], index: int) -> bool:
    """A neighbour holds the next or the previous number at the same depth: this is a list item."""
    number = numbers[index]
    if number is None:
        return False
    before = numbers[index - 1] if index > 0 else None
    after = numbers[index + 1] if index + 1 < len(numbers) else None
    return _follows(before, number) or _follows(number, after)


def _follows(a: HeadingNumber | None, b: HeadingNumber | None) -> bool:
    return (
        a is not None
        and b is not None
        and a.form == b.form
        and a.depth == b.depth
        and a.parts[:-1] == b.parts[:-1]
        and b.parts[-1] == a.parts[-1] + 1
    )


def _has_content(pieces: list[Piece], chosen: dict[int, _Style | None], index: int, body: _Style | None) -> bool:
    """Body text (or a list, a table) follows before the next heading of this one's rank or above: a
    heading has something under it; the lines of a cover page in large type do not."""
    style = chosen[index]
    for later in range(index + 1, len(pieces)):
        piece = pieces[later]
        if later in chosen or piece.given_level:
            if piece.given_level or _outranks(chosen.get(later), style):
                return False
            continue
        if _running_text(piece, body):
            return True
    return False


def _running_text(piece: Piece, body: _Style | None) -> bool:
    """A list, a table, body-sized text or sentences: what a heading stands over (a cover page's lines in
    large type, an address, a version line are not)."""
    if piece.kind != "paragraph" or body is None or piece.size is None or piece.size <= body.size:
        return True
    text = " ".join(piece.text.split())
    return piece.lines > MAX_HEADING_LINES or len(text) > MAX_HEADING_CHARS or text.endswith((".", ":", ";"))


def _outranks(other: _Style | None, style: _Style | None) -> bool:
    """`other` is of this heading's rank or above (same or larger size; at the same size, bold)."""
    if other is None or style is None:
        return True
    if other.size != style.size:
        return other.size > style.size
    return other.bold or not style.bold


def _levels(pieces: list[Piece], numbers: list[HeadingNumber | None], chosen: dict[int, _Style | None]) -> list[int]:
    levels = _given_levels(pieces)
    if any(levels):
        return _under_given(pieces, levels, chosen)
    # The depth each style's numbered headings have (the commonest, where two or more are numbered), and
    # the styles in order of rank. One numbered line ("6 steps are defined") says nothing of the depth.
    depth_of: dict[_Style | None, Counter[int]] = {}
    for i, style in chosen.items():
        number = numbers[i]
        if number is not None and number.form in ("decimal", "bare"):
            depth_of.setdefault(style, Counter())[number.depth] += 1
    numbered_headings = sum(sum(counts.values()) for counts in depth_of.values())
    style_level: dict[_Style | None, int] = {}
    for style in _ranked(chosen.values()):
        if style in depth_of and sum(depth_of[style].values()) >= 2:
            style_level[style] = depth_of[style].most_common(1)[0][0]
        else:
            larger = [level for other, level in style_level.items() if _outranks(other, style)]
            style_level[style] = (max(larger) + 1) if larger else 1
    for i, style in chosen.items():
        number = numbers[i]
        if number is not None and number.form in ("decimal", "bare") and numbered_headings >= 2:
            levels[i] = min(MAX_LEVEL, number.depth)
        else:
            levels[i] = min(MAX_LEVEL, style_level.get(style, 1))
    return levels


def _ranked(styles: object) -> list[_Style]:
    return sorted({s for s in styles if s is not None}, key=lambda s: (-s.size, not s.bold))  # type: ignore[attr-defined]


def _given_levels(pieces: list[Piece]) -> list[int]:
    """The file's own levels. A flat outline (one level) whose entries are partly numbered ("Section 1
    Introduction", "General Description", …) is given depth by its numbering: a numbered entry at its
    number's depth, the unnumbered entries after it one below."""
    levels = [piece.given_level for piece in pieces]
    given = [i for i, level in enumerate(levels) if level]
    if len({levels[i] for i in given}) != 1:
        return levels
    numbers = {i: heading_number(pieces[i].text) for i in given}
    if sum(1 for number in numbers.values() if number is not None) < 2:
        return levels
    current = 0
    for i in given:
        number = numbers[i]
        if number is not None:
            current = number.depth if number.form in ("decimal", "bare") else 1
            levels[i] = min(MAX_LEVEL, current)
        elif current:
            levels[i] = min(MAX_LEVEL, current + 1)
    return levels


def _under_given(pieces: list[Piece], levels: list[int], chosen: dict[int, _Style | None]) -> list[int]:
    """Headings the file did not mark, placed among those it did: a style the file's headings have takes their
    level; a style below all of them goes under the deepest; any other is not a heading (a cover page)."""
    given_of_style: dict[_Style, Counter[int]] = {}
    for piece, level in zip(pieces, levels, strict=True):
        style = _style_of(piece)
        if level and style is not None:
            given_of_style.setdefault(style, Counter())[level] += 1
    deepest = max(levels)
    below = [
        s
        for s in _ranked(chosen.values())
        if given_of_style and all(_outranks(g, s) and g != s for g in given_of_style)
    ]
    for i, style in chosen.items():
        if style in given_of_style:
            levels[i] = given_of_style[style].most_common(1)[0][0]  # type: ignore[index]
        elif style in below:
            levels[i] = min(MAX_LEVEL, deepest + 1 + below.index(style))  # type: ignore[arg-type]
    return levels
