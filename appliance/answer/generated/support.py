"""Is each sentence of a generated answer supported by the sources it cites?

A sentence is judged against the text of the sources it cites (after citation inheritance, see
citations.py), in this order:

1. cites nothing -> unsupported;
2. every identifier and number in it (VLV-3042-B, RWTP-F-011, gitlab-ctl, 10.0.0.1, 0.2, 72)
   must occur in a cited source as a whole token (VLV-3042 is not in VLV-3042-B), a number with
   a unit (72 psi, 15 min, 2.0 MGD) must occur there with that unit, and quoted code (inline
   `code`, code block lines, "gitlab-ctl restart") must occur in a source line, <placeholders>
   matching anything. An invented number, tag or command is the most dangerous hallucination:
   no word overlap or similarity outweighs it;
   A code block is judged by its lines alone (the numbers and names inside a command line that a
   source holds are that source's). A frequency in words ("quarterly", "twice a year", "every
   shift") is a value like a number: "monthly" where the source says "quarterly" is unsupported;
3. a sentence that matches a source sentence but flips its negation ("Do not increase plant
   flow" answered as "Increase plant flow") or swaps a word for its opposite ("Open VLV-1" where
   the source says "Close VLV-1", start/stop, enable/disable, increase/decrease...) is unsupported;
4. supported when at least `lexical_threshold` of its content words (lowercase, stopwords out,
   light suffix stemming, a few operator synonyms such as shut/close; its identifiers and numbers
   count as words found) occur in the cited sources, within WINDOW consecutive sentences of each:
   a claim stitched from words scattered over a whole chunk is not support;
5. else, when an `embed` function is given, supported when its cosine with the best sentence of
   a cited source is at least `semantic_threshold`;
6. else unsupported.

With `reword_floor` (the answerer's setting), a sentence that fails 4 and 5 but holds more than
that share of its words in one cited source, with every identifier, number, frequency and command
of it there and no flipped negation or opposite, is a *rewording*: not unsupported (no warning),
marked `reworded`, and the answerer quotes the source's own line under it (quotes.py). Without it
(the default of `check_support`) such a sentence is unsupported, as before.

Sentences with fewer than three content words and no identifier or number ("Here are the
steps:", "In summary:"), lines that introduce what follows (ending in ":"), lines that end in ":"
or "?" and name no identifier or number the question did not ("To restart gitaly, run the
following command:", the question echoed back), the model's own "Source: ..." lines and headings
are not judged (`checked` False).
`verified` says that at least one sentence was judged; `grounded` that one was and every judged
sentence is supported. An empty answer is neither.

Thresholds, from 68 crafted sentences over the demo SOPs (the support cases of
tests/test_citations.py are taken from them): faithful paraphrases keep 75-100% of their words
in the cited source, invented claims built from the source's own vocabulary 17-67%, so
LEXICAL_THRESHOLD = 0.7. With all-MiniLM-L6-v2, rewordings that fail the lexical test score
cosine 0.79-0.84 against their source sentence, but so does a one-word substitution ("raw water
main" for "high-lift header": 0.84). SEMANTIC_THRESHOLD = 0.85 therefore lets only near
restatements through: an "unsupported" that is a rewording is the safer error. It is a cosine of
all-MiniLM-L6-v2: with another embedder the answerer gives no `embed` (models/calibration.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from appliance.answer.generated.citations import CitedSentence
from appliance.config import SUPPORT_SEMANTIC_THRESHOLD
from appliance.text.frequencies import frequencies_in
from appliance.text.identifiers import COMMAND_NOUNS, identifier_in
from appliance.text.negation import negated_words
from appliance.text.quantities import numbers_in, without_thousands
from appliance.text.sentences import code_regions, split_sentences
from appliance.text.stems import OPPOSITES, stem
from appliance.text.stopwords import CLAIM_STOPWORDS
from appliance.text.terms import Terms, all_stems, extract_terms
from appliance.text.wording import SOURCES_LINE

LEXICAL_THRESHOLD = 0.7
SEMANTIC_THRESHOLD = SUPPORT_SEMANTIC_THRESHOLD  # the setting support.semantic_threshold, for all-MiniLM-L6-v2
# More than half of its words in one source, and nothing in it that the source contradicts: a rewording.
REWORD_FLOOR = 0.5
MIN_CONTENT_WORDS = 3
NEGATION_MATCH = 0.5  # a source sentence holding this share of the words states the same thing
WINDOW = 3  # source sentences a supported claim may draw its words from

Embed = Callable[[list[str]], np.ndarray]


# --- sources ---------------------------------------------------------------------------------------


@dataclass
class _Source:
    number: int
    text: str  # thousands separators removed
    numbers: dict[str, set[str | None]]  # canonical number -> units seen with it
    frequencies: set[str]  # canonical rates ("quarterly" and "every 3 months" alike)
    sentences: list[str]
    sentence_stems: list[set[str]]
    windows: list[set[str]]  # stems of each run of WINDOW consecutive sentences
    code_lines: list[list[str]]  # every line as command tokens
    subcommands: dict[str, set[str]]  # command -> words seen after it
    # False for a passage read by OCR with low confidence: a misread tag or digit must not confirm the
    # model's (its identifiers and numbers vouch for nothing; its words still count).
    vouches: bool = True


def _subcommands(text: str) -> dict[str, set[str]]:
    """Words that follow a command where the source uses it as one: in code, or after sudo or $.
    ("high-lift pumps" in prose is no command, so "high-lift header" is never held against it.)"""
    code = " ".join(text[start:end] for start, end in code_regions(text)).replace("`", " ").casefold()
    pairs = _COMMAND.findall(code) + _PROMPTED_COMMAND.findall(text.casefold())
    found: dict[str, set[str]] = {}
    for command, word in pairs:
        found.setdefault(command, set()).add(word)
    return found


# A Markdown link's target: "[`terraform import`](https://…)" shows the command, not the address.
_LINK_TARGET = re.compile(r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*\)")


def _prepare(number: int, raw: str, vouches: bool = True) -> _Source:
    text = without_thousands(raw)
    sentences = [text[s.start : s.end] for s in split_sentences(text)]
    stems = [all_stems(s) for s in sentences]
    windows = [set().union(*stems[i : i + WINDOW]) for i in range(max(1, len(stems) - WINDOW + 1))] if stems else []
    lines = _LINK_TARGET.sub("] ", text).split("\n")
    code_lines = [tokens for line in lines if (tokens := _code_tokens(line))]
    return _Source(
        number,
        text,
        numbers_in(text),
        set(frequencies_in(text)),
        sentences,
        stems,
        windows,
        code_lines,
        _subcommands(text),
        vouches,
    )


# --- checking ----------------------------------------------------------------------------------------


_CONTRADICTS = "contradicts"  # how a reason starts when the sentence negates or reverses its source


@dataclass(frozen=True)
class SentenceSupport:
    sentence: str
    cited: tuple[int, ...]
    checked: bool
    supported: bool | None  # None when not checked
    reason: str
    coverage: float | None = None  # share of content words found in the cited sources
    similarity: float | None = None  # best cosine with a cited source sentence, when embed was given
    missing: tuple[str, ...] = ()  # identifiers, numbers and code absent from the cited sources
    reworded: bool = False  # supported as a rewording (REWORD_FLOOR): its source's line is quoted under it

    def as_json(self) -> dict[str, Any]:
        return {
            "sentence": self.sentence,
            "cited": list(self.cited),
            "checked": self.checked,
            "supported": self.supported,
            "reason": self.reason,
            "coverage": self.coverage,
            "similarity": self.similarity,
            "missing": list(self.missing),
            "reworded": self.reworded,
        }

    @property
    def contradicts_source(self) -> bool:
        """It asserts what its source negates, or swaps a word for its opposite (`_contradiction`)."""
        return self.checked and not self.supported and self.reason.startswith(_CONTRADICTS)


@dataclass(frozen=True)
class SupportReport:
    grounded: bool
    verified: bool
    unsupported: list[str]
    details: list[SentenceSupport] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "grounded": self.grounded,
            "verified": self.verified,
            "unsupported": list(self.unsupported),
            "details": [d.as_json() for d in self.details],
        }


def _sources_label(numbers: Iterable[int]) -> str:
    numbers = sorted(numbers)
    label = "source" if len(numbers) == 1 else "sources"
    return f"{label} [{', '.join(map(str, numbers))}]"


def _is_word_compound(identifier: str) -> bool:
    """ "Redis-specific", "Auto-scaling": a capitalised word joined to lower-case words is English
    compounding, not a tag (tags have capitals or digits further on; commands are lower case)."""
    return re.fullmatch(r"[A-Z][a-z]+(?:-[a-z]+)+", identifier) is not None


def _acronym_plural_in(identifier: str, sources: Sequence[_Source]) -> bool:
    """ "IDs", "VMs", "PVCs": the plural of an acronym the sources write in the singular."""
    if re.fullmatch(r"[A-Z]{2,}s", identifier) is None:
        return False
    return any(identifier_in(identifier[:-1], s.text) for s in sources)


def _claim_terms(terms: Terms) -> Terms:
    """The terms a claim is held to: word compounds count as their words, not as identifiers."""
    compounds = [i for i in terms.identifiers if _is_word_compound(i)]
    if not compounds:
        return terms
    pieces = [stem(piece) for compound in compounds for piece in compound.lower().split("-")]
    words = tuple(dict.fromkeys([*terms.words, *(p for p in pieces if p not in CLAIM_STOPWORDS)]))
    return Terms(words, tuple(i for i in terms.identifiers if i not in compounds), terms.numbers)


def _missing(terms: Terms, sentence: str, sources: Sequence[_Source]) -> list[tuple[str, str]]:
    """(term, reason) for each identifier, number or frequency the cited sources do not hold."""
    missing: list[tuple[str, str]] = []
    sources = [s for s in sources if s.vouches]
    for identifier in terms.identifiers:
        if not any(identifier_in(identifier, s.text) for s in sources) and not _acronym_plural_in(identifier, sources):
            missing.append((identifier, f"identifier {identifier} not in the cited sources"))
    for quantity in terms.numbers:
        units: set[str | None] = set().union(*(s.numbers.get(quantity.value, set()) for s in sources))
        if not units:
            missing.append((quantity.written, f"number {quantity.written} not in the cited sources"))
        elif quantity.unit is not None and quantity.unit not in units:
            # The number is there, but not with this unit: 72 kPa is not 72 psi, a list's "2." is not 2 MGD.
            missing.append((quantity.with_unit, f"quantity {quantity.with_unit} not in the cited sources"))
    stated = set().union(*(s.frequencies for s in sources))
    for value, words in frequencies_in(sentence).items():
        if value not in stated:
            missing.append((words, f"frequency {words!r} not in the cited sources"))
    return missing


# --- commands and code ---------------------------------------------------------------------------

_INLINE_CODE = re.compile(r"`([^`]+)`")
_PLACEHOLDER = re.compile(r"<[^<>\s]+>|\$\{?[A-Za-z_]\w*\}?|\.\.\.")
_TOKEN_TRIM = "`'\"“”‘’,;.!?()[]{}"  # prose around a command: quotes, backticks, end punctuation
_PROMPTS = frozenset({"$", "#", ">", "%"})
# A lowercase hyphenated name followed by a word is a command and its subcommand: gitlab-ctl reconfigure.
_COMMAND = re.compile(r"\b([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)[ \t]+([a-z][a-z0-9-]*)\b")
_PROMPTED_COMMAND = re.compile(r"(?:\bsudo|^[ \t]*\$)[ \t]+" + _COMMAND.pattern[2:], re.MULTILINE)


def _code_tokens(line: str) -> list[str]:
    tokens = [t.strip(_TOKEN_TRIM).casefold() for t in line.split()]
    tokens = [t for t in tokens if t]
    while tokens and tokens[0] in _PROMPTS:
        tokens = tokens[1:]
    return tokens


def _token_matches(answer: str, source: str, fillers: frozenset[str]) -> bool:
    """The same token, or a source <placeholder> filled with a placeholder or with a value the question
    or a given source holds: a name invented to fill it (a configmap no source names) is not the source's."""
    if answer == source:
        return True
    filled = _PLACEHOLDER.fullmatch(answer) is not None or answer in fillers
    return filled and _PLACEHOLDER.fullmatch(source) is not None


