"""Calendar dates as documents write them: 2025-05-01, 01/05/2025, 1 May 2025, May 1, 2025, 01-May-25, May 2025.

A numeric date whose day and month could be swapped (01/05/2025) is kept as written: which one it is
depends on the writer's country, and a review date read the wrong way round would flag the wrong
documents. It still reads as a date, so a label's value is recognised.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_FORMS = [
    re.compile(r"^(?P<year>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<day>\d{1,2})$"),
    re.compile(r"^(?P<a>\d{1,2})[-/.](?P<b>\d{1,2})[-/.](?P<year>\d{4}|\d{2})$"),
    re.compile(rf"^(?P<day>\d{{1,2}}){_ORDINAL}[\s\-]+{_MONTH}[\s\-,]+(?P<year>\d{{4}}|\d{{2}})$"),
    re.compile(rf"^{_MONTH}\s+(?P<day>\d{{1,2}}){_ORDINAL},?\s+(?P<year>\d{{4}})$"),
    re.compile(rf"^{_MONTH},?\s+(?P<year>\d{{4}})$"),
    re.compile(r"^(?P<m>\d{1,2})[-/.](?P<year>\d{4})$"),
]


@dataclass(frozen=True)
class DateRead:
    text: str  # as written
    iso: str | None  # YYYY-MM-DD (or YYYY-MM for a month), None when day and month could be swapped


def read_date(text: str) -> DateRead | None:
    """`text` read as one calendar date (None when it is not one)."""
    text = " ".join(text.split()).strip(" .,;")
    for form in _FORMS:
        match = form.match(text)
        if match is None:
            continue
        parts = match.groupdict()
        year = int(parts["year"])
        year += 2000 if year < 100 else 0
        if parts.get("a") is not None:
            return _numeric(text, int(parts["a"]), int(parts["b"]), year)
        month = _MONTHS.get(parts["month"].lower()) if parts.get("month") else int(parts["m"])
        if month is None or not 1 <= month <= 12:
            return None
        if parts.get("day") is None:
            return DateRead(text, f"{year:04d}-{month:02d}")
        return _checked(text, year, month, int(parts["day"]))
    return None


def _numeric(text: str, first: int, second: int, year: int) -> DateRead | None:
    if first > 12 and second <= 12:
        return _checked(text, year, second, first)
    if second > 12 and first <= 12:
        return _checked(text, year, first, second)
    if first == second and first <= 12:
        return _checked(text, year, first, first)
    if first <= 12 and second <= 12:
        return DateRead(text, None)
    return None


def _checked(text: str, year: int, month: int, day: int) -> DateRead | None:
    try:
        return DateRead(text, dt.date(year, month, day).isoformat())
    except ValueError:
        return None
