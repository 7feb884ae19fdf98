"""Calibrations belong to their model: the evidence decision and the support check's semantic threshold
were fitted on all-MiniLM-L6-v2 cosines. With a second embedder (a tiny random-weight sentence-transformer
built here, as the rerank tests build their cross-encoder) neither is used: the scale-free evidence model
and the lexical support rules decide, and the log, `appliance status` and /readyz say so."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from appliance.answer.answerer import Answerer
from appliance.cli.main import cli
from appliance.config import Settings
from appliance.ingest.pipeline import ingest
from appliance.models.calibration import calibration_warnings, calibrations
from appliance.models.packages import init_store_from_packages
from appliance.models.store import ModelStore
from appliance.retrieve.evidence import EvidenceSignals, answerable_probability, decide_evidence
from appliance.retrieve.search import Searcher
from appliance.server.app import create_app
from tests.fake_hub import build_tiny_sentence_transformer
from tests.fakes import ScriptedGenerator

SECOND_EMBEDDER = "tiny-random-embedder"
SOP = """# Chlorine cylinder change

Close the cylinder valve VLV-3042-B before you disconnect the regulator.
Wait until the vacuum regulator gauge reads zero, then remove the yoke.
"""
# Shares too few words with the source for the lexical rule, and too few to be a rewording (at most
# half, support.REWORD_FLOOR): only similarity could support it.
REWORDED = "Shut the cylinder's valve prior to detaching any flexible hoses or fittings [1]."


@pytest.fixture(scope="module")
def two_embedders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model store holding all-MiniLM-L6-v2, the small generator and a second, tiny embedder."""
    root = tmp_path_factory.mktemp("two-embedders")
    store = ModelStore(root)
    init_store_from_packages(store, ["all-MiniLM-L6-v2", "smollm2-135m-instruct"])
    folder = build_tiny_sentence_transformer(tmp_path_factory.mktemp("tiny-embedder"))
    files = [(path, path.relative_to(folder).as_posix()) for path in sorted(folder.rglob("*")) if path.is_file()]
    store.add("embedder", SECOND_EMBEDDER, files, source="path:test", target=f"embedder/{SECOND_EMBEDDER}")
    return root


def _settings(home: Path, models: Path, embedder: str) -> Settings:
    settings = Settings(home=home, models_dir=models)
    settings.embedder.model = embedder
    settings.generator.model = "smollm2-135m-instruct"
    return settings


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("calibration-src") / "sops"
    source.mkdir()
    (source / "chlorine.md").write_text(SOP)
    return source


@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory, two_embedders: Path, corpus: Path) -> Settings:
    """The corpus indexed with the second embedder."""
    settings = _settings(tmp_path_factory.mktemp("second-home"), two_embedders, SECOND_EMBEDDER)
    assert ingest(settings, [corpus]).added == 1
    return settings


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory, two_embedders: Path, corpus: Path) -> Settings:
    """The same corpus indexed with the embedder the decisions were calibrated for."""
    settings = _settings(tmp_path_factory.mktemp("minilm-home"), two_embedders, "all-MiniLM-L6-v2")
    assert ingest(settings, [corpus]).added == 1
    return settings


def signals(top_dense: float) -> EvidenceSignals:
    return EvidenceSignals(
        content_terms=4,
        unknown_terms=(),
        salient_unknown_terms=(),
        unknown_identifiers=(),
        top_dense=top_dense,
        coverage=0.75,
        agreement=True,
        top_rerank=None,
    )


def test_every_calibration_names_the_embedder_it_was_fitted_for() -> None:
    settings = Settings()
    assert {c.setting for c in calibrations(settings)} == {"evidence.calibrated_for", "support.calibrated_for"}
    assert all(c.applies for c in calibrations(settings)) and calibration_warnings(settings) == []
    settings.embedder.model = "bge-base-en-v1.5"
    warnings = calibration_warnings(settings)
    assert len(warnings) == 2
    assert all("all-MiniLM-L6-v2" in w and "bge-base-en-v1.5" in w for w in warnings)


def test_with_another_embedder_the_evidence_decision_does_not_read_the_cosine() -> None:
    calibrated, other = Settings(), Settings()
    other.embedder.model = SECOND_EMBEDDER
    assert answerable_probability(signals(0.2), calibrated) != answerable_probability(signals(0.9), calibrated)
    decided = [decide_evidence(signals(cosine), other) for cosine in (0.0, 0.2, 0.9, 1.0)]
    assert len({d.probability for d in decided}) == 1
    assert all(d.scale_free and d.as_json()["scale_free"] is True for d in decided)
    assert "scale_free" not in decide_evidence(signals(0.9), calibrated).as_json()


def test_a_search_with_another_embedder_falls_back_and_says_so_in_the_log(
    second: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    from appliance.models import calibration

    calibration.logged_warnings.clear()  # once per process: this test wants to see it
    with caplog.at_level(logging.WARNING, logger="appliance.calibration"):
        searcher = Searcher(second)
        try:
            result = searcher.search("close the cylinder valve before disconnecting the regulator")
        finally:
            searcher.close()
    assert result.evidence.scale_free
    logged = [r.getMessage() for r in caplog.records if r.name == "appliance.calibration"]
    assert len(logged) == 2 and all(SECOND_EMBEDDER in message for message in logged)


def test_status_warns_about_the_fallback(second: Settings, calibrated: Settings) -> None:
    runner = CliRunner()
    for settings, expected in ((second, 2), (calibrated, 0)):
        env = {
            "APPLIANCE_HOME": str(settings.home),
            "APPLIANCE_MODELS_DIR": str(settings.models_dir),
            "APPLIANCE_EMBEDDER_MODEL": settings.embedder.model,
        }
        status = json.loads(runner.invoke(cli, ["status", "--json"], env=env, catch_exceptions=False).output)
        assert len(status["warnings"]) == expected
        assert [c["applies"] for c in status["calibrations"]] == [expected == 0] * 2
        text = runner.invoke(cli, ["status"], env=env, catch_exceptions=False).output
        assert text.count("warning:") == expected


@pytest.fixture
def second_client(second: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(second), client=("127.0.0.1", 50000)) as client:
        yield client


def test_readyz_is_ready_and_names_the_fallback(second_client: TestClient) -> None:
    ready = second_client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert len(ready.json()["warnings"]) == 2 and SECOND_EMBEDDER in ready.json()["warnings"][0]


def _unsupported_of_reworded(settings: Settings) -> list[str]:
    settings = settings.model_copy(deep=True)
    settings.support.semantic_threshold = 0.0  # any cosine supports: whether similarity is consulted shows
    answerer = Answerer(settings, generator=ScriptedGenerator(REWORDED))  # type: ignore[arg-type]
    try:
        result = answerer.ask("close the cylinder valve before disconnecting the regulator", mode="generated")
    finally:
        answerer.close()
    assert not result.refused, result.refusal_reason
    return result.unsupported


def test_the_support_check_uses_similarity_only_with_the_embedder_it_was_calibrated_for(
    second: Settings, calibrated: Settings
) -> None:
    assert _unsupported_of_reworded(calibrated) == []
    assert _unsupported_of_reworded(second) == [
        "Shut the cylinder's valve prior to detaching any flexible hoses or fittings."
    ]
