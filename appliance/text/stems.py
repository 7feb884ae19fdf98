"""The support check's stemmer: plural, -ing, -ed and a final -e/-y folded, so close/closes/closed/closing
agree; a few operator synonyms fold onto one stem and number words onto digits ("two" -> "2").

The lexical index stems with FTS5's porter tokenizer instead (index/migrations.py): the two only need
to agree with themselves, an answer's words being compared with its sources' words by this one.
"""

from __future__ import annotations

import re
from functools import lru_cache

from appliance.text.quantities import NUMBER_WORDS

# Synonyms operators use interchangeably, mapped onto one stem. Kept small on purpose: each
# entry widens what counts as support.
_SYNONYMS = {
    "shut": "close",
    "begin": "start",
    "commence": "start",
    "initiate": "start",
    "halt": "stop",
    "cease": "stop",
    "confirm": "verify",
    "ensure": "verify",
    "check": "verify",
    "inform": "notify",
    "contact": "notify",
    "raise": "increase",
    "reduce": "decrease",
    "lower": "decrease",
    "log": "record",
}


def _undouble(stem: str) -> str:
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]
    return stem


def _stem_raw(word: str) -> str:
    w = word.lower()
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ing") and len(w) > 4 and re.search(r"[aeiouy]", w[:-3]):
        w = _undouble(w[:-3])
    elif w.endswith("ed") and len(w) > 3 and re.search(r"[aeiouy]", w[:-2]):
        w = _undouble(w[:-2])
    elif w.endswith("es") and len(w) > 4 and (w[-3] in "sxz" or w[-4:-2] in ("ch", "sh")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    elif len(w) > 3 and w[-1] == "y":
        w = w[:-1] + "i"
    return w


_SYNONYM_STEMS = {_stem_raw(word): _stem_raw(target) for word, target in _SYNONYMS.items()}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The word's stem (see the module docstring)."""
    lowered = word.lower()
    if lowered in NUMBER_WORDS:
        return NUMBER_WORDS[lowered]
    raw = _stem_raw(lowered)
    return _SYNONYM_STEMS.get(raw, raw)


# Words whose swap reverses an instruction as surely as a "not" does. Compared as stems, so the
# synonyms above come along (shut is close, raise is increase, reduce and lower are decrease).
_OPPOSITE_PAIRS = (
    ("open", "close"),
    ("start", "stop"),
    ("enable", "disable"),
    ("increase", "decrease"),
    ("high", "low"),
    ("minimum", "maximum"),
    ("add", "remove"),
    ("allow", "deny"),
    ("true", "false"),
    ("inlet", "outlet"),
    ("lead", "lag"),
    ("primary", "secondary"),
    ("manual", "automatic"),
    ("online", "offline"),
    ("lock", "unlock"),
    ("install", "uninstall"),
    ("connect", "disconnect"),
    ("attach", "detach"),
    ("mount", "unmount"),
)
OPPOSITES = {stem(a): stem(b) for a, b in _OPPOSITE_PAIRS} | {stem(b): stem(a) for a, b in _OPPOSITE_PAIRS}
