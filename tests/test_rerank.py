"""Optional rerank stage: a CrossEncoder from the local model store reorders the top fused chunks;
without one the pipeline is unchanged. The reranker here is a tiny random-weight BERT built on
the spot (no network), with the embedder's own tokenizer files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import transformers
from click.testing import CliRunner
from sentence_transformers import CrossEncoder

from appliance.cli.main import cli
from appliance.config import Settings
from appliance.errors import ModelNotFound
from appliance.ingest.pipeline import ingest
from appliance.models.packages import init_store_from_packages
from appliance.models.store import ModelStore
from appliance.retrieve.rerank import Reranker, find_reranker
from appliance.retrieve.search import Searcher

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
TOP = 3  # rerank.top in these tests: fewer than the chunks that match, so there is a tail

CORPUS = {
    "seal.md": "# Pump seal\n\nReplace the pump seal when it weeps more than ten drops a minute.\n",
    "trip.md": "# Pump trip\n\nReset the pump after an overload trip and log the event.\n",
    "valve.md": "# Valve and pump\n\nClose the suction valve before the pump is opened.\n",
    "chlorine.md": "# Chlorine pump\n\nThe chlorine metering pump doses hypochlorite into the clearwell.\n",
    "filter.md": "# Filter pump\n\nThe backwash pump runs while filter F-3 is washed.\n",
    "sump.md": "# Sump pump\n\nTest the sump pump float switch every month.\n",
    "lube.md": "# Lubrication\n\nGrease every pump bearing quarterly; a dry pump bearing runs hot.\n",
    "lab.md": "# Laboratory\n\nTake grab samples at the plant outlet for turbidity.\n",
}
QUERY = "pump bearing seal"


def _build_cross_encoder(folder: Path, embedder: Path, *, bias: float | None = None, logits: bool = False) -> Path:
    torch.manual_seed(1234)
    vocab_size = len((embedder / "vocab.txt").read_text(encoding="utf-8").splitlines())
    config = transformers.BertConfig(  # type: ignore[call-arg]
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        initializer_range=0.5,  # spread the random scores so that their order is clear
    )
    model = transformers.BertForSequenceClassification(config)
    if bias is not None:
        with torch.no_grad():
            model.classifier.bias.fill_(bias)
    if logits:  # raw scores, as the ms-marco cross-encoders give (no sigmoid)
        model.config.sentence_transformers = {"activation_fn": "torch.nn.modules.linear.Identity"}
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copyfile(embedder / name, folder / name)
    return folder


def _store_with_reranker(root: Path, folder: Path, name: str) -> Path:
    store = ModelStore(root)
    init_store_from_packages(store, ["all-MiniLM-L6-v2"])
    files = [(path, path.name) for path in sorted(folder.iterdir()) if path.is_file()]
    store.add("reranker", name, files, source="path:test", target=f"reranker/{name}")
    return root


@pytest.fixture(scope="module")
def tiny_reranker(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    return _build_cross_encoder(tmp_path_factory.mktemp("tiny-random"), models_dir / "embedder" / "all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def rerank_models(tmp_path_factory: pytest.TempPathFactory, tiny_reranker: Path) -> Path:
    """A model store of its own (the session store is shared): the embedder plus the tiny reranker."""
    return _store_with_reranker(tmp_path_factory.mktemp("rerank-models"), tiny_reranker, "tiny-random")


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    home = tmp_path_factory.mktemp("rerank-home")
    source = tmp_path_factory.mktemp("rerank-src") / "sops"
    source.mkdir()
    for name, text in CORPUS.items():
        (source / name).write_text(text)
    report = ingest(Settings(home=home, models_dir=models_dir), [source])
    assert report.failed == [] and report.added == len(CORPUS)
    return home


def _settings(home: Path, models: Path, reranker: str = "auto") -> Settings:
    settings = Settings(home=home, models_dir=models)
    settings.search.fusion = "rrf"  # pinned: the defaults move as retrieval is tuned
    settings.rerank.model = reranker
    settings.rerank.top = TOP
    return settings


@pytest.fixture
def searcher(corpus_home: Path, rerank_models: Path) -> Iterator[Searcher]:
    searcher = Searcher(_settings(corpus_home, rerank_models))
    yield searcher
    searcher.close()


def _passages(searcher: Searcher, chunk_ids: list[str]) -> list[str]:
    rows = searcher.catalog.chunks_by_ids(chunk_ids)
    return [f"{rows[i].header}\n{rows[i].text}" for i in chunk_ids]


# --- the tiny model itself ---------------------------------------------------------------------------------


def test_the_tiny_cross_encoder_loads_from_its_folder_offline(
    tiny_reranker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = CrossEncoder(str(tiny_reranker), local_files_only=True)
    scores = model.predict([("pump seal", "Replace the pump seal."), ("pump seal", "Take grab samples.")])
    assert len(scores) == 2 and len(set(float(s) for s in scores)) == 2


def test_the_reranker_scores_one_float_per_passage_and_nothing_for_no_passages(tiny_reranker: Path) -> None:
    reranker = Reranker(tiny_reranker)
    assert reranker.score("pump", []) == []
    scores = reranker.score("pump", ["a pump", "a valve", "a filter"])
    assert len(scores) == 3 and all(isinstance(s, float) for s in scores)
    assert reranker.score("pump", ["a pump", "a valve", "a filter"]) == pytest.approx(scores), "deterministic"


def test_a_folder_without_config_json_is_not_a_reranker(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match=r"config\.json"):
        Reranker(tmp_path)


# --- finding the reranker --------------------------------------------------------------------------------


def test_find_reranker_is_none_when_reranking_is_off(rerank_models: Path, home: Path) -> None:
    assert find_reranker(_settings(home, rerank_models, "none")) is None


def test_find_reranker_auto_gives_the_installed_one(rerank_models: Path, home: Path) -> None:
    path = find_reranker(_settings(home, rerank_models, "auto"))
    assert path == rerank_models / "reranker" / "tiny-random"
    assert (path / "config.json").is_file() and (path / "model.safetensors").is_file()


def test_find_reranker_by_name(rerank_models: Path, home: Path) -> None:
    assert find_reranker(_settings(home, rerank_models, "tiny-random")) == rerank_models / "reranker" / "tiny-random"


def test_find_reranker_auto_is_none_when_the_store_holds_none(models_dir: Path, home: Path) -> None:
    assert find_reranker(_settings(home, models_dir, "auto")) is None


def test_an_unknown_reranker_name_raises_naming_the_setting(rerank_models: Path, home: Path) -> None:
    with pytest.raises(ModelNotFound, match=r"rerank\.model") as raised:
        find_reranker(_settings(home, rerank_models, "ms-marco-nowhere"))
    assert "ms-marco-nowhere" in str(raised.value)


# --- search with a reranker ----------------------------------------------------------------------------------


def test_search_with_a_reranker_orders_the_top_hits_by_reranker_score(searcher: Searcher) -> None:
    result = searcher.search(QUERY, k=len(CORPUS))
    data = result.as_json()
    assert result.reranked and data["reranked"] is True
    assert isinstance(data["evidence"]["signals"]["top_rerank"], float)
    assert "rerank" in result.timings_ms
    top = result.hits[:TOP]
    recomputed = searcher.reranker.score(QUERY, _passages(searcher, [hit.chunk_id for hit in top]))  # type: ignore[union-attr]
    assert [hit.score for hit in top] == pytest.approx(recomputed, abs=1e-5)
    assert recomputed == sorted(recomputed, reverse=True)
    assert len(set(recomputed)) == TOP, "distinct scores: the order is the reranker's, not a tie-break"
    assert result.evidence.signals is not None
    assert result.evidence.signals.top_rerank == pytest.approx(top[0].score, abs=1e-5)


def test_the_reranker_reorders_only_the_top_fused_chunks_and_keeps_the_tail(searcher: Searcher) -> None:
    found = searcher.candidates(QUERY, "hybrid", searcher.settings.search.candidates)
    fused = [row.chunk_id for row, _ in searcher.fuse(found, "hybrid")]
    assert len(fused) > TOP, "the corpus must match more chunks than the reranker rescores"
    hits = [hit.chunk_id for hit in searcher.search(QUERY, k=len(fused)).hits]
    assert set(hits[:TOP]) == set(fused[:TOP])
    assert hits[TOP:] == fused[TOP:]


def test_without_a_reranker_search_is_plain_hybrid(corpus_home: Path, models_dir: Path, rerank_models: Path) -> None:
    uninstalled = Searcher(_settings(corpus_home, models_dir, "auto"))
    switched_off = Searcher(_settings(corpus_home, rerank_models, "none"))
    try:
        plain = uninstalled.search(QUERY, k=len(CORPUS), mode="hybrid")
        off = switched_off.search(QUERY, k=len(CORPUS), mode="hybrid")
        fused = uninstalled.fuse(uninstalled.candidates(QUERY, "hybrid", 100), "hybrid")
    finally:
        uninstalled.close()
        switched_off.close()
    for result in (plain, off):
        assert result.reranked is False and "rerank" not in result.timings_ms
        assert result.evidence.signals is not None and result.evidence.signals.top_rerank is None
    assert [h.chunk_id for h in plain.hits] == [h.chunk_id for h in off.hits] == [row.chunk_id for row, _ in fused]
    assert [h.score for h in plain.hits] == [h.score for h in off.hits]


@pytest.fixture(scope="module")
def logit_models(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    """A reranker that gives raw negative logits (as ms-marco cross-encoders do for weak passages)."""
    folder = _build_cross_encoder(
        tmp_path_factory.mktemp("tiny-logits"), models_dir / "embedder" / "all-MiniLM-L6-v2", bias=-50.0, logits=True
    )
    return _store_with_reranker(tmp_path_factory.mktemp("logit-models"), folder, "tiny-logits")


def test_search_documents_keeps_reranked_documents_ahead_of_the_tail(corpus_home: Path, logit_models: Path) -> None:
    searcher = Searcher(_settings(corpus_home, logit_models))
    try:
        hits = searcher.search(QUERY, k=len(CORPUS)).hits
        assert all(hit.score < 0 for hit in hits[:TOP])
        documents, _ = searcher.search_documents(QUERY, k=len(CORPUS))
    finally:
        searcher.close()
    assert [doc for doc, _ in documents] == list(dict.fromkeys(hit.path for hit in hits))


# --- eval beir --mode rerank ------------------------------------------------------------------------------


@pytest.fixture
def beir_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "tinybeir"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": name.removesuffix(".md"), "title": "", "text": text} for name, text in CORPUS.items()]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "pump seal weeps"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tseal\t1\n")
    return folder


def test_eval_beir_rerank_mode_without_a_reranker_exits_1_naming_the_problem(
    cli_env: dict[str, str], beir_folder: Path
) -> None:
    result = CliRunner().invoke(cli, ["eval", "beir", str(beir_folder), "--mode", "rerank", "--json"])
    assert result.exit_code == 1, result.output
    assert "--mode rerank needs a reranker" in result.stderr
    assert "Traceback" not in result.output


def test_eval_beir_rerank_mode_with_a_reranker_runs(
    cli_env: dict[str, str], beir_folder: Path, rerank_models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(rerank_models))
    monkeypatch.setenv("APPLIANCE_RERANK_TOP", str(TOP))
    result = CliRunner().invoke(cli, ["eval", "beir", str(beir_folder), "--mode", "rerank", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["mode"] == "rerank" and data["queries"] == 1
    assert 0.0 <= data["ndcg@10"] <= 1.0


def test_eval_beir_rerank_mode_reports_the_rerank_latency(
    cli_env: dict[str, str], beir_folder: Path, rerank_models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(rerank_models))
    result = CliRunner().invoke(cli, ["eval", "beir", str(beir_folder), "--mode", "rerank", "--json"])
    assert result.exit_code == 0, result.output
    assert "rerank" in json.loads(result.stdout)["latency_ms"]
