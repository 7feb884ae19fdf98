"""Does a question need the conversation? The fitted decision, on real SOPs with the real embedder.

A question that makes sense alone is searched as asked whatever came before ("What is the free chlorine
residual target leaving the plant?" after the ton container change, and the ozone question after that);
an elliptical one ("and for bank B?", "where do I write that down?") is read with the conversation. The
decision holds when the operator types in lower or upper case, misspells a word or opens with "ok
thanks": no single word decides. The shipped coefficients are scripts/fit_followup.py's, over signals this
module computes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from appliance.answer.followup import RULE_SEPARATOR, Turn, standalone_question
from appliance.answer.followup_model import (
    FITTED,
    FollowupModel,
    Reading,
    Scales,
    SearchReader,
    continues,
    fitted_model,
    signals,
)
from appliance.config import Settings
from appliance.errors import ApplianceError
from appliance.ingest.pipeline import ingest
from appliance.retrieve.search import Searcher
from appliance.text.english import english_rarity

DOCS = Path(__file__).resolve().parent.parent / "docs_corpus"
# Demo SOPs in Markdown: the chlorine container change, the analyzers, turbidity, fluoride.
SOPS = (
    "SOP-CL-004-chlorine-cylinder-change.md",
    "SOP-LAB-002-online-analyzer-calibration.md",
    "SOP-FLT-002-turbidity-exceedance-response.md",
    "SOP-CHM-002-fluoride-feed-shutdown.md",
)
CONTAINER = "How do I change a chlorine ton container?"
RESIDUAL = "What is the free chlorine residual target leaving the plant?"
OZONE = "How do I recalibrate the ozone generator?"


@pytest.fixture(scope="module")
def plant_home(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    base = tmp_path_factory.mktemp("followup-plant")
    for name in SOPS:
        shutil.copy(DOCS / name, base / name)
    home = base.parent / f"{base.name}-home"
    ingest(Settings(home=home, models_dir=models_dir), [base])
    return home


@pytest.fixture(scope="module")
def searcher(plant_home: Path, models_dir: Path) -> Searcher:
    return Searcher(Settings(home=plant_home, models_dir=models_dir))


def searched(searcher: Searcher, conversation: list[str]) -> str:
    """What the last question of the conversation is searched as (followup.rewrite = rule)."""
    history = [turn for question in conversation[:-1] for turn in (Turn("user", question), Turn("assistant", "…"))]
    return standalone_question(
        conversation[-1],
        history,
        method="rule",
        max_turns=1,
        known=searcher.catalog.knows_word,
        reader=SearchReader(searcher),
    ).question


@pytest.mark.parametrize(
    "question",
    [
        RESIDUAL,
        RESIDUAL.lower().rstrip("?"),
        RESIDUAL.upper(),
        "ok thanks. and what is the free chlorine residul target leaving the plant?",  # lead-in, "and", a typo
        "Thanks! Next question: what's the free chlorine residual target at the plant outlet?",
    ],
)
def test_a_question_that_makes_sense_alone_is_searched_as_asked(searcher: Searcher, question: str) -> None:
    assert searched(searcher, [CONTAINER, question]) == question.strip()


def test_the_issues_conversation_searches_every_question_as_asked(searcher: Searcher) -> None:
    """Measured in issue 40: the residual question was searched glued to the container question, then the ozone
    question glued to the residual one."""
    assert searched(searcher, [CONTAINER, RESIDUAL]) == RESIDUAL
    assert searched(searcher, [CONTAINER, RESIDUAL, OZONE]) == OZONE


@pytest.mark.parametrize(
    "question",
    ["and for bank B?", "AND FOR BANK B?", "and for bank b", "and for bnak B?", "ok thanks, and for bank B?"],
)
def test_an_elliptical_follow_up_is_read_with_the_conversation(searcher: Searcher, question: str) -> None:
    assert searched(searcher, [CONTAINER, question]) == CONTAINER + RULE_SEPARATOR + question


def test_a_follow_up_that_points_back_is_read_with_the_conversation(searcher: Searcher) -> None:
    question = "where do I write that down?"
    assert searched(searcher, [CONTAINER, question]) == CONTAINER + RULE_SEPARATOR + question


def test_the_shipped_model_weighs_exactly_the_signals_computed(searcher: Searcher) -> None:
    model = fitted_model()
    values = signals(RESIDUAL, CONTAINER, CONTAINER + RULE_SEPARATOR + RESIDUAL, SearchReader(searcher))
    assert set(model.features) == set(values)
    assert all(0.0 <= values[name] <= 1.0 for name in values if name != "joined_gain")
    assert -1.0 <= values["joined_gain"] <= 1.0
    assert 0.0 < model.threshold < 1.0


def test_the_fitted_file_says_how_and_on_what_it_was_fitted() -> None:
    import json

    data = json.loads(FITTED.read_text(encoding="utf-8"))
    assert data["training_set"]["path"] == "scripts/qa/followups_train.jsonl"
    assert len(data["training_set"]["sha256"]) == 64 and data["training_set"]["conversations"] >= 200
    assert "scripts/fit_followup.py" in data["method"] and data["embedder"]


def test_the_model_is_a_logistic_function_of_its_signals() -> None:
    model = FollowupModel(("a", "b"), (2.0, -1.0), 0.5, 0.5)
    assert model.probability({"a": 0.0, "b": 0.0}) == pytest.approx(0.6225, abs=1e-4)
    assert model.needs_conversation({"a": 1.0, "b": 0.0}) and not model.needs_conversation({"a": 0.0, "b": 2.0})
    assert FollowupModel.from_json({"weights": {"a": 2.0, "b": -1.0}, "intercept": 0.5, "threshold": 0.5}) == model


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("and for bank B?", 1.0),
        ("ok thanks, and for bank B?", 1.0),  # a clause after the lead-in opens with "and"
        ("What about the level transmitters?", 1.0),
        ("What is the free chlorine residual target?", 0.0),
        ("Sandbox bandwidth?", 0.0),  # words that hold "and" are not the word
    ],
)
def test_a_clause_that_continues_the_last_turn_is_one_graded_signal(text: str, expected: float) -> None:
    assert continues(text) == expected


def test_everyday_english_words_are_less_specific_than_equipment_names() -> None:
    assert english_rarity("ozone") > english_rarity("generator") > english_rarity("result")
    assert english_rarity("kubemacpool") == 1.0 and english_rarity("form") < 0.1


class ScriptedReader:
    """Readings set per text, for a signal computed from what the searches found."""

    def __init__(self, readings: dict[str, Reading]) -> None:
        self.readings = readings

    def read(self, text: str) -> Reading:
        return self.readings[text]

    def rarity(self, word: str) -> float | None:
        return None if word == "ozone" else 0.5


def test_the_signals_read_the_searches_and_the_words_of_the_question() -> None:
    question, previous = "How do I recalibrate the ozone generator?", "What is the residual target?"
    joined = previous + RULE_SEPARATOR + question
    reader = ScriptedReader(
        {
            question: Reading(0.4, True, ("a.md", "b.md"), 0.3, 0.0, ("recalibrate the generator",), question),
            previous: Reading(0.9, True, ("c.md",), 0.9, 0.0, ("the residual target is 1.0 mg/L",), previous),
            joined: Reading(0.7, True, ("c.md",), 0.8, 0.0, ("the residual target is 1.0 mg/L",), joined),
        }
    )
    values = signals(question, previous, joined, reader)
    assert values["alone_probability"] == 0.4 and values["joined_gain"] == pytest.approx(0.3)
    assert values["alone_concentration"] == 0.3
    assert values["unknown_share"] == pytest.approx(1 / 3)  # ozone, of recalibrate, ozone, generator
    assert values["alone_covers_question"] == pytest.approx(2 / 3)
    assert values["joined_covers_question"] == 0.0 and values["previous_covers_question"] == 0.0
    assert values["pointing_share"] == 0.0 and values["continues"] == 0.0
    assert values["unknown_own_subject"] == pytest.approx(1 / 3)  # a subject the documents lack, not pointing back
    assert values["short_fragment"] == 0.0


def test_the_capped_signals_reach_one_at_the_scales_the_model_was_fitted_with() -> None:
    question, previous = "and what does that one need?", "What is the residual target?"
    joined = previous + RULE_SEPARATOR + question
    reading = Reading(0.5, True, ("a.md",), 0.5, 0.0, (), "")
    reader = ScriptedReader({question: reading, previous: reading, joined: reading})
    shipped = signals(question, previous, joined, reader)
    halved = signals(question, previous, joined, reader, Scales(subject_mass=1.5, content_words=4.0))
    # one content word ("need"; "that" and "one" point back) at rarity 0.5: a subject mass of 0.5
    assert shipped["content_words"] == pytest.approx(1 / 8) and halved["content_words"] == pytest.approx(1 / 4)
    assert shipped["subject_mass"] == pytest.approx(1 / 3 / 2) and halved["subject_mass"] == pytest.approx(1 / 3)
    assert shipped["pointing_share"] == halved["pointing_share"]


def test_the_model_file_says_its_scales_and_an_older_file_keeps_the_first_ones(tmp_path: Path) -> None:
    data = json.loads(FITTED.read_text(encoding="utf-8"))
    assert fitted_model().scales == Scales(**data["model"]["scales"])
    path = tmp_path / "followup.json"
    data["model"]["scales"] = {**data["model"]["scales"], "content_words": 4.0}
    path.write_text(json.dumps(data), encoding="utf-8")
    assert FollowupModel.read(path).scales.content_words == 4.0
    del data["model"]["scales"]
    path.write_text(json.dumps(data), encoding="utf-8")
    assert FollowupModel.read(path).scales == Scales(3.0, 8.0, 2.0, 5.0)


def test_a_model_file_with_an_unknown_scale_is_refused_by_name(tmp_path: Path) -> None:
    data = json.loads(FITTED.read_text(encoding="utf-8"))
    data["model"]["scales"] = {**data["model"]["scales"], "mood": 1.0}
    path = tmp_path / "followup.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ApplianceError, match=r"followup\.json: its scales cannot be read.*mood"):
        FollowupModel.read(path)
