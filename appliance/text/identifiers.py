"""Exact identifiers: the tokens an operator types verbatim and expects to be matched verbatim.

Valve and pump tags (VLV-3042-B, P-HIGH-001), alert names (KubePodCrashLooping,
etcdHighNumberOfLeaderChanges), commands (gitlab-ctl), versions and addresses (1.2.3, 10.0.0.1).
A word tokenizer splits or stems these, so they are indexed a second time, whole, in their own
FTS5 table (see index/migrations.py). Extraction is the same for chunks and for queries.

Three narrower readings serve the checks: a *checked* identifier is one an answer sentence must
find in its sources (units such as mg/L and word pairs such as and/or are not); a *strong* one
says the documents never mention the subject when it is missing from them; a *digit value* is a
value written with separators (a phone number 555-0195, an address 10.0.4.17).
"""

from __future__ import annotations

import re

from appliance.text.quantities import UNITS
from appliance.text.tokens import CANDIDATE

_SEPARATOR = re.compile(r"[-_.:/]")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_HAS_DIGIT = re.compile(r"\d")
_HAS_ALPHA = re.compile(r"[A-Za-z]")
_WORD_PAIR = re.compile(r"[A-Za-z]+/[A-Za-z]+")
_DIGIT_VALUE = re.compile(r"\+?\(?\d[\d\-.()/: ]*\d")
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
    for match in CANDIDATE.finditer(text):
        token = match.group()
        if is_identifier(token):
            seen.setdefault(token.lower(), None)
    return list(seen)


def is_checked_identifier(token: str) -> bool:
    """Tags, commands, versions, paths. "and/or", "mg/L" and "kPa" are words, not identifiers."""
    if not is_identifier(token) or token.lower() in UNITS:
        return False
    return _WORD_PAIR.fullmatch(token) is None


def is_strong_identifier(token: str) -> bool:
    """Tags, alert names, settings: capitals, digits with letters, or underscores. Hyphenated plain words
    ("bare-metal", "last-resort") are identifiers for matching but too often phrased differently in the
    documents to count as evidence that the documents never mention the subject."""
    has_digit = any(ch.isdigit() for ch in token)
    has_alpha = any(ch.isalpha() for ch in token)
    return any(ch.isupper() for ch in token) or "_" in token or (has_digit and has_alpha)


def is_digit_value(identifier: str) -> bool:
    """A value written with separators, such as a phone number (555-0195) or an address (10.0.4.17)."""
    return _DIGIT_VALUE.fullmatch(identifier) is not None


def identifier_in(identifier: str, text: str) -> bool:
    """Whole-token occurrence: VLV-3042 is not in VLV-3042-B, gitlab.rb is in /etc/gitlab/gitlab.rb."""
    pattern = rf"(?<![A-Za-z0-9])(?<![A-Za-z0-9][-_.]){re.escape(identifier)}(?![A-Za-z0-9])(?![-_.][A-Za-z0-9])"
    if re.search(pattern, text, re.IGNORECASE):
        return True
    if re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)+", identifier):  # follow-up: "follow up", "followup"
        spaced = r"\b" + r"[\s-]?".join(map(re.escape, identifier.split("-"))) + r"\b"
        return re.search(spaced, text, re.IGNORECASE) is not None
    return False


# Nouns that follow a command's name in prose ("the gitlab-ctl command", "kubectl output"): not a subcommand.
COMMAND_NOUNS = frozenset(
    {
        "command",
        "commands",
        "tool",
        "utility",
        "script",
        "binary",
        "cli",
        "service",
        "services",
        "process",
        "output",
        "file",
    }
)
