"""Numbers and their units: "72 psi", "15-minute", "0.50" and "0.5", "two" and "2", "1,000" and "1000"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_NUMBER_WORDS_TEXT = "zero one two three four five six seven eight nine ten eleven twelve"
NUMBER_WORDS = {w: str(i) for i, w in enumerate(_NUMBER_WORDS_TEXT.split())}
# Units after a number, aliases folded: "15 minutes" and "15 min" agree, "72 psi" and "72 kPa" do not.
_UNIT_GROUPS = {
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
    "d": "day days",
    "wk": "week weeks wk",
    "mo": "month months",
    "yr": "year years yr yrs",
    "ms": "ms millisecond milliseconds",
    "psi": "psi psig",
    "kpa": "kpa",
    "bar": "bar",
    "mpa": "mpa",
    "mg/l": "mg/l",
    "ppm": "ppm",
    "ppb": "ppb",
    "ntu": "ntu",
    "mgd": "mgd",
    "gpm": "gpm",
    "l/s": "l/s lps",
    "%": "% percent",
    "°c": "°c degc",
    "°f": "°f degf",
    "ft": "ft feet foot",
    "m": "m meter meters metre metres",
    "mm": "mm",
    "cm": "cm",
    "km": "km",
    "gal": "gal gallon gallons",
    "l": "l liter liters litre litres",
    "ml": "ml",
    "kg": "kg",
    "lb": "lb lbs pound pounds",
    "v": "v volt volts",
    "kv": "kv",
    "a": "amp amps ampere amperes",
    "ma": "ma",
    "kw": "kw",
    "mw": "mw",
    "kva": "kva",
    "hz": "hz",
    "rpm": "rpm",
    "gb": "gb gib",
    "mb": "mb mib",
    "kb": "kb kib",
    "tb": "tb tib",
}
UNITS = {alias: unit for unit, aliases in _UNIT_GROUPS.items() for alias in aliases.split()}

THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
NUMBER_WITH_UNIT = re.compile(r"(\d+(?:\.\d+)?)-?([A-Za-z%°][A-Za-z/°]*)")  # 72psi, 15-minute
# One or two words after a number, the unit being either: "72 psi", "60-second", "5 working days".
_UNIT_WORD = r"(%|°\s?[CFcf]\b|[A-Za-z°]+(?:/[A-Za-z]+)?)"
_UNIT_AFTER = re.compile(rf"(?:[ \t]*\n)?[ \t]*-?[ \t]*{_UNIT_WORD}(?:\s+{_UNIT_WORD})?")
# A number in a source: not the tail of a tag (F-011, AIT301), an address or a decimal.
_SOURCE_NUMBER = re.compile(r"(?<![A-Za-z0-9.])(?<![A-Za-z][-_])(\d+(?:\.\d+)?)(?!\d)(?!\.\d)")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Quantity:
    written: str  # the number as written: "72", "0.50"
    value: str  # canonical: "0.50" and "0.5" agree, "1,000" and "1000" too
    unit: str | None  # folded unit after it, None when there is none
    with_unit: str  # as written with its unit: "72 psi"


def without_thousands(text: str) -> str:
    """ "1,000" as "1000": a thousands separator is not a list comma."""
    return THOUSANDS.sub("", text)


def canonical_number(token: str) -> str:
    try:
        value = Decimal(token)
    except InvalidOperation:
        return token
    text = format(value.normalize(), "f")
    return text if "." not in text else text.rstrip("0").rstrip(".")


def unit_of(word: str | None) -> str | None:
    """The folded unit a word names ("minutes" -> "min"), None when it names none."""
    if not word:
        return None
    folded = word.lower().replace(" ", "")
    if folded in UNITS:
        return UNITS[folded]
    return UNITS.get(folded.split("/")[0]) if "/" in folded else None  # "gpm/sq ft" is gpm


def unit_after(text: str, end: int) -> tuple[str | None, int]:
    """The folded unit in the word or two after a number ending at `end`, and where it ends."""
    match = _UNIT_AFTER.match(text, end)
    if not match:
        return None, end
    if unit := unit_of(match.group(1)):
        return unit, match.end(1)
    if match.group(1).isalpha() and (unit := unit_of(match.group(2))):
        return unit, match.end(2)
    return None, end


def numbers_in(text: str) -> dict[str, set[str | None]]:
    """Every number a source text states (digits or number words), canonical, with the units seen after it."""
    found: dict[str, set[str | None]] = {}
    for match in _SOURCE_NUMBER.finditer(text):
        found.setdefault(canonical_number(match.group(1)), set()).add(unit_after(text, match.end())[0])
    for match in _NUMBER_WORD.finditer(text):
        found.setdefault(NUMBER_WORDS[match.group(1).lower()], set()).add(unit_after(text, match.end())[0])
    return found
