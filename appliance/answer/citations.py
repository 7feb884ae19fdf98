"""Citation markers in a generated answer, and the answer's sentences with what each one cites.

The LLM is asked to put `[n]` after each claim; small models also write `[2, 3]`, `[1][2]`,
`[1-3]`, `[Source 2]` or `【1】`. `parse_citations` accepts all of these, drops markers that point
at sources the model was not given (n < 1 or n > the number of sources), rewrites the others in
one canonical form (`[2]`, `[2, 3]`) so that renderers need to know one form only, and splits the
answer into sentences, each with the set of sources it cites.

Which sentence a marker belongs to:

* a marker belongs to the sentence it ends: "closed [1]." and "closed. [1] Next..." both cite
  [1] for "closed";
* a line holding only markers belongs to the sentence before it;
* a sentence without a marker of its own inherits the markers of the next sentence that has
  some in the same paragraph (models often cite once at the end of a run of sentences):
  "Close VLV-1. Then open VLV-2 [3]." cites [3] for both sentences. Inheritance never crosses a
  blank line, a list item or a heading, so a list item or paragraph without a marker is
  uncited. It only chooses which sources a sentence is checked against: the support checker
  still needs the sentence's words in those sources;
* a code block cannot hold a marker (markers inside code are code): it inherits like a sentence,
  or else takes the citations of the sentence just before it (the "Run:" line that introduces it);
* headings never cite or inherit anything.

Sentence splitting (`split_sentences`) works on any text, answers and SOP chunks alike. It
splits at . ! ? followed by space and not by a lowercase word, and never after "e.g.", "i.e."
and similar abbreviations, inside decimals, versions, addresses or dotted names (0.2, 1.2.3,
10.0.0.1, gitlab.rb: no space follows the dot), after a list number ("1. "), or inside code
(fenced blocks are one unit each, inline `code` is opaque). Each list item, heading, table row
and line that ends a sentence (. ! ? : ; or a marker) is its own unit; any other line is
soft-wrapped and joins the next one, unless that one starts a list item, heading or table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# --- markers ---------------------------------------------------------------------------------

_NUM = r"\d{1,6}"
_ITEM = rf"(?:sources?\s*[:#]?\s*)?{_NUM}(?:\s*[-–—]\s*{_NUM})?"
_SEP = r"\s*(?:[,;&]\s*(?:and\s+)?|and\s+)"
_MARKER = re.compile(rf"[\[【]\s*{_ITEM}(?:{_SEP}{_ITEM})*\s*[\]】]", re.IGNORECASE)
_MARKER_NUMBERS = re.compile(rf"({_NUM})(?:\s*[-–—]\s*({_NUM}))?")
MAX_RANGE = 100  # "[1-100000]" is not a citation of 100000 sources: only its ends count
# Removing a marker before these leaves no space in front of them.
_CLOSING_PUNCTUATION = ".,;:!?)…"


@dataclass(frozen=True)
class CitationMarker:
    """A canonical marker in CitationReport.text: text[start:end] == "[2]" or "[2, 3]"."""

    start: int
    end: int
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class CitedSentence:
    """One unit of the answer: a sentence, a list item, a heading, a table row or a code block."""

    text: str  # without markers, whitespace collapsed: what is checked and shown
    cited: frozenset[int]
    start: int  # span in CitationReport.text, own markers included
    end: int
    kind: str = "text"  # "text" | "item" | "heading" | "table" | "code"
    inherited: bool = False  # cited holds markers taken from a neighbouring sentence


@dataclass(frozen=True)
class CitationReport:
    text: str  # the answer with invalid markers removed and valid ones canonical
    cited: list[int]  # distinct valid source numbers, sorted
    removed: list[int]  # distinct invalid source numbers that were removed, sorted
    sentences: list[CitedSentence]
    markers: list[CitationMarker]

    @property
    def uncited(self) -> list[CitedSentence]:
        return [s for s in self.sentences if not s.cited and s.kind != "heading"]


def marker_numbers(marker: str) -> list[int]:
    """The source numbers a marker names, ranges expanded, in order of appearance."""
    numbers: list[int] = []
    for match in _MARKER_NUMBERS.finditer(marker):
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        low, high = min(first, last), max(first, last)
        numbers.extend(range(low, high + 1) if high - low <= MAX_RANGE else (low, high))
    return list(dict.fromkeys(numbers))


# --- code regions ------------------------------------------------------------------------------

_FENCE_OPEN = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")  # matched at a line start
_INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line, end excluding the newline."""
    spans, pos = [], 0
    for line in text.split("\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def _fences(text: str) -> list[tuple[int, int]]:
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
        closing = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        j = i + 1
        while j < len(lines) and not closing.match(text[lines[j][0] : lines[j][1]]):
            j += 1
        last = min(j, len(lines) - 1)
        blocks.append((start, lines[last][1]))
        i = last + 1
    return blocks


def code_regions(text: str) -> list[tuple[int, int]]:
    """Fenced blocks and inline code spans, sorted: nothing inside them is a marker or a boundary."""
    fences = _fences(text)
    regions = list(fences)
    pos = 0
    for start, end in [*fences, (len(text), len(text))]:
        regions.extend(m.span() for m in _INLINE_CODE.finditer(text, pos, start))
        pos = end
    return sorted(regions)


def _inside(position: int, regions: Sequence[tuple[int, int]]) -> bool:
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
    fences = _fences(text)
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


# --- parse ---------------------------------------------------------------------------------------


def _find_markers(answer: str) -> list[re.Match[str]]:
    code = code_regions(answer)
    return [m for m in _MARKER.finditer(answer) if not _inside(m.start(), code)]


def _drop_marker(out: str, answer: str, after: int) -> tuple[str, int]:
    """Remove a marker between out and answer[after:] without leaving odd spaces behind."""
    following = answer[after : after + 1]
    trimmed = out.rstrip(" \t")
    at_line_start = trimmed == "" or trimmed.endswith("\n")
    if at_line_start:
        while after < len(answer) and answer[after] in " \t":
            after += 1  # "[7] Close the valve" at the start of a line
        return trimmed, after
    if following == "" or following.isspace() or following in _CLOSING_PUNCTUATION:
        return trimmed, after  # "closed [7]." -> "closed."
    return out, after  # "closed [7][1]." -> "closed [1]."


def _rewrite(answer: str, n_sources: int) -> tuple[str, list[CitationMarker], set[int]]:
    out, pos = "", 0
    markers: list[CitationMarker] = []
    removed: set[int] = set()
    for match in _find_markers(answer):
        out += answer[pos : match.start()]
        numbers = marker_numbers(match.group())
        valid = sorted(n for n in numbers if 1 <= n <= n_sources)
        removed.update(n for n in numbers if not 1 <= n <= n_sources)
        if valid:
            canonical = "[" + ", ".join(map(str, valid)) + "]"
            markers.append(CitationMarker(len(out), len(out) + len(canonical), tuple(valid)))
            out += canonical
            pos = match.end()
        else:
            out, pos = _drop_marker(out, answer, match.end())
    return out + answer[pos:], markers, removed


def _sentence_text(text: str, segment: Segment, markers: Sequence[CitationMarker]) -> str:
    if segment.kind == "code":
        inner = text[segment.start : segment.end].split("\n")
        body = inner[1:-1] if len(inner) > 2 and inner[-1].strip().startswith(("```", "~~~")) else inner[1:]
        return "\n".join(body).strip()
    pieces, pos = [], segment.start
    for marker in markers:
        if segment.start <= marker.start < segment.end:
            pieces.append(text[pos : marker.start])
            pos = marker.end
    pieces.append(text[pos : segment.end])
    joined = re.sub(r"\s+", " ", "".join(pieces)).strip()
    return re.sub(r"\s+([.,;:!?)])", r"\1", joined)


def _assign(segments: Sequence[Segment], markers: Sequence[CitationMarker]) -> list[set[int]]:
    """Each segment's own citations; a marker outside every segment goes to the one before it."""
    own: list[set[int]] = [set() for _ in segments]
    for marker in markers:
        index = next((i for i, s in enumerate(segments) if s.start <= marker.start < s.end), None)
        if index is None:
            before = [i for i, s in enumerate(segments) if s.end <= marker.start and s.kind != "heading"]
            index = before[-1] if before else next((i for i, s in enumerate(segments) if s.start >= marker.end), None)
        if index is not None:
            own[index].update(marker.numbers)
    return own


def _inherit(segments: Sequence[Segment], own: Sequence[set[int]]) -> list[frozenset[int]]:
    """Apply the inheritance rules of the module docstring."""
    cited = [frozenset(s) for s in own]
    carry: frozenset[int] = frozenset()
    paragraph = None
    for i in range(len(segments) - 1, -1, -1):
        segment = segments[i]
        if segment.paragraph != paragraph:
            carry, paragraph = frozenset(), segment.paragraph
        if segment.kind == "heading":
            continue
        if cited[i]:
            carry = cited[i]
        elif carry:
            cited[i] = carry
    for i, segment in enumerate(segments):
        if segment.kind == "code" and not cited[i] and i > 0 and segments[i - 1].kind != "heading":
            cited[i] = cited[i - 1]
    return cited


def parse_citations(answer: str, n_sources: int) -> CitationReport:
    """Validate, canonicalise and attribute the citation markers of a generated answer."""
    text, markers, removed = _rewrite(answer, n_sources)
    segments = split_sentences(text, markers=[(m.start, m.end) for m in markers])
    own = _assign(segments, markers)
    cited = _inherit(segments, own)
    sentences = [
        CitedSentence(
            text=_sentence_text(text, segment, markers),
            cited=frozenset() if segment.kind == "heading" else cited[i],
            start=segment.start,
            end=segment.end,
            kind=segment.kind,
            inherited=bool(cited[i]) and not own[i] and segment.kind != "heading",
        )
        for i, segment in enumerate(segments)
    ]
    valid = sorted({n for m in markers for n in m.numbers})
    return CitationReport(text=text, cited=valid, removed=sorted(removed), sentences=sentences, markers=markers)
