"""Scale benchmark: what one box does at 100k and 1M chunks (runs outside CI, not part of `make test`).

Embedding 1M real chunks would take 8 to 20 hours on 2 cores (14-34 chunks/s), so the corpus is grown
from a real seed:

  seed     every chunk of ../shared/data/runbooks (read at run time, never copied), loaded and chunked
           by the project's own loaders and chunker, embedded by the project's embedder
           (all-MiniLM-L6-v2 from the model store); plus the real operator questions of scripts/qa.
  vectors  each synthetic chunk = w * (a real seed embedding) + (1 - w) * (one of that seed's 20
           nearest real neighbours; a random other seed 20% of the time), w ~ U(0.6, 0.9), plus noise
           of relative size ~ U(0.25, 0.65) drawn along the real embeddings' own directions (a random
           combination of centred seed embeddings, not isotropic noise), renormalised to unit length.
           The 8 chunks of a synthetic document follow 8 consecutive chunks of a real document.
  texts    the seed chunk's own sentences/lines (a random contiguous run of them) with 1-2 sentences
           of the mixed-in neighbour, under the seed's `title › section` header; half the chunks get
           their digits permuted (VLV-3042-B → VLV-8157-B, 1.2.3 → 6.4.9) so the identifier and
           number vocabulary keeps growing with the corpus, as it does in a real one.
  queries  dense: --queries held-out seed chunks (never used to grow the corpus) perturbed the same
           way, and separately the real runbook questions embedded; lexical: the same questions
           (identifiers included) and identifiers alone, sampled from the seed.

Measured per size, through the project's components (Catalog + its FTS5 triggers, VectorIndex on a
Chroma PersistentClient, lexical_search, the ingest pipeline's reindex), each in a fresh process so
that peak RSS is that step's own:
  build      vectors/s into Chroma and rows/s into the catalog, disk per million chunks, peak RSS;
  dense      HNSW recall@10 against exact search and p50/p95 (Chroma collection.query as VectorIndex
             issues it), swept over ef_search on one built index (collection.modify + reopen), next to
             exact numpy brute force; the appliance's dense stage (VectorIndex.query with n =
             search.candidates, read back through the catalog); collection.count(), which
             VectorIndex.query called before every query until it was found to grow with the
             collection; other (max_neighbors, ef_construction) builds at --compare-size;
  lexical    FTS5 p50/p95 (questions, identifiers) next to rank_bm25 in memory (100k only);
  change     1% of the documents replaced in both stores, next to the full rebuild; at 100k also
             through `reindex` (files on disk, the embedder replaced by the synthetic vectors).

Usage: nice -n 10 .venv/bin/python scripts/bench_scale.py [--sizes 100000,1000000] [--queries 200]
       [--out scripts/results/scale.json]
Temporary data lives under /tmp (bench-scale-*) and is deleted at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import hashlib
import json
import multiprocessing
import os
import pickle
import platform
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, cast

import numpy as np

import appliance  # noqa: F401  (offline environment first)
from appliance.config import SearchSettings, Settings, VectorSettings
from appliance.errors import ApplianceError
from appliance.evaluate.metrics import percentile
from appliance.index.catalog import Catalog
from appliance.index.records import Chunk
from appliance.index.vectors import VectorIndex
from appliance.ingest.chunker import SECTION_SEPARATOR, chunk_document
from appliance.ingest.loaders import load_document
from appliance.ingest.scan import scan_source
from appliance.text.identifiers import extract_identifiers

if TYPE_CHECKING:  # VectorIndex.client is a Client at run time; its declared ClientAPI type has no close()
    from chromadb.api.client import Client

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
QA_FILES = (REPO / "scripts" / "qa" / "runbooks_tune.jsonl", REPO / "scripts" / "qa" / "runbooks_heldout.jsonl")
DIM = 384
CHUNKS_PER_DOC = 8  # the runbooks average 8.2 chunks per document
NEIGHBOURS = 20
BATCH_DOCS = 256  # documents per write batch (2,048 chunks)
EMBEDDER_ID = "all-MiniLM-L6-v2"
DEFAULT_EFS = (10, 20, 40, 64, 100, 150, 200, 300, 500, 800)
TARGET_RECALL = 0.98
TARGET_P95_MS = 20.0
_UNIT = re.compile(r"(?<=[.!?])\s+|\n+")
_TOKEN = re.compile(r"\w+")


def rss_bytes() -> int:
    """Peak resident set size of this process. VmHWM, not ru_maxrss: a spawned child inherits its
    parent's ru_maxrss through fork + exec, so ru_maxrss would report the parent's peak."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def stats_ms(values: Sequence[float]) -> dict[str, float]:
    return {"p50": round(percentile(list(values), 50), 3), "p95": round(percentile(list(values), 95), 3)}


def run_child(func: Callable[[dict[str, Any]], dict[str, Any]], job: dict[str, Any]) -> dict[str, Any]:
    """Run one step in a fresh process: its peak RSS is its own, and Chroma reloads from disk."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(func, (job,))


# --- the real seed ------------------------------------------------------------------------------


def build_seed(runbooks: Path, settings: Settings) -> dict[str, Any]:
    """Chunk every runbook with the project's loaders + chunker and embed the chunks and questions."""
    from appliance.models.registry import load_embedder

    embedder = load_embedder(settings)
    max_tokens = min(settings.ingest.chunk_max_tokens, embedder.max_tokens)
    headers: list[str] = []
    sections: list[str] = []
    titles: list[str] = []
    stems: list[str] = []
    embedding_texts: list[str] = []
    units: list[list[str]] = []
    files = 0
    for source in sorted(p for p in runbooks.iterdir() if p.is_dir()):
        for item in scan_source(source):
            if item.skip or item.error:
                continue
            try:
                doc = load_document(item.abs_path, item.display_path, max_bytes=settings.ingest.max_file_bytes)
                chunks = chunk_document(
                    doc,
                    embedder.count_tokens,
                    max_tokens=max_tokens,
                    overlap_tokens=settings.ingest.chunk_overlap_tokens,
                )
            except (ApplianceError, RecursionError):
                continue
            files += 1
            for chunk in chunks:
                pieces = [u.strip() for u in _UNIT.split(chunk.text) if u.strip()]
                if not pieces:
                    continue
                headers.append(chunk.header)
                sections.append(chunk.section)
                titles.append(doc.title or PurePosixPath(doc.path).stem)
                stems.append(re.sub(r"[^A-Za-z0-9_.-]+", "-", PurePosixPath(doc.path).stem)[:60])
                embedding_texts.append(chunk.embedding_text)
                units.append(pieces)
    embedder.embed(["warm-up"])
    started = time.perf_counter()
    vectors = embedder.embed(embedding_texts)
    embed_s = time.perf_counter() - started
    questions = [json.loads(line)["question"] for path in QA_FILES if path.exists() for line in path.open()]
    question_vectors = embedder.embed(questions) if questions else np.zeros((0, DIM), dtype=np.float32)
    return {
        "files": files,
        "headers": headers,
        "sections": sections,
        "titles": titles,
        "stems": stems,
        "units": units,
        "vectors": np.asarray(vectors, dtype=np.float32),
        "questions": questions,
        "question_vectors": np.asarray(question_vectors, dtype=np.float32),
        "embed_s": embed_s,
        "embed_chunks_per_s": len(embedding_texts) / embed_s,
        "embedder_max_tokens": max_tokens,
    }


