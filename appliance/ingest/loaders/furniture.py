"""Page furniture: the running header and footer a reader skips, told apart from the page's text.

A line near the top or the bottom of a page that repeats on most pages (its digits and month names
free to vary: page numbers, dates) is a running header or footer, and so is a line there that says
what page it is ("Page 3 of 9", "3/9"), that the copy is uncontrolled, or under which licence the
document is published. Such lines are taken out of the text the chunks are cut from and kept, each
once, as the document's furniture (where its control block may be read).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from .common import collapse_whitespace

# How many lines at each end of a page may be furniture, and on what share of the pages (at least two)
# a line must repeat there to be a running header or footer (scripts/fit_ingest_rules.py chose them on
# the fitting half of the real-document set).
ZONE_LINES = 3
REPEAT_SHARE = 0.5

_MONTHS = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?(?=\W|\d|$)", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")
_ROMAN_PAGE = re.compile(r"^[ivxlc]{1,6}$", re.IGNORECASE)
_PAGE_ONLY = re.compile(r"^(?:page\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_SAYS_FURNITURE = re.compile(
    r"^(?:page\s*)?\d{1,4}\s*(?:of|/)\s*\d{1,4}$"  # 3 of 9, 3/9
    r"|\bpage\s+\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?\b"  # … Page 3 of 9 …
    r"|\buncontrolled\b.{0,30}\b(?:printed|copy|copies)\b|\b(?:printed|paper)\s+cop(?:y|ies)\b.{0,30}\buncontrolled\b"
    r"|\bcreative\s+commons\b|\blicen[cs]ed\s+under\b|\bcc\s+by(?:-[a-z]{2})*\b|\ball\s+rights\s+reserved\b"
    r"|^(?:©|\(c\)|copyright)\s",
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


def find_furniture(pages: Sequence[Sequence[str]]) -> Furniture:
    """The furniture of a document whose pages are given as their lines, top to bottom."""
    zones = [_zone(len(lines)) for lines in pages]
    counts: Counter[str] = Counter()
    for lines, zone in zip(pages, zones, strict=True):
        counts.update({shape(lines[index]) for index in zone})
    needed = max(2, REPEAT_SHARE * len(pages))
    result = Furniture()
    seen: set[str] = set()
    for lines, zone in zip(pages, zones, strict=True):
        taken = set()
        for index in zone:
            text = collapse_whitespace(lines[index])
            key = shape(text)
            if _bare_page_number(text):
                taken.add(index)  # dropped as before: a page number says nothing worth keeping
            elif counts[key] >= needed or says_furniture(text):
                taken.add(index)
                if key not in seen:
                    seen.add(key)
                    result.distinct.append(text)
        result.lines_of_page.append(taken)
    return result


def says_furniture(text: str) -> bool:
    """A line that reads as furniture wherever it stands near a page's edge: a page count, "uncontrolled
    when printed", a licence or copyright line."""
    return bool(_SAYS_FURNITURE.search(text)) and len(text) <= 200


def _bare_page_number(text: str) -> bool:
    """'3', 'iv', 'Page 3', 'Page 3 of 9', '3 of 9': the page's number and nothing else."""
    stripped = text.strip(" -–—")
    return bool(_PAGE_ONLY.match(stripped) or _ROMAN_PAGE.match(stripped))


def _zone(count: int) -> list[int]:
    """Indices of the lines near the top and the bottom of a page of `count` lines."""
    edge = min(ZONE_LINES, count)
    return sorted(set(range(edge)) | set(range(count - edge, count)))