def _code_in(code: str, source_lines: Sequence[list[str]], fillers: frozenset[str] = frozenset()) -> bool:
    """Does a command occur in a source line, whitespace aside and <placeholders> filled from `fillers`?"""
    wanted = _code_tokens(code)
    if not wanted:
        return True
    for tokens in source_lines:
        for start in range(len(tokens) - len(wanted) + 1):
            window = tokens[start : start + len(wanted)]
            if all(_token_matches(a, b, fillers) for a, b in zip(wanted, window, strict=False)):
                return True
    return False


def _quoted_in(code: str, lines: Sequence[list[str]], sources: Sequence[_Source], fillers: frozenset[str]) -> bool:
    tokens = _code_tokens(code)
    if len(tokens) == 1:  # a name or path: `gitlab.rb` is in /etc/gitlab/gitlab.rb
        named = any(identifier_in(code.strip(_TOKEN_TRIM + " "), s.text) for s in sources)
        return named or _code_in(code, lines, fillers)
    return _code_in(code, lines, fillers)


def _code_missing(
    sentence: CitedSentence, sources: Sequence[_Source], fillers: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """Commands the sentence quotes (inline `code`, code block lines, "gitlab-ctl restart") that no
    cited source holds: a wrong subcommand is as dangerous as a wrong number."""
    lines = [tokens for s in sources for tokens in s.code_lines]
    if sentence.kind == "code":
        quoted = [line for line in sentence.text.split("\n") if line.strip() and not line.lstrip().startswith("# ")]
    else:
        quoted = _INLINE_CODE.findall(sentence.text)
    missing = [
        (code, f"code `{code.strip()}` not in the cited sources")
        for code in quoted
        if not _quoted_in(code, lines, sources, fillers)
    ]
    if sentence.kind == "code":
        return missing
    prose = _INLINE_CODE.sub(" ", sentence.text)
    for command, word in _COMMAND.findall(prose):
        if word in CLAIM_STOPWORDS or word in COMMAND_NOUNS:
            continue
        known = {w for s in sources for w in s.subcommands.get(command.casefold(), ())}
        if known and word.casefold() not in known:
            missing.append((f"{command} {word}", f"command {command} {word} not in the cited sources"))
    return missing


def _only_restates(sentence: CitedSentence, terms: Terms, asked: Terms | None) -> bool:
    """A line that introduces what follows (ends in ':') or echoes the question (ends in '?') and names
    no identifier or number the question did not: it claims nothing itself; what follows is judged."""
    if asked is None or sentence.kind not in ("text", "item"):
        return False
    if not sentence.text.rstrip().rstrip("*_").rstrip().endswith((":", "?")):  # "**Apply the config:**"
        return False
    named = {identifier.casefold() for identifier in asked.identifiers}
    values = {quantity.value for quantity in asked.numbers}
    return all(i.casefold() in named for i in terms.identifiers) and all(q.value in values for q in terms.numbers)


def _is_connective(sentence: CitedSentence, terms: Terms, asked: Terms | None = None) -> bool:
    if sentence.kind == "heading" or _only_restates(sentence, terms, asked):
        return True
    if sentence.kind != "code" and SOURCES_LINE.match(sentence.text):
        return True  # the model naming its source ("Cite: AuditLogError › Meaning"): no claim
    if len(terms.words) >= MIN_CONTENT_WORDS:
        return False
    has_specifics = bool(terms.identifiers or terms.numbers or frequencies_in(sentence.text))
    return not has_specifics or (sentence.text.rstrip().endswith(":") and sentence.kind != "code")


def _coverage(terms: Terms, sources: Sequence[_Source], missing: int = 0, known: Iterable[str] = ()) -> float:
    """Share of the content words found in the best window of each cited source (together) or among
    `known` stems, its identifiers and numbers counting as words found unless `missing`."""
    words = set(terms.words)
    specifics = len(terms.identifiers) + len(terms.numbers)
    if not words and not specifics:
        return 1.0
    found: set[str] = words & set(known)
    for source in sources:
        if source.windows:
            found |= max(source.windows, key=lambda window: len(words & window)) & words
    return (len(found) + specifics - missing) / (len(words) + specifics)


def _contradiction(sentence: str, terms: Terms, sources: Sequence[_Source]) -> str | None:
    """Does the sentence assert what its best-matching source sentence negates (or the reverse), or swap
    one of its words for the opposite? The kind of contradiction, else None. Sentences that match equally
    well are all compared: "You may reuse the lead gasket" matches "Fit a new lead gasket at
    every connection" and "Never reuse a gasket" alike."""
    words = set(terms.words)
    scored = [
        (len(words & stems) / len(words), text, stems)
        for source in sources
        for text, stems in zip(source.sentences, source.sentence_stems, strict=True)
        if words
    ]
    best = max((score for score, _, _ in scored), default=0.0)
    if best < NEGATION_MATCH:
        return None
    in_answer = negated_words(sentence)
    swapped: list[str] = []
    for score, text, stems in scored:
        if score < best:
            continue
        in_source = negated_words(text)
        asserts_negated = any(w in words and w not in in_answer for w in in_source)
        negates_asserted = any(w in stems and w not in in_source for w in in_answer)
        if asserts_negated or negates_asserted:
            return "negation"
        swapped += [w for w in words if w not in stems and OPPOSITES.get(w) in stems - words]
    return f"opposite ({swapped[0]} for {OPPOSITES[swapped[0]]})" if swapped else None


def _vectors(embed: Embed, texts: list[str]) -> np.ndarray:
    vectors = np.asarray(embed(texts), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class SupportJudge:
    """The support rules for one answer: its sources prepared once, their sentences embedded at most once,
    so that a sentence can be tried against each given source (attribution.py) at little cost."""

    def __init__(
        self,
        sources: Mapping[int, str],
        *,
        embed: Embed | None = None,
        question: str | None = None,
        lexical_threshold: float = LEXICAL_THRESHOLD,
        semantic_threshold: float = SEMANTIC_THRESHOLD,
        reword_floor: float | None = None,
        untrusted: Collection[int] = (),
    ) -> None:
        # `untrusted`: sources read by OCR with low confidence (their identifiers and numbers vouch for nothing).
        self.prepared = {n: _prepare(n, text, n not in untrusted) for n, text in sources.items()}
        self.numbers = sorted(self.prepared)
        self.asked = extract_terms(question) if question else None
        self.embed = embed
        self.lexical_threshold = lexical_threshold
        self.semantic_threshold = semantic_threshold
        self.reword_floor = reword_floor
        # Values a command's <placeholder> may be filled with: the question's and the sources' own tokens.
        texts = [question or "", *(source.text for source in self.prepared.values())]
        self.fillers = frozenset(t for text in texts for t in _code_tokens(text))
        # The question's own words restated in an answer ("the gasket part number to use … is RW-GSK-0410")
        # are not the model's: a rewording may take them (never a support of its own, never a specific).
        self.question_stems = frozenset(all_stems(question)) if question else frozenset()
        self._source_vectors: tuple[np.ndarray, np.ndarray] | None = None  # (owners, vectors)
        self._answer_vectors: dict[str, np.ndarray] = {}

    def is_connective(self, sentence: CitedSentence) -> bool:
        return _is_connective(sentence, extract_terms(sentence.text), self.asked)

    def judge(self, sentence: CitedSentence, cited: Iterable[int] | None = None) -> SentenceSupport:
        """The verdict on `sentence` against `cited` (default: what it cites)."""
        numbers = frozenset(sentence.cited if cited is None else cited)
        if sentence.kind == "heading" or self.is_connective(sentence):
            reason = "heading, not judged" if sentence.kind == "heading" else "connective text, not judged"
            return SentenceSupport(sentence.text, tuple(sorted(numbers)), False, None, reason)
        terms = _claim_terms(extract_terms(sentence.text))
        sources = [self.prepared[n] for n in sorted(numbers) if n in self.prepared]
        verdict, overturnable = self._lexically(sentence, numbers, terms, sources)
        if not overturnable:
            return verdict
        if self.embed is not None:
            verdict = _with_similarity(verdict, self._similarity(sentence.text, numbers), self.semantic_threshold)
        if not verdict.supported and self.reword_floor is not None:
            coverage = _coverage(terms, sources, known=self.question_stems)
            if coverage > self.reword_floor:
                reason = (
                    f"reworded: {coverage:.0%} of its words are in {_sources_label(numbers)} or the question, "
                    "with every identifier, number and command of it, and nothing it contradicts"
                )
                verdict = replace(verdict, supported=True, reason=reason, reworded=True)
        return verdict

    def prefetch(self, sentences: Sequence[CitedSentence]) -> None:
        """Embed these answer sentences in the one call that embeds the sources, when it comes."""
        for sentence in sentences:
            self._answer_vectors.setdefault(sentence.text, np.empty(0))

    def report(self, details: list[SentenceSupport]) -> SupportReport:
        checked = [d for d in details if d.checked]
        unsupported = [d.sentence for d in checked if not d.supported]
        verified = bool(checked)
        return SupportReport(verified and not unsupported, verified, unsupported, details)

    def _lexically(
        self, sentence: CitedSentence, numbers: frozenset[int], terms: Terms, cited: Sequence[_Source]
    ) -> tuple[SentenceSupport, bool]:
        """The verdict without embeddings, and whether similarity may still overturn it: only low word
        overlap can be made good by meaning; a missing number, a command or a contradiction cannot."""
        label = tuple(sorted(numbers))
        if not numbers:
            return SentenceSupport(sentence.text, label, True, False, "cites nothing"), False
        if not cited:
            reason = f"cites {_sources_label(numbers)}, not among the sources given"
            return SentenceSupport(sentence.text, label, True, False, reason), False
        # A code block is its lines: a number or name inside a command line a source holds is the source's.
        missing = [] if sentence.kind == "code" else _missing(terms, sentence.text, cited)
        coverage = _coverage(terms, cited, len(missing))
        missing += _code_missing(sentence, cited, self.fillers)
        if missing:
            reason = "; ".join(r for _, r in missing)
            terms_missing = tuple(t for t, _ in missing)
            return SentenceSupport(sentence.text, label, True, False, reason, coverage, None, terms_missing), False
        if sentence.kind == "code":
            reason = f"every command line is in {_sources_label(numbers)}"
            return SentenceSupport(sentence.text, label, True, True, reason, coverage), False
        contradiction = _contradiction(sentence.text, terms, cited)
        if contradiction is not None:
            what = "a negation" if contradiction == "negation" else f"a word: its {contradiction}"
            reason = f"{_CONTRADICTS} {what} in {_sources_label(numbers)}"
            return SentenceSupport(sentence.text, label, True, False, reason, coverage), False
        if coverage >= self.lexical_threshold:
            reason = f"{coverage:.0%} of its words are in {_sources_label(numbers)}"
            return SentenceSupport(sentence.text, label, True, True, reason, coverage), False
        reason = f"only {coverage:.0%} of its words are in {_sources_label(numbers)}"
        return SentenceSupport(sentence.text, label, True, False, reason, coverage), True

    def _similarity(self, text: str, numbers: frozenset[int]) -> float | None:
        """Best cosine of `text` with a sentence of the `numbers` sources."""
        assert self.embed is not None
        if self._source_vectors is None or text not in self._answer_vectors or not self._answer_vectors[text].size:
            self._embed_pending(text)
        assert self._source_vectors is not None
        owners, vectors = self._source_vectors
        mask = np.isin(owners, sorted(numbers))
        if not mask.any():
            return None
        return float((vectors[mask] @ self._answer_vectors[text]).max())

    def _embed_pending(self, text: str) -> None:
        assert self.embed is not None
        self._answer_vectors.setdefault(text, np.empty(0))
        pending = [t for t, v in self._answer_vectors.items() if not v.size]
        source_texts: list[tuple[int, str]] = []
        if self._source_vectors is None:
            source_texts = [(n, t) for n in self.numbers for t in self.prepared[n].sentences]
        vectors = _vectors(self.embed, pending + [t for _, t in source_texts]) if pending or source_texts else None
        if vectors is None:
            return
        for row, answer_text in enumerate(pending):
            self._answer_vectors[answer_text] = vectors[row]
        if self._source_vectors is None:
            owners = np.array([n for n, _ in source_texts], dtype=np.int64)
            self._source_vectors = (owners, vectors[len(pending) :].reshape(len(source_texts), -1))


def _with_similarity(verdict: SentenceSupport, similarity: float | None, threshold: float) -> SentenceSupport:
    if similarity is None:
        return verdict
    label = _sources_label(verdict.cited)
    if similarity >= threshold:
        reason = f"close in meaning to a sentence of {label} (cosine {similarity:.2f})"
        return SentenceSupport(verdict.sentence, verdict.cited, True, True, reason, verdict.coverage, similarity)
    reason = f"{verdict.reason}, and its best cosine is {similarity:.2f}"
    return replace(verdict, reason=reason, similarity=similarity)


def check_support(
    sentences: list[CitedSentence],
    sources: Mapping[int, str],
    *,
    embed: Embed | None = None,
    question: str | None = None,
    lexical_threshold: float = LEXICAL_THRESHOLD,
    semantic_threshold: float = SEMANTIC_THRESHOLD,
    reword_floor: float | None = None,
    untrusted: Collection[int] = (),
) -> SupportReport:
    """Judge each sentence against the text of the sources it cites (rules in the module docstring).

    With the `question`, a line that only restates it to introduce what follows is not judged."""
    judge = SupportJudge(
        sources,
        embed=embed,
        question=question,
        lexical_threshold=lexical_threshold,
        semantic_threshold=semantic_threshold,
        reword_floor=reword_floor,
        untrusted=untrusted,
    )
    judge.prefetch(sentences)
    return judge.report([judge.judge(sentence) for sentence in sentences])
