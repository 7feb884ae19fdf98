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
3. a sentence that matches a source sentence but flips its negation ("Do not increase plant
   flow" answered as "Increase plant flow") is unsupported;
4. supported when at least `lexical_threshold` of its content words (lowercase, stopwords out,
   light suffix stemming, a few operator synonyms such as shut/close; its identifiers and numbers
   count as words found) occur in the cited sources, within WINDOW consecutive sentences of each:
   a claim stitched from words scattered over a whole chunk is not support;
5. else, when an `embed` function is given, supported when its cosine with the best sentence of
   a cited source is at least `semantic_threshold`;
6. else unsupported.

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
restatements through: an "unsupported" that is a rewording is the safer error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import numpy as np

from appliance.answer.citations import CitedSentence, code_regions, split_sentences
from appliance.ingest.identifiers import is_identifier
from appliance.retrieve.fts_query import STOPWORDS

LEXICAL_THRESHOLD = 0.7
SEMANTIC_THRESHOLD = 0.85
MIN_CONTENT_WORDS = 3
NEGATION_MATCH = 0.5  # a source sentence holding this share of the words states the same thing

Embed = Callable[[list[str]], np.ndarray]

# Words that carry no claim: the retrieval stopwords, modals, sequencing and the LLM's own
# talk about its sources ("according to source 2").
_EXTRA_STOPWORDS_TEXT = """also must may might shall need needs prior following followed first next finally then
    step steps according source sources document documents documented procedure sop states stated says said
    mentioned described provided context information answer question however therefore thus additionally
    within without yes make sure per via etc eg ie one"""
_EXTRA_STOPWORDS = frozenset(_EXTRA_STOPWORDS_TEXT.split())
NEGATIONS = re.compile(r"\b(?:not|no|never|cannot|nor|neither|none)\b|n't\b", re.IGNORECASE)
_CONDITIONAL = re.compile(r"\b(?:until|unless|before|without|except|only)\b", re.IGNORECASE)
# Comparatives that hold "no"/"not" without negating anything.
_NOT_NEGATION = re.compile(r"\b(?:no|not)\s+(?:more|less|later|earlier|fewer|greater|sooner)\s+than\b", re.IGNORECASE)

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
_NUMBER_WORDS_TEXT = "zero one two three four five six seven eight nine ten eleven twelve"
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_NUMBER_WORDS_TEXT.split())}
# Units after a number, aliases folded: "15 minutes" and "15 min" agree, "72 psi" and "72 kPa" do not.
_UNIT_GROUPS = {
    "s": "s sec secs second seconds",
    "min": "min mins minute minutes",
    "h": "h hr hrs hour hours",
    "d": "day days",
    "wk": "week weeks wk",
    "ms": "ms millisecond milliseconds",
    "psi": "psi psig",
    "kpa": "kpa",
    "bar": "bar",
    "mpa": "mpa",
    "mg/l": "mg/l",
    "ppm": "ppm",
    "ppb": "ppb",
    "ntu": "ntu",
    "mgd": "mgd",
    "gpm": "gpm",
    "l/s": "l/s lps",
    "%": "% percent",
    "°c": "°c degc",
    "°f": "°f degf",
    "ft": "ft feet foot",
    "m": "m meter meters metre metres",
    "mm": "mm",
    "cm": "cm",
    "km": "km",
    "gal": "gal gallon gallons",
    "l": "l liter liters litre litres",
    "ml": "ml",
    "kg": "kg",
    "lb": "lb lbs pound pounds",
    "v": "v volt volts",
    "kv": "kv",
    "a": "amp amps ampere amperes",
    "ma": "ma",
    "kw": "kw",
    "mw": "mw",
    "kva": "kva",
    "hz": "hz",
    "rpm": "rpm",
    "gb": "gb gib",
    "mb": "mb mib",
    "kb": "kb kib",
    "tb": "tb tib",
}
UNITS = {alias: unit for unit, aliases in _UNIT_GROUPS.items() for alias in aliases.split()}

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_CANDIDATE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.:/-]*[A-Za-z0-9])?%?")
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NUMBER_WITH_UNIT = re.compile(r"(\d+(?:\.\d+)?)-?([A-Za-z%°][A-Za-z/°]*)")  # 72psi, 15-minute
_WORD = re.compile(r"[^\W\d_]+")
# One or two words after a number, the unit being either: "72 psi", "60-second", "5 working days".
_UNIT_WORD = r"(%|°\s?[CFcf]\b|[A-Za-z°]+(?:/[A-Za-z]+)?)"
_UNIT_AFTER = re.compile(rf"(?:[ \t]*\n)?[ \t]*-?[ \t]*{_UNIT_WORD}(?:\s+{_UNIT_WORD})?")
# A number in a source: not the tail of a tag (F-011, AIT301), an address or a decimal.
_SOURCE_NUMBER = re.compile(r"(?<![A-Za-z0-9.])(?<![A-Za-z][-_])(\d+(?:\.\d+)?)(?!\d)(?!\.\d)")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
WINDOW = 3  # source sentences a supported claim may draw its words from


