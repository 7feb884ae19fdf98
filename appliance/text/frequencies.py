"""How often, in words: "quarterly", "twice a year", "every shift", "every 8 hours", as comparable values.

A source that says "rotate the keys quarterly" states a value as surely as one that says "every 90 days":
a question that asks how often is answered by it, and an answer that says "monthly" instead is as wrong
as one with a changed number. Each expression becomes a rate: occurrences per hour for clock periods
(so "every 6 months" and "twice a year" agree, as do "nightly" and "every day"), occurrences per event
for the rest ("every shift", "each deploy").
"""

from __future__ import annotations

import re
from fractions import Fraction

from appliance.text.quantities import NUMBER_WORDS

# Clock periods in hours (a month is a twelfth of a year, so that 3 months make a quarter).
_HOURS = {
    "second": Fraction(1, 3600),
    "minute": Fraction(1, 60),
    "hour": Fraction(1),
    "day": Fraction(24),
    "night": Fraction(24),
    "weekday": Fraction(24),
    "week": Fraction(168),
    "fortnight": Fraction(336),
    "month": Fraction(730),
    "quarter": Fraction(2190),
    "year": Fraction(8760),
}
# Periods that are events, not lengths of time: "every shift", "each deploy".
_EVENTS = frozenset(["shift", "run", "deploy", "deployment", "release", "backup", "rotation", "cycle", "sprint"])
_ADVERBS = {
    "hourly": (1, 1, "hour"),
    "daily": (1, 1, "day"),
    "nightly": (1, 1, "night"),
    "weekly": (1, 1, "week"),
    "fortnightly": (1, 1, "fortnight"),
    "biweekly": (1, 2, "week"),
    "monthly": (1, 1, "month"),
    "bimonthly": (1, 2, "month"),
    "quarterly": (1, 1, "quarter"),
    "annually": (1, 1, "year"),
    "yearly": (1, 1, "year"),
    "biannually": (2, 1, "year"),
    "semiannually": (2, 1, "year"),
    "semi-annually": (2, 1, "year"),
}
_TIMES = {"once": 1, "twice": 2, "thrice": 3}
_PERIOD = "|".join(sorted([*_HOURS, *_EVENTS], key=len, reverse=True))
_COUNT = r"\d+|" + "|".join(NUMBER_WORDS)
# "every 8 hours", "every other day", "each shift", "per quarter", "every working day", "every new shift".
_EVERY = re.compile(
    rf"\b(?:every|each|per)\s+(?:(other)\s+|({_COUNT})\s+)?(?:(?:working|business|calendar|new|single)\s+)?"
    rf"({_PERIOD})(?:s|es)?\b",
    re.IGNORECASE,
)
# "twice a year", "3 times per day", "once every shift", "two times a week".
_TIMES_A = re.compile(
    rf"\b(once|twice|thrice|(?:{_COUNT})\s+times)\s+(?:a|an|per|each|every)\s+(?:({_COUNT})\s+)?({_PERIOD})s?\b",
    re.IGNORECASE,
)
_ADVERB = re.compile(r"\b(" + "|".join(re.escape(a) for a in _ADVERBS) + r")\b", re.IGNORECASE)


def _count(word: str | None) -> int:
    if not word:
        return 1
    word = word.lower()
    return int(word) if word.isdigit() else int(NUMBER_WORDS.get(word, "1"))


def _rate(times: int, every: int, period: str) -> str:
    """A canonical value: '1/2190h' (once every 2190 hours) or '1/1 shift'."""
    period = period.lower()
    if period in _HOURS:
        rate = Fraction(times) / (every * _HOURS[period])
        return f"{rate.numerator}/{rate.denominator}h"
    fraction = Fraction(times, every)
    return f"{fraction.numerator}/{fraction.denominator} {period}"


def frequencies_in(text: str) -> dict[str, str]:
    """Each frequency the text states, canonical value -> the words that state it."""
    found: dict[str, str] = {}
    for match in _TIMES_A.finditer(text):
        head = match.group(1).lower()
        times = _TIMES[head] if head in _TIMES else _count(head.split()[0])
        found.setdefault(_rate(times, _count(match.group(2)), match.group(3)), match.group(0))
    text = _TIMES_A.sub(lambda m: " " * len(m.group(0)), text)  # "3 times per day" is not also "per day"
    for match in _ADVERB.finditer(text):
        times, every, period = _ADVERBS[match.group(1).lower()]
        found.setdefault(_rate(times, every, period), match.group(0))
    for match in _EVERY.finditer(text):
        every = 2 if match.group(1) else _count(match.group(2))
        found.setdefault(_rate(1, every, match.group(3)), match.group(0))
    return found
