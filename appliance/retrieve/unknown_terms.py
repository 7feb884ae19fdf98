"""The words of a question the documents never use, each weighed by how much it reads as a *name* they do not
mention (a product, an alert, a tag), after explaining what an operator's wording makes of a known name.

No single word decides: the weight is one signal of the evidence model (evidence.py), beside how closely
the best passages match. A weight of 1 is a name with a piece nobody in the documents wrote
(Zabbix mid-sentence, KubeVorquelzanLooping, VLV-9999-B); an ordinary English word the corpus happens not
to use weighs little; what the documents do cover under another spelling weighs less still:

* a compound of known words (ContainerRegistryGCOverdueBlobQueueTooLarge where the runbook writes
  ContainerRegistryGCOverdue[Blob|Manifest]QueueTooLarge): the more known pieces, the less it weighs;
* a documented name with known words added (DNSErrors_PerDstNamespaceWarning for
  DNSErrors_PerDstNamespace{Critical,Warning,Info});
* a piece of a wildcard pattern (Kube*CrashLooping, kube_*_total);
* a plain word by how the embedder's WordPiece vocabulary splits it: one piece, or a whole word and an
  inflection ("peg" + "##ged", "restart" + "##ing"), is English; "calico" is two pieces, "zabbix" three;
* and, where the English lexicon is given (english.py), a plain word it holds is English whatever its
  pieces ("sluggish"), a typo of an English word ("intermitently") or of one the documents write ("crpyto")
  is weighed by its pieces, two corpus words run together are a compound ("healthcheck"), and a word that
  is none of these is read as a name typed without its capitals ("zabbix agent unreachable" as "Zabbix
  agent unreachable"), at half a capitalized name's weight; a capitalized word opening the question weighs half
  a name scaled by its rarity in everyday English, and an English word whose capital would weigh no more than an
  English word does reads as that word ("Yesterday the pump tripped…" as "yesterday the pump tripped…").

Measurements and the pager's status (p99, 5xx, 2Gi, FIRING:1; text/wording.py), and the instance a pasted
alert's labels name (namespace=shop pod=cart-7f9c6d8b5-x2x4z), are not words of the question at all, and
misspellings were corrected before the search (spelling.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from appliance.retrieve.vocabulary import CorpusVocabulary
from appliance.text.edits import one_edit_variants
from appliance.text.english import MIN_NEAR_LENGTH, WORDPIECE_INFLECTION, english_shaped
from appliance.text.identifiers import is_identifier
from appliance.text.stopwords import STOPWORDS
from appliance.text.tokens import CANDIDATE, SEARCH_WORD
from appliance.text.wording import case_is_informative, is_noise_token, name_pieces, name_shaped, sentence_initial

NAME = 1.0
TWO_KNOWN_PIECES = 0.5
MANY_KNOWN_PIECES = 0.25  # three or more: an alert name built from the corpus's own words
KNOWN_NAME_EXTENDED = 0.1
WILDCARD_PIECE = 0.1
# A host, pod or node typed in lower case, known words and a number (ocs-worker-1): runbooks describe
# classes of machines, never each instance, while a plant tag in capitals (VLV-9999-B) is the subject. In a
# question typed all in capitals the tag family decides (_instance_name).
INSTANCE_NAME = 0.25
# A pasted alert's labels name the instance that fired, in Kubernetes' lower-case names (no capitals, no "_"):
# the value after "key=" (namespace=shop, pod=cart-7f9c…), and a name with a generated piece, letters and digits
# mixed that the documents never write (the replica-set hash and suffix of cart-7f9c6d8b5-x2x4z). The operator's
# own workloads, like the pager's status: not words of the question (an alert name, alertname=ZabbixAgentDown,
# is CamelCase and stays one).
_LABEL_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*=$")
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$")
# Letters and a one- or two-digit number whose letters the documents use with another number (sev2 where they
# write sev1, http3 beside http2): a level or version of a known thing. A tag with separators (VLV-9999-B) is not.
NUMBERED_VARIANT = 0.25
_NUMBERED = re.compile(r"^([A-Za-z]{2,})(\d{1,2})$")
# An unknown word joined by a hyphen to known ones (note-taker, re-seat): a compound, not a subject.
COMPOUND_PIECE = 0.1
# A plain word by its WordPiece count: 1 piece, 2 pieces, 3 or more.
PLAIN_WORD = (0.1, 0.25, 0.5)
# A lower-case word that is no English word, no typo of one and no compound of the documents' words: a name
# typed in one case. It weighs half a capitalized name (NAME): its reading is the lexicon's verdict, not the
# operator's, and jargon the lexicon lacks ("kubeconfig") reads the same way, so a question whose passages
# match it well still passes (at 0.75, typos of words the lexicon lacks, "crpyto", refused outright).
NAME_IN_ONE_CASE = 0.5
# Shorter lower-case words are mostly acronyms typed in lower case (api, cli, vpn, ntp), not product names.
MIN_NAME_IN_ONE_CASE = 5
# Pieces of a run-together compound: each at least this long ("healthcheck" = health + check).
MIN_COMPOUND_PART = 3
# An unknown word that opens the question with a capital: its case cannot say, but questions rarely open on
# an ordinary word the documents lack (Jenkins, one WordPiece, is a name). With the English lexicon, the weight is
# scaled by how specific the word is in everyday English (english.py's rarity): "Yesterday the pump tripped…"
# opens on an everyday word, not a product.
CAPITALIZED_FIRST_WORD = 0.5
# Pieces of a documented name that the head must reach: shorter heads match too much.
MIN_HEAD = 6

WordPieces = Callable[[str], list[str]]


class Lexicon(Protocol):
    def knows(self, word: str) -> bool: ...

    def misspelt(self, word: str) -> bool: ...

    def rarity(self, word: str) -> float: ...


@dataclass(frozen=True)
class UnknownTerm:
    typed: str  # as the operator wrote it
    weight: float  # 0..1: how much it says the documents do not cover the question
    why: str  # how it was read: "name", "plain word", "compound of known words", …
    # Read as a possible name from its shape: capitals, digits or underscores where English words have none, or
    # a capital opening the question. The others are plain words, weighed by their WordPieces alone.
    name_shaped: bool

    @property
    def is_name(self) -> bool:
        return self.name_shaped and self.weight >= 0.5


@dataclass(frozen=True)
class QuestionWords:
    unknown: tuple[UnknownTerm, ...]
    noise: frozenset[str]  # lower-cased search words that are measurements or pager status


def _known_head(token: str, vocabulary: CorpusVocabulary) -> bool:
    """A documented name followed by known words: DNSErrors_PerDstNamespace + Warning."""
    for cut in range(len(token) - 3, MIN_HEAD - 1, -1):
        if not (token[cut].isupper() or token[cut - 1] in "_-.:"):
            continue  # cut only where a new piece starts
        head = token[:cut].rstrip("_-.:").lower()
        tail = name_pieces(token[cut:])
        if len(head) < MIN_HEAD or not tail or not all(vocabulary.knows(p) for p in tail):
            continue
        if vocabulary.has_identifier(head) or vocabulary.has_word(head):
            return True
    return False


def _documented_prefix(token: str, vocabulary: CorpusVocabulary) -> bool:
    """The first half or more is a documented identifier: the runbook's name up to its alternatives
    (containerregistrygcoverdue + blobqueuetoolarge), however the question cases it."""
    lowered = token.lower()
    shortest = max(MIN_HEAD + 2, (len(lowered) + 1) // 2)
    return any(vocabulary.has_identifier(lowered[:cut]) for cut in range(len(lowered) - 1, shortest - 1, -1))


def _instance_name(token: str, vocabulary: CorpusVocabulary, *, case_informative: bool) -> bool:
    """ocs-worker-1, ip-10-0-4-17, web-03: lower case, separators, a number, every letter piece known.

    In a question typed all in capitals OCS-WORKER-1 reads the same, unless the documents write identifiers that
    start as it does (VLV- for VLV-3042-B): another number of a documented tag is another thing."""
    if "-" not in token:
        return False
    if not token.islower():
        if case_informative or _documented_family(token, vocabulary):
            return False
        token = token.lower()
    letters = [piece for piece in SEARCH_WORD.findall(token) if not piece.isdigit()]
    return bool(letters) and all(piece.isalpha() and vocabulary.knows(piece) for piece in letters)


def _instance_of_pasted_alert(token: str, text: str, start: int, vocabulary: CorpusVocabulary) -> bool:
    """A Kubernetes-style name (lower case, no "_") the documents do not hold that carries a generated piece
    (cart-7f9c6d8b5-x2x4z, payments/api-7d9), or that is a label's value (namespace=shop) and not another number
    of a documented tag (tag=vlv-9999-b where the documents write VLV-3042-B). A documented mixed piece (cl2 of
    alm-cl2-leak-99) keeps it a tag."""
    if "_" in token or not (token.islower() or token.isdigit()):
        return False
    pieces = SEARCH_WORD.findall(token)
    if all(vocabulary.knows(p.lower()) for p in pieces):
        return False
    mixed = [p for p in pieces if any(c.isdigit() for c in p) and any(c.isalpha() for c in p)]
    generated = bool(mixed) and not any(vocabulary.knows(p) for p in mixed)
    if _LABEL_KEY.search(text[max(0, start - 40) : start]):
        return generated or not _documented_family(token, vocabulary)
    return generated and any(sep in token for sep in "-/.")


def _documented_family(token: str, vocabulary: CorpusVocabulary) -> bool:
    """Some identifier of the documents starts with the token's letters before its first digit (vlv- of VLV-9999-B)."""
    head = re.split(r"\d", token.lower(), maxsplit=1)[0]
    return any(ch.isalpha() for ch in head) and vocabulary.has_identifier_prefix(head)


