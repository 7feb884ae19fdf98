"""What the shape of the prompt puts in front of the model: more documents against longer windows, same budget.

For every answerable question of the runbook sets (tune, held-out, sampled) and the demo set, the prompt is
built as the answerer builds it (search → windows → token budget with the generator's tokenizer; no
generation) under several shapes: how many retrieved chunks are candidates (k), how many following chunks
each brings (w), whether the best chunk of each of the first d documents is taken first (diversity), and how
the budget is spent: in rank order, each chunk with its window (today), or every retrieved chunk first and
the windows with what is left (`retrieved first`: each window whole in rank order; `round robin`: every
chunk's first follower, then the second).
Reported side by side: the share of prompts holding the gold file and every key phrase, the median number
of distinct documents, and the median prompt tokens. Retrieval only: about a minute.

Usage: python scripts/bench_prompt_shapes.py [--json OUT]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.generated.prompt import Following, Placement, Source, build_prompt
from appliance.evaluate.runner import load_qa
from appliance.index.records import ChunkRow
from appliance.retrieve.search import Searcher
from scripts.lib.report import finish

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_perturbations import SETS
from bench_prompt_fusion import indexed_corpus, prompt_coverage

REPO = Path(__file__).resolve().parent.parent
# name: (candidates k, followers w, documents taken first d, placing); the first is today's default.
SHAPES = {
    "k6 w2 (default)": (6, 2, 0, "rank"),
    "k6 w1": (6, 1, 0, "rank"),
    "k8 w1": (8, 1, 0, "rank"),
    "k4 w3": (4, 3, 0, "rank"),
    "k3 w3": (3, 3, 0, "rank"),
    "k6 w2 3 documents first": (6, 2, 3, "rank"),
    "k10 w2 3 documents first": (10, 2, 3, "rank"),
    "k10 w2 4 documents first": (10, 2, 4, "rank"),
    "k10 w1 4 documents first": (10, 1, 4, "rank"),
    "k10 w1 5 documents first": (10, 1, 5, "rank"),
    "k6 w2 retrieved first": (6, 2, 0, "retrieved first"),
    "k6 w2 round robin": (6, 2, 0, "round robin"),
    "k8 w2 round robin": (8, 2, 0, "round robin"),
    "k8 w2 4 documents first, round robin": (8, 2, 4, "round robin"),
}


def documents_first(chunks: Sequence[ChunkRow], documents: int) -> list[ChunkRow]:
    """The best chunk of each of the first `documents` documents, then the rest in rank order."""
    first: list[ChunkRow] = []
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.path not in seen and len(seen) < documents:
            seen.add(chunk.path)
            first.append(chunk)
    return first + [chunk for chunk in chunks if chunk not in first]


def retrieved_first(
    question: str,
    candidates: Sequence[ChunkRow],
    *,
    count_tokens: Callable[[str], int],
    budget_tokens: int,
    following: Following,
    window_chunks: int,
    round_robin: bool,
) -> tuple[list[Source], int]:
    """The retrieved chunks first, in rank order until one does not fit; then their windows with what is left
    (each chunk's whole window in rank order, or round robin: every chunk's first neighbour, then the second)."""
    placement = Placement(question, count_tokens, budget_tokens)
    placed: list[ChunkRow] = []
    for rank, chunk in enumerate(candidates):  # search hits are distinct chunks
        if not placement.take((rank, chunk)):
            break
        placed.append(chunk)

    def grow(neighbour: ChunkRow) -> bool:
        return neighbour.chunk_id in placement.included or placement.take((-1, neighbour))

    windows = {chunk.chunk_id: list(following(chunk, window_chunks)) for chunk in placed}
    if round_robin:
        growing = [chunk.chunk_id for chunk in placed]
        for step in range(window_chunks):
            for chunk_id in list(growing):
                neighbours = windows[chunk_id]
                if step >= len(neighbours) or not grow(neighbours[step]):
                    growing.remove(chunk_id)
    else:
        for chunk in placed:
            for neighbour in windows[chunk.chunk_id]:
                if not grow(neighbour):
                    break
    sources = placement.sources()
    return sources, placement.tokens(sources)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    for corpus in ("runbooks", "demo"):
        settings, generator, budget = indexed_corpus(corpus, args.home, args.models_dir)
        searcher = Searcher(settings)
        following = searcher.index.catalog.following_chunks
        for name, (set_corpus, path) in SETS.items():
            if set_corpus != corpus:
                continue
            items = [item for item in load_qa(path) if item.answerable]
            retrieved = {}
            for item in items:
                found = searcher.search(item.question, k=max(k for k, _, _, _ in SHAPES.values()))
                rows = searcher.index.catalog.chunks_by_ids([hit.chunk_id for hit in found.hits])
                retrieved[item.id] = [rows[hit.chunk_id] for hit in found.hits]
            for shape, (k, w, d, placing) in SHAPES.items():
                shown: list[list[Source]] = []
                documents: list[int] = []
                tokens: list[int] = []
                for item in items:
                    chunks = retrieved[item.id][:k]
                    candidates = documents_first(chunks, d) if d else chunks
                    if placing == "rank":
                        prompt = build_prompt(
                            item.question,
                            candidates,
                            count_tokens=generator.count_tokens,
                            budget_tokens=budget,
                            max_sources=k,
                            following=following,
                            window_chunks=w,
                        )
                        sources, used = prompt.sources, prompt.prompt_tokens
                    else:
                        sources, used = retrieved_first(
                            item.question,
                            candidates,
                            count_tokens=generator.count_tokens,
                            budget_tokens=budget,
                            following=following,
                            window_chunks=w,
                            round_robin=placing == "round robin",
                        )
                    shown.append(list(sources))
                    documents.append(len({s.chunk.path for s in sources}))
                    tokens.append(used)
                report.setdefault(name, {})[shape] = {
                    **prompt_coverage(items, shown),
                    "documents_median": statistics.median(documents),
                    "prompt_tokens_median": statistics.median(tokens),
                }
                print(f"{name} {shape}: {report[name][shape]}", file=sys.stderr, flush=True)
        searcher.close()
        generator.close()
    return finish(report, args.json)


if __name__ == "__main__":
    sys.exit(main())
