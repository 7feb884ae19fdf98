"""Retrieval benchmark, side by side in one run, on a BEIR folder (default: SciFact train judgments).

Systems (all rank documents; chunk systems score a document by its best chunk):
  rank-bm25       BM25Okapi over whole documents in memory: the naive choice
  fts5            our lexical side (FTS5 bm25, porter, header weight, exact identifiers)
  dense-exact     brute-force cosine over every chunk embedding (numpy)
  dense-hnsw      Chroma HNSW (what the appliance serves), with its recall@10 against exact
  hybrid-rrf      reciprocal rank fusion of fts5 + dense-hnsw
  hybrid-weighted min-max weighted fusion of the same lists
  appliance       the configured default pipeline (+ rerank when a cross-encoder is installed)
Latency p50/p95 per stage, on this machine.

Usage: python scripts/bench_retrieval.py [--beir DIR] [--split train] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.config import Settings
from appliance.evaluate.beir import load_corpus, load_qrels, load_queries
from appliance.evaluate.beir_index import build_beir_index
from appliance.evaluate.metrics import evaluate_run, percentile
from appliance.retrieve.aggregate import aggregate_documents
from appliance.retrieve.search import Searcher
from scripts.lib.beir_options import add_beir_options

TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def as_docs(pairs: list[tuple[str, float]], k: int = 100) -> dict[str, float]:
    return dict(pairs[:k])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_beir_options(parser)
    parser.add_argument("--limit", type=int, default=0, help="Only the first N judged queries (0 = all).")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    settings = Settings(home=args.home, models_dir=args.models_dir)
    own, _ = build_beir_index(settings, args.beir)
    qrels = load_qrels(args.beir, args.split)
    queries = load_queries(args.beir)
    qids = sorted(qrels)[: args.limit or None]
    qrels = {q: qrels[q] for q in qids}
    searcher = Searcher(own)
    searcher.embedder.embed_query("warm-up")
    latency: dict[str, list[float]] = {}

    def timed(stage: str, started: float) -> None:
        latency.setdefault(stage, []).append((time.perf_counter() - started) * 1000.0)

    # rank-bm25 over whole documents: the in-memory baseline a user would pick first.
    from rank_bm25 import BM25Okapi

    t = time.perf_counter()
    corpus = list(load_corpus(args.beir))
    bm25 = BM25Okapi([tokenize(f"{d.title} {d.text}") for d in corpus])
    doc_ids = [d.doc_id for d in corpus]
    build_bm25_s = time.perf_counter() - t

    # Exact dense search over every stored chunk embedding.
    conn = searcher.index.catalog.conn
    chunk_rows = conn.execute(
        "SELECT c.id, d.path, c.embedding FROM chunks c JOIN documents d ON d.id = c.document_id"
    ).fetchall()
    chunk_ids = [row[0] for row in chunk_rows]
    chunk_docs = [row[1] for row in chunk_rows]
    matrix = np.stack([np.frombuffer(row[2], dtype="<f4") for row in chunk_rows])

    runs: dict[str, dict[str, dict[str, float]]] = {
        name: {}
        for name in ("rank-bm25", "fts5", "dense-exact", "dense-hnsw", "hybrid-rrf", "hybrid-weighted", "appliance")
    }
    hnsw_recall: list[float] = []
    vectors = searcher.embedder.embed([queries[q] for q in qids])
    fusion_modes = {
        "hybrid-rrf": own.model_copy(update={"search": own.search.model_copy(update={"fusion": "rrf"})}),
        "hybrid-weighted": own.model_copy(update={"search": own.search.model_copy(update={"fusion": "weighted"})}),
    }
    for qid, vector in zip(qids, vectors, strict=True):
        text = queries[qid]
        t = time.perf_counter()
        scores = bm25.get_scores(tokenize(text))
        top = np.argsort(-scores)[:100]
        runs["rank-bm25"][qid] = {doc_ids[i]: float(scores[i]) for i in top}
        timed("rank-bm25", t)

        t = time.perf_counter()
        sims = matrix @ vector
        order = np.argsort(-sims)[:200]
        exact = [(chunk_docs[i], float(sims[i])) for i in order]
        runs["dense-exact"][qid] = as_docs([(d, s) for d, s, _ in aggregate_documents(exact, lambda doc: doc)])
        timed("dense-exact", t)

        found = searcher.candidates(text, "hybrid", own.search.candidates, query_vector=vector)
        for stage in ("lexical", "dense"):
            latency.setdefault(stage, []).append(found.timings_ms[stage])
        exact_top10 = {chunk_ids[i] for i in order[:10]}
        hnsw_top10 = {row.chunk_id for row, _ in found.dense[:10]}
        hnsw_recall.append(len(exact_top10 & hnsw_top10) / max(1, len(exact_top10)))
        for name, scored in (("fts5", found.lexical), ("dense-hnsw", found.dense)):
            runs[name][qid] = as_docs([(d, s) for d, s, _ in aggregate_documents(scored, lambda r: r.path)])
        for name, fusion_settings in fusion_modes.items():
            fused = Searcher(fusion_settings, index=searcher.index, embedder=searcher.embedder).fuse(found, "hybrid")
            runs[name][qid] = as_docs([(d, s) for d, s, _ in aggregate_documents(fused, lambda r: r.path)])

        t = time.perf_counter()
        ranking, timings = searcher.search_documents(text, k=100, query_vector=vector)
        timed("appliance (after embed)", t)
        for stage in ("fusion", "rerank"):
            if stage in timings:
                latency.setdefault(stage, []).append(timings[stage])
        runs["appliance"][qid] = dict(ranking)
    t = time.perf_counter()
    for qid in qids[:50]:
        searcher.embedder.embed_query(queries[qid])
        timed("embed query", t)
        t = time.perf_counter()

    results: dict[str, Any] = {
        "dataset": str(args.beir),
        "split": args.split,
        "queries": len(qids),
        "settings": {
            "fusion": own.search.fusion,
            "rrf_k": own.search.rrf_k,
            "dense_weight": own.search.dense_weight,
            "header_weight": own.search.header_weight,
            "candidates": own.search.candidates,
            "reranker": searcher.reranker.model_id if searcher.reranker else None,
        },
        "systems": {},
        "hnsw_recall@10_vs_exact": round(float(np.mean(hnsw_recall)), 4),
        "rank_bm25_build_s": round(build_bm25_s, 2),
        "latency_ms": {
            stage: {"p50": round(percentile(v, 50), 2), "p95": round(percentile(v, 95), 2)}
            for stage, v in latency.items()
        },
    }
    for name, run in runs.items():
        scores = evaluate_run(run, qrels)
        results["systems"][name] = {k: round(scores[k], 4) for k in ("ndcg@10", "recall@10", "recall@100", "mrr@10")}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    baseline = results["systems"]["rank-bm25"]["ndcg@10"]
    print(f"{args.beir.name} [{args.split}] {len(qids)} queries; settings {results['settings']}")
    print(f"{'system':<16} {'nDCG@10':>8} {'vs bm25':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7}")
    for name, row in results["systems"].items():
        print(
            f"{name:<16} {row['ndcg@10']:8.4f} {row['ndcg@10'] / baseline:7.2f}x {row['recall@10']:7.4f} "
            f"{row['recall@100']:7.4f} {row['mrr@10']:7.4f}"
        )
    print(f"HNSW recall@10 against exact search: {results['hnsw_recall@10_vs_exact']:.4f}")
    print("latency per stage (ms):")
    for stage, values in results["latency_ms"].items():
        print(f"  {stage:<24} p50 {values['p50']:8.2f}   p95 {values['p95']:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
