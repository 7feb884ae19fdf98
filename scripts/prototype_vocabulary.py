"""A prototype for issue 16 phase B, measured here and NOT in the product: an unknown-word veto that
explains the words operators really type before it vetoes.

Today (appliance/retrieve/evidence.py) a question is refused outright when one "salient" word of it
(capitalized, or several WordPiece pieces) occurs nowhere in the corpus. The prototype keeps that
veto but first explains away, as a real operator's wording rather than an unknown subject:

* tokens of measurement: percentiles (p99), status classes (5xx), sizes and durations (2Gi, 15m);
* a misspelling: a corpus word at Damerau-Levenshtein distance 1 (lower-case words of 5+ letters: a
  capitalized Linkerd is a name, not a typo of "linked"; each variant is looked up through FTS5, which
  stems it as it stems the corpus);
* a compound: an alert name or identifier without digits whose CamelCase or separator pieces all occur
  in the corpus (ContainerRegistryGCOverdueBlobQueueTooLarge where the runbook writes
  ...Overdue[Blob|Manifest]..., CONTROLLER-MANAGER typed in capitals, Kube*CrashLooping);
* a corpus name followed by known words (DNSErrors_PerDstNamespaceWarning where the runbook writes
  DNSErrors_PerDstNamespace{Critical,Warning,Info});
* the pager's own status (`[FIRING:1]`, `RESOLVED`).

A made-up name keeps at least one unknown piece (KubeVorquelzanLooping: "vorquelzan"), so it is still
refused. An explained term also stops counting as an unknown identifier in the evidence model's
features, and leaves the coverage's denominator; the coefficients and threshold are today's.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import replace
from functools import lru_cache

from appliance.config import Settings
from appliance.retrieve.evidence import EvidenceSignals, _known_word, _occurs, answerable_probability

_MEASURE = re.compile(r"^(p\d{2,3}(\.\d+)?|\dxx|\d+(\.\d+)?([kmgt]i?b?|ms|s|m|h|d|%))$", re.IGNORECASE)
_PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_PAGER = re.compile(r"^(firing|resolved)(:\d+)?$", re.IGNORECASE)


class Vocabulary:
    """Is a word in the corpus (FTS5 applies its porter stemmer to the query word), and which one-edit
    variant of a misspelt word is?"""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._known = lru_cache(maxsize=200_000)(lambda term: _known_word(conn, term))
        # Exact words only for misspellings: today's prefix match would take "nowad" (of nowadays) for Nomad.
        self._word = lru_cache(maxsize=500_000)(lambda term: _occurs(conn, "chunks_fts", term))

    def known(self, term: str) -> bool:
        return bool(self._known(term.lower()))

    def near(self, word: str) -> str | None:
        """A corpus word one edit (delete, swap, substitute, insert) from the word, if there is one."""
        for variant in _one_edit_variants(word.lower()):
            if self._word(variant):
                return variant
        return None


def _one_edit_variants(word: str) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = [a + b[1:] for a, b in splits if b]
    swaps = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1]
    substitutions = [a + c + b[1:] for a, b in splits if b for c in letters if c != b[0]]
    inserts = [a + c + b for a, b in splits for c in letters]
    return list(dict.fromkeys(swaps + deletes + substitutions + inserts))


def explanation(term: str, vocabulary: Vocabulary) -> str | None:
    """Why an unknown term is operator wording rather than an unknown subject; None when it is not."""
    if _MEASURE.match(term):
        return "measurement token"
    if _PAGER.match(term):
        return "pager status"
    if not any(ch.isdigit() for ch in term):  # a tag with digits (VLV-9999-B) stays a name
        pieces = [p for p in _PIECES.findall(term) if len(p) >= 3]
        if len(pieces) >= 2 and all(vocabulary.known(p) for p in pieces):
            return "compound of known pieces"
    if _known_name_plus_words(term, vocabulary):
        return "known name plus known words"
    if len(term) >= 5 and term.isalpha() and term.islower():  # Linkerd is a name, not a typo of "linked"
        near = vocabulary.near(term)
        if near is not None:
            return f"misspelling of {near}"
    return None


def _known_name_plus_words(term: str, vocabulary: Vocabulary) -> bool:
    """A corpus name (6+ characters) followed by known words: the pager's DNSErrors_PerDstNamespaceWarning
    where the runbook writes DNSErrors_PerDstNamespace{Critical,Warning,Info}."""
    for cut in range(len(term) - 3, 5, -1):
        tail = [p for p in _PIECES.findall(term[cut:]) if len(p) >= 3]
        if tail and term[cut - 1].isalnum() and all(vocabulary.known(p) for p in tail):
            head = term[:cut].rstrip("_-.:*")
            if len(head) >= 6 and vocabulary.known(head):
                return True
    return False


def prototype_decision(signals: EvidenceSignals, settings: Settings, vocabulary: Vocabulary) -> tuple[bool, str]:
    """(refused, reason): today's decision with every explained term taken out of the unknown ones, for the
    veto and for the evidence model's features alike (an explained identifier is no unknown identifier; an
    explained word leaves the coverage's denominator)."""
    explained = {t for t in (*signals.unknown_terms, *signals.unknown_identifiers) if explanation(t, vocabulary)}
    unexplained = [t for t in signals.salient_unknown_terms if t not in explained]
    if unexplained:
        return True, f"the documents never mention {', '.join(unexplained[:3])}"
    dropped = sum(1 for t in signals.unknown_terms if t in explained)
    remaining = max(1, signals.content_terms - dropped)
    adjusted = replace(
        signals,
        unknown_terms=tuple(t for t in signals.unknown_terms if t not in explained),
        salient_unknown_terms=(),
        unknown_identifiers=tuple(t for t in signals.unknown_identifiers if t not in explained),
        coverage=min(1.0, signals.coverage * signals.content_terms / remaining),
        content_terms=remaining,
    )
    probability = answerable_probability(adjusted, settings)
    threshold = settings.evidence.threshold
    if probability >= threshold:
        return False, f"matching passages found (confidence {probability:.2f} ≥ {threshold:.2f})"
    return True, f"below threshold (confidence {probability:.2f} < {threshold:.2f})"
