"""Evaluation library: metrics as trec_eval computes them, BEIR loaders and TREC run files.

Every expected value is worked out by hand and written as the arithmetic that produces it: gain / log2(rank + 1),
linear gains, the ideal ranking cut at k, and trec_eval's tie-break (equal scores rank by docid descending).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from math import isclose, log2
from pathlib import Path

import pytest

from appliance.errors import ApplianceError
from appliance.evaluate.beir import BeirDoc, load_corpus, load_qrels, load_queries
from appliance.evaluate.errors import DataFileError, SplitNotFound
from appliance.evaluate.metrics import (
    evaluate_run,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    precision_at_k,
    query_metrics,
    rank_documents,
    recall_at_k,
)
from appliance.evaluate.trec import read_run, write_run

# --- nDCG ---------------------------------------------------------------------------------------------------------


def test_graded_ndcg_uses_linear_gains_and_a_log2_discount() -> None:
    qrels = {"a": 2, "b": 1, "c": 0}
    # ranks: c (judged 0), a (2), x (unjudged), b (1)
    ranking = [("c", 3.0), ("a", 2.0), ("x", 1.5), ("b", 1.0)]
    dcg = 0 / log2(2) + 2 / log2(3) + 0 / log2(4) + 1 / log2(5)
    idcg = 2 / log2(2) + 1 / log2(3)
    assert isclose(ndcg_at_k(ranking, qrels, k=10), dcg / idcg)
    # the exponential-gain variant (2**rel - 1) would give another number: linear it is
    exponential = (3 / log2(3) + 1 / log2(5)) / (3 / log2(2) + 1 / log2(3))
    assert not isclose(ndcg_at_k(ranking, qrels, k=10), exponential)


def test_binary_ndcg() -> None:
    qrels = {"a": 1, "b": 1, "c": 1}
    ranking = [("a", 0.9), ("x", 0.8), ("b", 0.7)]
    expected = (1 / log2(2) + 1 / log2(4)) / (1 / log2(2) + 1 / log2(3) + 1 / log2(4))
    assert isclose(ndcg_at_k(ranking, qrels, k=10), expected)


def test_the_order_the_pairs_are_given_in_does_not_matter() -> None:
    qrels = {"a": 2, "b": 1}
    ranking = [("b", 0.1), ("x", 0.5), ("a", 0.9)]
    expected = (2 / log2(2) + 0 / log2(3) + 1 / log2(4)) / (2 / log2(2) + 1 / log2(3))
    assert isclose(ndcg_at_k(ranking, qrels), expected)
    assert ndcg_at_k(list(reversed(ranking)), qrels) == ndcg_at_k(ranking, qrels)


def test_the_ideal_ranking_is_cut_at_k_too() -> None:
    qrels = {"a": 1, "b": 1, "c": 1}
    ranking = [("a", 2.0), ("b", 1.0)]
    dcg = 1 / log2(2) + 1 / log2(3)
    assert ndcg_at_k(ranking, qrels, k=2) == dcg / (1 / log2(2) + 1 / log2(3))  # ideal: two of the three
    assert isclose(ndcg_at_k(ranking, qrels, k=3), dcg / (1 / log2(2) + 1 / log2(3) + 1 / log2(4)))


def test_a_relevant_document_beyond_k_does_not_count() -> None:
    qrels = {"a": 1}
    # ten unjudged documents scored above "a", which lands at rank 11
    ranking = [(f"x{i}", 10.0 + i) for i in range(10)] + [("a", 1.0)]
    assert ndcg_at_k(ranking, qrels, k=10) == 0.0
    assert recall_at_k(ranking, qrels, k=10) == 0.0
    assert mrr_at_k(ranking, qrels, k=10) == 0.0
    assert isclose(ndcg_at_k(ranking, qrels, k=11), (1 / log2(12)) / (1 / log2(2)))
    assert recall_at_k(ranking, qrels, k=100) == 1 / 1
    assert mrr_at_k(ranking, qrels, k=11) == 1 / 11


def test_no_relevant_document_retrieved_scores_zero() -> None:
    qrels = {"a": 1, "b": 2, "n": 0}
    ranking = [("n", 0.9), ("x", 0.8)]
    assert ndcg_at_k(ranking, qrels) == 0.0
    assert recall_at_k(ranking, qrels) == 0.0
    assert mrr_at_k(ranking, qrels) == 0.0
    assert precision_at_k(ranking, qrels) == 0.0
    assert ndcg_at_k([], qrels) == 0.0


# --- ties ---------------------------------------------------------------------------------------------------------


def test_equal_scores_rank_by_docid_descending_as_trec_eval_does() -> None:
    pairs = [("d1", 0.5), ("d3", 0.5), ("top", 0.9), ("d2", 0.5), ("z", 0.1)]
    assert [docid for docid, _ in rank_documents(pairs)] == ["top", "d3", "d2", "d1", "z"]
    # ids are strings, compared as strings: "9" > "10" (SciFact's numeric ids are strings too)
    assert [docid for docid, _ in rank_documents([("10", 1.0), ("9", 1.0)])] == ["9", "10"]


def test_the_tie_break_changes_the_scores() -> None:
    qrels = {"a": 1}
    ranking = [("a", 1.0), ("b", 1.0)]  # "b" > "a", so "b" takes rank 1 and "a" rank 2
    assert isclose(ndcg_at_k(ranking, qrels, k=10), (1 / log2(3)) / (1 / log2(2)))
    assert ndcg_at_k(ranking, qrels, k=1) == 0.0
    assert mrr_at_k(ranking, qrels, k=10) == 1 / 2
    assert precision_at_k(ranking, qrels, k=1) == 0 / 1
    # with docid ascending (or input order) "a" would be first and every one of these would be 1.0
    assert ndcg_at_k([("a", 1.0 + 1e-9), ("b", 1.0)], qrels, k=1) == 1.0


# --- recall, MRR, precision ---------------------------------------------------------------------------------------


def test_recall_counts_relevant_documents_in_the_top_k_over_all_relevant() -> None:
    qrels = {"a": 1, "b": 2, "c": 1, "d": 0}  # relevant: a, b, c (grade > 0); d is judged non-relevant
    ranking = [("d", 5.0), ("x", 4.0), ("b", 3.0), ("y", 2.0), ("a", 1.0)]
    assert recall_at_k(ranking, qrels, k=2) == 0 / 3
    assert recall_at_k(ranking, qrels, k=3) == 1 / 3
    assert recall_at_k(ranking, qrels, k=5) == 2 / 3
    assert precision_at_k(ranking, qrels, k=5) == 2 / 5
    assert precision_at_k(ranking, qrels, k=10) == 2 / 10  # trec_eval divides by k, not by the number retrieved


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_within_k() -> None:
    qrels = {"a": 1, "b": 2, "d": 0}
    ranking = [("d", 5.0), ("x", 4.0), ("b", 3.0), ("a", 1.0)]
    assert mrr_at_k(ranking, qrels, k=2) == 0.0
    assert mrr_at_k(ranking, qrels, k=3) == 1 / 3
    assert mrr_at_k(ranking, qrels, k=10) == 1 / 3


def test_query_metrics_names_every_metric_at_every_k() -> None:
    values = query_metrics([("a", 1.0)], {"a": 1}, ks=(1, 5))
    assert values == {
        "ndcg@1": 1.0, "recall@1": 1.0, "precision@1": 1 / 1, "mrr@1": 1.0,
        "ndcg@5": 1.0, "recall@5": 1.0, "precision@5": 1 / 5, "mrr@5": 1.0,
    }  # fmt: skip


def test_bad_rankings_and_cutoffs_are_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        ndcg_at_k([("a", 1.0), ("a", 0.5)], {"a": 1})
    with pytest.raises(ValueError, match="NaN"):
        ndcg_at_k([("a", float("nan"))], {"a": 1})
    with pytest.raises(ValueError, match="k must be"):
        recall_at_k([("a", 1.0)], {"a": 1}, k=0)


# --- whole runs ---------------------------------------------------------------------------------------------------


def test_evaluate_run_averages_over_the_queries_the_qrels_define() -> None:
    qrels = {
        "q1": {"a": 1},
        "q2": {"b": 1, "c": 2},
        "q3": {"d": 0},  # no relevant document: left out of the averages
        "q4": {"e": 1},  # not in the run at all: counts as zero
    }
    run = {
        "q1": {"a": 0.9, "z": 0.5},
        "q2": {"c": 0.3, "b": 0.7, "y": 0.9},  # ranked y, b, c
        "q3": {"d": 1.0},
        "q9": {"a": 1.0},  # not in the qrels: ignored
    }
    result = evaluate_run(run, qrels, ks=(10, 100))

    q2_ndcg = (0 / log2(2) + 1 / log2(3) + 2 / log2(4)) / (2 / log2(2) + 1 / log2(3))
    assert result["queries"] == 3
    assert set(result["per_query"]) == {"q1", "q2", "q4"}
    assert isclose(result["per_query"]["q2"]["ndcg@10"], q2_ndcg)
    assert result["per_query"]["q2"]["mrr@10"] == 1 / 2
    assert all(value == 0.0 for value in result["per_query"]["q4"].values())
    assert isclose(result["ndcg@10"], (1 + q2_ndcg + 0) / 3)
    assert isclose(result["recall@10"], (1 + 1 + 0) / 3)
    assert isclose(result["recall@100"], (1 + 1 + 0) / 3)
    assert isclose(result["mrr@10"], (1 + 1 / 2 + 0) / 3)


def test_evaluate_run_needs_a_query_with_something_to_find() -> None:
    with pytest.raises(ValueError, match="no query with a relevant document"):
        evaluate_run({"q": {"a": 1.0}}, {"q": {"a": 0}})


# --- percentile ---------------------------------------------------------------------------------------------------


def test_percentile_interpolates_linearly_like_numpy() -> None:
    values = [50.0, 15.0, 40.0, 20.0, 35.0]  # sorted: 15 20 35 40 50
    assert percentile(values, 50) == 35.0  # position (5 - 1) * 0.50 = 2
    assert isclose(percentile(values, 95), 40.0 + (50.0 - 40.0) * 0.8)  # position (5 - 1) * 0.95 = 3.8
    assert isclose(percentile(values, 10), 15.0 + (20.0 - 15.0) * 0.4)  # position (5 - 1) * 0.10 = 0.4
    assert percentile(values, 0) == 15.0
    assert percentile(values, 100) == 50.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == (2.0 + 3.0) / 2
    assert percentile([7.0], 95) == 7.0


def test_percentile_refuses_nonsense() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)
    with pytest.raises(ValueError):
        percentile([1.0, float("nan")], 50)


# --- BEIR folders -------------------------------------------------------------------------------------------------


def _jsonl(*objects: object) -> str:
    return "".join(json.dumps(obj) + "\n" for obj in objects)


@pytest.fixture
def beir_dir(tmp_path: Path) -> Path:
    (tmp_path / "corpus.jsonl").write_text(
        _jsonl(
            {"_id": 4983, "title": "Microstructural development", "text": "Alterations of the brain.", "metadata": {}},
            {"_id": "d2", "text": "No title here.", "metadata": {"url": "x"}},
        )
        + "\n"  # a trailing blank line is fine
    )
    (tmp_path / "queries.jsonl").write_text(_jsonl({"_id": 1, "text": "first query"}, {"_id": "2", "text": "second"}))
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t4983\t1\n2\td2\t2\n1\td2\t0\n")
    (tmp_path / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n2\t4983\t1\n")
    return tmp_path


def test_load_corpus_streams_documents_with_string_ids(beir_dir: Path) -> None:
    docs = load_corpus(beir_dir)
    assert iter(docs) is docs  # an iterator, not a list
    assert list(docs) == [
        BeirDoc(doc_id="4983", title="Microstructural development", text="Alterations of the brain.", metadata={}),
        BeirDoc(doc_id="d2", title="", text="No title here.", metadata={"url": "x"}),
    ]


def test_load_queries_and_qrels(beir_dir: Path) -> None:
    assert load_queries(beir_dir) == {"1": "first query", "2": "second"}
    assert load_qrels(beir_dir, "test") == {"1": {"4983": 1, "d2": 0}, "2": {"d2": 2}}
    assert load_qrels(beir_dir, "train") == {"2": {"4983": 1}}


def test_qrels_without_a_header_keep_their_first_judgment(beir_dir: Path) -> None:
    (beir_dir / "qrels" / "dev.tsv").write_text("7\t4983\t1\n")
    assert load_qrels(beir_dir, "dev") == {"7": {"4983": 1}}


def test_a_missing_file_is_named_when_the_loader_is_called(beir_dir: Path) -> None:
    (beir_dir / "corpus.jsonl").unlink()
    with pytest.raises(DataFileError, match=r"corpus\.jsonl: file not found"):
        load_corpus(beir_dir)  # not deferred to the first next()
    (beir_dir / "queries.jsonl").unlink()
    with pytest.raises(DataFileError, match=r"queries\.jsonl: file not found"):
        load_queries(beir_dir)


def test_a_missing_split_lists_the_splits_that_exist(beir_dir: Path) -> None:
    with pytest.raises(SplitNotFound, match=r"'dev' \(splits present: test, train\)") as caught:
        load_qrels(beir_dir, "dev")
    assert caught.value.available == ["test", "train"]
    assert isinstance(caught.value, ApplianceError)


_LOADERS: dict[str, Callable[[Path], object]] = {
    "corpus.jsonl": lambda folder: list(load_corpus(folder)),
    "queries.jsonl": load_queries,
    "qrels/test.tsv": lambda folder: load_qrels(folder, "test"),
}


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("corpus.jsonl", '{"_id": "a", "text": "ok"}\n{"_id": "b", "text": \n', r"corpus\.jsonl:2: bad JSON"),
        ("corpus.jsonl", '{"title": "t", "text": "no id"}\n', r"corpus\.jsonl:1: missing _id"),
        ("corpus.jsonl", '{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', r"corpus\.jsonl:2: duplicate _id"),
        ("corpus.jsonl", '["_id", "a"]\n', r"corpus\.jsonl:1: expected a JSON object"),
        ("queries.jsonl", '{"_id": "1", "text": "q"}\n\n{"text": "q"}\n', r"queries\.jsonl:3: missing _id"),
        ("queries.jsonl", '{"_id": "1"}\n', r"queries\.jsonl:1: missing text"),
        ("queries.jsonl", '{"_id": true, "text": "q"}\n', r"queries\.jsonl:1: _id must be"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\n1\t4983\t1\n2\td2\n", r"test\.tsv:3: expected 3 .*found 2"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\n1\t4983\t1.5\n", r"test\.tsv:2: score '1\.5' is not an"),
        ("qrels/test.tsv", "1\t4983\t1\n1\t4983\t2\n", r"test\.tsv:2: 1/4983 judged again"),
    ],
)
def test_bad_input_names_the_file_and_line(beir_dir: Path, name: str, content: str, expected: str) -> None:
    (beir_dir / name).write_text(content)
    with pytest.raises(DataFileError, match=expected) as caught:
        _LOADERS[name](beir_dir)
    assert isinstance(caught.value, ApplianceError)
    assert caught.value.path == beir_dir / name


# --- TREC run files -----------------------------------------------------------------------------------------------


def test_write_run_writes_standard_lines_in_trec_eval_order(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    run: dict[str, list[tuple[str, float]] | dict[str, float]] = {
        "q2": [("d1", 0.5), ("d2", 1.25)],
        "q1": {"b": 1.0, "a": 1.0, "c": 2.0},  # b and a tie: b first; depth 2 drops a
    }
    write_run(path, run, tag="bm25", depth=2)
    assert path.read_text().splitlines() == [
        "q1 Q0 c 1 2.0 bm25",
        "q1 Q0 b 2 1.0 bm25",
        "q2 Q0 d2 1 1.25 bm25",
        "q2 Q0 d1 2 0.5 bm25",
    ]
    assert not list(tmp_path.glob("*.tmp"))


def test_a_run_reads_back_to_the_same_scores_and_ranking(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    scores = {"q1": {"a": 0.1 + 0.2, "b": 1 / 3, "c": 1e-7, "d": 1 / 3}, "10": {"x": -2.5}}
    write_run(path, {qid: list(docs.items()) for qid, docs in scores.items()}, tag="dense")
    assert read_run(path) == scores  # exact floats: repr round-trips
    assert rank_documents(read_run(path)["q1"].items()) == rank_documents(scores["q1"].items())


def test_write_run_refuses_ids_that_would_break_the_columns(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="document id"):
        write_run(tmp_path / "run", {"q": [("a b", 1.0)]}, tag="t")
    with pytest.raises(ValueError, match="tag"):
        write_run(tmp_path / "run", {"q": [("a", 1.0)]}, tag="my run")
    with pytest.raises(ValueError, match="depth"):
        write_run(tmp_path / "run", {"q": [("a", 1.0)]}, tag="t", depth=0)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("q Q0 a 1 0.5 t\nq Q0 b 2 0.4\n", r"run:2: expected 6 columns"),
        ("q Q0 a 1 high t\n", r"run:1: score 'high' is not a number"),
        ("q Q0 a one 0.5 t\n", r"run:1: rank 'one'"),
        ("q Q0 a 1 0.5 t\nq Q0 a 2 0.4 t\n", r"run:2: document 'a' listed twice"),
    ],
)
def test_read_run_names_the_bad_line(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "run").write_text(content)
    with pytest.raises(DataFileError, match=expected):
        read_run(tmp_path / "run")


def test_read_run_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="file not found"):
        read_run(tmp_path / "absent.trec")
