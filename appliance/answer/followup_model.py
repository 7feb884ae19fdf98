"""Does this question need the conversation? A logistic model over graded signals, fitted on data.

A question that makes sense alone ("What is the free chlorine residual target leaving the plant?") is
searched as asked, whatever came before; only an elliptical follow-up ("and for bank B?", "where do I write
that down?") is read with the conversation. No word decides that on its own: the model weighs what the
documents say about the question alone and about the question read with the earlier one, how close the
two questions are in meaning, whether the question names a subject of its own, and its shape (length,
words that point back, a clause that opens by continuing the last one). Its coefficients and threshold
come from scripts/fit_followup.py over scripts/qa/followups_train.jsonl and are read from
appliance/answer/fitted/followup.json, which names the embedder its cosines were measured with: with
another embedder a model fitted without the cosine features decides (DESIGN.md: calibrations belong to
their model).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from appliance.text.identifiers import is_identifier
from appliance.text.stopwords import STOPWORDS
from appliance.text.tokens import WORD

if TYPE_CHECKING:
    from appliance.retrieve.search import Searcher

FITTED = Path(__file__).resolve().parent / "fitted" / "followup.json"
# Hits a reading looks at: enough to see whether they gather in one document.
READ_HITS = 10
# Structure, not vocabulary: the closed class of words that point back to something said before, and the
# clause openers that continue the last turn. Each is one graded signal among many, weighed by the fit.
POINTING_WORDS = frozenset(
    "it its itself that this these those they them their there then same one ones else instead former latter".split()
)
CONTINUING_OPENERS = (("and",), ("also",), ("or",), ("but",), ("so",), ("then",), ("what", "about"),
                      ("how", "about"), ("same", "for"), ("what", "if"))  # fmt: skip
_CLAUSE = re.compile(r"[.,;:!?\n]+")


@dataclass(frozen=True)
class Reading:
    """What one search says about a text: the evidence decision's probability and where the hits land."""

    probability: float
    sufficient: bool  # the evidence decision's verdict
    documents: tuple[str, ...]  # the documents of the best hits, best first, each once
    concentration: float  # share of the best READ_HITS hits that are in the best document


class Reader(Protocol):
    """What the decision reads from the index and the embedder."""

    def read(self, text: str) -> Reading: ...
    def similarity(self, a: str, b: str) -> float: ...
    def rarity(self, word: str) -> float | None: ...  # None: the documents never use the word


class SearchReader:
    """A Reader over the appliance's own searcher (the same search the answer runs)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self._chunks: int | None = None

    def read(self, text: str) -> Reading:
        found = self.searcher.search(text, k=READ_HITS)
        paths = [hit.path for hit in found.hits]
        documents = tuple(dict.fromkeys(paths))
        concentration = paths.count(documents[0]) / len(paths) if paths else 0.0
        return Reading(found.evidence.probability, found.evidence.sufficient, documents, concentration)

    def similarity(self, a: str, b: str) -> float:
        vectors = self.searcher.embedder.embed([a, b])
        return float(np.dot(vectors[0], vectors[1]))

    def rarity(self, word: str) -> float | None:
        """1 for a word one chunk holds, near 0 for one every chunk holds (inverse chunk frequency over log N)."""
        conn = self.searcher.catalog.conn
        if self._chunks is None:
            self._chunks = max(2, int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0]))
        quoted = '"' + word.replace('"', '""') + '"'
        try:
            held = int(conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (quoted,)).fetchone()[0])
        except Exception:  # noqa: BLE001  (a word the tokenizer reduces to nothing)
            held = 0
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


def signals(question: str, previous: str, joined: str, reader: Reader) -> dict[str, float]:
    """The graded signals of one follow-up: `previous` is the earlier question it would be read with,
    `joined` the text that reading searches."""
    alone, earlier, together = reader.read(question), reader.read(previous), reader.read(joined)
    words = words_of(question)
    own = content_words(question)
    before = set(content_words(previous))
    rarities = {word: reader.rarity(word) for word in own}
    known = {word: r for word, r in rarities.items() if r is not None}
    new_known = [r for word, r in known.items() if word not in before]
    identifiers = [w for w in WORD.findall(question) if is_identifier(w) and w.lower() in known]
    return {
        "alone_probability": alone.probability,
        "joined_gain": together.probability - alone.probability,
        "alone_concentration": alone.concentration,
        "alone_lands_on_previous": _same_best(alone, earlier),
        "joined_lands_on_alone": _same_best(together, alone),
        "cosine_previous": reader.similarity(question, previous),
        "subject_rarity": max(known.values(), default=0.0),
        "new_subject_rarity": max(new_known, default=0.0),
        "subject_mass": min(1.0, sum(known.values()) / 3.0),
        "content_words": min(1.0, len(own) / 8.0),
        "pointing_share": sum(1 for w in words if w in POINTING_WORDS) / len(words) if words else 0.0,
        "continues": continues(question),
        "names_identifier": min(1.0, len(identifiers) / 2.0),
    }


def _same_best(a: Reading, b: Reading) -> float:
    return 1.0 if a.documents and b.documents and a.documents[0] == b.documents[0] else 0.0


@dataclass(frozen=True)
class FollowupModel:
    """Logistic model: p(needs the conversation) = sigmoid(intercept + Σ weight · signal)."""

    features: tuple[str, ...]
    weights: tuple[float, ...]
    intercept: float
    threshold: float
    fitted_for: str  # the embedder whose cosines the weights were fitted on ('' when no cosine is used)

    def probability(self, values: dict[str, float]) -> float:
        z = self.intercept + sum(w * values[f] for f, w in zip(self.features, self.weights, strict=True))
        return 1.0 / (1.0 + math.exp(-z))

    def needs_conversation(self, values: dict[str, float]) -> bool:
        return self.probability(values) >= self.threshold

    @classmethod
    def from_json(cls, data: dict[str, object]) -> FollowupModel:
        weights = data["weights"]
        assert isinstance(weights, dict)
        return cls(
            features=tuple(weights),
            weights=tuple(float(w) for w in weights.values()),
            intercept=float(data["intercept"]),  # type: ignore[arg-type]
            threshold=float(data["threshold"]),  # type: ignore[arg-type]
            fitted_for=str(data.get("fitted_for", "")),
        )


@cache
def _fitted(path: Path) -> dict[str, object]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def fitted_model(embedder: str, path: Path = FITTED) -> FollowupModel:
    """The fitted model for this embedder: the full model when its cosines were fitted on it, else the one
    fitted without cosine features."""
    data = _fitted(path)
    full = FollowupModel.from_json(data["model"])  # type: ignore[arg-type]
    if full.fitted_for in ("", embedder):
        return full
    return FollowupModel.from_json(data["scale_free"])  # type: ignore[arg-type]


def needed(models: Sequence[FollowupModel]) -> set[str]:
    return {feature for model in models for feature in model.features}