def _by_wildcard(text: str, start: int, end: int) -> bool:
    return (start > 0 and text[start - 1] == "*") or (end < len(text) and text[end] == "*")


def _name_weight(
    token: str, text: str, start: int, end: int, vocabulary: CorpusVocabulary, *, case_informative: bool
) -> tuple[float, str]:
    if _by_wildcard(text, start, end):
        return WILDCARD_PIECE, "piece of a wildcard pattern"
    if any(ch.isdigit() for ch in token):
        if _instance_name(token, vocabulary, case_informative=case_informative):
            return INSTANCE_NAME, "instance name of known words"
        numbered = _NUMBERED.match(token)
        if numbered and vocabulary.has_identifier_prefix(numbered.group(1).lower()):
            return NUMBERED_VARIANT, "another number of a documented name"
        return NAME, "tag"  # VLV-9999-B: another number is another thing
    pieces = name_pieces(token)
    if len(pieces) >= 2 and all(vocabulary.knows(p) for p in pieces):
        weight = TWO_KNOWN_PIECES if len(pieces) == 2 else MANY_KNOWN_PIECES
        if _known_head(token, vocabulary):
            return KNOWN_NAME_EXTENDED, "documented name with known words"
        return weight, "compound of known words"
    if _known_head(token, vocabulary) or _documented_prefix(token, vocabulary):
        return KNOWN_NAME_EXTENDED, "documented name with known words"
    return NAME, "name"


