"""How operators write: the tokens that carry no subject, and whether a word is shaped like a name.

A question's unknown words are judged by the evidence decision; two kinds of token are never a
subject the documents could fail to mention:

* measurements: percentiles (p99, p99.9), status classes (5xx), sizes, durations and rates
  (2Gi, 40ms, 15m, 104%), times of day (3am), plain numbers;
* the pager's own status words (`[FIRING:1]`, RESOLVED).

Whether an unknown word is a *name* (a product, an alert, a tag) or ordinary English is read from its
shape: internal capitals (KubePodCrashLooping), letters with digits (VLV-9999-B), underscores
(kube_pod_info), or a capital where the sentence gives none (mid-sentence "Zabbix"). Case says nothing
when a question is typed all in one case ("HOW DO I RESTART …", "zabbix agent down"): then only the
internal structure counts.
"""

from __future__ import annotations

import re

_MEASUREMENT = re.compile(
    r"^(?:"
    r"p\d{1,3}(?:\.\d+)?"  # percentiles: p50, p99, p99.9
    r"|\dxx"  # status classes: 5xx, 4XX
    r"|\d+(?:\.\d+)?(?:[kmgtpe]i?b?|[kmgtpe]i|ms|us|µs|ns|s|sec|m|min|h|hr|d|w|%|x|rps|qps|k)"  # 2Gi 40ms 15m 3x 10k
    r"|\d{1,2}(?::\d{2})?(?:am|pm)"  # times of day: 3am, 11:30pm
    r"|\d+(?:[.,]\d+)*"  # plain numbers
    r")$",
    re.IGNORECASE,
)
_PAGER_STATUS = re.compile(r"^(?:firing|resolved|triggered|acknowledged)(?::\d+)?$", re.IGNORECASE)
# CamelCase humps and runs of capitals: ContainerRegistryGCOverdue -> Container Registry GC Overdue.
_PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_INTERNAL_CAPITAL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")


def is_measurement(token: str) -> bool:
    """p99, 5xx, 2Gi, 40ms, 104%, 3am, 1.5: values and units, never a subject."""
    return _MEASUREMENT.match(token.rstrip("%")) is not None or _MEASUREMENT.match(token) is not None


def is_pager_status(token: str) -> bool:
    """The pager's status word (FIRING:1, RESOLVED): part of the paste, not of the question."""
    return _PAGER_STATUS.match(token) is not None


def is_noise_token(token: str) -> bool:
    """A token the evidence decision does not count as a word of the question at all."""
    return is_measurement(token) or is_pager_status(token)


def case_is_informative(text: str) -> bool:
    """False for a question typed all in one case: its capitals (or their absence) say nothing."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return False
    upper = sum(ch.isupper() for ch in letters)
    return 0 < upper < 0.6 * len(letters)


def name_pieces(token: str) -> list[str]:
    """The word pieces of an identifier or compound, 3+ letters each: CamelCase humps and the parts
    between separators (DNSErrors_PerDstNamespace -> DNS, Errors, Per, Dst, Namespace)."""
    return [piece for piece in _PIECE.findall(token) if len(piece) >= 3]


def name_shaped(token: str, *, case_informative: bool, sentence_initial: bool = False) -> bool:
    """Shaped like a name rather than an English word: letters with digits, an underscore, internal capitals,
    or (when the question's case means something) capitals a sentence would not give it."""
    has_digit = any(ch.isdigit() for ch in token)
    has_alpha = any(ch.isalpha() for ch in token)
    if (has_digit and has_alpha) or "_" in token:
        return True
    if not case_informative:
        return False
    if _INTERNAL_CAPITAL.search(token):
        return True
    if token.isupper() and sum(ch.isalpha() for ch in token) >= 2:
        return True  # an acronym or a tag in capitals (SCADA, CONTROLLER-MANAGER in a mixed-case question)
    return token[:1].isupper() and not sentence_initial


def sentence_initial(text: str, start: int) -> bool:
    """The token at `start` opens the text or a sentence (its capital is the sentence's, not a name's)."""
    before = text[:start].rstrip(" \t\"'([{*-")
    return not before or _SENTENCE_END.search(before) is not None or before.endswith("\n")


# A line of a model's answer that only lists its sources ("Sources: [1], [2]"), not a claim to check.
SOURCES_LINE = re.compile(r"^\W*(cite|citation|citations|source|sources|reference|references)\W*:", re.IGNORECASE)
