"""The LLM judge after the steps are shown (answer.llm_judge_timing = "after", the CPU's where the judge is turned
on): the ranker's section at once, its steps event saying a check follows; then the judge's pick, replacing the
steps only where it chose another section, and saying which one was shown first. Before (a GPU's default) the
answer waits for it.

The judge is scripted (tests/fakes.py): the real model's scoring is specified in test_llm_judge.py."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from appliance.answer.answerer import Answerer, AnswerEvent
from appliance.config import Settings
from appliance.errors import GeneratorError
from appliance.ingest.pipeline import ingest
from appliance.server.app import create_app
from tests.fakes import ScriptedGenerator, ScriptedJudgeGenerator, judging
from tests.test_section_choice import ALARMS, LEAK  # an alarm guide and the SOP it points to

# The ranker is unsure here (it picks the Purpose): the judge is asked only where the ranker is not sure.
QUESTION = "What do we do when the chlorine detectors alarm?"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Settings:
    settings = Settings(home=tmp_path_factory.mktemp("home"), models_dir=models_dir)
    root = tmp_path_factory.mktemp("docs") / "plant"
    root.mkdir()
    (root / "SOP-SCADA-001.md").write_text(ALARMS)
    (root / "SOP-CL-001.md").write_text(LEAK)
    ingest(settings, [root])
    return settings


def events_of(settings: Settings, generator: Any, question: str = QUESTION) -> list[AnswerEvent]:
    answerer = Answerer(settings, generator=generator)
    try:
        return list(answerer.events(question))
    finally:
        answerer.close()


def first_pick(indexed: Settings) -> tuple[str, str]:
    """The ranker's own section (judge off) and its best rival's, as "path › heading"."""
    result = Answerer(indexed, generator=ScriptedGenerator()).ask(QUESTION)  # type: ignore[arg-type]
    assert result.judge is None and result.steps and result.alternatives
    chosen = f"{result.sections[0].path} › {result.sections[0].section}"
    rival = result.alternatives[0]
    return chosen, f"{rival.path} › {rival.section}"


def label(result: Any) -> str:
    return f"{result.sections[0].path} › {result.sections[0].section}"


def test_after_the_rankers_steps_come_first_and_a_kept_pick_changes_nothing_shown(indexed: Settings) -> None:
    chosen, _ = first_pick(indexed)
    heading = chosen.split(" › ")[-1]
    judge = ScriptedJudgeGenerator(favour=heading)
    events = events_of(judging(indexed, "after"), judge)
    assert [e.kind for e in events] == ["evidence", "steps", "done"]
    assert events[1].checking  # the page says a check is under way
    result = events[-1].result
    assert result is not None and label(result) == chosen
    assert result.judge is not None and result.judge.timing == "after" and result.judge.kept
    assert result.judge.first_shown is None
    assert len(result.judge.odds) >= 2 and result.judge.odds[0] == 5.0  # the ranker's pick first, said Yes to
    assert result.steps == events[1].steps
    assert len(judge.judged) == 1 and len(judge.judged[0]) >= 2  # the best regions, judged in one call
    assert result.timings_ms["first_content"] <= result.timings_ms["total"] and "judge" in result.timings_ms


def test_after_a_judge_that_picks_another_section_replaces_the_steps_and_names_the_first(indexed: Settings) -> None:
    chosen, rival = first_pick(indexed)
    events = events_of(judging(indexed, "after"), ScriptedJudgeGenerator(favour=None))  # Yes to the rival only
    assert [e.kind for e in events] == ["evidence", "steps", "revised", "done"]
    shown, revised, done = events[1], events[2], events[3].result
    assert shown.checking and done is not None
    assert revised.first_shown is not None and f"{revised.first_shown.path} › {revised.first_shown.section}" == chosen
    assert label(done) != chosen and revised.steps == done.steps != shown.steps
    assert [e.path for e in revised.evidence or []] == [e.path for e in done.evidence]
    assert done.judge is not None and not done.judge.kept and done.judge.first_shown == revised.first_shown
    assert done.confidence != "certain"  # an overturned pick is never badged ✓
    assert done.timings_ms["first_content"] < done.timings_ms["total"]
    assert rival  # the ranker had a rival to turn to


def test_a_failing_judge_leaves_the_shown_answer_and_claims_no_check(indexed: Settings) -> None:
    class Failing(ScriptedJudgeGenerator):
        def yes_no_log_odds(self, prompts: Any) -> list[float]:
            raise GeneratorError("the model crashed")

    events = events_of(judging(indexed, "after"), Failing())
    assert [e.kind for e in events] == ["evidence", "steps", "done"]
    result = events[-1].result
    assert result is not None and result.judge is None and result.steps == events[1].steps


def test_after_a_busy_model_is_not_waited_for_the_shown_answer_stands(indexed: Settings) -> None:
    """A check queued behind another answer's generation would change the steps long after they were read."""

    class Busy(ScriptedJudgeGenerator):
        def queue_depth(self) -> int:
            return 1  # another question's answer is being generated

    busy = Busy(favour=None)
    events = events_of(judging(indexed, "after"), busy)
    assert [e.kind for e in events] == ["evidence", "steps", "done"]
    assert not busy.judged and events[-1].result is not None and events[-1].result.judge is None