# --- growing the corpus ---------------------------------------------------------------------------


class Grower:
    """Synthetic chunks (texts + unit vectors) grown from the seed, deterministic per (document, version)."""

    def __init__(self, seed: dict[str, Any], train: np.ndarray) -> None:
        self.seed = seed
        self.train = np.asarray(train, dtype=np.int64)
        vectors: np.ndarray = seed["vectors"]
        self.vectors = vectors
        train_vectors = vectors[self.train]
        # Each seed's nearest real neighbours among the training seeds (never itself).
        sims = vectors @ train_vectors.T
        sims[self.train, np.arange(len(self.train))] = -np.inf
        self.real_nn_sim = sims[self.train].max(axis=1)
        self.neighbours = self.train[np.argpartition(-sims, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]]
        del sims
        self.centred = train_vectors - train_vectors.mean(axis=0)
        digits = random.Random(7)
        self.digit_tables = []
        for _ in range(997):
            perm = list("0123456789")
            digits.shuffle(perm)
            self.digit_tables.append(str.maketrans("0123456789", "".join(perm)))
        self.unit_identifiers = [[extract_identifiers(u) for u in pieces] for pieces in seed["units"]]
        self.header_identifiers = [extract_identifiers(h) for h in seed["headers"]]

    def vectors_for(self, primaries: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Unit vectors near the real embeddings of `primaries`; also returns the mixed-in partners."""
        n = len(primaries)
        near = self.neighbours[primaries, rng.integers(0, NEIGHBOURS, n)]
        anywhere = self.train[rng.integers(0, len(self.train), n)]
        partners = np.where(rng.random(n) < 0.8, near, anywhere)
        w = rng.uniform(0.6, 0.9, (n, 1)).astype(np.float32)
        base = w * self.vectors[primaries] + (1.0 - w) * self.vectors[partners]
        base /= np.linalg.norm(base, axis=1, keepdims=True)
        picks = self.centred[rng.integers(0, len(self.centred), (n, 8))]
        noise = np.einsum("nk,nkd->nd", rng.standard_normal((n, 8)).astype(np.float32), picks)
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        sigma = rng.uniform(0.25, 0.65, (n, 1)).astype(np.float32)
        out = base + sigma * noise
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32), partners

    def start_of(self, doc: int) -> int:
        return (doc * 2654435761) % len(self.train)

    def documents(
        self, doc_numbers: Sequence[int], version: int, first_row: int
    ) -> tuple[list[dict[str, Any]], np.ndarray]:
        """Documents (path, title, chunks) and their chunks' vectors, in order; chunk i gets row first_row + i."""
        key = int(doc_numbers[0]) if len(doc_numbers) else 0
        rng = np.random.default_rng([key, version, len(doc_numbers)])
        pick = random.Random(key * 1000003 + version)
        primaries = np.array(
            [
                self.train[(self.start_of(int(d)) + j) % len(self.train)]
                for d in doc_numbers
                for j in range(CHUNKS_PER_DOC)
            ],
            dtype=np.int64,
        )
        vectors, partners = self.vectors_for(primaries, rng)
        seed = self.seed
        docs: list[dict[str, Any]] = []
        row = first_row
        for position, number in enumerate(doc_numbers):
            first = int(primaries[position * CHUNKS_PER_DOC])
            path = f"synthetic/{seed['stems'][first]}-{int(number):07d}.md"
            table = self.digit_tables[pick.randrange(len(self.digit_tables))] if pick.random() < 0.5 else None
            chunks: list[Chunk] = []
            offset = 0
            for j in range(CHUNKS_PER_DOC):
                a = int(primaries[position * CHUNKS_PER_DOC + j])
                b = int(partners[position * CHUNKS_PER_DOC + j])
                pieces, idents = seed["units"][a], self.unit_identifiers[a]
                length = len(pieces)
                take = max(1, round(length * pick.uniform(0.7, 1.0)))
                begin = pick.randrange(length - take + 1)
                chosen = list(range(begin, begin + take))
                units = [pieces[i] for i in chosen]
                found = [*self.header_identifiers[a]]
                for i in chosen:
                    found.extend(idents[i])
                for _ in range(pick.randint(1, 2)):
                    other = pick.randrange(len(seed["units"][b]))
                    units.insert(pick.randrange(len(units) + 1), seed["units"][b][other])
                    found.extend(self.unit_identifiers[b][other])
                text = " ".join(units)
                header = seed["headers"][a]
                identifiers = " ".join(dict.fromkeys(found))
                if table is not None:
                    text, header, identifiers = (
                        text.translate(table),
                        header.translate(table),
                        identifiers.translate(table),
                    )
                digest = hashlib.sha256(f"{path}\0{header}\0{text}".encode()).hexdigest()
                chunks.append(
                    Chunk(
                        chunk_id=chunk_id(digest, row),
                        path=path,
                        title=seed["titles"][first],
                        ord=j,
                        header=header,
                        text=text,
                        section=seed["sections"][a].translate(table) if table else seed["sections"][a],
                        page=None,
                        start=offset,
                        end=offset + len(text),
                        identifiers=identifiers,
                    )
                )
                offset += len(text) + 2
                row += 1
            docs.append({"path": path, "title": seed["titles"][first], "chunks": chunks})
        return docs, vectors


def chunk_id(digest: str, row: int) -> str:
    """64 hex digits like the chunker's ids; the last 12 carry the row of the vector (for recall)."""
    return f"{digest[:52]}{row:012x}"


def row_of(chunk: str) -> int:
    return int(chunk[52:], 16)


def markdown_of(doc: dict[str, Any]) -> str:
    parts = [f"# {doc['title']}\n"]
    for chunk in doc["chunks"]:
        if chunk.section:
            parts.append(f"## {chunk.section.replace(SECTION_SEPARATOR, ' - ')}\n")
        parts.append(chunk.text + "\n")
    return "\n".join(parts)


def load_seed(path: str) -> dict[str, Any]:
    with open(path, "rb") as handle:
        return pickle.load(handle)


# --- steps, each run in its own process ----------------------------------------------------------


def home_settings(home: Path, params: Sequence[int], ef_search: int = 100) -> Settings:
    return Settings(
        home=home,
        models_dir=REPO / "models",
        vectors=VectorSettings(hnsw_max_neighbors=params[0], hnsw_ef_construction=params[1], hnsw_ef_search=ef_search),
    )


def open_vectors(settings: Settings, ef_search: int) -> VectorIndex:
    """A fresh client on the collection with this ef_search (Chroma reads it when it loads the index)."""
    vectors = VectorIndex(settings.vectors, settings.chroma_path)
    if vectors.collection.configuration_json["hnsw"]["ef_search"] != ef_search:
        vectors.collection.modify(configuration={"hnsw": {"ef_search": ef_search}})
        cast("Client", vectors.client).close()
        tuned = settings.vectors.model_copy(update={"hnsw_ef_search": ef_search})
        vectors = VectorIndex(tuned, settings.chroma_path)
    return vectors


def write_documents(
    catalog: Catalog, docs: list[dict[str, Any]], vectors: np.ndarray, files: Path, on_disk: bool
) -> None:
    """One transaction, like the pipeline's BatchWriter: chunks + both FTS5 tables + document rows."""
    offset = 0
    with catalog.transaction():
        for doc in docs:
            count = len(doc["chunks"])
            catalog.replace_document_in_transaction(
                path=doc["path"],
                abs_path=str(files.parent / doc["path"]),
                source=str(files),
                sha256=doc["sha256"],
                size=doc["size"] if on_disk else 0,
                mtime=doc["mtime"] if on_disk else 0.0,
                doc_type="md",
                title=doc["title"],
                status="indexed",
                error=None,
                chunks=doc["chunks"],
                embeddings=vectors[offset : offset + count],
                embedding_model=EMBEDDER_ID,
            )
            offset += count


def put_files(docs: list[dict[str, Any]], files: Path, on_disk: bool) -> None:
    for doc in docs:
        content = markdown_of(doc).encode()
        doc["sha256"] = hashlib.sha256(content).hexdigest()
        if on_disk:
            target = files.parent / doc["path"]
            target.write_bytes(content)
            stat = target.stat()
            doc["size"], doc["mtime"] = stat.st_size, stat.st_mtime


def step_setup(job: dict[str, Any]) -> tuple[dict[str, Any], Grower, Path, int, tuple[int, ...], Settings]:
    """What a build or change step works with: the seed, its grower, the home, the size, the HNSW
    parameters and the home's settings."""
    seed = load_seed(job["seed"])
    home, params = Path(job["home"]), tuple(job["params"])
    return seed, Grower(seed, np.load(job["train"])), home, int(job["size"]), params, home_settings(home, params)


def build_step(job: dict[str, Any]) -> dict[str, Any]:
    from appliance.index.index import PIPELINE_SIGNATURE
    from appliance.ingest.pipeline import pipeline_signature

    _, grower, home, size, params, settings = step_setup(job)
    files = home / "files" / "synthetic"
    files.mkdir(parents=True, exist_ok=True)
    catalog = Catalog(settings.catalog_path)
    vectors = VectorIndex(settings.vectors, settings.chroma_path)
    n_docs = size // CHUNKS_PER_DOC
    matrix = None
    if job["save_vectors"]:
        matrix = np.lib.format.open_memmap(
            home / "x.npy", mode="w+", dtype=np.float32, shape=(n_docs * CHUNKS_PER_DOC, DIM)
        )
    seconds = {"generate": 0.0, "files": 0.0, "vectors": 0.0, "catalog": 0.0}
    curve: list[dict[str, float]] = []
    text_chars = 0
    started = time.perf_counter()
    mark = (0, 0.0, 0.0)  # chunks, vector seconds, catalog seconds at the last progress line
    label = f"build {size:,} M={params[0]} ef_construction={params[1]}"
    for first in range(0, n_docs, BATCH_DOCS):
        numbers = list(range(first, min(n_docs, first + BATCH_DOCS)))
        t = time.perf_counter()
        docs, batch_vectors = grower.documents(numbers, 0, first * CHUNKS_PER_DOC)
        if matrix is not None:
            matrix[first * CHUNKS_PER_DOC : first * CHUNKS_PER_DOC + len(batch_vectors)] = batch_vectors
        text_chars += sum(len(c.text) for d in docs for c in d["chunks"])
        seconds["generate"] += time.perf_counter() - t
        t = time.perf_counter()
        put_files(docs, files, job["files"])
        seconds["files"] += time.perf_counter() - t
        t = time.perf_counter()
        vectors.upsert(
            [c.chunk_id for d in docs for c in d["chunks"]],
            batch_vectors,
            [d["path"] for d in docs for _ in d["chunks"]],
        )
        seconds["vectors"] += time.perf_counter() - t
        t = time.perf_counter()
        write_documents(catalog, docs, batch_vectors, files, job["files"])
        seconds["catalog"] += time.perf_counter() - t
        done = (first + len(numbers)) * CHUNKS_PER_DOC
        if done >= mark[0] + size // 10 or first + len(numbers) >= n_docs:
            point = {
                "chunks": done,
                "vectors_per_s": round((done - mark[0]) / max(1e-9, seconds["vectors"] - mark[1]), 1),
                "catalog_rows_per_s": round((done - mark[0]) / max(1e-9, seconds["catalog"] - mark[2]), 1),
                "elapsed_s": round(time.perf_counter() - started, 1),
            }
            curve.append(point)
            mark = (done, seconds["vectors"], seconds["catalog"])
            print(
                f"  [{label}] {done:>9,} chunks {point['elapsed_s']:7.1f} s   since last line: "
                f"vectors {point['vectors_per_s']:7.0f}/s  catalog {point['catalog_rows_per_s']:7.0f} rows/s",
                flush=True,
            )
    if matrix is not None:
        matrix.flush()
        del matrix
    catalog.add_source(str(files))
    catalog.set_state(PIPELINE_SIGNATURE, pipeline_signature(settings))
    catalog.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    counts = catalog.counts()
    catalog.close()
    cast("Client", vectors.client).close()
    chunks = counts["chunks"]
    chroma_sqlite = sum(p.stat().st_size for p in settings.chroma_path.glob("chroma.sqlite3*"))
    chroma_total = folder_bytes(settings.chroma_path)
    catalog_bytes = sum(p.stat().st_size for p in home.glob("catalog.sqlite*"))
    return {
        "chunks": chunks,
        "documents": counts["documents"],
        "mean_chunk_chars": round(text_chars / max(1, chunks), 1),
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "total_s": round(time.perf_counter() - started, 2),
        "vectors_per_s": round(chunks / seconds["vectors"], 1),
        "catalog_rows_per_s": round(chunks / seconds["catalog"], 1),
        "index_chunks_per_s": round(chunks / (seconds["vectors"] + seconds["catalog"]), 1),
        "curve": curve,
        "disk_bytes": {
            "chroma": chroma_total,
            "chroma_hnsw": chroma_total - chroma_sqlite,
            "chroma_sqlite": chroma_sqlite,
            "catalog": catalog_bytes,
            "total": chroma_total + catalog_bytes,
        },
        "peak_rss_bytes": rss_bytes(),
    }


def hnsw_query(vectors: VectorIndex, vector: np.ndarray, n: int) -> list[str]:
    """VectorIndex.query without its count() call: the HNSW search as Chroma serves it."""
    result = vectors.collection.query(
        query_embeddings=np.asarray([vector], dtype=np.float32), n_results=n, include=["distances"]
    )
    return list(result["ids"][0])


def serve_step(job: dict[str, Any]) -> dict[str, Any]:
    """Queries against a built home, as a serving process would run them."""
    from appliance.retrieve.lexical import lexical_search

    home, params = Path(job["home"]), tuple(job["params"])
    settings = home_settings(home, params)
    queries = np.load(job["queries"])
    result: dict[str, Any] = {"load_average_before": os.getloadavg()}
    t = time.perf_counter()
    vectors = open_vectors(settings, job["efs"][0])
    vectors.query(queries[0], 10)
    result["open_and_first_query_s"] = round(time.perf_counter() - t, 3)
    result["rss_after_load_bytes"] = rss_bytes()
    sweep: dict[str, Any] = {}
    for ef in job["efs"]:
        cast("Client", vectors.client).close()
        vectors = open_vectors(settings, ef)
        for vector in queries[:10]:
            hnsw_query(vectors, vector, 10)
        latency, rows = [], []
        for vector in queries:
            t = time.perf_counter()
            ids = hnsw_query(vectors, vector, 10)
            latency.append((time.perf_counter() - t) * 1000.0)
            rows.append([row_of(i) for i in ids])
        sweep[str(ef)] = {"latency_ms": latency, "rows": rows}
        print(f"  [serve {home.name}] ef_search {ef:>4}: p50 {percentile(latency, 50):6.2f} ms", flush=True)
    result["sweep"] = sweep
    count_ms = []
    for _ in range(30):
        t = time.perf_counter()
        vectors.count()
        count_ms.append((time.perf_counter() - t) * 1000.0)
    result["count_ms"] = stats_ms(count_ms)
    catalog = Catalog(settings.catalog_path)
    stage: dict[str, Any] = {}
    n = job.get("candidates", 100)
    for ef in job.get("stage_efs", []):
        cast("Client", vectors.client).close()
        vectors = open_vectors(settings, ef)
        for vector in queries[:10]:
            vectors.query(vector, n)
        query_ms, hnsw_ms, stage_ms, rows = [], [], [], []
        for vector in queries:
            t = time.perf_counter()
            hnsw_query(vectors, vector, n)
            hnsw_ms.append((time.perf_counter() - t) * 1000.0)
            t = time.perf_counter()
            hits = vectors.query(vector, n)
            t1 = time.perf_counter()
            catalog.chunks_by_ids([h.chunk_id for h in hits])
            t2 = time.perf_counter()
            query_ms.append((t1 - t) * 1000.0)
            stage_ms.append((t2 - t) * 1000.0)
            rows.append([row_of(h.chunk_id) for h in hits])
        stage[str(ef)] = {"query_ms": query_ms, "hnsw_ms": hnsw_ms, "stage_ms": stage_ms, "rows": rows}
    result["stage"] = stage
    lexical: dict[str, Any] = {}
    if job.get("lexical"):
        search = SearchSettings()
        for _, text in job["lexical"][:20]:  # warm the page cache, as a running server has it
            lexical_search(catalog.fulltext, text, job["candidates"])
        for kind, text in job["lexical"]:
            t = time.perf_counter()
            lexical_hits = lexical_search(  # its own name: hits above are VectorHits
                catalog.fulltext,
                text,
                job["candidates"],
                header_weight=search.header_weight,
                identifier_weight=search.identifier_weight,
            )
            t1 = time.perf_counter()
            catalog.chunks_by_rowids([h.rowid for h in lexical_hits])
            t2 = time.perf_counter()
            entry = lexical.setdefault(kind, {"query_ms": [], "stage_ms": [], "hits": []})
            entry["query_ms"].append((t1 - t) * 1000.0)
            entry["stage_ms"].append((t2 - t) * 1000.0)
            entry["hits"].append(len(lexical_hits))
    result["lexical"] = lexical
    catalog.close()
    cast("Client", vectors.client).close()
    result["peak_rss_bytes"] = rss_bytes()
    result["load_average_after"] = os.getloadavg()
    return result


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_step(job: dict[str, Any]) -> dict[str, Any]:
    """The naive lexical alternative: rank_bm25 over every chunk text, in memory."""
    from rank_bm25 import BM25Okapi

    catalog = Catalog(Path(job["home"]) / "catalog.sqlite")
    t = time.perf_counter()
    corpus = [tokenize(f"{h}\n{x}") for h, x in catalog.conn.execute("SELECT header, text FROM chunks ORDER BY rowid")]
    catalog.close()
    bm25 = BM25Okapi(corpus)
    del corpus
    gc.collect()
    build_s = time.perf_counter() - t
    latency: dict[str, list[float]] = {}
    k = job["candidates"]
    for kind, text in job["lexical"]:
        t = time.perf_counter()
        scores = bm25.get_scores(tokenize(text))
        top = np.argpartition(-scores, k)[:k]
        top[np.argsort(-scores[top])]
        latency.setdefault(kind, []).append((time.perf_counter() - t) * 1000.0)
    return {"build_s": round(build_s, 2), "latency_ms": latency, "peak_rss_bytes": rss_bytes()}


class SyntheticEmbedder:
    """Stands in for the embedder inside `reindex`: the model's own tokenizer bounds the chunks, the
    vectors come from the grower (an embedding per text, deterministic in the text)."""

    def __init__(self, grower: Grower, model_path: Path, max_tokens: int) -> None:
        from appliance.models.embedder import TokenCounter

        self.grower = grower
        self.model_id = EMBEDDER_ID
        self.count_tokens = TokenCounter(model_path)
        self.max_tokens = max_tokens
        self.dimension = DIM
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        keys = [int(hashlib.sha256(t.encode()).hexdigest()[:12], 16) for t in texts]
        primaries = self.grower.train[np.array(keys) % len(self.grower.train)]
        return self.grower.vectors_for(primaries, np.random.default_rng(keys[0]))[0]

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def change_step(job: dict[str, Any]) -> dict[str, Any]:
    """Replace 1% of the documents in both stores; then (where files exist) another 1% through reindex."""
    seed, grower, home, size, _, settings = step_setup(job)
    files = home / "files" / "synthetic"
    n_docs = size // CHUNKS_PER_DOC
    n_change = max(1, round(n_docs * job["fraction"]))
    order = np.random.default_rng(11).permutation(n_docs)
    result: dict[str, Any] = {"documents": n_change}

    # 1. Directly through the stores, in the pipeline's crash-safe order.
    numbers = sorted(int(d) for d in order[:n_change])
    docs, new_vectors = grower.documents(numbers, 1, n_docs * CHUNKS_PER_DOC)
    put_files(docs, files, on_disk=job["reindex"])  # keep files and catalog agreeing for the reindex below
    catalog = Catalog(settings.catalog_path)
    vectors = VectorIndex(settings.vectors, settings.chroma_path)
    vectors.query(new_vectors[0], 10)  # load the index first: a running server has it loaded
    started = time.perf_counter()
    old_ids = [chunk for doc in docs for chunk in catalog.chunk_ids_of(doc["path"])]
    t = time.perf_counter()
    vectors.upsert(
        [c.chunk_id for d in docs for c in d["chunks"]], new_vectors, [d["path"] for d in docs for _ in d["chunks"]]
    )
    upsert_s = time.perf_counter() - t
    t = time.perf_counter()
    write_documents(catalog, docs, new_vectors, files, on_disk=job["reindex"])
    catalog_s = time.perf_counter() - t
    t = time.perf_counter()
    vectors.delete(old_ids)
    delete_s = time.perf_counter() - t
    result["direct"] = {
        "chunks_deleted": len(old_ids),
        "chunks_added": len(new_vectors),
        "vectors_upsert_s": round(upsert_s, 3),
        "catalog_replace_s": round(catalog_s, 3),
        "vectors_delete_s": round(delete_s, 3),
        "total_s": round(time.perf_counter() - started, 3),
    }
    catalog.close()
    cast("Client", vectors.client).close()

    # 2. Through the project's reindex: scan every file, re-read the changed ones, chunk, embed, write.
    if job["reindex"]:
        import appliance.ingest.pipeline as pipeline
        from appliance.index.index import Index
        from appliance.models.registry import embedder_path

        numbers = sorted(int(d) for d in order[n_change : 2 * n_change])
        docs, _ = grower.documents(numbers, 2, 0)
        for doc in docs:
            (files.parent / doc["path"]).write_text(markdown_of(doc), encoding="utf-8")
        fake = SyntheticEmbedder(grower, embedder_path(settings), int(seed["embedder_max_tokens"]))
        pipeline.load_embedder = lambda _settings: fake  # type: ignore[assignment,return-value]
        report = pipeline.reindex(settings)
        index = Index(settings)
        consistency = index.check()
        index.close()
        result["reindex"] = {
            **{k: v for k, v in report.as_json().items() if k not in ("failed", "skipped")},
            "failed": len(report.failed),
            "consistent_after": consistency.consistent,
        }
    result["peak_rss_bytes"] = rss_bytes()
    return result


# --- exact search (the naive dense alternative) and recall ----------------------------------------


def exact_top(matrix: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k rows and cosine similarities for every query (vectors are unit length)."""
    best_rows = np.zeros((len(queries), 0), dtype=np.int64)
    best_sims = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(matrix), 131072):
        block = np.asarray(matrix[start : start + 131072])
        sims = queries @ block.T
        keep = min(k, sims.shape[1])
        part = np.argpartition(-sims, keep - 1, axis=1)[:, :keep]
        rows = np.concatenate([best_rows, part + start], axis=1)
        values = np.concatenate([best_sims, np.take_along_axis(sims, part, axis=1)], axis=1)
        order = np.argsort(-values, axis=1)[:, :k]
        best_rows, best_sims = np.take_along_axis(rows, order, axis=1), np.take_along_axis(values, order, axis=1)
    return best_rows, best_sims


def brute_force_latency(matrix: np.ndarray, queries: np.ndarray, k: int = 10) -> list[float]:
    """One query at a time over the whole matrix in RAM, as a naive server would answer it."""
    for vector in queries[:2]:
        np.argpartition(-(matrix @ vector), k)[:k]
    latency = []
    for vector in queries:
        t = time.perf_counter()
        sims = matrix @ vector
        top = np.argpartition(-sims, k)[:k]
        top[np.argsort(-sims[top])]
        latency.append((time.perf_counter() - t) * 1000.0)
    return latency


def recall_at(found: Sequence[Sequence[int]], truth: np.ndarray, k: int) -> list[float]:
    return [len(set(list(f)[:k]) & set(t[:k].tolist())) / k for f, t in zip(found, truth, strict=True)]


def summarize_sweep(serve: dict[str, Any], truth: np.ndarray, sets: dict[str, slice]) -> list[dict[str, Any]]:
    rows = []
    for ef, entry in serve["sweep"].items():
        row: dict[str, Any] = {"ef_search": int(ef)}
        for name, part in sets.items():
            row[name] = {
                "recall@10": round(float(np.mean(recall_at(entry["rows"][part], truth[part], 10))), 4),
                **stats_ms(entry["latency_ms"][part]),
            }
        row["all"] = {
            "recall@10": round(float(np.mean(recall_at(entry["rows"], truth, 10))), 4),
            **stats_ms(entry["latency_ms"]),
        }
        rows.append(row)
    return rows


def cheapest_meeting(sweep: list[dict[str, Any]], sets: Sequence[str]) -> dict[str, Any] | None:
    """The smallest ef_search whose recall@10 reaches the target on every query set."""
    for row in sorted(sweep, key=lambda r: r["ef_search"]):
        if all(row[name]["recall@10"] >= TARGET_RECALL for name in sets):
            return {
                "ef_search": row["ef_search"],
                "recall@10": min(row[name]["recall@10"] for name in sets),
                "p95_ms": row["all"]["p95"],
                "p50_ms": row["all"]["p50"],
                "meets_goal": row["all"]["p95"] <= TARGET_P95_MS,
            }
    return None


def similarity_profile(sims: np.ndarray) -> dict[str, float]:
    """How crowded the neighbourhood of a query is: median top-1 and top-10 cosine."""
    return {
        "top1_median": round(float(np.median(sims[:, 0])), 4),
        "top10_median": round(float(np.median(sims[:, min(9, sims.shape[1] - 1)])), 4),
    }


# --- one size, side by side ------------------------------------------------------------------------


def gb(value: float) -> str:
    return f"{value / 1e9:.2f} GB"


def measure_size(
    size: int, args: argparse.Namespace, ctx: dict[str, Any], out: Callable[[str], None]
) -> dict[str, Any]:
    work: Path = ctx["work"]
    params = args.params
    home = work / f"n{size}"
    files = size <= args.reindex_max
    default_ef = VectorSettings().hnsw_ef_search
    stage_efs = sorted({default_ef, *args.stage_efs})
    base_job = {"seed": str(ctx["seed_path"]), "train": str(ctx["train_path"]), "home": str(home), "size": size}
    out(
        f"\n== {size:,} chunks ({size // CHUNKS_PER_DOC:,} documents), "
        f"HNSW M={params[0]} ef_construction={params[1]} =="
    )

    build = run_child(build_step, {**base_job, "params": params, "files": files, "save_vectors": True})
    serve = run_child(
        serve_step,
        {
            **base_job,
            "params": params,
            "efs": list(args.efs),
            "stage_efs": stage_efs,
            "queries": str(ctx["queries_path"]),
            "candidates": ctx["candidates"],
            "lexical": ctx["lexical"],
        },
    )
    matrix = np.load(home / "x.npy")
    queries = np.load(ctx["queries_path"])
    truth, truth_sims = exact_top(matrix, queries, ctx["candidates"])
    brute = brute_force_latency(matrix, queries[: args.brute_queries])
    del matrix
    gc.collect()
    sets: dict[str, slice] = ctx["sets"]
    sweep = summarize_sweep(serve, truth, sets)
    choice = cheapest_meeting(sweep, list(sets))
    stage: dict[str, dict[str, Any]] = {}
    for ef, entry in serve["stage"].items():
        stage[ef] = {
            "recall@10": round(float(np.mean(recall_at(entry["rows"], truth, 10))), 4),
            "recall@100": round(float(np.mean(recall_at(entry["rows"], truth, ctx["candidates"]))), 4),
            "vector_index_query_ms": stats_ms(entry["query_ms"]),
            "hnsw_query_ms": stats_ms(entry["hnsw_ms"]),
            "stage_ms": stats_ms(entry["stage_ms"]),
        }
    lexical: dict[str, dict[str, Any]] = {
        kind: {
            "queries": len(entry["query_ms"]),
            "query_ms": stats_ms(entry["query_ms"]),
            "stage_ms": stats_ms(entry["stage_ms"]),
            "mean_hits": round(float(np.mean(entry["hits"])), 1),
        }
        for kind, entry in serve["lexical"].items()
    }
    result: dict[str, Any] = {
        "documents": build["documents"],
        "chunks": build["chunks"],
        "params": {"max_neighbors": params[0], "ef_construction": params[1]},
        "build": {k: v for k, v in build.items() if k not in ("chunks", "documents")},
        "disk_bytes_per_million_chunks": round(build["disk_bytes"]["total"] / build["chunks"] * 1e6),
        "serving": {
            "open_and_first_query_s": serve["open_and_first_query_s"],
            "rss_after_load_bytes": serve["rss_after_load_bytes"],
            "peak_rss_bytes": serve["peak_rss_bytes"],
            "vector_index_count_ms": serve["count_ms"],
            "load_average": [serve["load_average_before"], serve["load_average_after"]],
        },
        "neighbourhood": {name: similarity_profile(truth_sims[part]) for name, part in sets.items()},
        "hnsw_sweep": sweep,
        "cheapest_ef_search_reaching_target": choice,
        "appliance_dense_stage": {"n": ctx["candidates"], "by_ef_search": stage},
        "exact_numpy": {"queries": len(brute), **stats_ms(brute)},
        "lexical_fts5": lexical,
    }

    b = result["build"]
    disk = b["disk_bytes"]
    out(
        f"build      vectors into Chroma {b['vectors_per_s']:8,.0f}/s ({b['seconds']['vectors']:.0f} s)   "
        f"catalog + FTS5 {b['catalog_rows_per_s']:8,.0f} rows/s ({b['seconds']['catalog']:.0f} s)   "
        f"whole build {b['total_s']:.0f} s"
    )
    out(
        f"disk       chroma {gb(disk['chroma'])} (hnsw {gb(disk['chroma_hnsw'])}, sqlite {gb(disk['chroma_sqlite'])}) "
        f"+ catalog {gb(disk['catalog'])} = {gb(disk['total'])}   → {gb(result['disk_bytes_per_million_chunks'])} "
        "per million chunks"
    )
    out(
        f"RAM peak   build process {gb(b['peak_rss_bytes'])}   serving process {gb(serve['rss_after_load_bytes'])} "
        f"after open + first query ({serve['open_and_first_query_s']:.1f} s; {gb(serve['peak_rss_bytes'])} at the end "
        "of the sweep, which reopens the index once per ef_search)"
    )
    names = list(sets)
    out(
        "HNSW, k=10         "
        + "".join(f"{name + ' (' + str(sets[name].stop - sets[name].start) + ')':>28}" for name in names)
    )
    out("  ef_search        " + "".join(f"{'recall@10':>10} {'p50 ms':>8} {'p95 ms':>8}" for _ in names))
    for row in sweep:
        cells = "".join(f"{row[n]['recall@10']:10.4f} {row[n]['p50']:8.2f} {row[n]['p95']:8.2f}" for n in names)
        out(f"  {row['ef_search']:>9}        {cells}")
    exact = result["exact_numpy"]
    ref = next((r for r in sweep if r["ef_search"] == default_ef), sweep[0])
    out(
        f"  exact numpy      {1.0:10.4f} {exact['p50']:8.2f} {exact['p95']:8.2f}   (brute force, {exact['queries']} "
        f"queries; p50 {exact['p50'] / max(1e-9, ref['all']['p50']):.1f}x the HNSW p50 at ef_search {ref['ef_search']})"
    )
    if choice:
        verdict = "meets" if choice["meets_goal"] else "misses"
        out(
            f"  cheapest ef_search with recall@10 >= {TARGET_RECALL} on every set: {choice['ef_search']} "
            f"(p95 {choice['p95_ms']:.2f} ms: {verdict} p95 <= {TARGET_P95_MS:.0f} ms)"
        )
    else:
        out(f"  no ef_search in the sweep reaches recall@10 >= {TARGET_RECALL} on every set")
    out(
        "  (HNSW = Chroma collection.query as VectorIndex.query issues it; collection.count() for comparison: "
        f"p50 {serve['count_ms']['p50']:.2f} p95 {serve['count_ms']['p95']:.2f} ms)"
    )
    for ef, s in stage.items():
        out(
            f"appliance dense stage, n={ctx['candidates']}, ef_search {ef}: recall@10 {s['recall@10']:.4f} "
            f"recall@{ctx['candidates']} {s['recall@100']:.4f}; HNSW p50 {s['hnsw_query_ms']['p50']:.2f} "
            f"p95 {s['hnsw_query_ms']['p95']:.2f} ms; VectorIndex.query "
            f"p50 {s['vector_index_query_ms']['p50']:.2f} p95 {s['vector_index_query_ms']['p95']:.2f} ms; "
            f"+ catalog read-back p50 {s['stage_ms']['p50']:.2f} p95 {s['stage_ms']['p95']:.2f} ms"
        )

    if size <= args.bm25_max:
        bm25 = run_child(bm25_step, {**base_job, "lexical": ctx["lexical"], "candidates": ctx["candidates"]})
        result["lexical_rank_bm25"] = {
            "build_s": bm25["build_s"],
            "peak_rss_bytes": bm25["peak_rss_bytes"],
            **{kind: stats_ms(values) for kind, values in bm25["latency_ms"].items()},
        }
    else:
        result["lexical_rank_bm25"] = {"skipped": f"above --bm25-max {args.bm25_max:,} (memory and time)"}
    naive = result["lexical_rank_bm25"]
    for kind, entry in lexical.items():
        line = (
            f"lexical    FTS5 {kind + 's':<12} p50 {entry['query_ms']['p50']:7.2f} "
            f"p95 {entry['query_ms']['p95']:7.2f} ms "
            f"(stage with read-back p95 {entry['stage_ms']['p95']:7.2f})"
        )
        if kind in naive:
            line += (
                f"   rank_bm25 p50 {naive[kind]['p50']:8.2f} p95 {naive[kind]['p95']:8.2f} ms "
                f"= {naive[kind]['p50'] / max(1e-9, entry['query_ms']['p50']):.0f}x slower"
            )
        out(line)
    if "build_s" in naive:
        out(
            f"           rank_bm25 index: built in {naive['build_s']:.0f} s, "
            f"process peak RSS {gb(naive['peak_rss_bytes'])}"
        )
    else:
        out(f"           rank_bm25: {naive['skipped']}")

    if args.compare_params and size == args.compare_size:
        result["builds"] = [
            {
                "max_neighbors": params[0],
                "ef_construction": params[1],
                "vectors_per_s": b["vectors_per_s"],
                "chroma_hnsw_bytes": disk["chroma_hnsw"],
                "sweep": sweep,
                "cheapest": choice,
            }
        ]
        for other in args.compare_params:
            other_home = work / f"n{size}-M{other[0]}-efc{other[1]}"
            job = {**base_job, "home": str(other_home)}
            other_build = run_child(build_step, {**job, "params": other, "files": False, "save_vectors": False})
            other_serve = run_child(
                serve_step, {**job, "params": other, "efs": list(args.efs), "queries": str(ctx["queries_path"])}
            )
            other_sweep = summarize_sweep(other_serve, truth, sets)
            result["builds"].append(
                {
                    "max_neighbors": other[0],
                    "ef_construction": other[1],
                    "vectors_per_s": other_build["vectors_per_s"],
                    "chroma_hnsw_bytes": other_build["disk_bytes"]["chroma_hnsw"],
                    "sweep": other_sweep,
                    "cheapest": cheapest_meeting(other_sweep, list(sets)),
                }
            )
            shutil.rmtree(other_home, ignore_errors=True)
        out(f"HNSW builds at {size:,} (recall@10 on every set / p95 over all queries, ms):")
        efs_header = "".join(f"{'ef ' + str(ef):>15}" for ef in args.efs)
        out(f"  {'M':>3} {'ef_c':>5} {'vectors/s':>10} {'hnsw MB':>8}{efs_header}")
        for entry in result["builds"]:
            cells = "".join(
                f"{min(r[n]['recall@10'] for n in names):8.4f}/{r['all']['p95']:6.2f}" for r in entry["sweep"]
            )
            out(
                f"  {entry['max_neighbors']:>3} {entry['ef_construction']:>5} {entry['vectors_per_s']:>10,.0f} "
                f"{entry['chroma_hnsw_bytes'] / 1e6:>8.0f}{cells}"
            )

    change = run_child(change_step, {**base_job, "params": params, "fraction": args.fraction, "reindex": files})
    rate = ctx["embed_chunks_per_s"]
    direct = change["direct"]
    change["direct"]["real_embedding_estimate_s"] = round(direct["chunks_added"] / rate, 1)
    change["full_rebuild_s"] = b["total_s"]
    result["change_1pct"] = change
    out(
        f"1% change  {change['documents']:,} documents: direct {direct['total_s']:.1f} s (Chroma upsert "
        f"{direct['vectors_upsert_s']:.1f} s + catalog {direct['catalog_replace_s']:.1f} s + Chroma delete "
        f"{direct['vectors_delete_s']:.1f} s; {direct['chunks_added']:,} chunks in, {direct['chunks_deleted']:,} out)"
    )
    if "reindex" in change:
        r = change["reindex"]
        out(
            f"           reindex {r['seconds']:.1f} s ({r['updated']} documents, "
            f"{r['chunks_embedded']:,} chunks embedded "
            f"synthetically; consistent after: {r['consistent_after']})"
        )
    out(
        f"           real embedding of the new chunks would add ~{direct['real_embedding_estimate_s']:.0f} s "
        f"({rate:.0f} chunks/s); naive full rebuild {b['total_s']:.0f} s without embedding "
        f"= {b['total_s'] / max(1e-9, direct['total_s']):.0f}x the direct change"
    )
    shutil.rmtree(home, ignore_errors=True)
    return result


# --- main ------------------------------------------------------------------------------------------


def parse_pairs(text: str) -> list[tuple[int, int]]:
    return [tuple(int(x) for x in part.split(",")) for part in text.split(";") if part.strip()]  # type: ignore[misc]


def parse_ints(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def machine() -> dict[str, Any]:
    memory = 0
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    cpu = ""
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    import chromadb

    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_bytes": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "chromadb": chromadb.__version__,
        "sqlite": __import__("sqlite3").sqlite_version,
        "numpy": np.__version__,
        "nice": os.nice(0),
    }


def main() -> int:
    defaults = VectorSettings()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_ints, default=[100_000, 1_000_000], help="Corpus sizes in chunks.")
    parser.add_argument("--queries", type=int, default=200, help="Held-out perturbed seed chunks used as queries.")
    parser.add_argument("--out", type=Path, default=REPO / "scripts" / "results" / "scale.json")
    parser.add_argument("--runbooks", type=Path, default=DEFAULT_RUNBOOKS)
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument(
        "--params",
        type=lambda s: parse_pairs(s)[0],
        default=(defaults.hnsw_max_neighbors, defaults.hnsw_ef_construction),
        help="max_neighbors,ef_construction of the main build at every size (default: the settings' defaults).",
    )
    parser.add_argument(
        "--compare-params",
        type=parse_pairs,
        help="Other max_neighbors,ef_construction builds (';'-separated), measured at --compare-size "
        "(default: whichever of 16,100 and 32,200 is not --params; '' for none).",
    )
    parser.add_argument("--compare-size", type=int, default=100_000)
    parser.add_argument("--efs", type=parse_ints, default=list(DEFAULT_EFS), help="ef_search values to sweep.")
    parser.add_argument(
        "--stage-efs", type=parse_ints, default=[300], help="ef_search values for the appliance's dense stage (n=100)."
    )
    parser.add_argument("--bm25-max", type=int, default=100_000, help="Largest size that also runs rank_bm25.")
    parser.add_argument(
        "--reindex-max", type=int, default=100_000, help="Largest size that writes files and runs reindex."
    )
    parser.add_argument("--fraction", type=float, default=0.01, help="Share of documents changed.")
    parser.add_argument("--brute-queries", type=int, default=50, help="Queries timed for exact numpy search.")
    parser.add_argument("--tmp", type=Path, default=Path("/tmp"), help="Where the temporary indexes live.")
    parser.add_argument("--seed-cache", type=Path, help="Reuse (or write) the embedded seed here (debugging).")
    args = parser.parse_args()
    if args.compare_params is None:
        args.compare_params = [p for p in [(16, 100), (32, 200)] if tuple(p) != tuple(args.params)]
    if not args.runbooks.is_dir():
        print(f"runbooks not found at {args.runbooks}", file=sys.stderr)
        return 1

    started = time.perf_counter()
    lines: list[str] = []

    def out(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    work = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.tmp))
    try:
        if args.seed_cache and args.seed_cache.exists():
            seed = load_seed(str(args.seed_cache))
        else:
            seed = build_seed(args.runbooks, Settings(home=work / "seed-home", models_dir=args.models_dir))
            if args.seed_cache:
                args.seed_cache.write_bytes(pickle.dumps(seed))
        seed_path = work / "seed.pkl"
        seed_path.write_bytes(pickle.dumps(seed))
        n_seed = len(seed["vectors"])
        rng = np.random.default_rng(2024)
        order = rng.permutation(n_seed)
        held, train = order[: args.queries], np.sort(order[args.queries :])
        np.save(work / "train.npy", train)
        grower = Grower(seed, train)
        held_vectors, _ = grower.vectors_for(held, np.random.default_rng(99))
        queries = np.concatenate([held_vectors, seed["question_vectors"]]).astype(np.float32)
        np.save(work / "queries.npy", queries)
        sets = {"held-out": slice(0, len(held))}
        if len(seed["questions"]):
            sets["questions"] = slice(len(held), len(queries))
        strong = sorted({i for per_chunk in grower.unit_identifiers for unit in per_chunk for i in unit if len(i) >= 6})
        identifiers = random.Random(5).sample(strong, min(50, len(strong)))
        lexical = [("question", q) for q in seed["questions"]] + [("identifier", i) for i in identifiers]
        _, real_sims = exact_top(seed["vectors"][train], queries, 10)
        nn = grower.real_nn_sim
        seed_info = {
            "runbook_files": seed["files"],
            "chunks": n_seed,
            "train_chunks": len(train),
            "held_out_chunks": len(held),
            "questions": len(seed["questions"]),
            "identifier_queries": len(identifiers),
            "embed_s": round(seed["embed_s"], 1),
            "embed_chunks_per_s": round(seed["embed_chunks_per_s"], 1),
            "real_embedding_of_1m_chunks_h": round(1e6 / seed["embed_chunks_per_s"] / 3600, 1),
            "real_nearest_neighbour_cosine": {
                "p10": round(float(np.percentile(nn, 10)), 4),
                "median": round(float(np.median(nn)), 4),
                "p90": round(float(np.percentile(nn, 90)), 4),
            },
            "synthetic_vs_own_seed_cosine_median": round(
                float(
                    np.median(np.sum(grower.vectors_for(train[:2000], rng)[0] * seed["vectors"][train[:2000]], axis=1))
                ),
                4,
            ),
            "neighbourhood_in_real_seed": {name: similarity_profile(real_sims[part]) for name, part in sets.items()},
        }
        out(
            f"bench_scale {dt.date.today().isoformat()}: {os.cpu_count()} CPUs, nice {os.nice(0)}; seed: "
            f"{seed['files']} runbook files → {n_seed:,} real chunks embedded at {seed['embed_chunks_per_s']:.0f} "
            f"chunks/s (1M real chunks would take {seed_info['real_embedding_of_1m_chunks_h']} h); "
            f"{len(held)} held out as queries, {len(seed['questions'])} real questions, {len(identifiers)} identifiers"
        )
        out(
            "real chunks' nearest real neighbour cosine: "
            f"median {seed_info['real_nearest_neighbour_cosine']['median']}; "
            f"a synthetic chunk vs its own seed: median {seed_info['synthetic_vs_own_seed_cosine_median']}"
        )
        ctx = {
            "work": work,
            "seed_path": seed_path,
            "train_path": work / "train.npy",
            "queries_path": work / "queries.npy",
            "sets": sets,
            "lexical": lexical,
            "candidates": SearchSettings().candidates,
            "embed_chunks_per_s": seed["embed_chunks_per_s"],
        }
        results: dict[str, Any] = {
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "machine": machine(),
            "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "goal": {"recall@10": TARGET_RECALL, "p95_ms": TARGET_P95_MS},
            "seed": seed_info,
            "sizes": {},
        }
        del seed
        for size in args.sizes:
            result = measure_size(size, args, ctx, out)
            for name in sets:
                out(
                    f"neighbourhood ({name}): top-1 cosine median {result['neighbourhood'][name]['top1_median']} "
                    f"(real seed {seed_info['neighbourhood_in_real_seed'][name]['top1_median']}), top-10 "
                    f"{result['neighbourhood'][name]['top10_median']} "
                    f"(real seed {seed_info['neighbourhood_in_real_seed'][name]['top10_median']})"
                )
            results["sizes"][str(size)] = result
        largest = results["sizes"][str(max(args.sizes))]
        choice = largest["cheapest_ef_search_reaching_target"]
        met = bool(choice and choice["meets_goal"])
        results["goal"]["met_at_largest_size"] = met
        results["runtime_s"] = round(time.perf_counter() - started, 1)
        out(
            f"\ngoal at {max(args.sizes):,} chunks, recall@10 >= {TARGET_RECALL} at p95 <= {TARGET_P95_MS:.0f} ms: "
            + (
                f"{'met' if met else 'NOT met'} with ef_search {choice['ef_search']} (recall@10 {choice['recall@10']}, "
                f"p95 {choice['p95_ms']} ms)"
                if choice
                else "NOT met: no ef_search in the sweep reaches the recall"
            )
        )
        out(f"runtime {results['runtime_s'] / 60:.1f} min")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        args.out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
        print(f"wrote {args.out} and {args.out.with_suffix('.txt')}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