def english_pieces(pieces: list[str]) -> bool:
    """One whole vocabulary word, or one (3+ letters) and an inflection."""
    if len(pieces) == 1:
        return True
    return len(pieces) == 2 and len(pieces[0]) >= 3 and WORDPIECE_INFLECTION.match(pieces[1]) is not None


def _plain_weight(word: str, word_pieces: WordPieces | None) -> float:
    if word_pieces is None:
        return PLAIN_WORD[-1]
    pieces = word_pieces(word.lower())
    if english_pieces(pieces):
        return PLAIN_WORD[0]
    return PLAIN_WORD[min(len(pieces), len(PLAIN_WORD)) - 1]


def _run_together(word: str, vocabulary: CorpusVocabulary) -> bool:
    """Two words of the documents written as one: healthcheck, failovers, nodepool."""
    lowered = word.lower()
    cuts = range(MIN_COMPOUND_PART, len(lowered) - MIN_COMPOUND_PART + 1)
    return any(vocabulary.knows(lowered[:cut]) and vocabulary.knows(lowered[cut:]) for cut in cuts)


def _near_documented(word: str, vocabulary: CorpusVocabulary) -> bool:
    """One edit from a word the documents know in some form ("crpyto" where they write crypto-mining): a typo
    the spelling correction did not take, since the documents never write that word on its own."""
    lowered = word.lower()
    return len(lowered) >= MIN_NEAR_LENGTH and vocabulary.knows_any(one_edit_variants(lowered))


def _plain_term(
    word: str, vocabulary: CorpusVocabulary, word_pieces: WordPieces | None, english: Lexicon | None
) -> UnknownTerm:
    if english is None:
        return UnknownTerm(word, _plain_weight(word, word_pieces), "plain word", False)
    if english.knows(word):
        return UnknownTerm(word, PLAIN_WORD[0], "English word", False)
    if english.misspelt(word):
        return UnknownTerm(word, _plain_weight(word, word_pieces), "misspelt English word", False)
    if _near_documented(word, vocabulary):
        return UnknownTerm(word, _plain_weight(word, word_pieces), "misspelt word of the documents", False)
    if english_shaped(word):
        return UnknownTerm(word, _plain_weight(word, word_pieces), "English-shaped word", False)
    if len(word) < MIN_NAME_IN_ONE_CASE:
        return UnknownTerm(word, _plain_weight(word, word_pieces), "plain word", False)  # api, cli, ntp: acronyms
    if _run_together(word, vocabulary):
        return UnknownTerm(word, COMPOUND_PIECE, "compound of known words written as one", False)
    weight = max(NAME_IN_ONE_CASE, _plain_weight(word, word_pieces))
    return UnknownTerm(word, weight, "name typed in one case (no English word)", True)


