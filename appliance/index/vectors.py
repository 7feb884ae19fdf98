"""Vectors in ChromaDB: cosine HNSW, ids = chunk ids, embeddings always passed explicitly.

Chroma is a derived index: the catalog holds every embedding, and `reconcile` makes Chroma's id
set equal to the catalog's (deleting strays, re-adding what is missing). Query results are
always filtered through the catalog, so a stray vector is never shown to a user.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from appliance.config import VectorSettings
from appliance.errors import ConfigError

log = logging.getLogger(__name__)
BATCH = 1000


@dataclass(frozen=True)
class VectorHit:
    chunk_id: str
    similarity: float  # cosine similarity, 1 = identical


def _client_settings() -> Any:
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)


class VectorIndex:
    def __init__(self, settings: VectorSettings, local_path: Path) -> None:
        import chromadb

        self.settings = settings
        if settings.url:
            parsed = urlparse(settings.url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ConfigError(f"vectors.url must look like http://HOST:PORT, got {settings.url!r}")
            self.client = chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=_client_settings(),
            )
        else:
            local_path.mkdir(parents=True, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(local_path), settings=_client_settings())
        self.collection = self.client.get_or_create_collection(
            name=settings.collection,
            embedding_function=None,  # the default one would download a model
            configuration={
                "hnsw": {
                    "space": "cosine",
                    "ef_construction": settings.hnsw_ef_construction,
                    "max_neighbors": settings.hnsw_max_neighbors,
                    "ef_search": settings.hnsw_ef_search,
                }
            },
        )

    def count(self) -> int:
        return int(self.collection.count())

    def ids(self) -> set[str]:
        found: set[str] = set()
        offset = 0
        while True:
            page = self.collection.get(include=[], limit=10000, offset=offset)
            found.update(page["ids"])
            if len(page["ids"]) < 10000:
                return found
            offset += 10000

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, paths: Sequence[str]) -> None:
        for start in range(0, len(ids), BATCH):
            end = start + BATCH
            self.collection.upsert(
                ids=list(ids[start:end]),
                embeddings=np.asarray(embeddings[start:end], dtype=np.float32),
                metadatas=[{"path": p} for p in paths[start:end]],
            )

    def delete(self, ids: Iterable[str]) -> None:
        id_list = list(ids)
        for start in range(0, len(id_list), BATCH):
            self.collection.delete(ids=id_list[start : start + BATCH])

    def query(self, embedding: np.ndarray, n: int, paths: Sequence[str] | None = None) -> list[VectorHit]:
        """Nearest chunks; `paths` restricts them to those documents (a metadata filter in Chroma)."""
        total = self.count()
        if total == 0 or (paths is not None and not paths):
            return []
        where: Any = None
        if paths is not None:
            where = {"path": {"$in": list(paths)}} if len(paths) > 1 else {"path": paths[0]}
        result = self.collection.query(
            query_embeddings=np.asarray([embedding], dtype=np.float32),
            n_results=min(n, total),
            where=where,
            include=["distances"],
        )
        ids = result["ids"][0]
        distances = (result.get("distances") or [[]])[0]
        return [VectorHit(i, 1.0 - float(d)) for i, d in zip(ids, distances, strict=True)]
