"""Exact identifiers: the tokens an operator types verbatim and expects to be matched verbatim.

Valve and pump tags (VLV-3042-B, P-HIGH-001), alert names (KubePodCrashLooping,
etcdHighNumberOfLeaderChanges), commands (gitlab-ctl), versions and addresses (1.2.3, 10.0.0.1).
A word tokenizer splits or stems these, so they are indexed a second time, whole, in their own
FTS5 table (see index/migrations.py). Extraction is the same for chunks and for queries.
"""

from __future__ import annotations

import re

# Starts and ends with a letter or digit; may hold - _ . : / inside.
_CANDIDATE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:/-]*[A-Za-z0-9])?")
_SEPARATOR = re.compile(r"[-_.:/]")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_HAS_DIGIT = re.compile(r"\d")
_HAS_ALPHA = re.compile(r"[A-Za-z]")
MAX_IDENTIFIER_LENGTH = 80


def is_identifier(token: str) -> bool:
    if len(token) < 3 or len(token) > MAX_IDENTIFIER_LENGTH:
        return False
    has_digit = bool(_HAS_DIGIT.search(token))
    has_alpha = bool(_HAS_ALPHA.search(token))
    if _SEPARATOR.search(token):
        # "e.g", "i.e" are words; a separator plus a digit or a second separator is an identifier.
        return has_digit or (len(_SEPARATOR.findall(token)) >= 1 and len(token) >= 5)
    if has_digit and has_alpha:
        return True  # AIT201, ec2, 5xx
    return bool(_CAMEL.search(token))


def extract_identifiers(text: str) -> list[str]:
    """Distinct identifiers in order of first appearance, lower-cased (FTS5 folds case anyway)."""
    seen: dict[str, None] = {}
    for match in _CANDIDATE.finditer(text):
        token = match.group()
        if is_identifier(token):
            seen.setdefault(token.lower(), None)
    return list(seen)