def _known_words_hyphenated(token: str, words: list[str], vocabulary: CorpusVocabulary) -> bool:
    """CONTROLLER-MANAGER, 99th-percentile: every word known, no digit but an ordinal's, no underscore (a metric
    name is judged whole; another number of a tag is another thing)."""
    if len(words) == 1:
        return vocabulary.knows(words[0])  # a known word written with a capital
    numbered = any(
        any(ch.isdigit() for ch in piece) and not _ORDINAL.match(piece.lower()) for piece in SEARCH_WORD.findall(token)
    )
    return not numbered and "_" not in token and all(vocabulary.knows(w) for w in words)


def _plain_words(
    words: list[str],
    text: str,
    start: int,
    end: int,
    vocabulary: CorpusVocabulary,
    word_pieces: WordPieces | None,
    english: Lexicon | None,
) -> list[UnknownTerm]:
    """The unknown words of a token not shaped like a name, each on its own: pump-realted is pump + realted."""
    informative = case_is_informative(text)
    known_piece = len(words) > 1 and any(vocabulary.knows(w.lower()) for w in words)
    found = []
    for word in words:
        if vocabulary.knows(word.lower()):
            continue
        if known_piece:
            found.append(UnknownTerm(word, COMPOUND_PIECE, "piece of a compound of known words", False))
        elif _by_wildcard(text, start, end):
            found.append(UnknownTerm(word, WILDCARD_PIECE, "piece of a wildcard pattern", False))
        elif informative and word[:1].isupper() and len(words) == 1:
            # The capital of an opening word says "name" only as far as the word is no everyday English: with
            # the lexicon, "Jenkins" and "Kong" keep most of a name's weight; "Yesterday" and "Quiet", whose
            # capital would weigh no more than an English word does, read as that word (a weight this low needs a
            # word the lexicon counts thousands of times, so it is one of its English words).
            opening = CAPITALIZED_FIRST_WORD * (english.rarity(word) if english is not None else 1.0)
            if opening <= PLAIN_WORD[0]:
                found.append(_plain_term(word, vocabulary, word_pieces, english))
            else:
                weight = max(opening, _plain_weight(word, word_pieces))
                found.append(UnknownTerm(word, weight, "capitalized first word", True))
        elif _documented_prefix(word, vocabulary):
            found.append(UnknownTerm(word, KNOWN_NAME_EXTENDED, "documented name with known words", False))
        else:
            found.append(_plain_term(word, vocabulary, word_pieces, english))
    return found


def question_words(
    text: str, vocabulary: CorpusVocabulary, word_pieces: WordPieces | None = None, english: Lexicon | None = None
) -> QuestionWords:
    """The unknown terms of a question, each weighed, and its noise tokens."""
    informative = case_is_informative(text)
    unknown: dict[str, UnknownTerm] = {}
    noise: set[str] = set()
    for match in CANDIDATE.finditer(text):
        token, start, end = match.group(), match.start(), match.end()
        if is_noise_token(token):
            noise.update(w.lower() for w in SEARCH_WORD.findall(token))
            continue
        words = [w for w in SEARCH_WORD.findall(token) if w.lower() not in STOPWORDS and not is_noise_token(w)]
        if not words or token.lower() in unknown:
            continue
        if is_identifier(token) and vocabulary.has_identifier(token.lower()):
            continue
        if _instance_of_pasted_alert(token, text, start, vocabulary):
            noise.update(w.lower() for w in SEARCH_WORD.findall(token))
            continue
        if name_shaped(token, case_informative=informative, sentence_initial=sentence_initial(text, start)):
            if not _known_words_hyphenated(token, words, vocabulary):
                weight, why = _name_weight(token, text, start, end, vocabulary, case_informative=informative)
                unknown[token.lower()] = UnknownTerm(token, weight, why, True)
            continue
        for term in _plain_words(words, text, start, end, vocabulary, word_pieces, english):
            unknown.setdefault(term.typed.lower(), term)
    return QuestionWords(tuple(unknown.values()), frozenset(noise))