# --- words ---------------------------------------------------------------------------------------


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
_STOP = STOPWORDS | _EXTRA_STOPWORDS


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter-lite: plural, -ing, -ed and a final -e/-y folded, so close/closes/closed/closing agree;
    synonyms fold onto one stem and number words onto digits ("two" -> "2")."""
    lowered = word.lower()
    if lowered in _NUMBER_WORDS:
        return _NUMBER_WORDS[lowered]
    raw = _stem_raw(lowered)
    return _SYNONYM_STEMS.get(raw, raw)


def _canonical_number(token: str) -> str:
    try:
        value = Decimal(token)
    except InvalidOperation:
        return token
    text = format(value.normalize(), "f")
    return text if "." not in text else text.rstrip("0").rstrip(".")


def _unit(word: str | None) -> str | None:
    if not word:
        return None
    folded = word.lower().replace(" ", "")
    if folded in UNITS:
        return UNITS[folded]
    return UNITS.get(folded.split("/")[0]) if "/" in folded else None  # "gpm/sq ft" is gpm


def _unit_after(text: str, end: int) -> tuple[str | None, int]:
    """The folded unit in the word or two after a number ending at `end`, and where it ends."""
    match = _UNIT_AFTER.match(text, end)
    if not match:
        return None, end
    if unit := _unit(match.group(1)):
        return unit, match.end(1)
    if match.group(1).isalpha() and (unit := _unit(match.group(2))):
        return unit, match.end(2)
    return None, end


def _is_checked_identifier(token: str) -> bool:
    """Tags, commands, versions, paths. "and/or", "mg/L" and "kPa" are words, not identifiers."""
    if not is_identifier(token) or token.lower() in UNITS:
        return False
    return re.fullmatch(r"[A-Za-z]+/[A-Za-z]+", token) is None


@dataclass(frozen=True)
class Quantity:
    written: str  # the number as written: "72", "0.50"
    value: str  # canonical: "0.50" and "0.5" agree, "1,000" and "1000" too
    unit: str | None  # folded unit after it, None when there is none
    with_unit: str  # as written with its unit: "72 psi"


@dataclass(frozen=True)
class Terms:
    """What a sentence claims, as the checker sees it."""

    words: tuple[str, ...]  # content-word stems, distinct, in order
    identifiers: tuple[str, ...]  # as written
    numbers: tuple[Quantity, ...]


def extract_terms(text: str) -> Terms:
    """Content-word stems, identifiers and numbers (with units) of a sentence."""
    text = _THOUSANDS.sub("", text)
    identifiers: dict[str, None] = {}
    numbers: dict[Quantity, None] = {}
    blanked = list(text)
    for match in _CANDIDATE.finditer(text):
        token = match.group().rstrip("%")
        end = match.start() + len(token)
        with_unit = _NUMBER_WITH_UNIT.fullmatch(token)
        if _PLAIN_NUMBER.fullmatch(token):
            unit, unit_end = _unit_after(text, end)
            quantity = Quantity(token, _canonical_number(token), unit, text[match.start() : unit_end])
            numbers.setdefault(quantity, None)
        elif with_unit and (unit := _unit(with_unit.group(2))):  # "72psi", "15-minute", "24h"
            number = with_unit.group(1)
            numbers.setdefault(Quantity(number, _canonical_number(number), unit, token), None)
        elif _is_checked_identifier(token):
            identifiers.setdefault(token, None)
        else:
            continue
        blanked[match.start() : end] = " " * (end - match.start())
    words = [w.lower() for w in _WORD.findall("".join(blanked))]
    stems = [stem(w) for w in words if len(w) > 1 and w not in _STOP and w not in UNITS]
    return Terms(tuple(dict.fromkeys(stems)), tuple(identifiers), tuple(numbers))


def negated_words(text: str) -> set[str]:
    """Stems of the content words a negation applies to: "Do not increase the flow" -> {"increas"}."""
    text = _NOT_NEGATION.sub(" ", text)
    scopes = set()
    for match in NEGATIONS.finditer(text):
        clause = re.split(r"[.;:!?]", text[match.end() : match.end() + 80])[0]
        if _CONDITIONAL.search(clause):
            continue  # "do not return it until approved" restates "approve its return": no polarity to compare
        following = _WORD.findall(clause)[:3]
        content = [w for w in following if len(w) > 1 and w.lower() not in _STOP and w.lower() not in UNITS]
        if content:
            scopes.add(stem(content[0]))
    return scopes


# --- sources ---------------------------------------------------------------------------------------


def _source_numbers(text: str) -> dict[str, set[str | None]]:
    found: dict[str, set[str | None]] = {}
    for match in _SOURCE_NUMBER.finditer(text):
        found.setdefault(_canonical_number(match.group(1)), set()).add(_unit_after(text, match.end())[0])
    for match in _NUMBER_WORD.finditer(text):
        found.setdefault(_NUMBER_WORDS[match.group(1).lower()], set()).add(_unit_after(text, match.end())[0])
    return found


def _all_stems(text: str) -> set[str]:
    """Every word stem of a source text, and its numbers (so "two" in an answer finds "2")."""
    return {stem(w) for w in _WORD.findall(text) if len(w) > 1} | set(_source_numbers(text))


@dataclass
class _Source:
    number: int
    text: str  # thousands separators removed
    numbers: dict[str, set[str | None]]  # canonical number -> units seen with it
    sentences: list[str]
    sentence_stems: list[set[str]]
    windows: list[set[str]]  # stems of each run of WINDOW consecutive sentences
    code_lines: list[list[str]]  # every line as command tokens
    subcommands: dict[str, set[str]]  # command -> words seen after it


def _subcommands(text: str) -> dict[str, set[str]]:
    """Words that follow a command where the source uses it as one: in code, or after sudo or $.
    ("high-lift pumps" in prose is no command, so "high-lift header" is never held against it.)"""
    code = " ".join(text[start:end] for start, end in code_regions(text)).replace("`", " ").casefold()
    pairs = _COMMAND.findall(code) + _PROMPTED_COMMAND.findall(text.casefold())
    found: dict[str, set[str]] = {}
    for command, word in pairs:
        found.setdefault(command, set()).add(word)
    return found


def _prepare(number: int, raw: str) -> _Source:
    text = _THOUSANDS.sub("", raw)
    sentences = [text[s.start : s.end] for s in split_sentences(text)]
    stems = [_all_stems(s) for s in sentences]
    windows = [set().union(*stems[i : i + WINDOW]) for i in range(max(1, len(stems) - WINDOW + 1))] if stems else []
    code_lines = [tokens for line in text.split("\n") if (tokens := _code_tokens(line))]
    return _Source(number, text, _source_numbers(text), sentences, stems, windows, code_lines, _subcommands(text))


def identifier_in(identifier: str, text: str) -> bool:
    """Whole-token occurrence: VLV-3042 is not in VLV-3042-B, gitlab.rb is in /etc/gitlab/gitlab.rb."""
    pattern = rf"(?<![A-Za-z0-9])(?<![A-Za-z0-9][-_.]){re.escape(identifier)}(?![A-Za-z0-9])(?![-_.][A-Za-z0-9])"
    if re.search(pattern, text, re.IGNORECASE):
        return True
    if re.fullmatch(r"[A-Za-z]+(?:-[A-Za-z]+)+", identifier):  # follow-up: "follow up", "followup"
        spaced = r"\b" + r"[\s-]?".join(map(re.escape, identifier.split("-"))) + r"\b"
        return re.search(spaced, text, re.IGNORECASE) is not None
    return False


# --- checking ----------------------------------------------------------------------------------------


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
        }


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


def _missing(terms: Terms, sources: Sequence[_Source]) -> list[tuple[str, str]]:
    """(term, reason) for each identifier or number the cited sources do not hold."""
    missing: list[tuple[str, str]] = []
    for identifier in terms.identifiers:
        if not any(identifier_in(identifier, s.text) for s in sources):
            missing.append((identifier, f"identifier {identifier} not in the cited sources"))
    for quantity in terms.numbers:
        units: set[str | None] = set().union(*(s.numbers.get(quantity.value, set()) for s in sources))
        if not units:
            missing.append((quantity.written, f"number {quantity.written} not in the cited sources"))
        elif quantity.unit is not None and quantity.unit not in units:
            # The number is there, but not with this unit: 72 kPa is not 72 psi, a list's "2." is not 2 MGD.
            missing.append((quantity.with_unit, f"quantity {quantity.with_unit} not in the cited sources"))
    return missing


# --- commands and code ---------------------------------------------------------------------------

_INLINE_CODE = re.compile(r"`([^`]+)`")
_PLACEHOLDER = re.compile(r"<[^<>\s]+>|\$\{?[A-Za-z_]\w*\}?|\.\.\.")
_TOKEN_TRIM = "`'\"“”‘’,;.!?()[]{}"  # prose around a command: quotes, backticks, end punctuation
_PROMPTS = frozenset({"$", "#", ">", "%"})
# A lowercase hyphenated name followed by a word is a command and its subcommand: gitlab-ctl reconfigure.
_COMMAND = re.compile(r"\b([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)[ \t]+([a-z][a-z0-9-]*)\b")
_PROMPTED_COMMAND = re.compile(r"(?:\bsudo|^[ \t]*\$)[ \t]+" + _COMMAND.pattern[2:], re.MULTILINE)
_GENERIC_NOUNS = "command commands tool utility script binary cli service services process output file"
_NOT_SUBCOMMANDS = frozenset(_GENERIC_NOUNS.split())


def _code_tokens(line: str) -> list[str]:
    tokens = [t.strip(_TOKEN_TRIM).casefold() for t in line.split()]
    tokens = [t for t in tokens if t]
    while tokens and tokens[0] in _PROMPTS:
        tokens = tokens[1:]
    return tokens


def _token_matches(answer: str, source: str) -> bool:
    return answer == source or _PLACEHOLDER.fullmatch(source) is not None


def _code_in(code: str, source_lines: Sequence[list[str]]) -> bool:
    """Does a command occur in a source line, whitespace aside and <placeholders> matching anything?"""
    wanted = _code_tokens(code)
    if not wanted:
        return True
    for tokens in source_lines:
        for start in range(len(tokens) - len(wanted) + 1):
            if all(_token_matches(a, b) for a, b in zip(wanted, tokens[start : start + len(wanted)], strict=False)):
                return True
    return False


def _quoted_in(code: str, lines: Sequence[list[str]], sources: Sequence[_Source]) -> bool:
    tokens = _code_tokens(code)
    if len(tokens) == 1:  # a name or path: `gitlab.rb` is in /etc/gitlab/gitlab.rb
        return any(identifier_in(code.strip(_TOKEN_TRIM + " "), s.text) for s in sources) or _code_in(code, lines)
    return _code_in(code, lines)


def _code_missing(sentence: CitedSentence, sources: Sequence[_Source]) -> list[tuple[str, str]]:
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
        if not _quoted_in(code, lines, sources)
    ]
    if sentence.kind == "code":
        return missing
    prose = _INLINE_CODE.sub(" ", sentence.text)
    for command, word in _COMMAND.findall(prose):
        if word in _STOP or word in _NOT_SUBCOMMANDS:
            continue
        known = {w for s in sources for w in s.subcommands.get(command.casefold(), ())}
        if known and word.casefold() not in known:
            missing.append((f"{command} {word}", f"command {command} {word} not in the cited sources"))
    return missing


_SOURCE_LINE = re.compile(r"^\W*(cite|citation|citations|source|sources|reference|references)\W*:", re.IGNORECASE)


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
    if sentence.kind != "code" and _SOURCE_LINE.match(sentence.text):
        return True  # the model naming its source ("Cite: AuditLogError › Meaning"): no claim
    if len(terms.words) >= MIN_CONTENT_WORDS:
        return False
    has_specifics = bool(terms.identifiers or terms.numbers)
    return not has_specifics or (sentence.text.rstrip().endswith(":") and sentence.kind != "code")


def _coverage(terms: Terms, sources: Sequence[_Source], missing: int = 0) -> float:
    """Share of the content words found in the best window of each cited source (together), its
    identifiers and numbers counting as words found unless `missing`."""
    words = set(terms.words)
    specifics = len(terms.identifiers) + len(terms.numbers)
    if not words and not specifics:
        return 1.0
    found: set[str] = set()
    for source in sources:
        if source.windows:
            found |= max(source.windows, key=lambda window: len(words & window)) & words
    return (len(found) + specifics - missing) / (len(words) + specifics)


def _flipped_negation(sentence: str, terms: Terms, sources: Sequence[_Source]) -> bool:
    """Does the sentence assert what its best-matching source sentence negates, or the reverse?"""
    words = set(terms.words)
    best_score, best = 0.0, None
    for source in sources:
        for text, stems in zip(source.sentences, source.sentence_stems, strict=True):
            score = len(words & stems) / len(words) if words else 0.0
            if score > best_score:
                best_score, best = score, (text, stems)
    if best is None or best_score < NEGATION_MATCH:
        return False
    source_text, source_stems = best
    in_source, in_answer = negated_words(source_text), negated_words(sentence)
    asserts_negated = any(w in words and w not in in_answer for w in in_source)
    negates_asserted = any(w in source_stems and w not in in_source for w in in_answer)
    return asserts_negated or negates_asserted


def _similarities(
    embed: Embed, pending: Sequence[tuple[int, CitedSentence]], prepared: Mapping[int, _Source]
) -> dict[int, float]:
    """Best cosine of each pending sentence with a sentence of its cited sources: one embed call."""
    numbers = sorted({n for _, s in pending for n in s.cited if n in prepared})
    source_texts = [(n, t) for n in numbers for t in prepared[n].sentences]
    if not source_texts:
        return {}
    texts = [s.text for _, s in pending] + [t for _, t in source_texts]
    vectors = np.asarray(embed(texts), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    answer_vectors, source_vectors = vectors[: len(pending)], vectors[len(pending) :]
    owners = np.array([n for n, _ in source_texts])
    best: dict[int, float] = {}
    for row, (index, sentence) in enumerate(pending):
        mask = np.isin(owners, sorted(sentence.cited))
        if mask.any():
            best[index] = float((source_vectors[mask] @ answer_vectors[row]).max())
    return best


def _judge_lexically(
    sentence: CitedSentence, terms: Terms, cited: Sequence[_Source], lexical_threshold: float
) -> tuple[SentenceSupport, bool]:
    """The verdict without embeddings, and whether similarity may still overturn it: only low word
    overlap can be made good by meaning; a missing number, a command or a flipped negation cannot."""
    numbers = tuple(sorted(sentence.cited))
    if not sentence.cited:
        return SentenceSupport(sentence.text, numbers, True, False, "cites nothing"), False
    if not cited:
        reason = f"cites {_sources_label(numbers)}, not among the sources given"
        return SentenceSupport(sentence.text, numbers, True, False, reason), False
    missing = _missing(terms, cited)
    coverage = _coverage(terms, cited, len(missing))
    missing += _code_missing(sentence, cited)
    if missing:
        reason = "; ".join(r for _, r in missing)
        terms_missing = tuple(t for t, _ in missing)
        return SentenceSupport(sentence.text, numbers, True, False, reason, coverage, None, terms_missing), False
    if sentence.kind == "code":
        reason = f"every command line is in {_sources_label(numbers)}"
        return SentenceSupport(sentence.text, numbers, True, True, reason, coverage), False
    if _flipped_negation(sentence.text, terms, cited):
        reason = f"contradicts a negation in {_sources_label(numbers)}"
        return SentenceSupport(sentence.text, numbers, True, False, reason, coverage), False
    if coverage >= lexical_threshold:
        reason = f"{coverage:.0%} of its words are in {_sources_label(numbers)}"
        return SentenceSupport(sentence.text, numbers, True, True, reason, coverage), False
    reason = f"only {coverage:.0%} of its words are in {_sources_label(numbers)}"
    return SentenceSupport(sentence.text, numbers, True, False, reason, coverage), True


def _with_similarity(verdict: SentenceSupport, similarity: float | None, threshold: float) -> SentenceSupport:
    if similarity is None:
        return verdict
    label = _sources_label(verdict.cited)
    if similarity >= threshold:
        reason = f"close in meaning to a sentence of {label} (cosine {similarity:.2f})"
        return SentenceSupport(verdict.sentence, verdict.cited, True, True, reason, verdict.coverage, similarity)
    reason = f"{verdict.reason}, and its best cosine is {similarity:.2f}"
    return SentenceSupport(verdict.sentence, verdict.cited, True, False, reason, verdict.coverage, similarity)


def check_support(
    sentences: list[CitedSentence],
    sources: Mapping[int, str],
    *,
    embed: Embed | None = None,
    question: str | None = None,
    lexical_threshold: float = LEXICAL_THRESHOLD,
    semantic_threshold: float = SEMANTIC_THRESHOLD,
) -> SupportReport:
    """Judge each sentence against the text of the sources it cites (rules in the module docstring).

    With the `question`, a line that only restates it to introduce what follows is not judged."""
    prepared = {n: _prepare(n, text) for n, text in sources.items()}
    asked = extract_terms(question) if question else None
    details: list[SentenceSupport] = []
    pending: list[tuple[int, CitedSentence]] = []  # verdicts that similarity may overturn
    for index, sentence in enumerate(sentences):
        terms = extract_terms(sentence.text)
        if _is_connective(sentence, terms, asked):
            reason = "heading, not judged" if sentence.kind == "heading" else "connective text, not judged"
            details.append(SentenceSupport(sentence.text, tuple(sorted(sentence.cited)), False, None, reason))
            continue
        cited = [prepared[n] for n in sorted(sentence.cited) if n in prepared]
        verdict, overturnable = _judge_lexically(sentence, terms, cited, lexical_threshold)
        details.append(verdict)
        if overturnable:
            pending.append((index, sentence))
    if embed is not None:
        similarity = _similarities(embed, pending, prepared) if pending else {}
        for index, _ in pending:
            details[index] = _with_similarity(details[index], similarity.get(index), semantic_threshold)
    checked = [d for d in details if d.checked]
    unsupported = [d.sentence for d in checked if not d.supported]
    verified = bool(checked)
    grounded = verified and not unsupported
    return SupportReport(grounded=grounded, verified=verified, unsupported=unsupported, details=details)
