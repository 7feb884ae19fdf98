"""Words of a query or a sentence: what is searched, and what is checked."""

from __future__ import annotations

import re

from appliance.text.stopwords import STOPWORDS

# Letters and digits only, as FTS5's unicode61 tokenizer splits (it splits on "_" too).
SEARCH_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# A word as written, with its inner hyphens, dots and apostrophes (don't, v1.2, lead-lag).
WORD = re.compile(r"[^\W_]+(?:[-.'][^\W_]+)*")
# Letters only: the words of a claim once its numbers and identifiers are taken out.
LETTER_WORD = re.compile(r"[^\W\d_]+")
# A token that may be an identifier or a number: starts and ends with a letter or digit, may hold
# - _ . : / inside.
CANDIDATE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:/-]*[A-Za-z0-9])?")
MAX_TERMS = 64


def word_terms(text: str, limit: int = MAX_TERMS) -> list[str]:
    """The distinct lower-cased words of `text` worth searching for, in order: stopwords out, unless
    the text holds nothing else ("what is it?" still searches for something)."""
    words = [w.lower() for w in SEARCH_WORD.findall(text)]
    kept = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(kept))[:limit]
