"""Negation: which content words a "not", "never" or "n't" applies to."""

from __future__ import annotations

import re

from appliance.text.stems import stem
from appliance.text.terms import is_content_word
from appliance.text.tokens import LETTER_WORD

NEGATIONS = re.compile(r"\b(?:not|no|never|cannot|nor|neither|none)\b|n't\b", re.IGNORECASE)
_CONDITIONAL = re.compile(r"\b(?:until|unless|before|without|except|only)\b", re.IGNORECASE)
# Comparatives that hold "no"/"not" without negating anything.
_NOT_NEGATION = re.compile(r"\b(?:no|not)\s+(?:more|less|later|earlier|fewer|greater|sooner)\s+than\b", re.IGNORECASE)


def negated_words(text: str) -> set[str]:
    """Stems of the content words a negation applies to: "Do not increase the flow" -> {"increas"}."""
    text = _NOT_NEGATION.sub(" ", text)
    scopes = set()
    for match in NEGATIONS.finditer(text):
        clause = re.split(r"[.;:!?]", text[match.end() : match.end() + 80])[0]
        if _CONDITIONAL.search(clause):
            continue  # "do not return it until approved" restates "approve its return": no polarity to compare
        following = LETTER_WORD.findall(clause)[:3]
        content = [w for w in following if is_content_word(w)]
        if content:
            scopes.add(stem(content[0]))
    return scopes
