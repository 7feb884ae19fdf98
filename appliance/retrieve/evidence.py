"""Is there evidence in the documents for this question at all? Decided before any LLM call.

A threshold on the top cosine alone does not separate answerable from unanswerable operator
questions (their distributions overlap). The decision weighs signals that each catch a different
failure, and no single one decides:

* unknown names: the question's words the documents never use, each weighed by how much it reads as
  a name they do not mention (a product, an alert, a tag) rather than an ordinary word, a misspelling
  (corrected before the search), a measurement or a compound of known words (unknown_terms.py);
* unknown words: the share of the question's plain words the documents never use;
* the top dense similarity (how close the best passage is in meaning);
* coverage: the share of the question's words found in the best passage;
* agreement: whether the lexical and dense retrievers' best passages come from one document;
* the cross-encoder's top score, when a reranker is installed.

They are combined by a logistic model whose coefficients were fitted on hand-written answerable
and unanswerable questions over ../shared/data/runbooks (scripts/calibrate_evidence.py). The
threshold is a setting, set from the costs of the two errors (refuse only when (1 - p) * m > p,
m the share of unanswerable questions that generation and its checks would answer anyway), so a
near miss goes on to the model instead of being refused here. The top similarity is a cosine of
one embedder: with another embedder than the one the model was fitted for, a model fitted without
it decides (models/calibration.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from appliance.config import Settings
from appliance.index.fulltext import FullText
from appliance.models.calibration import evidence_calibrated
from appliance.retrieve.unknown_terms import Lexicon, UnknownTerm, WordPieces, question_words
from appliance.retrieve.vocabulary import CorpusVocabulary
from appliance.text.identifiers import is_identifier
from appliance.text.tokens import word_terms

if TYPE_CHECKING:
    from appliance.index.records import ChunkRow
    from appliance.retrieve.search import Candidates


@dataclass(frozen=True)
class EvidenceSignals:
    content_terms: int
    unknown_terms: tuple[str, ...]  # every word or name of the question the documents never use
    salient_unknown_terms: tuple[str, ...]  # those that read as names (weight >= 0.5)
    unknown_identifiers: tuple[str, ...]  # unknown identifiers that read as names
    top_dense: float
    coverage: float  # share of the question's words present in the best passage
    agreement: bool
    top_rerank: float | None
    unknown: tuple[UnknownTerm, ...] = ()  # the unknown terms with their weights and readings
    counted_terms: int | None = None  # content terms that are words of the question (not p99, FIRING:1)

    @property
    def unknown_fraction(self) -> float:
        return len(self.unknown_terms) / self.content_terms if self.content_terms else 0.0

    @property
    def unknown_name(self) -> float:
        """How much the question names something the documents never mention: its weightiest name-shaped
        unknown term. A plain word never counts here on its own: shape cannot tell "sluggish" from "zabbix"."""
        return max((term.weight for term in self.unknown if term.name_shaped), default=0.0)

    @property
    def unknown_words(self) -> float:
        """The question's plain words the documents never use, each by its weight, as a share of its words."""
        counted = self.content_terms if self.counted_terms is None else self.counted_terms
        plain = sum(term.weight for term in self.unknown if not term.name_shaped)
        return min(1.0, plain / counted) if counted else 0.0

    @classmethod
    def collect(
        cls,
        fulltext: FullText,
        query: str,
        found: Candidates,
        reranked: list[tuple[ChunkRow, float]] | None = None,
        word_pieces: WordPieces | None = None,
        vocabulary: CorpusVocabulary | None = None,
        english: Lexicon | None = None,
    ) -> EvidenceSignals:
        vocabulary = vocabulary or CorpusVocabulary(fulltext)
        words = question_words(query, vocabulary, word_pieces, english)
        terms = word_terms(query)
        counted = [t for t in terms if t not in words.noise]
        best = reranked[0][0] if reranked else (found.dense[0][0] if found.dense else None)
        if best is None and found.lexical:
            best = found.lexical[0][0]
        covered = sum(
            1 for t in counted if best is not None and vocabulary.knows(t) and vocabulary.in_passage(t, best.rowid)
        )
        agreement = bool(found.lexical and found.dense and found.lexical[0][0].path == found.dense[0][0].path)
        return cls(
            content_terms=len(terms),
            unknown_terms=tuple(term.typed for term in words.unknown),
            salient_unknown_terms=tuple(term.typed for term in words.unknown if term.is_name),
            unknown_identifiers=tuple(t.typed for t in words.unknown if t.is_name and is_identifier(t.typed)),
            top_dense=found.dense[0][1] if found.dense else 0.0,
            coverage=covered / len(counted) if counted else 0.0,
            agreement=agreement,
            top_rerank=reranked[0][1] if reranked else None,
            unknown=words.unknown,
            counted_terms=len(counted),
        )

    def features(self) -> dict[str, float]:
        return {
            "unknown_name": self.unknown_name,
            "unknown_words": self.unknown_words,
            "any_unknown": 1.0 if self.unknown_terms else 0.0,
            "unknown_fraction": self.unknown_fraction,
            "unknown_identifier": 1.0 if self.unknown_identifiers else 0.0,
            "top_dense": self.top_dense,
            "coverage": self.coverage,
            "agreement": 1.0 if self.agreement else 0.0,
        }


