"""Does hybrid fusion hold on collections nobody tuned it on? And what would a bigger embedder buy?

Collections (scripts/retrieval_views.py): SciFact train (the fusion weight was fitted there: the only
tuned one), the runbook golden sets tune / held-out / sampled over the real runbooks index, the demo
set over docs_corpus/, and MTRAG-UN's ibmcloud and clapnq passage pools (last-turn questions).

For every query the lexical top-100 (the appliance's FTS5 bm25, words + identifiers) and the dense
top-100 (exact cosine over every chunk's embedding: the index's stored all-MiniLM-L6-v2 vectors, or
the chunks re-embedded by another embedder) are taken once; each fusion rule of
scripts/fusion_candidates.py then ranks chunks, documents are ranked by their best chunk, and nDCG@10,
Recall@10 and Recall@100 are computed with the trec_eval-exact metrics of appliance/evaluate. Per
collection, `short_lexical_lists` counts the queries whose lexical list is shorter than the dense list:
the only ones the short-list normalization of appliance/retrieve/fusion.py scores differently, and
`lexical_top_z` the median z-score of the best hit over its full lexical lists (the reference length of
scripts/fusion_candidates.py's padded-to rule comes from the tune collections' figures).

`--timing` measures the embedders' cost per chunk instead: the same runbook chunks, every embedder in
turn, several interleaved rounds in one process (run it under the heavy lock).

Usage: python scripts/bench_fusion.py [--embedders minilm,mpnet,nomic] [--collections ...] [--json OUT]
       python scripts/bench_fusion.py --timing [--embedders minilm,mpnet,nomic]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.config import Settings, load_settings
from appliance.evaluate.beir_index import build_beir_index
from appliance.evaluate.metrics import evaluate_run
from appliance.index.catalog import Catalog
from appliance.ingest.pipeline import ingest
from appliance.models.registry import embedder_path
from appliance.retrieve.aggregate import aggregate_documents
from appliance.retrieve.lexical import lexical_search
from scripts.lib.report import finish, save_report

sys.path.insert(0, str(Path(__file__).resolve().parent))
import extra_embedders
from fusion_candidates import METHODS
from retrieval_views import REPO, SHARED, Judged, beir_judged, qa_judged, write_mtrag_view

DEPTH = 100
UNTUNED_NOTE = "SciFact train is where the fusion weight was fitted; every other collection is untuned."


@dataclass
class Corpus:
    """One index's chunks: ids, their documents, what the embedder reads, the stored default vectors."""

    key: str
    catalog: Catalog
    settings: Settings
    rowid_to_index: dict[int, int]
    documents: list[str]
    texts: list[str]
    stored: np.ndarray


def open_corpus(key: str, settings: Settings) -> Corpus:
    catalog = Catalog(settings.catalog_path)
    rows = catalog.conn.execute(
        "SELECT c.rowid, d.path, c.header, c.text, c.embedding FROM chunks c JOIN documents d ON d.id = c.document_id "
        "ORDER BY c.rowid"
    ).fetchall()
    stored = np.vstack([np.frombuffer(blob, dtype=np.float32) for *_, blob in rows])
    return Corpus(
        key,
        catalog,
        settings,
        {rowid: i for i, (rowid, *_) in enumerate(rows)},
        [path for _, path, *_ in rows],
        [f"{header}\n{text}" for _, _, header, text, _ in rows],
        stored,
    )


def settings_at(home: Path, models_dir: Path) -> Settings:
    environ = {**os.environ, "APPLIANCE_HOME": str(home), "APPLIANCE_MODELS_DIR": str(models_dir)}
    environ.pop("APPLIANCE_CONFIG", None)
    return load_settings(environ)


