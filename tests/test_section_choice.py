"""Which section answers (answer/quoted/choice.py): the fitted ranker over every section of the documents the
hits land in, and of the documents they point to. No heading word list picks or vetoes anything; what these
tests pin is the behaviour an operator sees, however the question is typed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from appliance.answer.answerer import Answerer
from appliance.answer.question import default_reading, load_reading, read_question
from appliance.answer.quoted.choice import mass_inside, shown_section
from appliance.answer.quoted.features import FEATURES, heading_words, model_features
from appliance.answer.quoted.ranker import DEFAULT_MODEL, default_ranker, load_ranker
from appliance.answer.quoted.sections import is_within
from appliance.config import Settings
from appliance.errors import ApplianceError
from appliance.ingest.pipeline import ingest
from appliance.text.questions import question_kind
from scripts.fit_choice import reading_variants

RUNBOOK = """# KubeJobFailed

## Meaning

A Kubernetes Job of the cluster failed to complete. The alert fires when a Job's failed pods pass its backoff limit.

## Impact

The work the Job does did not happen: backups, reports or migrations may be missing.

## Diagnosis

- Find the failed job: `kubectl -n $NAMESPACE get jobs --field-selector status.successful=0`
- Read its pod logs: `kubectl -n $NAMESPACE logs job/$JOB`
- Check the events of the job's pods for OOMKilled or image pull errors.

## Mitigation

- Fix the cause found in the logs, then delete the failed job: `kubectl -n $NAMESPACE delete job $JOB`
- Re-run it from its CronJob: `kubectl -n $NAMESPACE create job --from=cronjob/$CRONJOB $JOB-retry`
"""

HMI = """# SOP-SCADA-002 HMI Login and Recovery

## 1. Purpose

How operators log in to the SCADA HMI and recover from login and display failures.

## 4. Procedures

### 4.1 Normal login

1. Enter your personal user name and password at the HMI login screen.
2. Confirm that your name shows in the title bar.

### 4.3 Locked account

An account locks after five wrong passwords.

1. Do not try again: every attempt restarts the 30 minute lock.
2. Call the Shift Supervisor (ext. 2101), who unlocks the account from the engineering station ENG-01.
3. Log in and change your password at once.

### 4.7 Total loss of SCADA

1. Send operators to the local control panels of the high-lift pumps and the chlorinators.
2. Run the plant on local control and log readings every 15 minutes on form RWTP-F-077.
3. Call the OT/SCADA Administrator (ext. 2460).
"""

CHANGE = """# SOP-CL-004 Chlorine Ton Container Change

## 1. Purpose

To change an empty one-ton chlorine container on a bank without a release of chlorine.

## 6. Procedure

### 6.1 Prepare

1. Tell the control room (ext. 2100) that a container change on bank A is starting.
2. Put on the escape respirator and check the leak detector AIT-452 reads below 0.5 ppm.

### 6.2 Isolate the empty bank

1. Close the bank header isolation valve VLV-4501-A.
2. Close the container valve clockwise until it seats.
3. Wait until the regulator gauge VR-451 reads zero, normally within 5 minutes.

### 6.3 Exchange the containers

1. Disconnect the yoke from the empty container and fit the valve protection hood.
2. Roll the full container into place with the hoist and connect the yoke with a new lead gasket RW-GSK-0410.

### 6.4 Start up

1. Open the container valve a quarter turn and test every joint with ammonia vapour.
2. Open VLV-4501-A and confirm the feed rate on the HMI.
"""

ALARMS = """# SOP-SCADA-001 SCADA Alarm Response Guide

## Chlorine alarms

| Alarm | Meaning | Response |
| --- | --- | --- |
| ALM-CL2-LEAK-01 | Chlorine gas 1.0 ppm in the chlorine room | See SOP-CL-001 section 6.2 |
| ALM-CL2-LEAK-02 | Chlorine gas 3.0 ppm in the chlorine room | See SOP-CL-001 section 6.3 |
"""

LEAK = """# SOP-CL-001 Chlorine Gas Leak Response

## 1. Purpose

