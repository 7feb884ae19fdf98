"""Is there evidence in the documents for this question at all? Decided before any LLM call.

A threshold on the top cosine alone does not separate answerable from unanswerable operator
questions (their distributions overlap). The decision combines signals that each catch a
different failure:

* unknown terms: the question's distinctive words or identifiers do not occur anywhere in the
  corpus (a product, alert or tag the documents never mention) — the strongest signal;
* the top dense similarity (how close the best passage is in meaning);
* coverage: the share of the question's content words found in the best passage;
* agreement: whether the lexical and dense retrievers' best passages come from one document;
* the cross-encoder's top score, when a reranker is installed.

They are combined by a logistic model whose coefficients were fitted on hand-written answerable
and unanswerable questions over ../shared/data/runbooks (scripts/calibrate_evidence.py); the
threshold is a setting.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from appliance.config import Settings
from appliance.ingest.identifiers import extract_identifiers
from appliance.retrieve.fts_query import word_terms

if TYPE_CHECKING:
    from appliance.index.catalog import ChunkRow
    from appliance.retrieve.search import Candidates


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _occurs(conn: sqlite3.Connection, table: str, term: str, rowid: int | None = None) -> bool:
    sql = f"SELECT 1 FROM {table} WHERE {table} MATCH ?" + (" AND rowid = ?" if rowid is not None else "") + " LIMIT 1"
    args: tuple[Any, ...] = (_quote(term),) if rowid is None else (_quote(term), rowid)
    try:
        return conn.execute(sql, args).fetchone() is not None
    except sqlite3.OperationalError:
        return False  # a term the tokenizer reduces to nothing


def _known_word(conn: sqlite3.Connection, term: str) -> bool:
    """In the corpus as a word, as an identifier, or (4+ letters) as the start of a word: operators
    abbreviate ("evac" for evacuation, "config" for configuration)."""
    if _occurs(conn, "chunks_fts", term) or _occurs(conn, "chunks_ident", term):
        return True
    if len(term) < 4:
        return False
    try:
        return (
            conn.execute("SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT 1", (_quote(term) + "*",)).fetchone()
            is not None
        )
    except sqlite3.OperationalError:
        return False


def _is_strong_identifier(token: str) -> bool:
    """Tags, alert names, settings: capitals, digits with letters, or underscores. Hyphenated plain words
    ("bare-metal", "last-resort") are identifiers for matching but too often phrased differently in the
    documents to count as evidence that the documents never mention the subject."""
    has_digit = any(ch.isdigit() for ch in token)
    has_alpha = any(ch.isalpha() for ch in token)
    return any(ch.isupper() for ch in token) or "_" in token or (has_digit and has_alpha)


def _is_salient(typed: str, word_pieces: Callable[[str], int] | None) -> bool:
    """A name rather than an ordinary word: written with a capital, or split by the embedder's
    WordPiece vocabulary into several pieces (zabbix → za ##bb ##ix, while "number" is one piece).
    An ordinary word missing from a small corpus says little; a product name missing says a lot."""
    if typed[:1].isupper() or any(ch.isdigit() for ch in typed):
        return True
    return word_pieces is None or word_pieces(typed.lower()) >= 2


def _as_typed(query: str, term: str) -> str:
    """The term as the user wrote it (terms are matched lower-cased): reasons quote the user."""
    match = re.search(re.escape(term), query, flags=re.IGNORECASE)
    return match.group() if match else term


@dataclass(frozen=True)
class EvidenceSignals:
    content_terms: int
    unknown_terms: tuple[str, ...]
    salient_unknown_terms: tuple[str, ...]  # unknown names: capitalized, or not one ordinary word
    unknown_identifiers: tuple[str, ...]
    top_dense: float
    coverage: float  # share of content terms present in the best passage
    agreement: bool
    top_rerank: float | None

    @property
    def unknown_fraction(self) -> float:
        return len(self.unknown_terms) / self.content_terms if self.content_terms else 0.0

    @classmethod
    def collect(
        cls,
        conn: sqlite3.Connection,
        query: str,
        found: Candidates,
        reranked: list[tuple[ChunkRow, float]] | None = None,
        word_pieces: Callable[[str], int] | None = None,
    ) -> EvidenceSignals:
        terms = word_terms(query)
        unknown = tuple(_as_typed(query, t) for t in terms if not _known_word(conn, t))
        salient = tuple(t for t in unknown if _is_salient(t, word_pieces))
        identifiers = extract_identifiers(query)
        unknown_ids = tuple(
            typed
            for typed in (_as_typed(query, i) for i in identifiers if not _occurs(conn, "chunks_ident", i))
            if _is_strong_identifier(typed)
        )
        best = reranked[0][0] if reranked else (found.dense[0][0] if found.dense else None)
        if best is None and found.lexical:
            best = found.lexical[0][0]
        unknown_lower = {t.lower() for t in unknown}
        known = [t for t in terms if t not in unknown_lower]
        covered = sum(1 for t in known if best is not None and _occurs(conn, "chunks_fts", t, best.rowid))
        agreement = bool(
            found.lexical and found.dense and found.lexical[0][0].document_path == found.dense[0][0].document_path
        )
        return cls(
            content_terms=len(terms),
            unknown_terms=unknown,
            salient_unknown_terms=salient,
            unknown_identifiers=unknown_ids,
            top_dense=found.dense[0][1] if found.dense else 0.0,
            coverage=covered / len(terms) if terms else 0.0,
            agreement=agreement,
            top_rerank=reranked[0][1] if reranked else None,
        )

    def features(self) -> dict[str, float]:
        return {
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

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "sufficient": self.sufficient,
            "reason": self.reason,
            "probability": round(self.probability, 4),
        }
        if self.signals is not None:
            data["signals"] = {
                **{name: round(value, 4) for name, value in self.signals.features().items()},
                "unknown_terms": list(self.signals.unknown_terms),
                "salient_unknown_terms": list(self.signals.salient_unknown_terms),
                "unknown_identifiers": list(self.signals.unknown_identifiers),
                "top_rerank": self.signals.top_rerank,
            }
        return data


def answerable_probability(signals: EvidenceSignals, settings: Settings) -> float:
    coefficients = settings.evidence.coefficients
    z = coefficients.get("intercept", 0.0)
    for name, value in signals.features().items():
        z += coefficients.get(name, 0.0) * value
    if signals.top_rerank is not None:
        z += settings.evidence.rerank_weight * (signals.top_rerank - settings.evidence.rerank_center)
    return 1.0 / (1.0 + math.exp(-z))


def _unknown_subject(signals: EvidenceSignals) -> str:
    """Identifiers first (the tag the user typed), then words not already part of one."""
    named = list(signals.unknown_identifiers[:3])
    inside = " ".join(named).lower()
    named += [t for t in signals.unknown_terms if t.lower() not in inside][: max(0, 3 - len(named))]
    return ", ".join(named)


def decide_evidence(signals: EvidenceSignals, settings: Settings) -> Evidence:
    if signals.content_terms == 0:
        return Evidence(False, "the question has no searchable words", 0.0, signals)
    probability = answerable_probability(signals, settings)
    threshold = settings.evidence.threshold
    if settings.evidence.refuse_unknown_terms and signals.salient_unknown_terms:
        # The question names something the documents never mention (a product, an alert, a tag):
        # the strongest single sign that they cannot answer it.
        return Evidence(False, f"the documents never mention {_unknown_subject(signals)}", 0.0, signals)
    if probability >= threshold:
        return Evidence(
            True, f"matching passages found (confidence {probability:.2f} ≥ {threshold:.2f})", probability, signals
        )
    if signals.unknown_identifiers or signals.unknown_terms:
        reason = f"the documents never mention {_unknown_subject(signals)}"
    elif signals.top_dense == 0.0 and signals.coverage == 0.0:
        reason = "no passage in the documents matches the question"
    else:
        reason = "the closest passages do not match the question closely enough"
    return Evidence(False, f"{reason} (confidence {probability:.2f} < {threshold:.2f})", probability, signals)