def corpora_and_sets(args: argparse.Namespace, wanted: set[str]) -> list[tuple[Corpus, Judged]]:
    out: list[tuple[Corpus, Judged]] = []
    qa = REPO / "scripts" / "qa"
    runbook_sets = [s for s in ("tune", "heldout", "sampled") if f"runbooks-{s}" in wanted]
    if runbook_sets:
        settings = settings_at(args.home / "runbooks", args.models_dir)
        ingest(settings, sorted(p for p in (SHARED / "runbooks").iterdir() if p.is_dir()))
        corpus = open_corpus("runbooks", settings)
        out += [(corpus, qa_judged(f"runbooks-{s}", qa / f"runbooks_{s}.jsonl")) for s in runbook_sets]
    if "demo" in wanted:
        settings = settings_at(args.home / "demo", args.models_dir)
        ingest(settings, [REPO / "docs_corpus"])
        out.append((open_corpus("demo", settings), qa_judged("demo", qa / "demo_corpus.jsonl")))
    base = settings_at(args.beir_home, args.models_dir)
    if "scifact-train" in wanted:
        own, _ = build_beir_index(base, SHARED / "scifact")
        out.append((open_corpus("scifact", own), beir_judged("scifact-train", SHARED / "scifact", "train")))
    for collection in ("ibmcloud", "clapnq"):
        if f"mtrag-{collection}" in wanted:
            folder = write_mtrag_view(collection, args.views / f"mtrag-{collection}")
            own, _ = build_beir_index(base, folder)
            out.append((open_corpus(f"mtrag-{collection}", own), beir_judged(f"mtrag-{collection}", folder, "test")))
    return out


def document_vectors(corpus: Corpus, name: str, model: Any, cache: Path) -> np.ndarray:
    if name == "minilm":
        return corpus.stored
    path = cache / f"{corpus.key}-{name}-{len(corpus.texts)}.npy"
    if path.is_file():
        return np.load(path)
    started = time.perf_counter()
    vectors = np.vstack([model.embed_documents(corpus.texts[i : i + 64]) for i in range(0, len(corpus.texts), 64)])
    print(
        f"  {corpus.key}: {len(corpus.texts)} chunks embedded by {name} in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def candidates(
    corpus: Corpus, judged: Judged, model: Any, vectors: np.ndarray
) -> dict[str, tuple[list[tuple[int, float]], list[tuple[int, float]]]]:
    search = corpus.settings.search
    found = {}
    for qid, text in judged.queries.items():
        hits = lexical_search(
            corpus.catalog.fulltext,
            text,
            DEPTH,
            header_weight=search.header_weight,
            identifier_weight=search.identifier_weight,
        )
        lexical = [(corpus.rowid_to_index[h.rowid], h.score) for h in hits if h.rowid in corpus.rowid_to_index]
        similarities = vectors @ model.embed_query(text)
        top = np.argsort(-similarities)[:DEPTH]
        found[qid] = (lexical, [(int(i), float(similarities[i])) for i in top])
    return found


def score_methods(corpus: Corpus, judged: Judged, found: dict[str, Any]) -> dict[str, dict[str, float]]:
    scores: dict[str, dict[str, float]] = {}
    for method, fuse in METHODS.items():
        run: dict[str, dict[str, float]] = {}
        for qid, (lexical, dense) in found.items():
            fused = fuse(lexical, dense)
            documents = aggregate_documents(fused, lambda i: corpus.documents[i])
            run[qid] = {doc: score for doc, score, _ in documents[:DEPTH]}
        result = evaluate_run(run, judged.qrels)
        scores[method] = {m: round(result[m], 4) for m in ("ndcg@10", "recall@10", "recall@100")}
    return scores


def lexical_top_z(found: dict[str, Any]) -> float | None:
    """The median z-score of the best hit over the full (DEPTH-long) lexical lists: how far a best stands out."""
    tops = []
    for lexical, _ in found.values():
        scores = [score for _, score in lexical]
        if len(scores) == DEPTH and statistics.pstdev(scores) > 0:
            tops.append((scores[0] - statistics.fmean(scores)) / statistics.pstdev(scores))
    return round(statistics.median(tops), 2) if tops else None


