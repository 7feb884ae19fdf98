"""Turn any user string into safe FTS5 MATCH expressions.

Every token is double-quoted, so no user input can be parsed as FTS5 syntax (a bare
`VLV-3042-B` or `AND(` would be a syntax error). Common words are dropped from the word query:
OR-ing them in only slows bm25 down and adds noise.
"""

from __future__ import annotations

import re

from appliance.ingest.identifiers import extract_identifiers

# Letters and digits only: FTS5's unicode61 tokenizer splits on "_" too, so "_" alone never matches.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_TERMS = 64

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "please",
        "tell",
    ]
)


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def word_terms(query: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(kept))[:MAX_TERMS]


def word_match(query: str) -> str | None:
    """OR of the query's quoted words, for the porter-stemmed table; None when there are none."""
    terms = word_terms(query)
    return " OR ".join(_quote(t) for t in terms) if terms else None


def identifier_match(query: str) -> str | None:
    """OR of the query's quoted identifiers, for the exact-identifier table."""
    identifiers = extract_identifiers(query)[:MAX_TERMS]
    return " OR ".join(_quote(i) for i in identifiers) if identifiers else None
