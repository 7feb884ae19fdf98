"""Ingest benchmark on the real runbooks (../shared/data/runbooks, 885 Markdown files).

Side by side, in one run:
  * whole pipeline (scan, load, chunk, embed, write SQLite + FTS5 + Chroma) chunks/s versus the
    embedder's raw encode throughput on exactly the same chunk texts (the pipeline's overhead);
  * no-op reindex, and reindex after changing one file, versus the naive alternative a user of
    other tools gets: rebuilding the index from scratch (measured by the first full ingest);
  * index size on disk.

Usage: python scripts/bench_ingest.py [--runbooks DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import appliance  # noqa: F401  (sets the offline environment first)
from appliance.config import Settings
from appliance.index.index import Index
from appliance.ingest.pipeline import ingest, reindex
from appliance.models.registry import load_embedder

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(runbooks: Path, models_dir: Path) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    try:
        # A private copy: the one-file change below must not touch ../shared (read-only).
        corpus = work / "runbooks"
        shutil.copytree(runbooks, corpus)
        sources = sorted(p for p in corpus.iterdir() if p.is_dir())
        settings = Settings(home=work / "home", models_dir=models_dir)
        embedder = load_embedder(settings)
        embedder.embed(["warm-up"])  # model load is not ingest throughput

        first = ingest(settings, sources)

        index = Index(settings)
        rows = index.catalog.conn.execute("SELECT header || char(10) || text FROM chunks").fetchall()
        index.close()
        texts = [row[0] for row in rows]
        started = time.perf_counter()
        embedder.embed(texts)
        raw_seconds = time.perf_counter() - started

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
            "pipeline_chunks_per_s": round(pipeline_rate, 1),
            "raw_encode_chunks_per_s": round(raw_rate, 1),
            "pipeline_vs_raw_encode": round(pipeline_rate / raw_rate, 3),
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
    print(f"full ingest:           {result['full_ingest_s']:8.2f} s  {result['pipeline_chunks_per_s']:7.1f} chunks/s")
    print(
        f"raw embedder encode:   {'':8}    {result['raw_encode_chunks_per_s']:7.1f} chunks/s "
        f"(pipeline = {result['pipeline_vs_raw_encode']:.0%} of raw)"
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
