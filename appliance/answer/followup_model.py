"""Does this question need the conversation? A logistic model over graded signals, fitted on data.

A question that makes sense alone ("What is the free chlorine residual target leaving the plant?") is
searched as asked, whatever came before; only an elliptical follow-up ("and for bank B?", "where do I write
that down?") is read with the conversation. No word decides that on its own: the model weighs what the
documents say about the question alone and about it read with the earlier question (the evidence
decision's probability of each, whether the question's own hits gather in one document, how much it names
something the documents never mention), whether it names a subject of its own (how rare its words are in the
documents, an identifier they hold, the share of its words they never use, how specific its words are in
everyday English), whether the passages found for the earlier question, or for both read together, hold
its words, and its shape (length, the share of words that point back, a clause that opens by continuing
the last turn).
Its coefficients, and the scales at which its capped counts reach 1 (Scales), come from scripts/fit_followup.py
over scripts/qa/followups_train.jsonl and are read from appliance/answer/fitted/followup.json. No signal is an
embedder's raw score: the probabilities are the evidence decision's, which keeps its own calibration per embedder
(models/calibration.py).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

from appliance.answer.logistic import LogisticModel
from appliance.errors import ApplianceError
from appliance.text.english import english_rarity
from appliance.text.identifiers import is_identifier
from appliance.text.stems import stem
from appliance.text.stopwords import STOPWORDS
from appliance.text.tokens import WORD

if TYPE_CHECKING:
    from appliance.retrieve.search import Searcher

FITTED = Path(__file__).resolve().parent / "fitted" / "followup.json"
# Hits a reading looks at: enough to see whether they gather in one document.
READ_HITS = 10
# Hits whose text is read for the question's own words.
COVER_HITS = 3
# Structure, not vocabulary: the closed class of words that point back to something said before, and the
# clause openers that continue the last turn. Each is one graded signal among many, weighed by the fit.
POINTING_WORDS = frozenset(
    {"it", "its", "itself", "that", "this", "these", "those", "they", "them", "their", "there", "then", "same"}
    | {"one", "ones", "else", "instead", "former", "latter"}
)
CONTINUING_OPENERS = (("and",), ("also",), ("or",), ("but",), ("so",), ("then",), ("what", "about"),
                      ("how", "about"), ("same", "for"), ("what", "if"))  # fmt: skip
_CLAUSE = re.compile(r"[.,;:!?\n]+")
MIN_SPECIFIC_LETTERS = 3


@dataclass(frozen=True)
class Scales:
    """Where four graded signals reach 1 (beyond it, more counts no more): how many rare words' worth of subject,
    content words, identifiers, and what multiple of the share of pointing words. The fitted model file holds the
    scales it was fitted with (scripts/fit_followup.py measures others); these defaults are the ones a file
    without them used: three rare words, eight content words, two identifiers, one word in five pointing back."""

    subject_mass: float = 3.0
    content_words: float = 8.0
    identifiers: float = 2.0
    pointing: float = 5.0


DEFAULT_SCALES = Scales()


@dataclass(frozen=True)
class Reading:
    """What one search says about a text: the evidence decision's probability and where the hits land."""

    probability: float
    sufficient: bool  # the evidence decision's verdict
    documents: tuple[str, ...]  # the documents of the best hits, best first, each once
    concentration: float  # share of the best READ_HITS hits that are in the best document
    unknown_name: float = 0.0  # how much the text names something the documents never mention (evidence.py)
    passages: tuple[str, ...] = ()  # the text of the best COVER_HITS hits
    searched: str = ""  # the text as searched: misspelt words written as the documents write them


class Reader(Protocol):
    """What the decision reads from the index and the embedder."""

    def read(self, text: str) -> Reading: ...
    def rarity(self, word: str) -> float | None: ...  # None: the documents never use the word


class SearchReader:
    """A Reader over the appliance's own searcher (the same search the answer runs)."""

    def __init__(self, searcher: Searcher, read_hits: int = READ_HITS, cover_hits: int = COVER_HITS) -> None:
        self.searcher = searcher
        self.read_hits = read_hits  # scripts/fit_followup.py --reach measures others
        self.cover_hits = cover_hits
        self._chunks: int | None = None

    def read(self, text: str) -> Reading:
        found = self.searcher.search(text, k=self.read_hits)
        paths = [hit.path for hit in found.hits]
        documents = tuple(dict.fromkeys(paths))
        concentration = paths.count(documents[0]) / len(paths) if paths else 0.0
        signals = found.evidence.signals
        return Reading(
            found.evidence.probability,
            found.evidence.sufficient,
            documents,
            concentration,
            signals.unknown_name if signals is not None else 0.0,
            tuple(hit.text for hit in found.hits[: self.cover_hits]),
            found.searched,
        )

    def rarity(self, word: str) -> float | None:
        """1 for a word one chunk holds, near 0 for one every chunk holds (inverse chunk frequency over log N)."""
        catalog = self.searcher.catalog
        if self._chunks is None:
            self._chunks = max(2, catalog.counts()["chunks"])
        held = catalog.fulltext.chunks_matching('"' + word.replace('"', '""') + '"')
        if held == 0:
            return None
        return math.log(self._chunks / held) / math.log(self._chunks)


def words_of(text: str) -> list[str]:
    return [word.lower() for word in WORD.findall(text)]


