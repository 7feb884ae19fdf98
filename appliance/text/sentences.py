"""Sentences of any text, answers and SOP chunks alike, and the code inside them.

`split_sentences` splits at . ! ? followed by space and not by a lowercase word, and never after
"e.g.", "i.e." and similar abbreviations, inside decimals, versions, addresses or dotted names (0.2,
1.2.3, 10.0.0.1, gitlab.rb: no space follows the dot), after a list number ("1. "), or inside code
(fenced blocks are one unit each, inline `code` is opaque). Each list item, heading, table row and
line that ends a sentence (. ! ? : ; or a marker) is its own unit; any other line is soft-wrapped
and joins the next one, unless that one starts a list item, heading or table. Its Markdown reading
is hand-written rather than markdown-it's: an answer's or a PDF's "•" bullets, "a)" items and
unclosed fences are not CommonMark, and they must split all the same.

Two simpler cuts serve where a change would move stored data: `punctuation_spans`, where the chunker
may split a block too long for one chunk (changing it re-chunks every corpus, see CHUNKER_VERSION),
and `leading_sentences`, where the prompt shortens a passage too long for its budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# --- code regions ------------------------------------------------------------------------------

# Matched at a line start, at any indent: a fence inside a list item ("1. Run:" then "    ```bash") is
# indented past CommonMark's three spaces by the item's own indent, and it is code all the same.
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line, end excluding the newline."""
    spans, pos = [], 0
    for line in text.split("\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def fenced_blocks(text: str) -> list[tuple[int, int]]:
    """Fenced code blocks, from the opening fence to the end of the closing one (or the text)."""
    blocks: list[tuple[int, int]] = []
    lines = _lines(text)
    i = 0
    while i < len(lines):
        start, end = lines[i]
        opening = _FENCE_OPEN.match(text, start, end)
        if not opening:
            i += 1
            continue
        fence = opening.group(1)
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closing.match(text[lines[j][0] : lines[j][1]]):
            j += 1
        last = min(j, len(lines) - 1)
        blocks.append((start, lines[last][1]))
        i = last + 1
    return blocks


def code_regions(text: str) -> list[tuple[int, int]]:
    """Fenced blocks and inline code spans, sorted: nothing inside them is a marker or a boundary."""
    fences = fenced_blocks(text)
    regions = list(fences)
    pos = 0
    for start, end in [*fences, (len(text), len(text))]:
        regions.extend(m.span() for m in _INLINE_CODE.finditer(text, pos, start))
        pos = end
    return sorted(regions)


def inside(position: int, regions: Sequence[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in regions)


# --- sentence splitting ------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A unit of text: text[start:end] is stripped and never cuts a word."""

    start: int
    end: int
    kind: str  # "text" | "item" | "heading" | "table" | "code"
    paragraph: int  # inheritance of citations stays inside one paragraph


_LIST_PREFIX = re.compile(r"[ \t]*(?:[-*+•▪◦‣]|\d{1,3}[.)]|[A-Za-z][.)])[ \t]+(?=\S)")
_HEADING_PREFIX = re.compile(r"[ \t]{0,3}#{1,6}[ \t]+(?=\S)")
_QUOTE_PREFIX = re.compile(r"[ \t]*(?:>[ \t]?)+")
_TABLE_ROW = re.compile(r"[ \t]*\|")
_BLOCK_START = re.compile(r"[ \t]*(?:[-*+•▪◦‣][ \t]|\d{1,3}[.)][ \t]|#{1,6}[ \t]|\||>|<)")
# End punctuation, closing quotes/brackets/emphasis, then any markers (masked as \x01).
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]*_]*(?:[ \t]*\x01+)*(?=\s|$)")
_LINE_END = re.compile(r"(?:[.!?…:;][\"'”’)\]*_]*|\x01)[ \t]*$")
# Abbreviations that end in a dot without ending the sentence (compared lowercased, last dot off).
_ABBREVIATIONS_TEXT = (
    "e.g i.e cf vs approx ca fig figs dr mr mrs ms st incl esp resp viz al eq ref refs sect nos vol pp etc"
)
ABBREVIATIONS = frozenset(_ABBREVIATIONS_TEXT.split())
_MARK = "\x01"


def _mask(text: str, code: Sequence[tuple[int, int]], markers: Sequence[tuple[int, int]]) -> str:
    """Same length as text: code becomes opaque "X", markers become \\x01 (end nothing, split nothing)."""
    chars = list(text)
    for start, end in code:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = "X"
    for start, end in markers:
        for i in range(start, end):
            chars[i] = _MARK
    return "".join(chars)


