"""Page furniture: the running header and footer a reader skips, told apart from the page's text.

A line among the first or last few of a page is a running header or footer when, at that same place
(the same height on the page where the loader knows it, else the same count of lines from its edge),
its shape (digits and month names free to vary: page numbers, dates) repeats on most pages of the
document, or on a run of consecutive pages (a chapter's running head). A line there that says what page
it is ("Page 3 of 9"), that the copy is uncontrolled, under which licence the document is published, or
that the text continues ("Continued on next page") is furniture too, and so is a running head that
repeats the heading set below it on the same page. Such lines are taken out of the text the chunks are
cut from and kept, each once, as the document's furniture (where its control block may be read); bare
page numbers are simply dropped.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from .common import collapse_whitespace

# How many lines at each end of a page may be furniture; on what share of the pages (at least two), or
# on how many consecutive pages, a line must repeat there to be a running header or footer
# (scripts/fit_ingest_rules.py on the fitting half of the real-document set: every setting of its grid
# scored within 0.01 of the best there, so these stay at the starting point; scripts/results/fit_ingest_rules.json).
ZONE_LINES = 3
REPEAT_SHARE = 0.5
REPEAT_RUN = 3
# Running heads and feet are a few lines of a page: repetition that would take more of the text than
# this share is the document's own (forms, pages generated alike), and only the lines that say they are
# furniture are taken.
MAX_SHARE_OF_TEXT = 0.5
_SAME_HEIGHT = 3.0  # points: a running head stands at one height on every page it is printed on

_MONTHS = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?(?=\W|\d|$)", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_ROMAN_PAGE = re.compile(r"^[ivxlc]{1,6}$", re.IGNORECASE)
_PAGE_ONLY = re.compile(r"^(?:page\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_SAYS_FURNITURE = re.compile(
    r"^(?:page\s*)?\d{1,4}\s*(?:of|/)\s*\d{1,4}$"  # 3 of 9, 3/9
    r"|\bpage\s+\d{1,4}\s*(?:of|/)\s*\d{1,4}\b|^page\s+\d{1,4}\b"  # … Page 3 of 9 …, Page 3 …
    r"|\buncontrolled\b.{0,30}\b(?:printed|copy|copies)\b|\b(?:printed|paper)\s+cop(?:y|ies)\b.{0,30}\buncontrolled\b"
    r"|\bcreative\s+commons\b|\blicen[cs]ed\s+under\b|\bcc\s+by(?:-[a-z]{2})*\b|\ball\s+rights\s+reserved\b"
    r"|^(?:©|\(c\)|copyright)\s"
    r"|^continued\s+on\s+(?:the\s+)?next\s+page$|[,(]\s*(?:continued|cont'?d\.?)\)?$",
    re.IGNORECASE,
)


@dataclass
class Furniture:
    """Which lines of each page are furniture (indices into the lines given), and the distinct lines."""

    lines_of_page: list[set[int]] = field(default_factory=list)
    distinct: list[str] = field(default_factory=list)


def shape(line: str) -> str:
    """A line with what varies from page to page (numbers, month names, spacing) made equal."""
    text = _MONTHS.sub("M", collapse_whitespace(line).lower())
    return _DIGITS.sub("#", text)


def find_furniture(pages: Sequence[Sequence[str]], heights: Sequence[Sequence[float]] | None = None) -> Furniture:
    """The furniture of a document whose pages are given as their lines, top to bottom, with each line's
    height on its page (PDF points) where known."""
    repeated = _repeated(pages, heights)
    lines_in_all = sum(len(lines) for lines in pages)
    if sum(len(found) for found in repeated) > MAX_SHARE_OF_TEXT * lines_in_all:
        # Pages alike from top to bottom (forms, a generated manual): what repeats is their text, not furniture.
        repeated = [set() for _ in pages]
    result = Furniture()
    seen: set[str] = set()
    for number, lines in enumerate(pages):
        taken = set()
        below = [collapse_whitespace(line) for line in lines]
        for index, place in _zone(lines):
            text = collapse_whitespace(lines[index])
            key = shape(text)
            if _bare_page_number(text):
                taken.add(index)  # dropped as before: a page number says nothing worth keeping
                continue
            running_head = place >= 0 and text in below[index + 1 :]
            if (index, key) in repeated[number] or says_furniture(text) or running_head:
                taken.add(index)
                if key not in seen:
                    seen.add(key)
                    result.distinct.append(text)
        result.lines_of_page.append(taken)
    return result


def says_furniture(text: str) -> bool:
    """A line that reads as furniture wherever it stands near a page's edge: a page count, "uncontrolled
    when printed", a licence or copyright line, "continued"."""
    return bool(_SAYS_FURNITURE.search(text)) and len(text) <= 200


