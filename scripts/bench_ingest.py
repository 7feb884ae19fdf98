"""Ingest benchmark on the real runbooks (../shared/data/runbooks, 885 Markdown files).

Side by side, in one run:
  * whole pipeline (scan, load, chunk, embed, write SQLite + FTS5 + Chroma; the configured embedder
    backend, default settings) chunks/s versus a plain sentence-transformers encode on torch of
    exactly the same chunk texts (SentenceTransformer(folder).encode(texts), its defaults). The plain
    encode runs half before the ingest and half after it, so a drift in machine load hits both;
  * no-op reindex, and reindex after changing one file, versus the naive alternative a user of
    other tools gets: rebuilding the index from scratch (measured by the first full ingest);
  * index size on disk.

Usage: python scripts/bench_ingest.py [--runbooks DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import appliance  # noqa: F401  (sets the offline environment first)
from appliance.config import Settings, load_settings
from appliance.index.index import Index
from appliance.ingest.chunker import chunk_document
from appliance.ingest.loaders import load_document
from appliance.ingest.pipeline import ingest, reindex
from appliance.ingest.scan import scan_source
from appliance.models.registry import embedder_path, load_embedder

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def chunk_texts(settings: Settings, sources: list[Path]) -> list[str]:
    """The texts the pipeline embeds (header + text of every chunk), made by the same loaders and chunker."""
    embedder = load_embedder(settings)
    texts: list[str] = []
    for source in sources:
        for item in scan_source(source):
            if item.skip or item.error:
                continue
            try:
                loaded = load_document(item.abs_path, item.display_path, max_bytes=settings.ingest.max_file_bytes)
            except Exception:  # the pipeline reports these files as failed or skipped
                continue
            chunks = chunk_document(
                loaded,
                embedder.count_tokens,
                max_tokens=min(settings.ingest.chunk_max_tokens, embedder.max_tokens),
                overlap_tokens=settings.ingest.chunk_overlap_tokens,
            )
            texts += [chunk.embedding_text for chunk in chunks]
    return texts


def plain_encode_seconds(model: Any, texts: list[str]) -> float:
    started = time.perf_counter()
    model.encode(texts)  # sentence-transformers' defaults: batch 32, torch's own thread count
    return time.perf_counter() - started


def run(runbooks: Path, models_dir: Path) -> dict[str, Any]:
    from sentence_transformers import SentenceTransformer

    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    try:
        # A private copy: the one-file change below must not touch ../shared (read-only).
        corpus = work / "runbooks"
        shutil.copytree(runbooks, corpus)
        sources = sorted(p for p in corpus.iterdir() if p.is_dir())
        environ = {**os.environ, "APPLIANCE_HOME": str(work / "home"), "APPLIANCE_MODELS_DIR": str(models_dir)}
        environ.pop("APPLIANCE_CONFIG", None)
        settings = load_settings(environ)  # the defaults, and any APPLIANCE_* variables, as for the CLI
        embedder = load_embedder(settings)
        embedder.embed(["warm-up"])  # model load is not ingest throughput
        plain = SentenceTransformer(str(embedder_path(settings)), device="cpu", local_files_only=True)
        plain.encode(["warm-up"])
        texts = chunk_texts(settings, sources)
        half = len(texts) // 2
        raw_seconds = plain_encode_seconds(plain, texts[:half])

        first = ingest(settings, sources)

        raw_seconds += plain_encode_seconds(plain, texts[half:])
        index = Index(settings)
        stored = sorted(row[0] for row in index.catalog.conn.execute("SELECT header || char(10) || text FROM chunks"))
        index.close()
        if stored != sorted(texts):
            raise RuntimeError("the plain encode's texts are not the chunk texts the pipeline embedded")

        noop = reindex(settings)
        target = max(corpus.rglob("*.md"), key=lambda p: p.stat().st_size)
        target.write_text(target.read_text(encoding="utf-8") + "\n\nAppended by the benchmark: one new line.\n")
        one_change = reindex(settings)

        # The naive alternative, throwing the index away and rebuilding it after any change, costs
        # what the first full ingest cost (same corpus, same machine): that run is its measurement.
        rebuild = first

        pipeline_rate = first.chunks_embedded / first.seconds
        raw_rate = len(texts) / raw_seconds
        catalog = sum(p.stat().st_size for p in settings.home.glob("catalog.sqlite*") if p.is_file())
        vectors = folder_bytes(settings.chroma_path)
        return {
            "files": first.added + len(first.failed) + len(first.skipped),
            "documents_indexed": first.added,
            "failed": len(first.failed),
            "skipped": len(first.skipped),
            "chunks": first.chunks_total,
            "full_ingest_s": round(first.seconds, 2),
            "embedder_backend": embedder.backend,  # as resolved for this CPU (auto → torch-bf16 or onnx)
            "pipeline_chunks_per_s": round(pipeline_rate, 1),
            "plain_torch_encode_chunks_per_s": round(raw_rate, 1),
            "pipeline_vs_plain_torch_encode": round(pipeline_rate / raw_rate, 3),
            "noop_reindex_s": round(noop.seconds, 3),
            "noop_chunks_embedded": noop.chunks_embedded,
            "one_file_reindex_s": round(one_change.seconds, 3),
            "one_file_chunks_embedded": one_change.chunks_embedded,
            "one_file_chunks_reused": one_change.chunks_reused,
            "naive_full_rebuild_s": round(rebuild.seconds, 2),
            "rebuild_vs_one_file_reindex": round(rebuild.seconds / one_change.seconds, 1),
            "rebuild_vs_noop_reindex": round(rebuild.seconds / noop.seconds, 1),
            "index_bytes": {"catalog": catalog, "vectors": vectors, "total": catalog + vectors},
            "corpus_bytes": folder_bytes(runbooks),
            "load_average": os.getloadavg(),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runbooks", type=Path, default=DEFAULT_RUNBOOKS)
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.runbooks.is_dir():
        print(f"runbooks not found at {args.runbooks}", file=sys.stderr)
        return 1
    result = run(args.runbooks, args.models_dir)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"corpus: {result['files']} files ({result['corpus_bytes'] / 1e6:.1f} MB), "
        f"{result['documents_indexed']} indexed, {result['failed']} failed, {result['skipped']} skipped, "
        f"{result['chunks']} chunks"
    )
    print(
        f"full ingest:           {result['full_ingest_s']:8.2f} s  {result['pipeline_chunks_per_s']:7.1f} chunks/s "
        f"(embedder backend {result['embedder_backend']})"
    )
    print(
        f"plain torch encode:    {'':8}    {result['plain_torch_encode_chunks_per_s']:7.1f} chunks/s "
        f"(ingest = {result['pipeline_vs_plain_torch_encode']:.2f}x plain sentence-transformers on torch)"
    )
    print(f"no-op reindex:         {result['noop_reindex_s']:8.3f} s  ({result['noop_chunks_embedded']} embedded)")
    print(
        f"one file changed:      {result['one_file_reindex_s']:8.3f} s  ({result['one_file_chunks_embedded']} "
        f"embedded, {result['one_file_chunks_reused']} reused)"
    )
    print(
        f"naive full rebuild:    {result['naive_full_rebuild_s']:8.2f} s  "
        f"= {result['rebuild_vs_one_file_reindex']}x the one-file reindex, "
        f"{result['rebuild_vs_noop_reindex']}x the no-op reindex"
    )
    sizes = result["index_bytes"]
    print(
        f"index on disk:         catalog {sizes['catalog'] / 1e6:.1f} MB + vectors {sizes['vectors'] / 1e6:.1f} MB "
        f"= {sizes['total'] / 1e6:.1f} MB for {result['corpus_bytes'] / 1e6:.1f} MB of documents"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
