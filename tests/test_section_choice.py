"""Which section a quoted answer shows: graded signals, the whole procedure, and the same choice for the
same question however an operator types it."""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance.answer.answerer import Answerer
from appliance.answer.quoted.choice import structure_of
from appliance.answer.quoted.sections import document_sections
from appliance.config import Settings
from appliance.ingest.pipeline import ingest
from appliance.text.procedures import (
    front_matter_share,
    intent_affinity,
    is_generic_procedure,
    is_numbered_step_heading,
)

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


@pytest.fixture(scope="module")
def answerer(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Answerer:
    home = tmp_path_factory.mktemp("home")
    settings = Settings(home=home, models_dir=models_dir)
    root = tmp_path_factory.mktemp("docs") / "ops"
    root.mkdir()
    (root / "KubeJobFailed.md").write_text(RUNBOOK)
    (root / "SOP-SCADA-002.md").write_text(HMI)
    ingest(settings, [root])
    return Answerer(settings)


def shown_section(answerer: Answerer, question: str) -> str:
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
    assert shown_section(answerer, question) == "4.3 Locked account"


@pytest.mark.parametrize(
    ("question", "section"),
    [
        ("KubeJobFailed is firing, how do I fix it?", "Mitigation"),
        ("kubejobfailed firing - how do i resolve it", "Mitigation"),
        ("a job keeps failing in the cluster, how do I find out why?", "Diagnosis"),
        ("KubeJobFailed: how do I figure out what went wrong?", "Diagnosis"),
    ],
)
def test_a_runbook_question_gets_the_section_its_intent_asks_for(
    answerer: Answerer, question: str, section: str
) -> None:
    assert shown_section(answerer, question) == section


def test_front_matter_is_never_shown_as_the_procedure(answerer: Answerer) -> None:
    result = answerer.ask("what do we do when all the SCADA screens go dead?")
    assert not result.refused
    assert all("Purpose" not in step.section for step in result.steps)
    assert result.sections[0].section.endswith("4.7 Total loss of SCADA")


def test_the_structure_of_a_section_is_the_share_of_what_an_operator_acts_on(answerer: Answerer) -> None:
    catalog = answerer.searcher.catalog
    chunks = catalog.chunks_of_documents(["ops/SOP-SCADA-002.md"])["ops/SOP-SCADA-002.md"]
    sections = document_sections(chunks)
    purpose = sections["SOP-SCADA-002 HMI Login and Recovery › 1. Purpose"]
    locked = sections["SOP-SCADA-002 HMI Login and Recovery › 4. Procedures › 4.3 Locked account"]
    assert structure_of(purpose) == 0.0
    assert structure_of(locked) == pytest.approx(3 / 4)  # three steps and the sentence before them


@pytest.mark.parametrize(
    ("heading", "share"),
    [
        ("1. Purpose", 1.0),
        ("References", 1.0),
        ("Meaning", 1.0),
        ("6.2 Isolate the empty bank", 0.0),
        ("Mitigation", 0.0),
    ],
)
def test_front_matter_headings(heading: str, share: float) -> None:
    assert front_matter_share(heading) == share


@pytest.mark.parametrize(
    ("heading", "generic"),
    [
        ("6. Procedure", True),
        ("Mitigation", True),
        ("Operator response", True),
        ("4.3 Locked account", False),
        ("Response to ALM-CL2-LEAK-01", False),
    ],
)
def test_generic_procedure_headings_name_no_subject_of_their_own(heading: str, generic: bool) -> None:
    assert is_generic_procedure(heading) is generic


def test_a_question_leans_toward_the_runbook_section_of_its_intent() -> None:
    assert intent_affinity("how do I fix it", "Mitigation") == 1.0
    assert intent_affinity("how do i resolve this?", "Resolution") == 1.0
    assert intent_affinity("how do I find out why it fails", "Diagnosis") == 1.0
    assert intent_affinity("how do I fix it", "Diagnosis") == 0.0
    assert intent_affinity("what is it", "Mitigation") == 0.0


def test_steps_numbered_as_headings_are_told_from_numbered_sections() -> None:
    assert is_numbered_step_heading("1. Check the triage dashboard")
    assert is_numbered_step_heading("Step 2 Drill down")
    assert not is_numbered_step_heading("6.1 Prepare")
    assert not is_numbered_step_heading("Mitigation")


@pytest.mark.parametrize("question", ["KubeJobFailed is firing", "kubejobfailed firing in prod, what now?"])
def test_an_alert_without_an_intent_gets_the_runbooks_whole_response(answerer: Answerer, question: str) -> None:
    result = answerer.ask(question)
    assert not result.refused
    assert [s.section.split(" › ")[-1] for s in result.sections] == ["Diagnosis", "Mitigation"]
    assert [step.n for step in result.steps if step.kind == "heading"] == [1, 2]
    assert not any(a.section.endswith(("Diagnosis", "Mitigation")) for a in result.alternatives)
