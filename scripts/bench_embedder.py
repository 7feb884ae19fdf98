"""Embedder runtimes: quality gates and speed of each backend against sentence-transformers on torch.

For each backend (torch first, the reference): a fresh index of ../shared/data/runbooks (`ingest`) and
of SciFact (`eval beir`), then
  * cosine of every runbook chunk's vector to the torch vector of the same text (gate: min >= 0.99);
  * SciFact train nDCG@10, hybrid (gate: within 0.005 of torch);
  * runbook tune questions' gold-file recall@1/@5/@10 and refusal rates (`eval qa`; gate: within 0.005);
  * ingest seconds of each index (the throughput side; scripts/bench_ingest.py is the interleaved one).
Two question sets written by different methods: SciFact's claims (experts) and the runbook questions
(hand-written for this project).

Usage: python scripts/bench_embedder.py [--backends torch,auto,onnx-int8] [--json OUT]
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.config import load_settings
from appliance.evaluate.beir_index import eval_settings
from appliance.evaluate.runner import eval_beir, eval_qa
from appliance.index.index import Index
from appliance.ingest.pipeline import ingest
from appliance.models.embedder_backends import resolve_backend
from scripts.lib.report import finish

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
GATE_COSINE = 0.99
GATE_METRIC = 0.005


def stored_vectors(settings: Any) -> dict[str, np.ndarray]:
    """text sha256 → the vector the catalog holds for it."""
    index = Index(settings)
    try:
        rows = index.catalog.conn.execute("SELECT text_sha256, embedding FROM chunks").fetchall()
    finally:
        index.close()
    return {sha: np.frombuffer(blob, dtype=np.float32) for sha, blob in rows if blob is not None}


def run_backend(backend: str, work: Path, models_dir: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    environ = {
        **os.environ,
        "APPLIANCE_HOME": str(work / backend),
        "APPLIANCE_MODELS_DIR": str(models_dir),
        "APPLIANCE_EMBEDDER_BACKEND": backend,
    }
    environ.pop("APPLIANCE_CONFIG", None)
    settings = load_settings(environ)
    sources = sorted(p for p in (SHARED / "runbooks").iterdir() if p.is_dir())
    started = time.perf_counter()
    report = ingest(settings, sources)
    ingest_s = time.perf_counter() - started
    qa = eval_qa(settings, REPO / "scripts" / "qa" / "runbooks_tune.jsonl")
    started = time.perf_counter()
    beir = eval_beir(settings, SHARED / "scifact", split="train", mode="hybrid")
    beir_s = time.perf_counter() - started
    result = {
        "backend": backend,
        "runbooks_ingest_s": round(ingest_s, 1),
        "runbooks_chunks": report.chunks_total,
        "scifact_index_and_eval_s": round(beir_s, 1),
        "scifact_train_ndcg@10": beir["ndcg@10"],
        "scifact_train_recall@100": beir["recall@100"],
        "scifact_query_ms_p50": beir["latency_ms"].get("total", {}).get("p50"),
        "runbooks_tune": {k: qa[k] for k in qa if k.startswith(("gold_", "refusal_", "mrr"))},
    }
    vectors = stored_vectors(settings)
    vectors.update({f"scifact:{k}": v for k, v in stored_vectors(eval_settings(settings, SHARED / "scifact")).items()})
    return result, vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument(
        "--backends",
        default="torch,auto,onnx-int8",
        help="Backends to compare with torch (auto: the one the appliance picks for this CPU, by its name).",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    # "auto" by the name it resolves to, so the default backend's gates are the ones checked.
    backends = list(dict.fromkeys(resolve_backend(b) if b == "auto" else b for b in args.backends.split(",")))
    if backends[0] != "torch":
        backends = ["torch", *(b for b in backends if b != "torch")]
    work = Path(tempfile.mkdtemp(prefix="bench-embedder-"))
    results: list[dict[str, Any]] = []
    try:
        reference: dict[str, np.ndarray] = {}
        for backend in backends:
            result, vectors = run_backend(backend, work, args.models_dir)
            if backend == "torch":
                reference = vectors
            else:
                shared = sorted(set(reference) & set(vectors))
                runbook = [k for k in shared if not k.startswith("scifact:")]
                cosines = np.array([float(reference[k] @ vectors[k]) for k in runbook])
                result["runbook_chunks_compared"] = len(runbook)
                result["cosine_to_torch"] = {
                    "min": round(float(cosines.min()), 4),
                    "p1": round(float(np.percentile(cosines, 1)), 4),
                    "mean": round(float(cosines.mean()), 5),
                }
                torch_result = results[0]
                result["delta_ndcg@10"] = round(
                    result["scifact_train_ndcg@10"] - torch_result["scifact_train_ndcg@10"], 4
                )
                result["delta_gold_recall"] = {
                    k: round((result["runbooks_tune"][k] or 0) - (torch_result["runbooks_tune"][k] or 0), 4)
                    for k in result["runbooks_tune"]
                    if k.startswith("gold_recall")
                }
                result["gates_pass"] = bool(
                    result["cosine_to_torch"]["min"] >= GATE_COSINE
                    and abs(result["delta_ndcg@10"]) <= GATE_METRIC
                    and all(abs(v) <= GATE_METRIC for v in result["delta_gold_recall"].values())
                )
            results.append(result)
            print(json.dumps(result), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"results": results, "load_average": os.getloadavg()}
    for result in results:
        line = (
            f"{result['backend']:10}  runbooks ingest {result['runbooks_ingest_s']:7.1f} s, SciFact train nDCG@10 "
            f"{result['scifact_train_ndcg@10']:.4f}, runbook tune gold recall@5 "
            f"{result['runbooks_tune']['gold_recall@5']}"
        )
        if "cosine_to_torch" in result:
            line += (
                f"; cosine to torch min {result['cosine_to_torch']['min']} (gate {GATE_COSINE}), "
                f"ΔnDCG {result['delta_ndcg@10']:+.4f}, gates {'pass' if result['gates_pass'] else 'FAIL'}"
            )
        print(line)
    return finish(report, args.json, indent=2)


if __name__ == "__main__":
    sys.exit(main())