def _repeated(pages: Sequence[Sequence[str]], heights: Sequence[Sequence[float]] | None) -> list[set[tuple[int, str]]]:
    """For each page, the (line index, shape) of its zone lines that repeat, at one place, on enough pages."""
    found: dict[tuple[bool, str], list[tuple[float, int, int, int]]] = defaultdict(list)
    for number, lines in enumerate(pages):
        for index, place in _zone(lines):
            text = collapse_whitespace(lines[index])
            if _bare_page_number(text):
                continue
            where = float(place) if heights is None else heights[number][index]
            found[(place >= 0, shape(text))].append((where, number, index, place))
    result: list[set[tuple[int, str]]] = [set() for _ in pages]
    for (_, key), occurrences in found.items():
        for group in _same_place(occurrences, exact=heights is None):
            # The outermost line may be a running head on two pages; one further in needs a third.
            least = 2 if all(place in (0, -1) for *_, place in group) else 3
            share = max(least, REPEAT_SHARE * len(pages))
            run_length = max(least, min(REPEAT_RUN, len(pages)))
            numbers = sorted({number for _, number, _, _ in group})
            taken = set(numbers) if len(numbers) >= share else set()
            for run in _runs(numbers):
                if len(run) >= run_length:
                    taken.update(run)
            for _, number, index, _ in group:
                if number in taken:
                    result[number].add((index, key))
    return result


def _same_place(
    occurrences: list[tuple[float, int, int, int]], *, exact: bool
) -> list[list[tuple[float, int, int, int]]]:
    """Occurrences grouped by where they stand: heights within _SAME_HEIGHT points, or the same line place."""
    ordered = sorted(occurrences)
    groups: list[list[tuple[float, int, int, int]]] = []
    for occurrence in ordered:
        if groups and (
            occurrence[0] == groups[-1][-1][0] if exact else occurrence[0] - groups[-1][-1][0] <= _SAME_HEIGHT
        ):
            groups[-1].append(occurrence)
        else:
            groups.append([occurrence])
    return groups


def _runs(numbers: list[int]) -> list[list[int]]:
    """Consecutive page numbers, grouped."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return runs


def _bare_page_number(text: str) -> bool:
    """'3', 'iv', 'Page 3', 'Page 3 of 9', '3 of 9': the page's number and nothing else."""
    stripped = text.strip(" -–—")
    return bool(_PAGE_ONLY.match(stripped) or _ROMAN_PAGE.match(stripped))


def _zone(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(index, place) of the lines near the top and the bottom of a page: the place counts the lines that
    are not page numbers from the edge, 0, 1, 2 from the top and -1, -2, -3 from the bottom, so that a
    page number printed above or below the running head on some pages does not move it."""
    counted = [index for index, line in enumerate(lines) if not _bare_page_number(collapse_whitespace(line))]
    places: dict[int, int] = {}
    for place, index in enumerate(counted[:ZONE_LINES]):
        places[index] = place
    for place, index in enumerate(reversed(counted[-ZONE_LINES:]), start=1):
        places.setdefault(index, -place)
    bare = [index for index, line in enumerate(lines) if _bare_page_number(collapse_whitespace(line))]
    edge = set(range(min(ZONE_LINES, len(lines)))) | set(range(max(0, len(lines) - ZONE_LINES), len(lines)))
    for index in bare:
        if index in edge:
            places.setdefault(index, 0)
    return sorted(places.items())
