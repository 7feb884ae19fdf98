"""Turn any user string into safe FTS5 MATCH expressions.

Every token is double-quoted, so no user input can be parsed as FTS5 syntax (a bare
`VLV-3042-B` or `AND(` would be a syntax error). Which words and identifiers a query holds is
decided in appliance/text (stopwords dropped, identifiers whole).
"""

from __future__ import annotations

from appliance.text.identifiers import extract_identifiers
from appliance.text.tokens import MAX_TERMS, word_terms


def quote(token: str) -> str:
    """One term as an FTS5 string: matched as written, whatever operators it holds."""
    return '"' + token.replace('"', '""') + '"'


def word_match(query: str) -> str | None:
    """OR of the query's quoted words, for the porter-stemmed table; None when there are none."""
    terms = word_terms(query)
    return " OR ".join(quote(t) for t in terms) if terms else None


def identifier_match(query: str) -> str | None:
    """OR of the query's quoted identifiers, for the exact-identifier table."""
    identifiers = extract_identifiers(query)[:MAX_TERMS]
    return " OR ".join(quote(i) for i in identifiers) if identifiers else None