What operators do when the chlorine gas detectors alarm.

## 6. Procedure

### 6.2 First-stage leak alarm

1. Look at the chlorine room camera before anyone goes near the room.
2. Two operators with escape respirators check the containers from the door.

### 6.3 Second-stage leak alarm

1. Evacuate the chlorine building and the filter gallery at once.
2. Call the fire department on 911 and the Shift Supervisor on ext. 2101.
3. Nobody enters the chlorine room without the SCBA team.
"""


@pytest.fixture(scope="module")
def answerer(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Answerer:
    home = tmp_path_factory.mktemp("home")
    settings = Settings(home=home, models_dir=models_dir)
    root = tmp_path_factory.mktemp("docs") / "ops"
    root.mkdir()
    for name, text in (
        ("KubeJobFailed.md", RUNBOOK),
        ("SOP-SCADA-002.md", HMI),
        ("SOP-CL-004.md", CHANGE),
        ("SOP-SCADA-001.md", ALARMS),
        ("SOP-CL-001.md", LEAK),
    ):
        (root / name).write_text(text)
    ingest(settings, [root])
    return Answerer(settings)


def shown(answerer: Answerer, question: str) -> str:
    result = answerer.ask(question)
    assert not result.refused, result.refusal_reason
    return result.sections[0].section.split(" › ")[-1]


@pytest.mark.parametrize(
    "question",
    [
        "I locked myself out of the HMI after too many wrong passwords. How do I get my account back?",
        "locked myself out of the hmi after too many wrong passwords, how do i get my account back",
        "LOCKED OUT OF THE HMI AFTER TOO MANY WRONG PASSWORDS - HOW DO I GET MY ACCOUNT BACK?",
        "it's 3am and I locked myself out of the HMI after too many wrong passwords. how do I get my acount back?",
        "How do I unlock my HMI account after entering the wrong password too many times?",
    ],
)
def test_one_of_several_procedures_is_chosen_however_the_question_is_typed(answerer: Answerer, question: str) -> None:
    assert shown(answerer, question) == "4.3 Locked account"


@pytest.mark.parametrize(
    ("question", "asked", "other"),
    [
        ("KubeJobFailed is firing, how do I fix it?", "delete job $JOB", "Diagnosis"),
        ("kubejobfailed firing - how do i resolve it", "delete job $JOB", "Diagnosis"),
        ("a job keeps failing in the cluster, how do I find out why?", "get jobs --field-selector", "Mitigation"),
        ("KubeJobFailed: how do I figure out what went wrong?", "get jobs --field-selector", "Mitigation"),
    ],
)
def test_a_runbook_question_gets_the_part_its_intent_asks_for_never_only_the_other(
    answerer: Answerer, question: str, asked: str, other: str
) -> None:
    """Fix → the Mitigation's steps, find out why → the Diagnosis's: that part, or the whole runbook holding it,
    never the sibling alone (the Diagnosis for a fix is the miss operators reported)."""
    result = answerer.ask(question)
    assert not result.refused
    assert asked in "\n".join(step.text for step in result.steps)
    assert shown(answerer, question) != other


@pytest.mark.parametrize(
    "question",
    [
        "what do we do when all the SCADA screens go dead?",
        "all hmi screens dead, cant see anything - what now",  # 4.1 Normal login before the hidden layer (stop 51)
    ],
)
def test_the_steps_are_shown_not_only_the_purpose(answerer: Answerer, question: str) -> None:
    """The section with the steps, or the SOP holding it: never the Purpose alone."""
    result = answerer.ask(question)
    assert not result.refused
    assert "1. Send operators to the local control panels of the high-lift pumps and the chlorinators." in [
        step.text for step in result.steps
    ]
    assert shown(answerer, question) in (
        "4.7 Total loss of SCADA",
        "4. Procedures",
        "SOP-SCADA-002 HMI Login and Recovery",
    )


@pytest.mark.parametrize(
    "question",
    [
        "walk me through the whole chlorine container change, from the start",
        "How do I change an empty chlorine ton container?",
        "new guy here - what's the full process for swapping a chlorine cylinder on bank A?",
    ],
)
def test_the_whole_job_gets_the_procedure_with_all_its_parts(answerer: Answerer, question: str) -> None:
    """All of the procedure's parts, first step to last, in order: the procedure itself or the SOP holding it
    (the fitted choice prefers a complete answer to a tight one), never one part of it."""
    result = answerer.ask(question)
    assert shown(answerer, question) in ("6. Procedure", "SOP-CL-004 Chlorine Ton Container Change")
    texts = [step.text for step in result.steps]
    first = texts.index("1. Tell the control room (ext. 2100) that a container change on bank A is starting.")
    assert first < texts.index("2. Open VLV-4501-A and confirm the feed rate on the HMI.")


@pytest.mark.parametrize(
    "question",
    [
        "the regulator gauge VR-451 won't go to zero after I closed the container valve, what now?",
        "how long do I wait for VR-451 to read zero when isolating the empty bank",
    ],
)
def test_a_question_about_one_step_gets_that_part(answerer: Answerer, question: str) -> None:
    result = answerer.ask(question)
    assert not result.refused
    shown_text = "\n".join(step.text for step in result.steps)
    assert "VR-451" in shown_text
    assert "Roll the full container into place" not in shown_text  # not the whole procedure


SECOND_STAGE = "SOP-CL-001 Chlorine Gas Leak Response › 6. Procedure › 6.3 Second-stage leak alarm"


@pytest.mark.parametrize(
    "question",
    [
        "ALM-CL2-LEAK-02 just came in, what do I do?",
        "alm-cl2-leak-02 alarm on the scada, what are the steps",
    ],
)
def test_an_alarm_guide_points_to_the_sop_that_holds_the_steps(answerer: Answerer, question: str) -> None:
    """The SOP section the guide points to is shown (alone, or whole within the procedure holding it), or named on
    the first screen beside the guide's row (which itself says 'See SOP-CL-001 section 6.3'), and then the choice
    is not badged as sure."""
    result = answerer.ask(question)
    assert not result.refused
    shown_first = (result.sections[0].path, result.sections[0].section)
    named = [(a.path, a.section) for a in result.alternatives]
    pointed = [
        (path, section)
        for path, section in [shown_first, *named]
        if path.endswith("SOP-CL-001.md") and is_within(SECOND_STAGE, section)
    ]
    assert pointed, (shown_first, named)
    if shown_first not in pointed:
        assert result.confidence != "certain"  # the guide's row is never badged as the sure answer


def test_every_answer_says_how_sure_the_choice_is(answerer: Answerer) -> None:
    result = answerer.ask("How do I get my HMI account back after too many wrong passwords?")
    assert result.confidence in ("certain", "close", "uncertain")
    assert result.choice_probability is not None and 0 < result.choice_probability <= 1
    if result.confidence == "close":
        assert result.alternatives, "a close call names the rival"
    assert all(0 <= a.score <= 1 for a in result.alternatives)


def test_the_shipped_models_match_the_features_this_version_computes() -> None:
    ranker = default_ranker()
    assert ranker.weights.shape == (len(model_features(ranker.vocabulary)),)
    assert 0 < ranker.close_ratio <= 1 and 0 < ranker.certain_probability <= 1
    assert default_reading().vocabulary


def test_a_ranker_fitted_on_other_features_is_refused(tmp_path: Path) -> None:
    data = json.loads(DEFAULT_MODEL.read_text())
    data["features"] = data["features"][:-1]
    bad = tmp_path / "ranker.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ApplianceError, match="other features"):
        load_ranker(bad)
    with pytest.raises(ApplianceError, match="cannot be read"):
        load_ranker(tmp_path / "missing.json")


def test_a_question_reading_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    from appliance.answer.question import FITTED

    data = json.loads(FITTED.read_text())
    data["procedure"]["coef"] = data["procedure"]["coef"][:-1]
    bad = tmp_path / "reading.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ApplianceError, match="coefficients of another size"):
        load_reading(bad)


@pytest.mark.parametrize(
    ("question", "procedure"),
    [
        ("How do I change a chlorine ton container?", True),
        ("how do i chnage a chlorine ton container", True),
        ("HOW DO I CHANGE A CHLORINE TON CONTAINER?", True),
        ("night shift, bank A is empty. how do I change the chlorine container?", True),
        ("walk me through swapping the chlorine cylinder", True),
        ("What is the free chlorine residual target leaving the plant?", False),
        ("Who do I call if the chlorine leak is bigger than we can handle?", False),
        ("Why do we keep the liquid valve closed on the ton containers?", False),
    ],
)
def test_the_question_is_read_the_same_however_it_is_typed(question: str, procedure: bool) -> None:
    read = read_question(question, question, question, np.zeros(384, dtype=np.float32))
    assert (read.kind == "procedure") is procedure, (read.kind, read.procedure, read.whole)


def test_a_reading_fitted_on_typed_variants_gives_each_the_labels_of_its_question() -> None:
    """scripts/fit_choice.py --reading-variants (measured, not adopted): each variant is read as the appliance reads
    a question, and keeps its question's labels."""
    question = {
        "set": "train",
        "id": "q-1",
        "question": "How do I restart the high-lift pump after a trip?",
        "searched": "How do I restart the high-lift pump after a trip?",
        "regex_kind": "procedure",
        "kind": "procedure",
        "scope": "whole",
        "answerable": True,
    }
    variants = reading_variants(question)
    assert len(variants) >= 5
    assert {v["searched"] for v in variants}.isdisjoint({question["searched"]})
    for variant in variants:
        assert (variant["kind"], variant["scope"], variant["id"]) == ("procedure", "whole", "q-1")
        assert variant["regex_kind"] == question_kind(variant["searched"])