def _is_abbreviation(masked: str, dot: int, next_char: str) -> bool:
    word = re.search(r"[^\s(\[\"'*_]*$", masked[max(0, dot - 24) : dot])
    token = word.group().lower() if word else ""
    if token in ABBREVIATIONS or (token == "no" and next_char.isdigit()):
        return True
    return len(token) == 1 and token.isalpha() and masked[dot - 1].isupper()  # an initial: "J. Smith"


def _sentence_spans(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split masked[start:end] (one run of prose) at sentence ends."""
    spans, begin = [], start
    for match in _BOUNDARY.finditer(masked, start, end):
        rest = masked[match.end() : end].lstrip()
        if not rest:
            break
        if rest[0].islower():
            continue  # "e.g. the", "approx. value", "etc. and": not a new sentence
        single_dot = masked[match.start()] == "." and match.group().count(".") == 1
        if single_dot and _is_abbreviation(masked, match.start(), rest[0]):
            continue
        spans.append((begin, match.end()))
        begin = match.end()
    spans.append((begin, end))
    return spans


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _has_content(masked: str, start: int, end: int) -> bool:
    return any(ch.isalnum() for ch in masked[start:end])


@dataclass
class _Run:
    start: int
    end: int
    kind: str
    paragraph: int


def _runs(text: str, masked: str, fences: Sequence[tuple[int, int]]) -> list[_Run]:
    """Group lines into runs of prose (joined soft wraps), list items, headings, table rows, code."""
    runs: list[_Run] = []
    paragraph = 0
    fence_starts = {start: end for start, end in fences}
    lines = _lines(text)
    i = 0
    current: _Run | None = None
    while i < len(lines):
        start, end = lines[i]
        line = text[start:end]
        if start in fence_starts:
            fence_end = fence_starts[start]
            runs.append(_Run(start, fence_end, "code", paragraph))
            current = None
            while i < len(lines) and lines[i][0] < fence_end:
                i += 1
            continue
        i += 1
        if not line.strip():
            paragraph += 1
            current = None
            continue
        if heading := _HEADING_PREFIX.match(line):
            paragraph += 1
            runs.append(_Run(start + heading.end(), end, "heading", paragraph))
            paragraph += 1
            current = None
            continue
        if _TABLE_ROW.match(line):
            if current is None or current.kind != "table":
                paragraph += 1
            current = _Run(start, end, "table", paragraph)
            runs.append(current)
            continue
        if current is not None and current.kind == "table":
            paragraph += 1
            current = None
        quote = _QUOTE_PREFIX.match(line)
        content_start = start + (quote.end() if quote else 0)
        if item := _LIST_PREFIX.match(text, content_start, end):
            paragraph += 1
            current = _Run(item.end(), end, "item", paragraph)
            runs.append(current)
            continue
        soft_wrap = (
            current is not None
            and not _LINE_END.search(masked, current.start, current.end)
            and not _BLOCK_START.match(line)
        )
        if soft_wrap and current is not None:
            current.end = end
            continue
        current = _Run(content_start, end, "text", paragraph)
        runs.append(current)
    return runs


def split_sentences(text: str, *, markers: Sequence[tuple[int, int]] = ()) -> list[Segment]:
    """The text's sentences, list items, headings, table rows and code blocks, in order.

    `markers` are spans of citation markers: they end no sentence and count as no content, so
    they stay with the sentence they follow. Units without a letter or digit are left out.
    """
    code = code_regions(text)
    fences = fenced_blocks(text)
    masked = _mask(text, code, markers)
    segments: list[Segment] = []
    for run in _runs(text, masked, fences):
        pieces = (
            [(run.start, run.end)] if run.kind in ("code", "table") else _sentence_spans(masked, run.start, run.end)
        )
        for begin, finish in pieces:
            start, end = _strip_span(text, begin, finish)
            if start < end and _has_content(masked, start, end):
                segments.append(Segment(start, end, run.kind, run.paragraph))
    return segments


# --- the chunker's and the prompt's cuts ---------------------------------------------------------

_PUNCTUATION_END = re.compile(r"(?<=[.!?;:])\s+(?=\S)")
_LEADING_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n\s*\n")


def punctuation_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """text[start:end] cut after every . ! ? ; : followed by whitespace, the whitespace left out."""
    spans = []
    cursor = start
    for match in _PUNCTUATION_END.finditer(text, start, end):
        if match.start() > cursor:
            spans.append((cursor, match.start()))
        cursor = match.end()
    if cursor < end:
        spans.append((cursor, end))
    return spans


def leading_sentences(text: str, fits: Callable[[str], bool]) -> str:
    """The longest run of whole leading sentences of `text` that `fits`; '' when not even one does."""
    ends = [m.start() for m in _LEADING_SENTENCE_END.finditer(text)] + [len(text)]
    best = ""
    for end in ends:
        candidate = text[:end].rstrip()
        if not fits(candidate):
            break
        best = candidate
    return best
