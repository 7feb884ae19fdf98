"""Index a BEIR corpus into its own home, through the same reindex loop as files, reused when unchanged.

Each corpus line is one document (path = its `_id`, title = its `title`, its text's paragraphs split at
blank lines); it goes through the pipeline's own loop (appliance.ingest.pipeline.update_index): the same
repair of an interrupted write, change detection, chunker, embedder and crash-safe writer as any file, so
`appliance eval` and the benchmarks measure the code that serves. The index lives under
`<home>/eval/<folder name>-<hash of the corpus path>/` and documents whose title and text are unchanged
are not re-embedded, so a second `eval beir` run starts at once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from appliance.config import Settings
from appliance.index.index import Index
from appliance.index.lock import writer_lock
from appliance.ingest.document import DocumentBuilder, LoadedDocument
from appliance.ingest.loaders import PageReader
from appliance.ingest.pipeline import update_index
from appliance.ingest.scan import FoundFile
from appliance.ingest.writer import IngestReport

from .beir import BeirDoc, load_corpus

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_PROGRESS_EVERY = 100  # documents between two progress calls


def eval_settings(settings: Settings, folder: Path) -> Settings:
    """The settings of the BEIR folder's own index: the same except for the home."""
    corpus = (folder / "corpus.jsonl").resolve()
    key = hashlib.sha256(str(corpus).encode()).hexdigest()[:12]
    update: dict[str, object] = {"home": settings.home / "eval" / f"{folder.resolve().name}-{key}"}
    if settings.vectors.url:  # a shared Chroma server: a collection of its own, or reconciles fight
        collection = f"{settings.vectors.collection[:40]}-eval-{key}"
        update["vectors"] = settings.vectors.model_copy(update={"collection": collection})
    return settings.model_copy(update=update)


@dataclass(frozen=True, kw_only=True)
class CorpusRecord(FoundFile):
    """One corpus document as the reindex loop finds it: display path = its `_id`, in the corpus file."""

    doc: BeirDoc = field(repr=False)


class BeirCorpus:
    """A BEIR folder's corpus as a document source (appliance.ingest.sources.DocumentSource), read as a
    stream: corpora can be far larger than memory wants."""

    trusts_stat = False  # records have no mtime: the hash of title and text decides

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.corpus_file = (folder / "corpus.jsonl").resolve()  # as eval_settings keys the home
        self.root = str(self.corpus_file)

    def unavailable(self) -> str | None:
        return None  # a missing corpus file raises, naming it, when it is read

    def scan(self) -> Iterator[CorpusRecord]:
        for doc in load_corpus(self.folder):
            yield CorpusRecord(doc.doc_id, self.corpus_file, len(doc.text), 0.0, doc=doc)

    def content_sha256(self, entry: CorpusRecord) -> str:
        return hashlib.sha256(f"{entry.doc.title}\0{entry.doc.text}".encode()).hexdigest()

    def load(self, entry: CorpusRecord, ocr: PageReader) -> LoadedDocument:
        doc = entry.doc
        builder = DocumentBuilder(doc.doc_id, "txt")
        for paragraph in _PARAGRAPH_BREAK.split(doc.text):
            builder.add("paragraph", paragraph)
        if not builder.blocks:
            builder.add("paragraph", doc.title or doc.doc_id)  # a title-only record is still a document
        return builder.build(doc.title)


def build_beir_index(
    settings: Settings, folder: Path, progress: Callable[[int], None] | None = None
) -> tuple[Settings, IngestReport]:
    """Bring the BEIR folder's index up to date; return its settings and what changed. `progress` is
    called with the number of documents read so far, every 100."""

    def every_hundred(_path: str, position: int, _total: int) -> None:
        if progress is not None and position % _PROGRESS_EVERY == 0:
            progress(position)

    own = eval_settings(settings, folder)
    with writer_lock(own.lock_path, own.index.lock_timeout_s), closing(Index(own)) as index:
        report = update_index(own, index, [BeirCorpus(folder)], every_hundred)
    return own, report