@dataclass(frozen=True)
class Evidence:
    sufficient: bool
    reason: str
    probability: float
    signals: EvidenceSignals | None = None
    scale_free: bool = False  # decided by the model without the dense similarity (another embedder)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "sufficient": self.sufficient,
            "reason": self.reason,
            "probability": round(self.probability, 4),
        }
        if self.scale_free:
            data["scale_free"] = True
        if self.signals is not None:
            data["signals"] = {
                **{name: round(value, 4) for name, value in self.signals.features().items()},
                "unknown_terms": list(self.signals.unknown_terms),
                "salient_unknown_terms": list(self.signals.salient_unknown_terms),
                "unknown_identifiers": list(self.signals.unknown_identifiers),
                "unknown_readings": [
                    {"term": t.typed, "weight": round(t.weight, 4), "read_as": t.why} for t in self.signals.unknown
                ],
                "top_rerank": self.signals.top_rerank,
            }
        return data


def answerable_probability(signals: EvidenceSignals, settings: Settings, *, scale_free: bool = False) -> float:
    """The logistic model's probability; `scale_free`: the model without the dense similarity."""
    coefficients = settings.evidence.scale_free_coefficients if scale_free else settings.evidence.coefficients
    z = coefficients.get("intercept", 0.0)
    for name, value in signals.features().items():
        if scale_free and name == "top_dense":
            continue  # a cosine on another embedder's scale: not a signal this model can read
        z += coefficients.get(name, 0.0) * value
    if signals.top_rerank is not None:
        z += settings.evidence.rerank_weight * (signals.top_rerank - settings.evidence.rerank_center)
    return 1.0 / (1.0 + math.exp(-z))


def _unknown_subject(signals: EvidenceSignals) -> str:
    """The terms that read most as names first (the tag the user typed), at most three."""
    ranked = sorted(signals.unknown, key=lambda term: -term.weight)
    return ", ".join(term.typed for term in ranked[:3]) or ", ".join(signals.unknown_terms[:3])


def decide_evidence(signals: EvidenceSignals, settings: Settings) -> Evidence:
    scale_free = not evidence_calibrated(settings)
    if signals.content_terms == 0:
        return Evidence(False, "the question has no searchable words", 0.0, signals, scale_free)
    probability = answerable_probability(signals, settings, scale_free=scale_free)
    threshold = settings.evidence.scale_free_threshold if scale_free else settings.evidence.threshold
    if settings.evidence.refuse_unknown_terms and signals.salient_unknown_terms:
        # The former hard rule, kept as a setting for comparison: one unknown name refuses outright.
        return Evidence(False, f"the documents never mention {_unknown_subject(signals)}", 0.0, signals, scale_free)
    if probability >= threshold:
        reason = f"matching passages found (confidence {probability:.2f} ≥ {threshold:.2f})"
        return Evidence(True, reason, probability, signals, scale_free)
    if signals.salient_unknown_terms:
        reason = f"the documents never mention {_unknown_subject(signals)}"
    elif signals.top_dense == 0.0 and signals.coverage == 0.0:
        reason = "no passage in the documents matches the question"
    elif signals.unknown:
        unused = _unknown_subject(signals)
        reason = (
            f"the closest passages do not match the question closely enough (words the documents do not use: {unused})"
        )
    else:
        reason = "the closest passages do not match the question closely enough"
    return Evidence(
        False, f"{reason} (confidence {probability:.2f} < {threshold:.2f})", probability, signals, scale_free
    )
