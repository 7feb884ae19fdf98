"""`appliance eval beir` and `appliance eval qa`: metrics on a tiny BEIR folder and a tiny golden QA
file, TREC run files, index reuse, and every bad input named by file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from appliance.config import Settings
from appliance.evaluate.trec import read_run
from appliance.ingest.pipeline import ingest

# Each query's words occur in its relevant documents only, so lexical retrieval must rank them first.
DOCS = [
    ("seal", "Pump seal replacement", "Replace the mechanical seal when it weeps more than ten drops a minute."),
    ("chlorine", "Chlorine residual", "Raise the hypochlorite dose when the free chlorine residual falls low."),
    ("chlorine-lab", "Laboratory samples", "Confirm a low chlorine residual with a grab sample in the laboratory."),
    ("backwash", "Filter backwash", "Backwash filter F-3 when turbidity or head loss climbs."),
    ("valves", "Valve exercising", "Exercise every isolation valve once a year and record its turns."),
    ("sump", "Sump float switch", "Test the sump float switch monthly by lifting the float by hand."),
    ("generator", "Standby generator", "Run the standby generator under a load bank for one hour each month."),
    ("fluoride", "Fluoride feed", "Refill the fluoride saturator and check the feed rate against the flow."),
]
QUERIES = {
    "q-gen": "standby generator load bank",
    "q-fluoride": "fluoride saturator",
    "q-chlorine": "chlorine residual hypochlorite dose",
    "q-backwash": "backwash turbidity",
}
QRELS = [
    ("q-gen", "generator", 2),
    ("q-fluoride", "fluoride", 1),
    ("q-chlorine", "chlorine", 2),
    ("q-chlorine", "chlorine-lab", 1),
    ("q-backwash", "backwash", 1),
]
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture
def beir_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tinybeir"
    (folder / "qrels").mkdir(parents=True)
    _jsonl(folder / "corpus.jsonl", [{"_id": i, "title": title, "text": text} for i, title, text in DOCS])
    _jsonl(folder / "queries.jsonl", [{"_id": qid, "text": text} for qid, text in QUERIES.items()])
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in QRELS)]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq-gen\tgenerator\t1\n")
    return folder


def invoke(*args: str) -> Result:
    from appliance.cli.main import cli

    return CliRunner().invoke(cli, list(args))


def eval_beir_json(folder: Path, *extra: str) -> dict[str, Any]:
    result = invoke("eval", "beir", str(folder), "--split", "test", "--mode", "lexical", "--json", *extra)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# --- eval beir ---------------------------------------------------------------------------------------------


def test_eval_beir_json_reports_the_documented_metrics(cli_env: dict[str, str], beir_folder: Path) -> None:
    data = eval_beir_json(beir_folder)
    assert {*METRICS, "queries", "latency_ms"} <= set(data)
    assert (data["split"], data["mode"], data["queries"]) == ("test", "lexical", len(QUERIES))
    for metric in METRICS:
        assert 0.0 <= data[metric] <= 1.0, metric
    for stage, values in data["latency_ms"].items():
        assert set(values) == {"p50", "p95"} and 0.0 <= values["p50"] <= values["p95"], stage
    assert {"lexical", "total"} <= set(data["latency_ms"])


def test_queries_whose_words_only_their_relevant_documents_hold_score_perfectly(
    cli_env: dict[str, str], beir_folder: Path
) -> None:
    data = eval_beir_json(beir_folder)
    assert (data["ndcg@10"], data["recall@10"], data["recall@100"], data["mrr@10"]) == (1.0, 1.0, 1.0, 1.0)


def test_eval_beir_writes_a_trec_run_file_that_reads_back(
    cli_env: dict[str, str], beir_folder: Path, tmp_path: Path
) -> None:
    run_file = tmp_path / "run.trec"
    eval_beir_json(beir_folder, "--run-out", str(run_file))
    lines = [line.split() for line in run_file.read_text().splitlines()]
    assert lines and all(len(fields) == 6 for fields in lines)
    by_query: dict[str, list[list[str]]] = {}
    for fields in lines:
        by_query.setdefault(fields[0], []).append(fields)
    assert set(by_query) == set(QUERIES)
    for qid, rows in by_query.items():
        assert [int(row[3]) for row in rows] == list(range(1, len(rows) + 1)), qid
        assert 1 <= len(rows) <= 100
        assert {row[1] for row in rows} == {"Q0"} and {row[5] for row in rows} == {"appliance-lexical"}
        scores = [float(row[4]) for row in rows]
        assert scores == sorted(scores, reverse=True)
        assert len({row[2] for row in rows}) == len(rows), "a document once per query"
    run = read_run(run_file)
    assert set(run) == set(QUERIES)
    assert max(run["q-gen"], key=run["q-gen"].__getitem__) == "generator"
    assert max(run["q-fluoride"], key=run["q-fluoride"].__getitem__) == "fluoride"


def test_a_second_run_reuses_the_index(cli_env: dict[str, str], beir_folder: Path) -> None:
    first = eval_beir_json(beir_folder)
    second = eval_beir_json(beir_folder)
    assert first["index"]["chunks_embedded_now"] > 0
    assert second["index"]["chunks_embedded_now"] == 0
    assert second["index"]["chunks"] == first["index"]["chunks"] >= len(DOCS)
    assert {m: second[m] for m in METRICS} == {m: first[m] for m in METRICS}


def test_an_edited_document_is_re_embedded_and_a_removed_one_leaves(cli_env: dict[str, str], beir_folder: Path) -> None:
    eval_beir_json(beir_folder)
    edited = [(i, t, x + " Edited." if i == "valves" else x) for i, t, x in DOCS if i != "sump"]
    _jsonl(beir_folder / "corpus.jsonl", [{"_id": i, "title": t, "text": x} for i, t, x in edited])
    data = eval_beir_json(beir_folder)
    assert data["index"]["chunks_embedded_now"] == 1
    assert data["index"]["chunks"] == len(DOCS) - 1


def test_eval_beir_prints_a_readable_summary(cli_env: dict[str, str], beir_folder: Path) -> None:
    result = invoke("eval", "beir", str(beir_folder), "--mode", "lexical")
    assert result.exit_code == 0, result.output
    assert "nDCG@10 1.0000" in result.stdout and "MRR@10 1.0000" in result.stdout
    assert f"{len(QUERIES)} queries" in result.stdout


def test_an_unknown_split_exits_1_naming_the_available_splits(cli_env: dict[str, str], beir_folder: Path) -> None:
    result = invoke("eval", "beir", str(beir_folder), "--split", "nope", "--mode", "lexical", "--json")
    assert result.exit_code == 1
    assert "'nope'" in result.stderr and "dev, test" in result.stderr
    assert result.stdout == ""


def test_a_judged_query_without_text_exits_1(cli_env: dict[str, str], beir_folder: Path) -> None:
    _jsonl(beir_folder / "queries.jsonl", [{"_id": "q-gen", "text": QUERIES["q-gen"]}])
    result = invoke("eval", "beir", str(beir_folder), "--mode", "lexical")
    assert result.exit_code == 1
    assert "queries.jsonl" in result.stderr and "no text" in result.stderr


# --- eval qa -----------------------------------------------------------------------------------------------

SOPS = {
    "pump-failover.md": (
        "# Pump station PS-2 failover\n\nWhen pump P-HIGH-001 trips on overload, acknowledge alarm "
        "ALM-PS2-TRIP-01 and open valve VLV-3042-B to bring standby pump P-HIGH-002 on line.\n"
    ),
    "chlorine.md": (
        "# Chlorine residual low\n\nIf free chlorine at AIT-201 reads below 0.2 mg/L for five minutes, raise "
        "the hypochlorite dose by 10 percent and take a grab sample for the lab.\n"
    ),
    "backwash.md": "# Filter backwash\n\nStart a backwash of filter F-3 when head loss exceeds 2.4 m.\n",
}
GOLDEN: list[dict[str, Any]] = [
    {
        "id": "chlorine",
        "question": "What should I do when free chlorine at AIT-201 reads below 0.2 mg/L?",
        "gold_files": ["sops/chlorine.md"],
        "answer_keyphrases": ["10 percent"],
    },
    {
        "id": "pump",
        "question": "What do I do when pump P-HIGH-001 trips on overload?",
        "gold_files": ["sops/pump-failover.md"],
        "answerable": True,
    },
    {
        # deliberately judged against the wrong file: its gold rank is below 1
        "id": "misjudged",
        "question": "When should filter F-3 be backwashed?",
        "gold_files": ["sops/chlorine.md"],
    },
    {"id": "zabbix", "question": "How do I restart the Zabbix agent?", "answerable": False},
    {"id": "alarm", "question": "What does alarm ALM-XYZ-999 mean?", "answerable": False, "gold_files": []},
]


@pytest.fixture
def sop_index(settings: Settings, tmp_path: Path) -> Settings:
    folder = tmp_path / "sops"
    folder.mkdir()
    for name, text in SOPS.items():
        (folder / name).write_text(text)
    assert ingest(settings, [folder]).added == len(SOPS)
    return settings


def test_eval_qa_reports_gold_recall_mrr_and_refusals(
    cli_env: dict[str, str], sop_index: Settings, tmp_path: Path
) -> None:
    golden = tmp_path / "golden.jsonl"
    _jsonl(golden, GOLDEN)
    result = invoke("eval", "qa", str(golden), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["questions"], data["answerable"], data["unanswerable"]) == (5, 3, 2)
    per = {q["id"]: q for q in data["per_question"]}
    assert per["chlorine"]["gold_rank"] == per["pump"]["gold_rank"] == 1
    misjudged = per["misjudged"]["gold_rank"]
    assert misjudged is not None and 1 < misjudged <= 5
    assert data["gold_recall@1"] == pytest.approx(2 / 3, abs=1e-4)
    assert data["gold_recall@5"] == data["gold_recall@10"] == 1.0
    assert data["mrr@10"] == pytest.approx((1 + 1 + 1 / misjudged) / 3, abs=1e-4)
    refused = {qid for qid, question in per.items() if question["refused"]}
    assert refused == {"zabbix", "alarm"}
    assert per["zabbix"]["gold_rank"] is None
    assert (data["refusal_precision"], data["refusal_recall"], data["false_refusal_rate"]) == (1.0, 1.0, 0.0)
    assert set(per["zabbix"]["evidence"]) >= {"sufficient", "reason", "probability"}


def test_eval_qa_prints_a_readable_summary(cli_env: dict[str, str], sop_index: Settings, tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    _jsonl(golden, GOLDEN[:1] + GOLDEN[3:4])
    result = invoke("eval", "qa", str(golden))
    assert result.exit_code == 0, result.output
    assert "1 answerable, 1 unanswerable" in result.stdout
    assert "gold recall@1 1.0" in result.stdout and "refusals: precision 1.0  recall 1.0" in result.stdout


def test_an_all_unanswerable_file_has_no_recall_to_report(
    cli_env: dict[str, str], sop_index: Settings, tmp_path: Path
) -> None:
    golden = tmp_path / "golden.jsonl"
    _jsonl(golden, GOLDEN[3:])
    data = json.loads(invoke("eval", "qa", str(golden), "--json").stdout)
    assert (data["gold_recall@1"], data["mrr@10"], data["false_refusal_rate"]) == (None, None, None)
    assert data["refusal_recall"] == 1.0


GOOD_LINE = json.dumps(GOLDEN[0])


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"question": "unterminated', "not valid JSON"),
        (json.dumps({"gold_files": ["sops/chlorine.md"]}), "'question'"),
        (json.dumps({"question": "   ", "gold_files": ["sops/chlorine.md"]}), "'question'"),
        (json.dumps(["a list", "not an object"]), "'question'"),
        (json.dumps({"question": "Where is the valve?"}), "needs at least one gold file"),
        (json.dumps({"question": "Where is the valve?", "answerable": True, "gold_files": []}), "gold file"),
        (json.dumps({"question": "Where?", "answerable": "yes", "gold_files": ["x"]}), "'answerable'"),
        (json.dumps({"question": "Where?", "gold_files": "sops/chlorine.md"}), "'gold_files'"),
    ],
)
def test_a_bad_qa_line_exits_1_naming_its_file_and_line(
    cli_env: dict[str, str], tmp_path: Path, bad_line: str, message: str
) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(f"{GOOD_LINE}\n\n{bad_line}\n{GOOD_LINE}\n", encoding="utf-8")
    result = invoke("eval", "qa", str(golden))
    assert result.exit_code == 1
    assert f"{golden}:3:" in result.stderr, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_an_empty_qa_file_exits_1(cli_env: dict[str, str], tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n\n", encoding="utf-8")
    result = invoke("eval", "qa", str(golden))
    assert result.exit_code == 1
    assert str(golden) in result.stderr and "no questions" in result.stderr
