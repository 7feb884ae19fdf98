"""Search: lexical and/or dense candidates over chunks, fused by reciprocal rank fusion.

Every hit is read back from the catalog, so a vector whose chunk is gone (a crash between the
two stores, or a concurrent delete) is silently dropped rather than shown.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from appliance.config import Settings
from appliance.index.catalog import ChunkRow
from appliance.index.index import Index
from appliance.models.embedder import Embedder
from appliance.models.registry import load_embedder
from appliance.retrieve.fusion import reciprocal_rank_fusion
from appliance.retrieve.lexical import lexical_search

Mode = Literal["lexical", "dense", "hybrid"]
MODES: tuple[Mode, ...] = ("lexical", "dense", "hybrid")


@dataclass(frozen=True)
class Hit:
    rank: int
    chunk_id: str
    path: str
    title: str
    section: str
    page: int | None
    score: float
    text: str


@dataclass
class SearchResult:
    query: str
    mode: Mode
    hits: list[Hit]
    timings_ms: dict[str, float] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "hits": [asdict(hit) for hit in self.hits],
            "timings_ms": {name: round(ms, 2) for name, ms in self.timings_ms.items()},
        }


class Searcher:
    """Holds the open index and the embedder; one per process, reused across queries."""

    def __init__(self, settings: Settings, index: Index | None = None, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.index = index or Index(settings)
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = load_embedder(self.settings)
        return self._embedder

    def close(self) -> None:
        self.index.close()

    def search(self, query: str, *, k: int | None = None, mode: Mode | None = None) -> SearchResult:
        settings = self.settings.search
        k = k or settings.k
        mode = mode or settings.mode
        n = max(settings.candidates, k)
        timings: dict[str, float] = {}
        started = time.perf_counter()
        rankings: list[list[str]] = []
        scores: dict[str, float] = {}
        rows: dict[str, ChunkRow] = {}

        if mode in ("lexical", "hybrid"):
            t = time.perf_counter()
            lexical = lexical_search(self.index.catalog.conn, query, n)
            by_rowid = self.index.catalog.chunks_by_rowids([h.rowid for h in lexical])
            ranking: list[str] = []
            for hit in lexical:
                row = by_rowid.get(hit.rowid)
                if row is not None:
                    rows[row.id] = row
                    ranking.append(row.id)
                    scores.setdefault(row.id, hit.score)
            rankings.append(ranking)
            timings["lexical"] = _ms(t)

        if mode in ("dense", "hybrid"):
            t = time.perf_counter()
            vector = self.embedder.embed_query(query)
            timings["embed"] = _ms(t)
            t = time.perf_counter()
            dense = self.index.vectors.query(vector, n)
            known = self.index.catalog.chunks_by_ids([h.chunk_id for h in dense])
            dense_ranking: list[str] = []
            for vector_hit in dense:
                row = known.get(vector_hit.chunk_id)
                if row is not None:  # a stray vector: not in the catalog, never shown
                    rows[row.id] = row
                    dense_ranking.append(row.id)
                    if mode == "dense":
                        scores[row.id] = vector_hit.similarity
            rankings.append(dense_ranking)
            timings["dense"] = _ms(t)

        if mode == "hybrid":
            t = time.perf_counter()
            fused = reciprocal_rank_fusion(rankings, k=settings.rrf_k)
            timings["fusion"] = _ms(t)
        else:
            fused = [(chunk_id, scores[chunk_id]) for chunk_id in rankings[0]]

        hits = [_hit(rank, rows[chunk_id], score) for rank, (chunk_id, score) in enumerate(fused[:k], start=1)]
        timings["total"] = _ms(started)
        return SearchResult(query=query, mode=mode, hits=hits, timings_ms=timings)


def _hit(rank: int, row: ChunkRow, score: float) -> Hit:
    return Hit(
        rank=rank,
        chunk_id=row.id,
        path=row.document_path,
        title=row.title,
        section=row.section,
        page=row.page,
        score=round(score, 6),
        text=row.text,
    )


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0
