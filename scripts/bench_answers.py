"""Answer benchmark: the appliance against a naive RAG pipeline, same model, same questions, one run.

Question sets (golden JSONL, see scripts/qa/README.md): the held-out runbook questions (index of
../shared/data/runbooks) and the demo-corpus questions (index of docs_corpus/).

appliance  the real pipeline: structure-aware chunks, hybrid retrieval with the evidence decision
           (refusal without the LLM), budgeted prompt, citation and grounding check.
naive      what a user would otherwise build: fixed 1,000-character chunks, hybrid top-4
           (rank-bm25 + exact dense cosine, RRF), a plain "answer from the context" prompt.

Reported per system: key-phrase hit rate (answer holds all key phrases; answerable questions),
the share of answerable questions whose gold file was in the context, refusal precision/recall
(unanswerable questions declined), grounded-answer rate, time to first token and total (median),
prompt tokens, and how much of the time to first token llama.cpp spent on prompt prefill by its
own timers versus everything else (our overhead: retrieval, prompt assembly, queueing).

Usage: python scripts/bench_answers.py [--limit N] [--sets runbooks,demo] [--json OUT] [--compare EARLIER]
--compare reads an earlier --json output and reports, per set, the questions whose answers gained or
lost their key phrases or changed refusal, and how many answers the model wrote word for word the same.
Settings of the appliance side: defaults and APPLIANCE_<SECTION>_<FIELD> variables, as for the CLI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.answerer import Answerer
from appliance.answer.generated.prompt import REFUSAL
from appliance.config import Settings, load_settings
from appliance.evaluate.runner import QAItem, load_qa
from appliance.ingest.pipeline import ingest
from appliance.models.generation import ChatMessage, Generator, load_generator
from appliance.models.registry import load_embedder
from appliance.retrieve.fusion import reciprocal_rank_fusion
from scripts.lib.paired import compare_runs

REPO = Path(__file__).resolve().parent.parent
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
TOKEN = re.compile(r"\w+")
NAIVE_PROMPT = "Answer the question using the context below.\n\nContext:\n{context}\n\nQuestion: {question}\nAnswer:"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def holds_all(answer: str, phrases: tuple[str, ...]) -> bool:
    text = " ".join(answer.lower().split())
    return all(" ".join(p.lower().split()) in text for p in phrases)


class NaivePipeline:
    """Fixed 1,000-character chunks, rank-bm25 + exact dense, RRF, top-4, plain prompt."""

    def __init__(self, roots: list[Path], settings: Settings, generator: Generator) -> None:
        from rank_bm25 import BM25Okapi

        self.generator = generator
        self.embedder = load_embedder(settings)
        self.chunks: list[tuple[str, str]] = []
        for root in roots:
            for path in sorted(root.rglob("*")):
                if path.suffix.lower() not in (".md", ".txt", ".html") or not path.is_file():
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
                display = f"{root.name}/{path.relative_to(root).as_posix()}"
                self.chunks += [(display, text[i : i + 1000]) for i in range(0, len(text), 1000)]
        self.bm25 = BM25Okapi([TOKEN.findall(t.lower()) for _, t in self.chunks])
        self.vectors = self.embedder.embed([t for _, t in self.chunks])

    def ask(self, question: str) -> dict[str, Any]:
        started = time.perf_counter()
        lexical = list(np.argsort(-self.bm25.get_scores(TOKEN.findall(question.lower())))[:50])
        dense = list(np.argsort(-(self.vectors @ self.embedder.embed_query(question)))[:50])
        top = [i for i, _ in reciprocal_rank_fusion([lexical, dense])[:4]]
        context = "\n\n".join(self.chunks[i][1] for i in top)
        messages = [ChatMessage("user", NAIVE_PROMPT.format(context=context, question=question))]
        first = None
        pieces = []
        with self.generator.stream(messages, max_tokens=384) as stream:
            for piece in stream:
                if first is None and piece.strip():
                    first = (time.perf_counter() - started) * 1000
                pieces.append(piece)
        stats = stream.stats
        return {
            "answer": "".join(pieces),
            "files": [self.chunks[i][0] for i in top],
            "context": context,
            "first_token_ms": first or 0.0,
            "total_ms": (time.perf_counter() - started) * 1000,
            "prompt_tokens": stats.prompt_tokens if stats else None,
            "prefill_ms": stats.prefill_ms if stats else None,
            "prompt_eval_tokens": stats.prompt_eval_tokens if stats else None,
            "completion_tokens": stats.completion_tokens if stats else None,
        }


def median_of(rows: list[dict[str, Any]], key: str) -> int | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values)) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    answered = [r for r in rows if not r["refused"]]
    generated = [r for r in rows if r.get("first_token_ms")]

    def share(items: list[dict[str, Any]], key: str) -> float | None:
        return round(sum(1 for r in items if r.get(key)) / len(items), 3) if items else None

    prefill = [r["prefill_ms"] for r in generated if r.get("prefill_ms")]
    first = [r["first_token_ms"] for r in generated]
    overhead = [r["first_token_ms"] - r["prefill_ms"] for r in generated if r.get("prefill_ms")]
    return {
        "questions": len(rows),
        "keyphrase_hit_rate": share(answerable, "hit"),
        # The answer with the sources' own lines quoted under it (answer/quotes.py): what the operator reads.
        "keyphrase_hit_rate_with_quotes": share(answerable, "hit_with_quotes"),
        "words_with_quotes_median": median_of([r for r in answered if "words_with_quotes" in r], "words_with_quotes"),
        "gold_file_in_context": share(answerable, "gold_in_context"),
        "keyphrases_in_context": share(answerable, "phrases_in_context"),
        "answerable_refused": share(answerable, "refused"),
        "unanswerable_declined": share(unanswerable, "refused"),
        "refusal_precision": round(
            sum(1 for r in rows if r["refused"] and not r["answerable"]) / max(1, sum(1 for r in rows if r["refused"])),
            3,
        ),
        "grounded_answer_rate": share([r for r in answered if "grounded" in r], "grounded"),
        "first_token_ms_median": round(statistics.median(first)) if first else None,
        "total_ms_median": round(statistics.median([r["total_ms"] for r in generated])) if generated else None,
        "prompt_tokens_median": round(
            statistics.median([r["prompt_tokens"] for r in generated if r.get("prompt_tokens")])
        )
        if generated
        else None,
        "prompt_eval_tokens_median": median_of(generated, "prompt_eval_tokens"),
        "completion_tokens_median": median_of(generated, "completion_tokens"),
        "prefill_ms_median": round(statistics.median(prefill)) if prefill else None,
        "overhead_share_of_first_token": round(
            statistics.median(o / f for o, f in zip(overhead, first, strict=False)), 3
        )
        if overhead
        else None,
    }


def run_set(
    name: str,
    items: list[QAItem],
    answerer: Answerer,
    naive: NaivePipeline | None,
    naive_limit: int = 0,
    partial: Path | None = None,
) -> dict[str, Any]:
    """Both pipelines on every item; with `partial`, the rows so far are written there after each question
    (a run stopped midway still leaves them)."""
    ours: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    for item in items:
        pieces: list[str] = []
        for event in answerer.events(item.question):
            if event.kind == "token" and event.text:
                pieces.append(event.text)
            elif event.kind == "done" and event.result is not None:
                result = event.result
        context_files = {e.path for e in result.evidence if e.n is not None}
        shown = " ".join([result.answer, *(q.text for q in result.quotes)])
        context_text = "\n".join(e.text for e in result.evidence if e.n is not None)
        ours.append(
            {
                "id": item.id,
                "answerable": item.answerable,
                "refused": result.refused,
                "hit": item.answerable and not result.refused and holds_all(result.answer, item.answer_keyphrases),
                "hit_with_quotes": item.answerable and not result.refused and holds_all(shown, item.answer_keyphrases),
                "words_with_quotes": len(shown.split()),
                "quotes": [{"n": q.n, "why": q.why, "text": q.text} for q in result.quotes],
                "corrected_citations": len(result.corrected_citations),
                "gold_in_context": bool(context_files & set(item.gold_files)),
                # Separates a retrieval miss from a generation miss: could the answer have held them?
                "phrases_in_context": item.answerable and holds_all(context_text, item.answer_keyphrases),
                "grounded": result.grounded,
                "first_token_ms": result.timings_ms.get("first_token"),
                "total_ms": result.timings_ms["total"],
                "prompt_tokens": result.generation.get("prompt_tokens"),
                "prefill_ms": result.generation.get("prefill_ms"),
                "prompt_eval_tokens": result.generation.get("prompt_eval_tokens"),
                "completion_tokens": result.generation.get("completion_tokens"),
                "question": item.question,
                "answer": result.answer,
                "generated": "".join(pieces),  # the model's text, also when the answer became a refusal
                "missing": [p for p in item.answer_keyphrases if not holds_all(result.answer, (p,))],
                "refusal_reason": result.refusal_reason,
                "context_files": sorted(context_files),
                "unsupported": result.unsupported,
                # What the model was given, without copying it: scripts/support_labels.py rebuilds the sources
                # and refuses a label whose sources changed since.
                "sources": [
                    {"n": e.n, "path": e.path, "chunk_ids": e.chunk_ids, "sha256": _sha(e.text)}
                    for e in result.evidence
                    if e.n is not None
                ],
            }
        )
        if naive is not None and (not naive_limit or len(theirs) < naive_limit):
            answer = naive.ask(item.question)
            refused = REFUSAL.lower() in answer["answer"].lower() or bool(
                re.search(r"(context|documents?) (does|do) not (contain|mention|provide|cover)", answer["answer"], re.I)
            )
            theirs.append(
                {
                    "id": item.id,
                    "answerable": item.answerable,
                    "refused": refused,
                    "hit": item.answerable and holds_all(answer["answer"], item.answer_keyphrases),
                    "gold_in_context": bool(set(answer["files"]) & set(item.gold_files)),
                    "phrases_in_context": item.answerable and holds_all(answer["context"], item.answer_keyphrases),
                    "answer": answer["answer"],
                    "first_token_ms": answer["first_token_ms"],
                    "total_ms": answer["total_ms"],
                    "prompt_tokens": answer["prompt_tokens"],
                    "prefill_ms": answer["prefill_ms"],
                    "prompt_eval_tokens": answer["prompt_eval_tokens"],
                    "completion_tokens": answer["completion_tokens"],
                }
            )
        print(
            f"{name} {item.id}: ours refused={ours[-1]['refused']} hit={ours[-1]['hit']}"
            + (f" | naive hit={theirs[-1]['hit']}" if theirs and theirs[-1]["id"] == item.id else ""),
            file=sys.stderr,
            flush=True,
        )
        if partial is not None:
            partial.write_text(json.dumps({name: {"partial": True, "rows": ours, "naive_rows": theirs}}, indent=1))
    report = {"appliance": summarize(ours), "naive": summarize(theirs) if theirs else None, "rows": ours}
    if theirs and len(theirs) < len(ours):
        # The naive pipeline answered only the first questions: the appliance on those same ones, side by side.
        report["appliance_on_naive_questions"] = summarize(ours[: len(theirs)])
    report["naive_rows"] = theirs
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--sets", default="runbooks,demo")
    parser.add_argument("--limit", type=int, default=0, help="Questions per set (0 = all).")
    parser.add_argument("--ids", default="", help="Only these question ids (comma-separated), after --limit.")
    parser.add_argument("--no-naive", action="store_true", help="Skip the naive pipeline (halves the run time).")
    parser.add_argument("--naive-limit", type=int, default=0, help="Ask the naive pipeline the first N only.")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--runbooks-set",
        choices=["heldout", "tune", "sampled"],
        default="heldout",
        help="tune: the questions to tune on; sampled: the set written from random passages (never tune on it).",
    )
    parser.add_argument(
        "--compare", type=Path, default=None, help="An earlier --json output: report what moved, question by question."
    )
    args = parser.parse_args()
    earlier = json.loads(args.compare.read_text()) if args.compare else {}
    results: dict[str, Any] = {}
    for name in args.sets.split(","):
        roots, qa = (
            (
                sorted(p for p in RUNBOOKS.iterdir() if p.is_dir()),
                REPO / f"scripts/qa/runbooks_{args.runbooks_set}.jsonl",
            )
            if name == "runbooks"
            else ([REPO / "docs_corpus"], REPO / "scripts/qa/demo_corpus.jsonl")
        )
        # APPLIANCE_* variables apply as they do for the CLI (e.g. APPLIANCE_ANSWER_WINDOW_CHUNKS=3).
        environ = {**os.environ, "APPLIANCE_HOME": str(args.home / name), "APPLIANCE_MODELS_DIR": str(args.models_dir)}
        environ.pop("APPLIANCE_CONFIG", None)
        settings = load_settings(environ)
        ingest(settings, roots)
        generator = load_generator(settings)
        answerer = Answerer(settings, generator=generator)
        # The naive pipeline gets its own llama.cpp context of the same model, as a separate program would:
        # interleaved questions then do not evict each other's cached system-prompt prefix.
        naive = None if args.no_naive else NaivePipeline(roots, settings, load_generator(settings))
        every = load_qa(qa)
        # The first --limit questions plus any --ids, in file order; all of them when neither is given.
        wanted = {item.id for item in every[: args.limit]} if args.limit else set()
        wanted |= set(args.ids.split(",")) if args.ids else set()
        items = [item for item in every if item.id in wanted] if wanted else every
        partial = args.json.with_suffix(".partial.json") if args.json else None
        results[name] = run_set(name, items, answerer, naive, args.naive_limit, partial)
        answerer.close()
        if naive is not None:
            naive.generator.close()
        if args.json:  # after each set: a long run that is stopped still leaves its figures
            args.json.write_text(json.dumps(results, indent=1))
    report = {name: {k: v for k, v in r.items() if not k.endswith("rows")} for name, r in results.items()}
    for name, result in results.items():
        if name in earlier:
            report[name]["compared_with_earlier"] = compare_runs(earlier[name]["rows"], result["rows"]).as_json()
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