def verdicts(table: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Per method: on how many untuned collections it reaches the better single retriever's nDCG@10."""
    out: dict[str, Any] = {}
    untuned = [c for c in table if c != "scifact-train"]
    for method in METHODS:
        if method in ("lexical", "dense"):
            continue
        below = [
            c
            for c in untuned
            if table[c][method]["ndcg@10"] < max(table[c]["lexical"]["ndcg@10"], table[c]["dense"]["ndcg@10"])
        ]
        out[method] = {
            "at_least_best_single_on": f"{len(untuned) - len(below)}/{len(untuned)}",
            "below_best_single_on": below,
            "mean_ndcg@10_untuned": round(statistics.fmean(table[c][method]["ndcg@10"] for c in untuned), 4)
            if untuned
            else None,
            "scifact_train_ndcg@10": table.get("scifact-train", {}).get(method, {}).get("ndcg@10"),
        }
    return out


def timing(args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    settings = settings_at(args.home / "runbooks", args.models_dir)
    corpus = open_corpus("runbooks", settings)
    sample = corpus.texts[:: max(1, len(corpus.texts) // args.timing_chunks)][: args.timing_chunks]
    models = {name: extra_embedders.load(name, embedder_path(settings)) for name in names}
    for model in models.values():
        model.embed_documents(sample[:4])  # warm-up: loading is not per-chunk cost
    per_chunk: dict[str, list[float]] = {name: [] for name in names}
    query_ms: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(args.timing_rounds):
        for name, model in models.items():  # interleaved: a busy machine slows every side alike
            started = time.perf_counter()
            model.embed_documents(sample)
            per_chunk[name].append((time.perf_counter() - started) * 1000 / len(sample))
            started = time.perf_counter()
            for text in sample[:16]:
                # Each round asks new texts: the Embedder keeps recent query vectors, a repeat costs nothing.
                model.embed_query(f"{round_number} {text[:200]}")
            query_ms[name].append((time.perf_counter() - started) * 1000 / 16)
    base = statistics.median(per_chunk[names[0]])
    return {
        "chunks": len(sample),
        "rounds": args.timing_rounds,
        "threads": os.cpu_count(),
        "ms_per_chunk_median": {n: round(statistics.median(v), 2) for n, v in per_chunk.items()},
        "ms_per_query_median": {n: round(statistics.median(v), 2) for n, v in query_ms.items()},
        f"ratio_to_{names[0]}": {n: round(statistics.median(v) / base, 2) for n, v in per_chunk.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--beir-home", type=Path, default=REPO / ".appliance" / "bench-fusion")
    parser.add_argument("--views", type=Path, default=Path(tempfile.gettempdir()) / "appliance-views")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--cache", type=Path, default=extra_embedders.CACHE / "vectors")
    parser.add_argument("--embedders", default="minilm")
    parser.add_argument(
        "--collections",
        default="scifact-train,runbooks-tune,runbooks-heldout,runbooks-sampled,demo,mtrag-ibmcloud,mtrag-clapnq",
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--timing-chunks", type=int, default=96)
    parser.add_argument("--timing-rounds", type=int, default=3)
    args = parser.parse_args()
    names = args.embedders.split(",")
    if args.timing:
        report: dict[str, Any] = {"timing": timing(args, names)}
    else:
        pairs = corpora_and_sets(args, set(args.collections.split(",")))
        default_path = embedder_path(pairs[0][0].settings)
        report = {"note": UNTUNED_NOTE, "queries": {j.name: len(j.queries) for _, j in pairs}, "embedders": {}}
        for name in names:
            model = extra_embedders.load(name, default_path)
            table: dict[str, dict[str, dict[str, float]]] = {}
            short: dict[str, int] = {}
            top_z: dict[str, float | None] = {}
            for corpus, judged in pairs:
                vectors = document_vectors(corpus, name, model, args.cache)
                found = candidates(corpus, judged, model, vectors)
                table[judged.name] = score_methods(corpus, judged, found)
                short[judged.name] = sum(len(lexical) < len(dense) for lexical, dense in found.values())
                top_z[judged.name] = lexical_top_z(found)
                print(
                    f"{name} {judged.name}: "
                    + ", ".join(f"{m} {s['ndcg@10']:.3f}" for m, s in table[judged.name].items()),
                    file=sys.stderr,
                    flush=True,
                )
            report["embedders"][name] = {
                "ndcg_recall": table,
                "verdicts": verdicts(table),
                "short_lexical_lists": short,
                "lexical_top_z": top_z,
            }
            save_report(report, args.json)  # after each embedder: a stopped run keeps its figures
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
