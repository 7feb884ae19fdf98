"""What one app instance holds for the life of the process: settings, THE answerer, tokens, audit, metrics."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from appliance.answer.answerer import Answerer
from appliance.audit.writer import AuditLog
from appliance.config import Settings
from appliance.index.catalog import Catalog, DocumentRow
from appliance.index.records import DocumentMeta
from appliance.models.generation import Generator
from appliance.retrieve.search import Searcher
from appliance.server.auth import TokenStore
from appliance.server.metrics import Metrics

# Concurrent asks beyond this are refused as busy before they take a thread (the generator's own
# queue bounds generations; this bounds retrieval threads piling up behind it).
MAX_ASKS_IN_FLIGHT = 64


@dataclass
class AppState:
    settings: Settings
    answerer: Answerer
    tokens: TokenStore
    audit: AuditLog
    metrics: Metrics = field(default_factory=Metrics)
    # The searcher's SQLite connection and Chroma client are shared by every request; retrieval is
    # CPU-bound anyway, so requests take turns on it (generation, the slow part, runs outside it).
    retrieval_lock: threading.Lock = field(default_factory=threading.Lock)
    # Two first questions at once must not load the model twice.
    generator_lock: threading.Lock = field(default_factory=threading.Lock)
    asks_in_flight: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(MAX_ASKS_IN_FLIGHT)
    )
    # The request ids of this process's answers whose audit record is not written yet: a rating of one of them
    # waits for its record (routes_feedback.py); a rating of any other id is looked up once.
    unrecorded_answers: set[str] = field(default_factory=set)

    @property
    def searcher(self) -> Searcher:
        """The answerer's searcher: its index and embedder serve /v1/search too."""
        return self.answerer.searcher

    def documents(self) -> list[DocumentRow]:
        """The indexed documents (blocking: run in a thread)."""
        with self.retrieval_lock:  # the searcher's catalog connection is shared
            return self.searcher.catalog.documents()

    def document_meta(self, paths: list[str]) -> dict[str, DocumentMeta]:
        """What these documents state of themselves: control block, furniture, warnings (blocking)."""
        with self.retrieval_lock:
            return self.searcher.catalog.document_meta(paths)

    def index_counts(self) -> dict[str, int]:
        """Documents, failed, skipped and chunks in the catalog (blocking: run in a thread)."""
        with self.retrieval_lock:
            return self.searcher.catalog.counts()

    def catalog(self) -> Catalog:
        """The shared catalog connection: use it under `retrieval_lock`."""
        return self.searcher.catalog

    def generator(self) -> Generator:
        """The one generator, loaded on first use (seconds for a local model)."""
        with self.generator_lock:
            return self.answerer.generator

    def loaded_generator(self) -> Generator | None:
        """The generator if it is loaded already; loading it just to read its id would cost seconds."""
        generator: Generator | None = getattr(self.answerer, "_generator", None)
        return generator

    def refresh_queue_depth(self) -> None:
        """This worker's share of the queue-depth gauge, read now (0 while no model is loaded)."""

        def depth() -> int:
            generator = self.loaded_generator()
            return generator.queue_depth() if generator is not None else 0

        self.metrics.refresh_queue_depth(depth)

    def generator_model_id(self) -> str:
        generator = self.loaded_generator()
        return generator.model_id if generator is not None else self.settings.generator.model

    def models(self, generator: str | None) -> dict[str, Any]:
        return {"generator": generator, "embedder": self.settings.embedder.model}


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.appliance
    return state
