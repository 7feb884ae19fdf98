"""Ranking metrics computed exactly as trec_eval (and so pytrec_eval and BEIR) computes them.

Conventions, all taken from trec_eval unless noted:

* Ranking order. A ranking is scored by sorting its ``(docid, score)`` pairs by score descending and, among equal
  scores, by docid descending (trec_eval's ``comp_sim_docno`` compares ``strcmp(b, a)``). The order in which the pairs
  are given never matters. Python compares ``str`` by code point, which is the same order as ``strcmp`` on their UTF-8
  bytes, so the tie-break agrees for any text id.
* Gains. nDCG uses linear gains: the gain of a document is its relevance grade (not ``2**grade - 1``). Unjudged
  documents and grades <= 0 give gain 0. The discount of rank ``r`` (1-based) is ``log2(r + 1)``. The ideal DCG sorts
  the query's positive grades descending and cuts them at ``k`` like the ranking.
* Relevant means grade > 0 (pytrec_eval's default ``relevance_level`` of 1), for recall, precision and MRR.
* ``precision@k`` divides by ``k`` even when fewer than ``k`` documents were retrieved (trec_eval's ``P_k``).
* Averages (``evaluate_run``): the qrels define the query set. A query whose qrels hold no relevant document is left
  out of the averages (BEIR's datasets have none; pytrec_eval would score it 0). A query that has relevant documents
  but no run at all counts as 0 for every metric (trec_eval ``-c``); pytrec_eval alone would skip it, which flatters
  a system that fails on hard queries.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Ranking = Iterable[tuple[str, float]]
QueryQrels = Mapping[str, int]


def rank_documents(ranking: Ranking) -> list[tuple[str, float]]:
    """Sort ``(docid, score)`` pairs into trec_eval's order: score descending, then docid descending.

    Raises ``ValueError`` for a NaN score (no order) or a docid given twice (trec_eval rejects duplicates too).
    """
    pairs = [(docid, float(score)) for docid, score in ranking]
    _check_pairs(pairs)
    # Two stable sorts: the secondary key first, then the primary one keeps equal scores in docid-descending order.
    by_docid = sorted(pairs, key=lambda pair: pair[0], reverse=True)
    return sorted(by_docid, key=lambda pair: pair[1], reverse=True)


def _check_pairs(pairs: Sequence[tuple[str, float]]) -> None:
    seen: set[str] = set()
    for docid, score in pairs:
        if math.isnan(score):
            raise ValueError(f"document {docid!r} has a NaN score")
        if docid in seen:
            raise ValueError(f"document {docid!r} appears twice in one ranking")
        seen.add(docid)


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def _top_ids(ranking: Ranking, k: int) -> list[str]:
    _check_k(k)
    return [docid for docid, _ in rank_documents(ranking)[:k]]


def _num_relevant(qrels: QueryQrels) -> int:
    return sum(1 for grade in qrels.values() if grade > 0)


def _dcg(gains: Iterable[float]) -> float:
    # Summed in rank order, as trec_eval does, so results agree to the last bit or close to it.
    return sum(gain / math.log2(index + 2) for index, gain in enumerate(gains))


def _ndcg(top: Sequence[str], qrels: QueryQrels, k: int) -> float:
    ideal = _dcg(sorted((grade for grade in qrels.values() if grade > 0), reverse=True)[:k])
    if ideal == 0.0:
        return 0.0
    return _dcg(max(qrels.get(docid, 0), 0) for docid in top[:k]) / ideal


def _relevant_retrieved(top: Sequence[str], qrels: QueryQrels, k: int) -> int:
    return sum(1 for docid in top[:k] if qrels.get(docid, 0) > 0)


def _recall(top: Sequence[str], qrels: QueryQrels, k: int) -> float:
    total = _num_relevant(qrels)
    return _relevant_retrieved(top, qrels, k) / total if total else 0.0


def _precision(top: Sequence[str], qrels: QueryQrels, k: int) -> float:
    return _relevant_retrieved(top, qrels, k) / k


def _mrr(top: Sequence[str], qrels: QueryQrels, k: int) -> float:
    for rank, docid in enumerate(top[:k], start=1):
        if qrels.get(docid, 0) > 0:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranking: Ranking, qrels: QueryQrels, k: int = 10) -> float:
    """nDCG@k with linear gains (trec_eval ``ndcg_cut.k``); 0.0 when the query has no relevant document."""
    return _ndcg(_top_ids(ranking, k), qrels, k)


def recall_at_k(ranking: Ranking, qrels: QueryQrels, k: int = 10) -> float:
    """Relevant documents in the top k over all relevant documents (trec_eval ``recall.k``)."""
    return _recall(_top_ids(ranking, k), qrels, k)


def precision_at_k(ranking: Ranking, qrels: QueryQrels, k: int = 10) -> float:
    """Relevant documents in the top k over k (trec_eval ``P.k``)."""
    return _precision(_top_ids(ranking, k), qrels, k)


def mrr_at_k(ranking: Ranking, qrels: QueryQrels, k: int = 10) -> float:
    """Reciprocal rank of the first relevant document within the top k, else 0.0."""
    return _mrr(_top_ids(ranking, k), qrels, k)


def query_metrics(ranking: Ranking, qrels: QueryQrels, ks: Iterable[int] = (10, 100)) -> dict[str, float]:
    """Every metric at every k for one query, ranking once: ``ndcg@k``, ``recall@k``, ``precision@k``, ``mrr@k``."""
    cutoffs = _cutoffs(ks)
    top = _top_ids(ranking, max(cutoffs))
    values: dict[str, float] = {}
    for k in cutoffs:
        values[f"ndcg@{k}"] = _ndcg(top, qrels, k)
        values[f"recall@{k}"] = _recall(top, qrels, k)
        values[f"precision@{k}"] = _precision(top, qrels, k)
        values[f"mrr@{k}"] = _mrr(top, qrels, k)
    return values


def _cutoffs(ks: Iterable[int]) -> list[int]:
    cutoffs = sorted(set(ks))
    if not cutoffs:
        raise ValueError("at least one cutoff k is needed")
    for k in cutoffs:
        _check_k(k)
    return cutoffs


def evaluate_run(
    run: Mapping[str, Mapping[str, float]],
    qrels: Mapping[str, Mapping[str, int]],
    ks: Iterable[int] = (10, 100),
) -> dict[str, Any]:
    """Score a whole run against qrels and average over queries.

    Returns the mean of every metric of ``query_metrics`` (``ndcg@10``, ``recall@10``, ``recall@100``, ``mrr@10``,
    ... for each k in ``ks``), ``queries`` (how many queries were averaged) and ``per_query`` (``{qid: {metric:
    value}}``). Queries without a relevant document are left out; queries missing from the run count as zeros; run
    queries absent from the qrels are ignored. Raises ``ValueError`` when no query has a relevant document.
    """
    cutoffs = _cutoffs(ks)
    per_query: dict[str, dict[str, float]] = {}
    for qid, judged in qrels.items():
        if _num_relevant(judged) == 0:
            continue  # nothing to find: every metric would be 0 or undefined
        per_query[qid] = query_metrics(run.get(qid, {}).items(), judged, cutoffs)
    if not per_query:
        raise ValueError("the qrels hold no query with a relevant document")
    result: dict[str, Any] = _means(per_query)
    result["queries"] = len(per_query)
    result["per_query"] = per_query
    return result


def _means(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    names = next(iter(per_query.values())).keys()
    count = len(per_query)
    return {name: math.fsum(values[name] for values in per_query.values()) / count for name in names}


def percentile(values: Iterable[float], p: float) -> float:
    """The p-th percentile (0 <= p <= 100) with linear interpolation, equal to numpy's default ``percentile``."""
    data = sorted(float(value) for value in values)
    if not data:
        raise ValueError("percentile of no values")
    if any(math.isnan(value) for value in data):
        raise ValueError("percentile of values containing NaN")
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile must be within [0, 100], got {p}")
    position = (len(data) - 1) * (p / 100.0)  # numpy scales p first; the other order differs in the last bit
    lower = math.floor(position)
    upper = min(lower + 1, len(data) - 1)
    return _lerp(data[lower], data[upper], position - lower)


def _lerp(a: float, b: float, t: float) -> float:
    # numpy's formula: interpolate from the nearer end, which keeps the result within [a, b] despite rounding.
    if t >= 0.5:
        return b - (b - a) * (1.0 - t)
    return a + (b - a) * t
