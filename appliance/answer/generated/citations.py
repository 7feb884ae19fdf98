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

The answer is split into sentences by `text.sentences.split_sentences`, markers masked so that
they end no sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from appliance.text.sentences import Segment, code_regions, inside, split_sentences

# --- markers ---------------------------------------------------------------------------------

_NUM = r"\d{1,6}"
_ITEM = rf"(?:sources?\s*[:#]?\s*)?{_NUM}(?:\s*[-–—]\s*{_NUM})?"
_SEP = r"\s*(?:[,;&]\s*(?:and\s+)?|and\s+)"
_MARKER = re.compile(rf"[\[【]\s*{_ITEM}(?:{_SEP}{_ITEM})*\s*[\]】]", re.IGNORECASE)
_MARKER_NUMBERS = re.compile(rf"({_NUM})(?:\s*[-–—]\s*({_NUM}))?")
MAX_RANGE = 100  # "[1-100000]" is not a citation of 100000 sources: only its ends count
# No prompt holds more sources than this (answer.max_sources is at most 50): a bracket naming only larger
# numbers, or one written with a leading zero, is a value the model bracketed ("the state line is
# [555-0195]"), kept as written rather than removed as a citation of sources that were never given.
MAX_CITABLE = 50
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


# --- parse ---------------------------------------------------------------------------------------


def _find_markers(answer: str) -> list[re.Match[str]]:
    code = code_regions(answer)
    return [m for m in _MARKER.finditer(answer) if not inside(m.start(), code)]


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


def _is_bracketed_value(marker: str) -> bool:
    written = re.findall(_NUM, marker)
    return all(int(n) > MAX_CITABLE for n in written) or any(len(n) > 1 and n.startswith("0") for n in written)


def _rewrite(answer: str, n_sources: int) -> tuple[str, list[CitationMarker], set[int]]:
    out, pos = "", 0
    markers: list[CitationMarker] = []
    removed: set[int] = set()
    for match in _find_markers(answer):
        if _is_bracketed_value(match.group()):
            continue
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
