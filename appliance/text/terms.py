"""What a sentence claims, as the checks see it: content-word stems, identifiers and quantities."""

from __future__ import annotations

import re
from dataclasses import dataclass

from appliance.text.identifiers import is_checked_identifier
from appliance.text.quantities import (
    NUMBER_WITH_UNIT,
    NUMBER_WORDS,
    PLAIN_NUMBER,
    UNITS,
    Quantity,
    canonical_number,
    numbers_in,
    unit_after,
    unit_of,
    without_thousands,
)
from appliance.text.stems import stem
from appliance.text.stopwords import CLAIM_STOPWORDS
from appliance.text.tokens import CANDIDATE, LETTER_WORD

# An identifier or number token, with a trailing percent sign ("15%").
_TOKEN = re.compile(CANDIDATE.pattern + "%?")
# Number words a claim states as numbers ("open it two turns", "should be zero"); "one" is too often a
# pronoun or an idiom ("one of the pods") to hold a sentence to.
_CLAIMED_NUMBER_WORD = re.compile(r"\b(" + "|".join(w for w in NUMBER_WORDS if w != "one") + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Terms:
    """What a sentence claims, as the checker sees it."""

    words: tuple[str, ...]  # content-word stems, distinct, in order
    identifiers: tuple[str, ...]  # as written
    numbers: tuple[Quantity, ...]


def is_content_word(word: str) -> bool:
    """A word that carries a claim: two letters or more, no stopword, no unit."""
    lowered = word.lower()
    return len(word) > 1 and lowered not in CLAIM_STOPWORDS and lowered not in UNITS


def extract_terms(text: str) -> Terms:
    """Content-word stems, identifiers and numbers (with units) of a sentence."""
    text = without_thousands(text)
    identifiers: dict[str, None] = {}
    numbers: dict[Quantity, None] = {}
    blanked = list(text)
    for match in _TOKEN.finditer(text):
        token = match.group().rstrip("%")
        end = match.start() + len(token)
        with_unit = NUMBER_WITH_UNIT.fullmatch(token)
        if PLAIN_NUMBER.fullmatch(token):
            unit, unit_end = unit_after(text, end)
            quantity = Quantity(token, canonical_number(token), unit, text[match.start() : unit_end])
            numbers.setdefault(quantity, None)
        elif with_unit and (unit := unit_of(with_unit.group(2))):  # "72psi", "15-minute", "24h"
            number = with_unit.group(1)
            numbers.setdefault(Quantity(number, canonical_number(number), unit, token), None)
        elif is_checked_identifier(token):
            identifiers.setdefault(token, None)
        else:
            continue
        blanked[match.start() : end] = " " * (end - match.start())
    for match in _CLAIMED_NUMBER_WORD.finditer("".join(blanked)):
        unit, unit_end = unit_after(text, match.end())
        value = NUMBER_WORDS[match.group(1).lower()]
        numbers.setdefault(Quantity(match.group(1), value, unit, text[match.start() : unit_end]), None)
        blanked[match.start() : match.end()] = " " * (match.end() - match.start())
    words = [w.lower() for w in LETTER_WORD.findall("".join(blanked))]
    stems = [stem(w) for w in words if is_content_word(w)]
    return Terms(tuple(dict.fromkeys(stems)), tuple(identifiers), tuple(numbers))


def all_stems(text: str) -> set[str]:
    """Every word stem of a source text, and its numbers (so "two" in an answer finds "2")."""
    return {stem(w) for w in LETTER_WORD.findall(text) if len(w) > 1} | set(numbers_in(text))