def test_before_the_answer_waits_for_the_judge_and_shows_its_pick_once(indexed: Settings) -> None:
    chosen, _ = first_pick(indexed)
    events = events_of(judging(indexed, "before"), ScriptedJudgeGenerator(favour=None))
    assert [e.kind for e in events] == ["evidence", "steps", "done"]
    assert not events[1].checking
    result = events[-1].result
    assert result is not None and label(result) != chosen
    assert result.judge is not None and result.judge.timing == "before" and not result.judge.kept


def test_the_api_streams_the_check_and_the_replacement(indexed: Settings) -> None:
    chosen, _ = first_pick(indexed)
    settings = judging(indexed, "after")
    answerer = Answerer(settings, generator=ScriptedJudgeGenerator(favour=None))  # type: ignore[arg-type]
    with TestClient(create_app(settings, answerer=answerer), client=("127.0.0.1", 50000)) as client:
        response = client.post("/v1/ask", json={"question": QUESTION, "stream": True})
        assert response.status_code == 200, response.text
        events = [
            (block.split("\n")[0].removeprefix("event: "), json.loads(block.split("\n", 1)[1].removeprefix("data: ")))
            for block in response.text.strip().split("\n\n")
        ]
        assert [name for name, _ in events] == ["evidence", "steps", "revised", "done"]
        assert events[1][1]["checking"] is True
        first = events[2][1]["first_shown"]
        assert f"{first['path']} › {first['section']}" == chosen
        assert events[2][1]["steps"] == events[3][1]["steps"] and events[2][1]["evidence"]
        assert events[3][1]["judge"]["kept"] is False and events[3][1]["judge"]["first_shown"] == first
        # A JSON client waits for the judged answer.
        plain = client.post("/v1/ask", json={"question": QUESTION}).json()
        assert plain["judge"]["timing"] == "after" and plain["steps"] == events[3][1]["steps"]


def test_over_the_api_a_generator_that_cannot_judge_leaves_the_answer_as_shown(
    indexed: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """Each request sees the app's one generator through a wrapper that passes the judgement through where the
    generator has it, and says it cannot where it has not: the ranker's answer then stands, unjudged."""
    settings = judging(indexed, "after")
    answerer = Answerer(settings, generator=ScriptedGenerator())  # type: ignore[arg-type]  # writes, cannot judge
    with TestClient(create_app(settings, answerer=answerer), client=("127.0.0.1", 50000)) as client:
        response = client.post("/v1/ask", json={"question": QUESTION, "stream": True})
    names = [block.split("\n")[0] for block in response.text.strip().split("\n\n")]
    assert names == ["event: evidence", "event: steps", "event: done"]
    done = json.loads(response.text.strip().split("\n\n")[-1].split("\n", 1)[1].removeprefix("data: "))
    assert done["judge"] is None and done["steps"]
    assert "cannot score yes/no answers" in caplog.text

    # The default (auto) with the generator on the CPU: no judge, so no model is loaded for it (llm-judge.md).
    caplog.set_level(logging.INFO, logger="appliance.answer")
    assert indexed.answer.llm_judge == "auto"
    on_the_cpu = indexed.model_copy(update={"generator": indexed.generator.model_copy(update={"n_gpu_layers": 0})})
    with TestClient(create_app(on_the_cpu), client=("127.0.0.1", 50000)) as client:
        response = client.post("/v1/ask", json={"question": QUESTION, "stream": True})
    assert [block.split("\n")[0] for block in response.text.strip().split("\n\n")] == [
        "event: evidence",
        "event: steps",
        "event: done",
    ]
    assert "LLM judge off: the generator runs on the CPU" in caplog.text


def test_a_slow_judge_does_not_hold_the_first_steps_back(indexed: Settings) -> None:
    gate = threading.Event()
    answerer = Answerer(judging(indexed, "after"), generator=ScriptedJudgeGenerator(favour=None, gate=gate))  # type: ignore[arg-type]
    events = answerer.events(QUESTION)
    try:
        assert next(events).kind == "evidence"
        steps = next(events)  # the gate is shut: the judge has not answered, the steps are out
        assert steps.kind == "steps" and steps.checking and not gate.is_set()
        gate.set()
        assert [e.kind for e in events] == ["revised", "done"]
    finally:
        gate.set()
        answerer.close()


def test_appliance_ask_prints_the_first_steps_then_says_why_they_were_replaced(
    indexed: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from appliance.cli.main import cli

    chosen, _ = first_pick(indexed)
    monkeypatch.setenv("APPLIANCE_HOME", str(indexed.home))
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(indexed.models_dir))
    monkeypatch.setenv("APPLIANCE_ANSWER_LLM_JUDGE", "on")  # on the CPU the judge runs only when turned on
    monkeypatch.setenv("APPLIANCE_ANSWER_LLM_JUDGE_TIMING", "after")
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    monkeypatch.setattr("appliance.answer.answerer.load_generator", lambda settings: ScriptedJudgeGenerator())
    result = CliRunner().invoke(cli, ["ask", QUESTION])
    assert result.exit_code == 0, result.output
    out = result.output
    checking = out.index("The local model is checking this choice…")
    replaced = out.index("Replaced after the local model's check: it judged the section below a better match than")
    assert checking < replaced
    assert chosen.split(" › ")[-1] in out[replaced:].splitlines()[0]  # the first section, named