def test_heading_words_are_matched_without_numbers_or_case() -> None:
    assert heading_words("6.2 Isolate the Empty Bank") == heading_words("isolate empty banks")
    assert "6" not in heading_words("6. Procedure")
    assert FEATURES[0].startswith("fact_x_")


# --- what a procedure shows: the shortest section holding most of the probability ---------------------------

PROCEDURE = ("sop.md", "7. Procedure")
REGIONS = [
    PROCEDURE,
    ("sop.md", "7. Procedure › 7.3 Connect"),
    ("sop.md", "7. Procedure › 7.4 Open"),
    ("sop.md", "1. Purpose"),
]
WORDS = [400, 120, 110, 60]


def test_a_procedure_whose_parts_share_the_probability_is_shown_whole() -> None:
    # 7.3 and 7.4 are likelier than anything else, but neither alone holds the mass: the procedure holding them does.
    probabilities = [0.05, 0.3, 0.3, 0.35]
    assert shown_section(REGIONS, WORDS, probabilities, 0.45, 1000) == 0
    assert mass_inside(REGIONS, probabilities, 0) == pytest.approx(0.65)


def test_a_part_the_ranker_is_sure_of_is_shown_alone() -> None:
    probabilities = [0.1, 0.7, 0.1, 0.1]
    assert shown_section(REGIONS, WORDS, probabilities, 0.45, 1000) == 1


def test_a_section_too_long_to_show_whole_is_never_picked_for_its_mass() -> None:
    probabilities = [0.05, 0.3, 0.3, 0.35]
    assert shown_section(REGIONS, WORDS, probabilities, 0.45, 300) is None  # the caller keeps the likeliest


def test_a_section_of_another_document_with_the_same_heading_holds_nothing_of_this_one() -> None:
    regions = [("a.md", "Mitigation"), ("b.md", "Mitigation"), ("b.md", "")]
    assert mass_inside(regions, [0.4, 0.3, 0.3], 2) == pytest.approx(0.6)
    assert mass_inside(regions, [0.4, 0.3, 0.3], 0) == pytest.approx(0.4)


def test_the_shipped_ranker_says_how_much_a_shown_procedure_holds() -> None:
    ranker = default_ranker()
    assert ranker.shown_mass is None or 0.0 < ranker.shown_mass < 1.0
    assert ranker.shown_whole_words == Settings().answer.max_procedure_words
