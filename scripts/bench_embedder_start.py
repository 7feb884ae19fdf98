"""Which embedder runtime `auto` should pick on this CPU: start, batch and query side by side.

Every admin command, ingest, server and reindex is a fresh process that loads the embedder, so a
runtime is judged by what such a process pays, not by batch throughput alone. For each backend this
CPU runs (torch, torch-bf16 where it computes bfloat16 natively, onnx, onnx-int8), in a fresh
interpreter each, twice in alternating order (a drift in machine load hits every backend):
  * start: the interpreter's first line to the first query vector (imports + model load + one text),
    plus the interpreter's own start measured from the parent;
  * batch: chunks/s over the real chunk texts of docs_corpus and one runbook source (the loaders and
    chunker of the pipeline, `bench_ingest.chunk_texts`), the configured threads;
  * query: p50 of 40 single-text embeddings, one thread (how a search embeds its question);
  * cosine of every batch vector to torch's vector of the same text (torch is the reference).
It prints what `auto` resolves to here and the ratios to torch-bf16 and torch.

Usage: python scripts/bench_embedder_start.py [--runbook-source openshift-runbooks] [--json OUT]
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()  # before any heavy import: the child's start is measured from here

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run as a script: make `scripts` importable

QUESTIONS = [
    "How do I change a chlorine ton container?",
    "disk is almost full on the gitaly node",
    "what is the free chlorine residual target leaving the plant",
    "KubePodCrashLooping firing in openshift-monitoring",
]


def child(backend: str, texts_file: Path, vectors_out: Path) -> dict[str, Any]:
    """One fresh process: load, first query, batch, queries."""
    import appliance  # noqa: F401  (offline environment first)
    from appliance.models.embedder import Embedder

    embedder = Embedder(REPO / "models" / "embedder" / "all-MiniLM-L6-v2", backend=backend)
    embedder.embed([QUESTIONS[0]])
    start_s = time.perf_counter() - STARTED
    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    began = time.perf_counter()
    vectors = embedder.embed(texts)
    batch_s = time.perf_counter() - began
    import numpy as np

    np.save(vectors_out, vectors)
    query_ms = []
    for round_ in range(10):
        for question in QUESTIONS:
            began = time.perf_counter()
            embedder.embed([f"{question} {round_}"])  # a new text each time: no cache
            query_ms.append((time.perf_counter() - began) * 1000)
    return {
        "start_s": round(start_s, 3),
        "chunks_per_s": round(len(texts) / batch_s, 1),
        "query_ms_p50": round(statistics.median(query_ms), 2),
    }


def backends_here() -> list[str]:
    from appliance.models.embedder_backends import native_bf16

    return ["torch", *(["torch-bf16"] if native_bf16() else []), "onnx", "onnx-int8"]


def run_child(backend: str, texts_file: Path, vectors_out: Path) -> dict[str, Any]:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", backend, "--texts", str(texts_file), "--vectors", str(vectors_out)],
        check=True,
        capture_output=True,
        text=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process_s"] = round(time.perf_counter() - began, 2)  # the whole child, interpreter start included
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runbook-source", default="openshift-runbooks")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.texts, args.vectors)))
        return 0

    import numpy as np

    from appliance.config import load_settings
    from appliance.models.embedder_backends import cpu_flags, resolve_backend
    from scripts.bench_ingest import chunk_texts
    from scripts.lib.report import finish

    settings = load_settings({**os.environ, "APPLIANCE_MODELS_DIR": str(REPO / "models")})
    sources = [REPO / "docs_corpus", REPO.parent / "shared" / "data" / "runbooks" / args.runbook_source]
    texts = chunk_texts(settings, sources)
    backends = backends_here()
    with tempfile.TemporaryDirectory(prefix="bench-embedder-start-") as work:
        texts_file = Path(work) / "texts.json"
        texts_file.write_text(json.dumps(texts), encoding="utf-8")
        runs: dict[str, list[dict[str, Any]]] = {backend: [] for backend in backends}
        for order in (backends, backends[::-1]):
            for backend in order:
                figures = run_child(backend, texts_file, Path(work) / f"{backend}.npy")
                runs[backend].append(figures)
                print(backend, figures, flush=True)
        reference = np.load(Path(work) / "torch.npy")
        results: dict[str, Any] = {}
        for backend in backends:
            cosine = np.sum(np.load(Path(work) / f"{backend}.npy") * reference, axis=1)
            results[backend] = {
                key: round(statistics.mean(run[key] for run in runs[backend]), 3)
                for key in ("start_s", "process_s", "chunks_per_s", "query_ms_p50")
            } | {"runs": runs[backend], "cosine_to_torch_min": round(float(cosine.min()), 5)}
    auto = resolve_backend("auto", "cpu", REPO / "models" / "embedder" / "all-MiniLM-L6-v2")
    ratios = {
        f"{backend}_vs_{baseline}": {
            "process_s": round(results[baseline]["process_s"] / results[backend]["process_s"], 2),
            "chunks_per_s": round(results[backend]["chunks_per_s"] / results[baseline]["chunks_per_s"], 2),
            "query_ms_p50": round(results[baseline]["query_ms_p50"] / results[backend]["query_ms_p50"], 2),
        }
        for backend in backends
        for baseline in ("torch", "torch-bf16")
        if baseline in results and backend != baseline
    }
    report = {
        "texts": len(texts),
        "sources": [str(source.relative_to(REPO.parent)) for source in sources],
        "cpu_bf16_flags": sorted(cpu_flags() & {"amx_bf16", "amx_tile", "avx512_bf16"}),
        "auto_resolves_to": auto,
        "results": results,
        "speed_up_over_baseline": ratios,
        "load_average": os.getloadavg(),
    }
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
