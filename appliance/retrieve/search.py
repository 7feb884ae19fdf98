"""Search: lexical and dense candidates over chunks → fusion → optional rerank → evidence.

Every hit is read back from the catalog, so a vector whose chunk is gone (a crash between the
two stores, or a concurrent delete) is silently dropped rather than shown. Callers that want
documents rather than passages (BEIR evaluation, "which SOP covers this?") use
`search_documents`, which ranks each document by its best chunks.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from appliance.config import Settings
from appliance.index.catalog import Catalog
from appliance.index.filters import NO_FILTERS, Filters
from appliance.index.index import Index
from appliance.index.records import ChunkRecord, ChunkRow
from appliance.models.calibration import log_calibration_warnings
from appliance.models.embedder import Embedder
from appliance.models.registry import load_embedder
from appliance.retrieve.aggregate import aggregate_documents
from appliance.retrieve.evidence import Evidence, EvidenceSignals, decide_evidence
from appliance.retrieve.fusion import reciprocal_rank_fusion, weighted_fusion, zscore_fusion
from appliance.retrieve.lexical import lexical_search
from appliance.retrieve.modes import Mode
from appliance.retrieve.rerank import Reranker, find_reranker
from appliance.retrieve.spelling import Spelling, correct_spelling
from appliance.retrieve.vocabulary import CorpusVocabulary
from appliance.text.english import english_words

Scored = list[tuple[ChunkRow, float]]


@dataclass(frozen=True, kw_only=True)
class Hit(ChunkRecord):
    """A chunk found by a search: its rank (1 = best) and its score under the mode that ranked it."""

    rank: int
    score: float


@dataclass
class Candidates:
    """What each retriever returned for one query, best first, already filtered through the catalog."""

    lexical: Scored = field(default_factory=list)
    dense: Scored = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class SearchResult:
    query: str
    mode: Mode
    hits: list[Hit]
    evidence: Evidence
    timings_ms: dict[str, float] = field(default_factory=dict)
    reranked: bool = False
    # What was searched: the query with its misspellings corrected (`spelling.corrections`), else the query.
    spelling: Spelling | None = None

    @property
    def searched(self) -> str:
        return self.spelling.text if self.spelling is not None else self.query

    @property
    def did_you_mean(self) -> dict[str, Any] | None:
        return self.spelling.as_json() if self.spelling is not None else None

    def as_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "searched": self.searched,
            "did_you_mean": self.did_you_mean,
            "mode": self.mode,
            "hits": [asdict(hit) for hit in self.hits],
            "evidence": self.evidence.as_json(),
            "reranked": self.reranked,
            "timings_ms": {name: round(ms, 2) for name, ms in self.timings_ms.items()},
        }


class Searcher:
    """Holds the open index, the embedder and the reranker; one per process, reused across queries."""

    def __init__(self, settings: Settings, index: Index | None = None, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self._owns_index = index is None  # an index passed in is its owner's to close
        self.index = index or Index(settings)
        self._embedder = embedder
        log_calibration_warnings(settings)
        self._reranker: Reranker | bool | None = False  # False: not looked up yet
        self._vocabulary: CorpusVocabulary | None = None

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_embedder(self.settings)
        return self._embedder

    @property
    def reranker(self) -> Reranker | None:
        if self._reranker is False:
            path = find_reranker(self.settings)
            self._reranker = (
                Reranker(path, device=self.settings.embedder.device, batch_size=self.settings.rerank.batch_size)
                if path
                else None
            )
        return self._reranker if isinstance(self._reranker, Reranker) else None

    @property
    def catalog(self) -> Catalog:
        return self.index.catalog

    @property
    def vocabulary(self) -> CorpusVocabulary:
        """The corpus's words, cached across searches until the index changes."""
        if self._vocabulary is None or self._vocabulary.fulltext is not self.catalog.fulltext:
            self._vocabulary = CorpusVocabulary(self.catalog.fulltext)
        self._vocabulary.refresh()
        return self._vocabulary

    def close(self) -> None:
        """Close the index this searcher opened (one passed in stays open for its owner)."""
        if self._owns_index:
            self.index.close()

    # --- stages ------------------------------------------------------------------------------

    def candidates(
        self,
        query: str,
        mode: Mode,
        n: int,
        filters: Filters = NO_FILTERS,
        query_vector: np.ndarray | None = None,
    ) -> Candidates:
        settings = self.settings.search
        found = Candidates()
        catalog = self.catalog
        if mode in ("lexical", "hybrid"):
            t = time.perf_counter()
            hits = lexical_search(
                catalog.fulltext,
                query,
                n,
                header_weight=settings.header_weight,
                identifier_weight=settings.identifier_weight,
                filters=filters,
            )
            rows = catalog.chunks_by_rowids([h.rowid for h in hits])
            found.lexical = [(rows[h.rowid], h.score) for h in hits if h.rowid in rows]
            found.timings_ms["lexical"] = _ms(t)
        if mode in ("dense", "hybrid"):
            t = time.perf_counter()
            vector = self.embedder.embed_query(query) if query_vector is None else query_vector
            found.timings_ms["embed"] = _ms(t)
            t = time.perf_counter()
            paths = catalog.document_paths(filters) if filters.active else None
            dense = self.index.vectors.query(vector, n, paths=paths)
            rows_by_id = catalog.chunks_by_ids([h.chunk_id for h in dense])
            found.dense = [
                (rows_by_id[h.chunk_id], h.similarity)
                for h in dense
                if h.chunk_id in rows_by_id and filters.admits(rows_by_id[h.chunk_id].path, rows_by_id[h.chunk_id].type)
            ]
            found.timings_ms["dense"] = _ms(t)
        return found

    def fuse(self, found: Candidates, mode: Mode) -> Scored:
        settings = self.settings.search
        if mode == "lexical":
            return list(found.lexical)
        if mode == "dense":
            return list(found.dense)
        rows = {row.chunk_id: row for row, _ in [*found.lexical, *found.dense]}
        if settings.fusion in ("weighted", "zscore"):
            fuse = weighted_fusion if settings.fusion == "weighted" else zscore_fusion
            fused = fuse(
                [(row.chunk_id, s) for row, s in found.lexical],
                [(row.chunk_id, s) for row, s in found.dense],
                settings.dense_weight,
            )
        else:
            fused = reciprocal_rank_fusion(
                [[row.chunk_id for row, _ in found.lexical], [row.chunk_id for row, _ in found.dense]], k=settings.rrf_k
            )
        return [(rows[chunk_id], score) for chunk_id, score in fused]

    def rerank(self, query: str, fused: Scored) -> tuple[Scored, bool]:
        """Rescore the top `rerank.top` with the cross-encoder; the tail keeps its order below them.

        The tail's scores are moved under the lowest cross-encoder score (keeping their order), so
        that every consumer that sorts by score (document aggregation, evaluation) agrees with the
        ranking shown.
        """
        reranker = self.reranker
        if reranker is None or not fused:
            return fused, False
        top = fused[: self.settings.rerank.top]
        scores = reranker.score(query, [f"{row.header}\n{row.text}" for row, _ in top])
        rescored = sorted(zip([row for row, _ in top], scores, strict=True), key=lambda pair: -pair[1])
        floor = rescored[-1][1] if rescored else 0.0
        tail = [(row, floor - 1.0 - position * 1e-6) for position, (row, _) in enumerate(fused[len(top) :])]
        return [*rescored, *tail], True

    # --- entry points --------------------------------------------------------------------------

    def search(
        self, query: str, *, k: int | None = None, mode: Mode | None = None, filters: Filters = NO_FILTERS
    ) -> SearchResult:
        k = self.settings.search.k if k is None else k
        mode = mode or self.settings.search.mode
        started = time.perf_counter()
        with self.index.reading():  # both retrievers and the evidence see one committed state
            vocabulary = self.vocabulary
            spelling = (
                correct_spelling(query, vocabulary, self.embedder.count_tokens.split, english_words().knows)
                if self.settings.search.correct_spelling
                else Spelling(query)
            )
            searched = spelling.text
            spelling_ms = _ms(started)
            found, ranked, reranked, timings = self._ranked(
                searched, mode, max(self.settings.search.candidates, k), filters
            )
            timings["spelling"] = spelling_ms
            t = time.perf_counter()
            evidence = decide_evidence(
                EvidenceSignals.collect(
                    self.catalog.fulltext,
                    searched,
                    self._complete_for_evidence(searched, mode, found, filters),
                    ranked if reranked else None,
                    word_pieces=self.embedder.count_tokens.split,
                    vocabulary=vocabulary,
                    english=english_words(),
                ),
                self.settings,
            )
            timings["evidence"] = _ms(t)
        hits = [_hit(rank, row, score) for rank, (row, score) in enumerate(ranked[:k], start=1)]
        timings["total"] = _ms(started)
        return SearchResult(query, mode, hits, evidence, timings, reranked, spelling)

    def _ranked(
        self, query: str, mode: Mode, n: int, filters: Filters, query_vector: np.ndarray | None = None
    ) -> tuple[Candidates, Scored, bool, dict[str, float]]:
        """Candidates → fusion → rerank, with the time each stage took."""
        found = self.candidates(query, mode, n, filters, query_vector)
        timings = dict(found.timings_ms)
        t = time.perf_counter()
        fused = self.fuse(found, mode)
        timings["fusion"] = _ms(t)
        t = time.perf_counter()
        ranked, reranked = self.rerank(query, fused)
        if reranked:
            timings["rerank"] = _ms(t)
        return found, ranked, reranked, timings

    def _complete_for_evidence(self, query: str, mode: Mode, found: Candidates, filters: Filters) -> Candidates:
        """The evidence model reads both retrievers; a single-retriever search fetches the other's top few."""
        if mode == "hybrid":
            return found
        other: Mode = "dense" if mode == "lexical" else "lexical"
        extra = self.candidates(query, other, 10, filters)
        return Candidates(
            lexical=found.lexical if mode == "lexical" else extra.lexical,
            dense=found.dense if mode == "dense" else extra.dense,
        )

    def search_documents(
        self,
        query: str,
        *,
        k: int = 100,
        mode: Mode | None = None,
        filters: Filters = NO_FILTERS,
        query_vector: np.ndarray | None = None,
    ) -> tuple[list[tuple[str, float]], dict[str, float]]:
        """Documents ranked by their best chunk (plus a share of their other chunks)."""
        mode = mode or self.settings.search.mode
        with self.index.reading():
            _, ranked, _, timings = self._ranked(
                query, mode, max(self.settings.search.candidates, k), filters, query_vector
            )
        documents = aggregate_documents(
            ranked, lambda row: row.path, other_chunks_weight=self.settings.search.other_chunks_weight
        )
        return [(doc, score) for doc, score, _ in documents[:k]], timings


def _hit(rank: int, row: ChunkRow, score: float) -> Hit:
    return Hit(
        rank=rank,
        chunk_id=row.chunk_id,
        path=row.path,
        title=row.title,
        section=row.section,
        page=row.page,
        score=round(score, 6),
        text=row.text,
        ocr_confidence=row.ocr_confidence,
    )


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0