def content_words(text: str) -> list[str]:
    return [word for word in words_of(text) if word not in STOPWORDS and word not in POINTING_WORDS]


def continues(text: str) -> float:
    """1 when a clause of the question opens by continuing the last turn ("ok, and for bank B?")."""
    for clause in _CLAUSE.split(text.lower()):
        words = words_of(clause)
        if any(tuple(words[: len(opener)]) == opener for opener in CONTINUING_OPENERS):
            return 1.0
    return 0.0


def covered(words: list[str], passages: tuple[str, ...]) -> float:
    """Share of `words` (stemmed) that the passages write."""
    if not words:
        return 0.0
    held = {stem(w) for text in passages for w in words_of(text)}
    return sum(1 for w in words if stem(w) in held) / len(words)


@dataclass(frozen=True)
class Measures:
    """What the readings say of a follow-up, before any scale: the raw quantities the signals are made of."""

    alone: Reading
    together: Reading
    earlier: Reading
    own: tuple[str, ...]  # the question's content words, as searched
    subject_mass: float  # the summed rarity of the own words the documents use
    identifiers: int  # identifiers among them
    unknown_share: float  # share of the own words the documents never use
    pointing_share: float  # share of all its words that point back
    opens: float  # a clause opens by continuing the last turn
    specific_subject: float  # the most specific own word's everyday-English rarity


def measures(question: str, previous: str, joined: str, reader: Reader) -> Measures:
    """Read the question alone, with the conversation (`joined`) and the earlier question it would be read with
    (`previous`), and count what the signals are made of."""
    alone, together, earlier = reader.read(question), reader.read(joined), reader.read(previous)
    read_as = alone.searched or question  # a typo is not a word the documents lack
    words = words_of(read_as)
    own = content_words(read_as)
    rarities = [reader.rarity(word) for word in own]
    known = {word for word, rarity in zip(own, rarities, strict=True) if rarity is not None}
    return Measures(
        alone,
        together,
        earlier,
        tuple(own),
        sum(r for r in rarities if r is not None),
        sum(1 for w in WORD.findall(read_as) if is_identifier(w) and w.lower() in known),
        sum(1 for rarity in rarities if rarity is None) / len(own) if own else 0.0,
        sum(1 for w in words if w in POINTING_WORDS) / len(words) if words else 0.0,
        continues(read_as),
        max((english_rarity(w) for w in own if w.isalpha() and len(w) >= MIN_SPECIFIC_LETTERS), default=0.0),
    )


def scaled(measured: Measures, scales: Scales = DEFAULT_SCALES) -> dict[str, float]:
    """The graded signals the model weighs, from the raw measures at the given scales."""
    own = list(measured.own)
    length = min(1.0, len(own) / scales.content_words)
    points_back = max(measured.opens, min(1.0, measured.pointing_share * scales.pointing))
    unknown = measured.unknown_share
    return {
        "alone_probability": measured.alone.probability,
        "joined_gain": measured.together.probability - measured.alone.probability,
        "alone_concentration": measured.alone.concentration,
        "alone_unknown_name": measured.alone.unknown_name,
        "alone_covers_question": covered(own, measured.alone.passages),
        "joined_covers_question": covered(own, measured.together.passages),
        "previous_covers_question": covered(own, measured.earlier.passages),
        "subject_mass": min(1.0, measured.subject_mass / scales.subject_mass),
        "unknown_share": unknown,
        "names_identifier": min(1.0, measured.identifiers / scales.identifiers),
        "content_words": length,
        "pointing_share": measured.pointing_share,
        "continues": measured.opens,
        "specific_subject": measured.specific_subject,
        # Two products the linear model cannot form itself: a subject the documents lack in a question that
        # does not point back (asks about something else), and a short question that points back.
        "unknown_own_subject": unknown * (1.0 - points_back),
        "short_fragment": points_back * (1.0 - length),
    }


def signals(
    question: str, previous: str, joined: str, reader: Reader, scales: Scales = DEFAULT_SCALES
) -> dict[str, float]:
    """The graded signals of a follow-up: `previous` is the earlier question it would be read with, `joined`
    the text that reading searches."""
    return scaled(measures(question, previous, joined, reader), scales)


@dataclass(frozen=True)
class FollowupModel(LogisticModel):
    """Logistic model: p(needs the conversation) = sigmoid(intercept + Σ weight · signal), over the signals at
    the scales it was fitted with."""

    scales: Scales = DEFAULT_SCALES

    def needs_conversation(self, values: dict[str, float]) -> bool:
        return self.probability(values) >= self.threshold

    @classmethod
    def read(cls, path: Path) -> Self:
        """The model scripts/fit_followup.py wrote to `path`, with the scales it was fitted with (the defaults
        where the file names none)."""
        data = json.loads(path.read_text(encoding="utf-8"))["model"]
        logistic = LogisticModel.from_json(data)
        try:
            scales = Scales(**{name: float(value) for name, value in data.get("scales", {}).items()})
        except (TypeError, ValueError) as exc:
            raise ApplianceError(f"follow-up model {path}: its scales cannot be read ({exc})") from exc
        return cls(logistic.features, logistic.weights, logistic.intercept, logistic.threshold, scales)


@cache
def fitted_model(path: Path = FITTED) -> FollowupModel:
    """The shipped model (scripts/fit_followup.py writes it)."""
    return FollowupModel.read(path)
