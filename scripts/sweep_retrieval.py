"""Sweep the retrieval parameters on SciFact TRAIN judgments and print every configuration's scores.

Candidates are computed once per query (dense top-N and lexical top-N at each header weight);
fusion, aggregation and their parameters are then swept in memory. The defaults in
appliance/config.py are the best configuration found here; the test split is never read.

Usage: python scripts/sweep_retrieval.py [--beir DIR] [--split train] [--json OUT]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.config import Settings
from appliance.evaluate.beir import load_qrels, load_queries
from appliance.evaluate.beir_index import build_beir_index
from appliance.evaluate.metrics import evaluate_run
from appliance.index.records import ChunkRow
from appliance.retrieve.aggregate import aggregate_documents
from appliance.retrieve.fusion import reciprocal_rank_fusion, weighted_fusion
from appliance.retrieve.search import Searcher
from scripts.lib.beir_options import add_beir_options

Scored = list[tuple[ChunkRow, float]]


def documents(scored: Scored, other_weight: float) -> dict[str, float]:
    return {
        doc: score
        for doc, score, _ in aggregate_documents(scored, lambda r: r.path, other_chunks_weight=other_weight)[:100]
    }


def fuse_chunks(lexical: Scored, dense: Scored, how: str, value: float) -> Scored:
    rows = {row.chunk_id: row for row, _ in [*lexical, *dense]}
    if how == "rrf":
        fused = reciprocal_rank_fusion([[r.chunk_id for r, _ in lexical], [r.chunk_id for r, _ in dense]], k=value)
    else:
        fused = weighted_fusion([(r.chunk_id, s) for r, s in lexical], [(r.chunk_id, s) for r, s in dense], value)
    return [(rows[i], s) for i, s in fused]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_beir_options(parser)
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None, help="Also write every row to this JSON file.")
    args = parser.parse_args()
    if args.split == "test":
        print("refusing to tune on the test split", file=sys.stderr)
        return 2

    base = Settings(home=args.home, models_dir=args.models_dir)
    own, report = build_beir_index(base, args.beir)
    print(f"index: {report.chunks_total} chunks ({report.chunks_embedded} embedded now)", file=sys.stderr)
    qrels = load_qrels(args.beir, args.split)
    queries = {qid: text for qid, text in load_queries(args.beir).items() if qid in qrels}
    searcher = Searcher(own)
    qids = sorted(queries)
    vectors = searcher.embedder.embed([queries[q] for q in qids])

    header_weights = [0.5, 1.0, 2.0, 4.0]
    dense: dict[str, Scored] = {}
    lexical: dict[float, dict[str, Scored]] = {w: {} for w in header_weights}
    started = time.perf_counter()
    for qid, vector in zip(qids, vectors, strict=True):
        dense[qid] = searcher.candidates(queries[qid], "dense", args.candidates, query_vector=vector).dense
        for weight in header_weights:
            searcher.settings.search.header_weight = weight
            lexical[weight][qid] = searcher.candidates(queries[qid], "lexical", args.candidates).lexical
    print(f"candidates for {len(qids)} queries in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    rows: list[dict[str, Any]] = []

    def record(name: str, params: dict[str, Any], run: dict[str, dict[str, float]]) -> None:
        scores = evaluate_run(run, qrels)
        rows.append(
            {
                "system": name,
                **params,
                **{k: round(scores[k], 4) for k in ("ndcg@10", "recall@10", "recall@100", "mrr@10")},
            }
        )

    for other in (0.0, 0.05, 0.1, 0.25):
        record("dense", {"other_chunks_weight": other}, {q: documents(dense[q], other) for q in qids})
        for weight in header_weights:
            record(
                "lexical",
                {"header_weight": weight, "other_chunks_weight": other},
                {q: documents(lexical[weight][q], other) for q in qids},
            )
    for weight, other in itertools.product(header_weights, (0.0, 0.05, 0.1)):
        for k in (5, 10, 20, 40, 60, 100):
            run = {q: documents(fuse_chunks(lexical[weight][q], dense[q], "rrf", k), other) for q in qids}
            record("hybrid-rrf", {"header_weight": weight, "rrf_k": k, "other_chunks_weight": other}, run)
        for w in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            run = {q: documents(fuse_chunks(lexical[weight][q], dense[q], "weighted", w), other) for q in qids}
            record("hybrid-weighted", {"header_weight": weight, "dense_weight": w, "other_chunks_weight": other}, run)

    # Document-level fusion: aggregate each retriever to documents first, then fuse the document lists.
    for weight in (1.0, 2.0):
        for w in (0.4, 0.5, 0.6):
            run = {}
            for q in qids:
                lex_docs = list(documents(lexical[weight][q], 0.0).items())
                dense_docs = list(documents(dense[q], 0.0).items())
                run[q] = dict(weighted_fusion(lex_docs, dense_docs, w)[:100])
            record("hybrid-weighted-doclevel", {"header_weight": weight, "dense_weight": w}, run)

    # z-score normalisation instead of min-max.
    def zfuse(lex: Scored, den: Scored, w: float) -> Scored:
        rows_by_id = {r.chunk_id: r for r, _ in [*lex, *den]}

        def z(scored: Scored) -> dict[str, float]:
            values = np.array([s for _, s in scored]) if scored else np.zeros(1)
            mean, std = float(values.mean()), float(values.std()) or 1.0
            return {r.chunk_id: (s - mean) / std for r, s in scored}

        zl, zd = z(lex), z(den)
        low_l = min(zl.values(), default=0.0)
        low_d = min(zd.values(), default=0.0)
        fused = {i: w * zd.get(i, low_d) + (1 - w) * zl.get(i, low_l) for i in rows_by_id}
        return [(rows_by_id[i], s) for i, s in sorted(fused.items(), key=lambda kv: -kv[1])]

    for weight in (1.0, 2.0):
        for w in (0.4, 0.5, 0.6):
            run = {q: documents(zfuse(lexical[weight][q], dense[q], w), 0.0) for q in qids}
            record("hybrid-weighted-zscore", {"header_weight": weight, "dense_weight": w}, run)

    # Dense pseudo-relevance feedback: q' = normalize(q + beta * mean of the top-m fused chunks' vectors).
    catalog = searcher.index.catalog
    for beta, m in ((0.5, 3), (1.0, 3), (0.5, 5), (1.0, 5)):
        prf_dense: dict[str, Scored] = {}
        for qid, vector in zip(qids, vectors, strict=True):
            first = fuse_chunks(lexical[1.0][qid], dense[qid], "weighted", 0.5)[:m]
            feedback = np.stack([v for _, v in catalog.embeddings([r.chunk_id for r, _ in first])]) if first else None
            new = vector + beta * feedback.mean(axis=0) if feedback is not None else vector
            new = new / np.linalg.norm(new)
            prf_dense[qid] = searcher.candidates(queries[qid], "dense", args.candidates, query_vector=new).dense
        record("dense-prf", {"beta": beta, "m": m}, {q: documents(prf_dense[q], 0.0) for q in qids})
        for w in (0.4, 0.5, 0.6):
            run = {q: documents(fuse_chunks(lexical[1.0][q], prf_dense[q], "weighted", w), 0.0) for q in qids}
            record("hybrid-weighted-prf", {"beta": beta, "m": m, "dense_weight": w, "header_weight": 1.0}, run)

    rows.sort(key=lambda r: -r["ndcg@10"])
    for row in rows:
        params = " ".join(
            f"{k}={v}" for k, v in row.items() if k not in ("system", "ndcg@10", "recall@10", "recall@100", "mrr@10")
        )
        print(
            f"{row['system']:<16} ndcg@10 {row['ndcg@10']:.4f}  R@10 {row['recall@10']:.4f}  "
            f"R@100 {row['recall@100']:.4f}  MRR@10 {row['mrr@10']:.4f}  {params}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
