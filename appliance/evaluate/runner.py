"""`appliance eval beir` and `appliance eval qa`: measure retrieval on the user's own judgments."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance.config import Settings
from appliance.errors import ApplianceError
from appliance.evaluate.beir import load_qrels, load_queries
from appliance.evaluate.beir_index import build_beir_index
from appliance.evaluate.errors import DataFileError
from appliance.evaluate.metrics import evaluate_run, percentile
from appliance.evaluate.modes import EvalMode
from appliance.evaluate.trec import write_run
from appliance.retrieve.aggregate import aggregate_documents
from appliance.retrieve.modes import Mode
from appliance.retrieve.rerank import find_reranker
from appliance.retrieve.search import Searcher


def _latency_summary(per_stage: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        stage: {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}
        for stage, values in sorted(per_stage.items())
        if values
    }


def _check_reranker(settings: Settings, mode: EvalMode) -> None:
    if mode == "rerank" and find_reranker(settings) is None:
        why = (
            "the setting rerank.model is 'none'"
            if settings.rerank.model == "none"
            else "none is installed; see `appliance models list`"
        )
        raise ApplianceError(f"--mode rerank needs a reranker in the model store ({why})")


def _searcher_for(settings: Settings, mode: EvalMode) -> tuple[Searcher, Mode]:
    """Rerank mode needs an installed reranker; the other modes never rerank, so they stay comparable."""
    if mode == "rerank":
        _check_reranker(settings, mode)
        return Searcher(settings), "hybrid"
    plain = settings.model_copy(update={"rerank": settings.rerank.model_copy(update={"model": "none"})})
    return Searcher(plain), mode


def eval_beir(
    settings: Settings,
    folder: Path,
    *,
    split: str = "test",
    mode: EvalMode = "hybrid",
    run_out: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    qrels = load_qrels(folder, split)
    queries = load_queries(folder)
    missing = sorted(set(qrels) - set(queries))
    if missing:
        raise DataFileError(
            folder / "queries.jsonl", None, f"{len(missing)} judged queries have no text, e.g. {missing[0]}"
        )
    _check_reranker(settings, mode)  # fail fast, before indexing
    if progress:
        progress("indexing the corpus (reused when unchanged)")
    own, report = build_beir_index(settings, folder)
    searcher, search_mode = _searcher_for(own, mode)
    run: dict[str, list[tuple[str, float]]] = {}
    per_stage: dict[str, list[float]] = {}
    try:
        searcher.embedder.embed_query("warm-up")  # loading the model is not query latency
        if progress:
            progress(f"running {len(qrels)} queries")
        for qid in sorted(qrels):
            started = time.perf_counter()
            ranking, timings = searcher.search_documents(queries[qid], k=100, mode=search_mode)
            timings["total"] = (time.perf_counter() - started) * 1000.0
            run[qid] = ranking
            for stage, ms in timings.items():
                per_stage.setdefault(stage, []).append(ms)
    finally:
        searcher.close()
    scores = evaluate_run({qid: dict(ranking) for qid, ranking in run.items()}, qrels)
    if run_out is not None:
        write_run(run_out, run, tag=f"appliance-{mode}", depth=100)
    return {
        "dataset": str(folder),
        "split": split,
        "mode": mode,
        "ndcg@10": round(scores["ndcg@10"], 4),
        "recall@10": round(scores["recall@10"], 4),
        "recall@100": round(scores["recall@100"], 4),
        "mrr@10": round(scores["mrr@10"], 4),
        "queries": scores["queries"],
        "latency_ms": _latency_summary(per_stage),
        "index": {"chunks": report.chunks_total, "chunks_embedded_now": report.chunks_embedded},
    }


@dataclass(frozen=True)
class QAItem:
    question: str
    gold_files: tuple[str, ...]
    answer_keyphrases: tuple[str, ...]
    answerable: bool
    id: str


def load_qa(path: Path) -> list[QAItem]:
    items: list[QAItem] = []
    if not path.is_file():
        raise DataFileError(path, None, "no such file")
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFileError(path, lineno, f"not valid JSON ({exc.msg})") from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str) or not obj["question"].strip():
            raise DataFileError(path, lineno, "each line needs a non-empty string field 'question'")
        answerable = obj.get("answerable", True)
        if not isinstance(answerable, bool):
            raise DataFileError(path, lineno, "'answerable' must be true or false")
        gold = obj.get("gold_files", [])
        phrases = obj.get("answer_keyphrases", [])
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise DataFileError(path, lineno, "'gold_files' must be a list of paths")
        if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
            raise DataFileError(path, lineno, "'answer_keyphrases' must be a list of strings")
        if answerable and not gold:
            raise DataFileError(path, lineno, "an answerable question needs at least one gold file")
        items.append(QAItem(obj["question"], tuple(gold), tuple(phrases), answerable, str(obj.get("id", lineno))))
    if not items:
        raise DataFileError(path, None, "no questions in the file")
    return items


def _ratio(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


def eval_qa(settings: Settings, path: Path) -> dict[str, Any]:
    """Gold-file recall and MRR of the document ranking, and the evidence decision's refusals."""
    items = load_qa(path)
    searcher = Searcher(settings)
    hits_at = {1: 0, 5: 0, 10: 0}
    reciprocal_ranks: list[float] = []
    refused_unanswerable = refused_answerable = unanswerable = 0
    per_question: list[dict[str, Any]] = []
    latencies: list[float] = []
    try:
        searcher.embedder.embed_query("warm-up")
        for item in items:
            started = time.perf_counter()
            result = searcher.search(item.question, k=searcher.settings.search.candidates)
            latencies.append((time.perf_counter() - started) * 1000.0)
            refused = not result.evidence.sufficient
            documents = aggregate_documents(
                [(hit, hit.score) for hit in result.hits],
                lambda hit: hit.path,
                other_chunks_weight=settings.search.other_chunks_weight,
            )
            docs = [doc for doc, _, _ in documents[:10]]
            rank = next((i for i, doc in enumerate(docs, start=1) if doc in item.gold_files), None)
            if item.answerable:
                for k in hits_at:
                    hits_at[k] += 1 if rank is not None and rank <= k else 0
                reciprocal_ranks.append(1.0 / rank if rank else 0.0)
                refused_answerable += refused
            else:
                unanswerable += 1
                refused_unanswerable += refused
            per_question.append(
                {
                    "id": item.id,
                    "answerable": item.answerable,
                    "gold_rank": rank,
                    "refused": refused,
                    "evidence": result.evidence.as_json(),
                }
            )
    finally:
        searcher.close()
    answerable = len(items) - unanswerable
    refused_total = refused_unanswerable + refused_answerable
    return {
        "file": str(path),
        "questions": len(items),
        "answerable": answerable,
        "unanswerable": unanswerable,
        "gold_recall@1": _ratio(hits_at[1], answerable),
        "gold_recall@5": _ratio(hits_at[5], answerable),
        "gold_recall@10": _ratio(hits_at[10], answerable),
        "mrr@10": round(sum(reciprocal_ranks) / len(reciprocal_ranks), 4) if reciprocal_ranks else None,
        "refusal_precision": _ratio(refused_unanswerable, refused_total),
        "refusal_recall": _ratio(refused_unanswerable, unanswerable),
        "false_refusal_rate": _ratio(refused_answerable, answerable),
        "keyphrase_hit_rate": None,  # needs generated answers (`appliance ask`)
        "latency_ms": {"p50": round(percentile(latencies, 50), 2), "p95": round(percentile(latencies, 95), 2)},
        "per_question": per_question,
    }
