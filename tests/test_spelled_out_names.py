"""An alert runbook's title is its CamelCase name (NoReadyVirtController, HAControlPlaneDown): the section choice
reads it by its words, as an operator does, on both sides (the question's words and the candidate's label),
so a question that says "none of the virt controller pods are ready" meets the runbook named for it."""

from __future__ import annotations

import pytest

from appliance.answer.quoted.features import question_stems
from appliance.text.stems import stem
from appliance.text.wording import spelled_out


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("NoReadyVirtController", "No Ready Virt Controller"),
        ("HAControlPlaneDown › Diagnosis", "HA Control Plane Down › Diagnosis"),
        ("PrometheusTSDBReloadsFailing", "Prometheus TSDB Reloads Failing"),
        ("KubemacpoolDown firing on node-3", "Kubemacpool Down firing on node-3"),
    ],
)
def test_camel_case_names_are_read_as_their_words(written: str, read: str) -> None:
    assert spelled_out(written) == read


@pytest.mark.parametrize(
    "unchanged",
    [
        "gitlab-ctl reconfigure",  # a command: no internal capital
        "SOP-CL-004 section 6.2",  # a document number
        "kube_pod_info",  # a metric
        "Isolate the ton container",  # ordinary words, capital first
        "HOW DO I RESTART THE PUMP",  # a question typed in capitals
    ],
)
def test_text_without_camel_case_is_left_as_written(unchanged: str) -> None:
    assert spelled_out(unchanged) == unchanged


def test_a_pasted_alert_name_and_a_described_one_share_their_words() -> None:
    pasted = set(question_stems("NoReadyVirtController is firing"))
    described = set(question_stems("none of the virt controller pods are ready"))
    assert {stem("ready"), stem("virt"), stem("controller")} <= pasted & described
