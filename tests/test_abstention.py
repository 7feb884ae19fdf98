"""Abstention after generation: a question that asks for a value needs a supported sentence that gives one."""

from __future__ import annotations

import pytest

from appliance.answer.generated.abstention import abstention_reason, asked_quantity, gives_value, other_subject_reason
from appliance.answer.generated.citations import parse_citations
from appliance.answer.generated.support import check_support

SOURCE = "KubeCPUOvercommit fires when the cluster cannot tolerate a node failure. Pods then stay Pending."


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("how often does the heartbeat have to check in?", "how often"),
        ("KubeCPUOvercommit - at what overcommit percentage does it fire?", "what overcommit percentage"),
        ("what time of day does the drift check run?", "what time"),
        ("what's the maximum number of volumes I can add?", "what's the maximum"),
        ("what is mon_osd_down_out_interval set to on our clusters?", "set to"),
        ("what should I raise max_shards to?", "raise max_shards to?"),
        ("what are the working hours for escalations?", "what are the working hours"),
        ("what RSS limit does the sidekiq memory killer enforce?", "what RSS limit"),
        ("we got paged: What Phone Number do we call for legal?", "What Phone Number"),
        ("what is the sidekiq RSS limit?", "what is the sidekiq RSS limit"),
    ],
)
def test_questions_that_ask_for_a_value_are_recognised(question: str, asked: str) -> None:
    assert asked_quantity(question) == asked


@pytest.mark.parametrize(
    "question",
    [
        "how do I restart gitaly with gitlab-ctl?",
        "KubeletPlegDurationHigh keeps firing on one node, what's the mitigation?",
        "which configmap holds the KMS connection settings?",
        "sidekiq looks stuck - where does the thread dump end up?",
        "what does the rate limit protect?",
        "what error rate alerts exist for the API?",
        "what should I do when the limit is hit?",
    ],
)
def test_questions_that_ask_for_a_procedure_or_a_name_are_not(question: str) -> None:
    assert asked_quantity(question) is None


def reason_for(question: str, answer: str) -> str | None:
    report = parse_citations(answer, 1)
    return abstention_reason(question, check_support(report.sentences, {1: SOURCE}))


def test_an_invented_value_or_a_neighbouring_fact_does_not_answer_a_value_question() -> None:
    question = "at what overcommit percentage does KubeCPUOvercommit fire?"
    assert reason_for(question, "KubeCPUOvercommit fires at an overcommit of 150% [1].") is not None
    assert reason_for(question, "It fires when the cluster cannot tolerate a node failure [1].") is not None


def test_a_supported_sentence_with_a_number_answers_it_and_procedures_are_never_held_to_it() -> None:
    source_answer = "Pods then stay Pending [1]."
    assert reason_for("what do I check when KubeCPUOvercommit fires?", source_answer) is None
    numbered = "KubeCPUOvercommit fires when the cluster cannot tolerate 1 node failure [1]."
    report = parse_citations(numbered, 1)
    source = {1: "KubeCPUOvercommit fires when the cluster cannot tolerate 1 node failure."}
    assert (
        abstention_reason("how many node failures can the cluster tolerate?", check_support(report.sentences, source))
        is None
    )


SPILL = "Call the State Environmental Emergency line (555-0195) within 1 hour for any spill reaching a storm drain."


def test_a_phone_number_or_an_address_answers_a_value_question_but_a_tag_or_the_questions_own_value_does_not() -> None:
    def reason(question: str, answer: str) -> str | None:
        report = parse_citations(answer, 1)
        return abstention_reason(question, check_support(report.sentences, {1: SPILL}))

    question = "a spill made it into a storm drain - what's the number for the state line?"
    assert reason(question, "The state line for the spill is 555-0195 [1].") is None
    assert reason(question, "Call the State Environmental Emergency line [1].") is not None
    assert gives_value("The API answers on 10.0.4.17.")
    assert not gives_value("Exercise VLV-3042-B as SOP-DST-001 says.")
    assert not gives_value("Call 555-0195.", question="is 555-0195 the state line?")


# --- an answer about a sibling -----------------------------------------------------------------

PS2 = "[1] SOP-PMP-002 Pump Station PS-2 (Hillcrest) Failover\nLead pump starts at 24.0 ft and stops at 32.0 ft."
PS3 = "[2] SOP-PMP-003 Pump Station PS-3 (Oakridge)\nPS-3 runs on tank level from the Oakridge tank."


def test_an_answer_citing_only_a_sibling_of_what_was_asked_is_refused() -> None:
    question = "what are the start and stop setpoints for the PS-3 Oakridge pumps?"
    reason = other_subject_reason(question, cited={1: PS2}, given={1: PS2, 2: PS3})
    assert reason == "the question names PS-3, which the sources the answer cites do not mention: they are about PS-2"


@pytest.mark.parametrize(
    ("question", "cited", "given"),
    [
        # It cites the source that names what was asked.
        ("what are the setpoints for PS-3?", {2: PS3}, {1: PS2, 2: PS3}),
        # No source names it at all: a different spelling, not a different unit (left to the support check).
        ("what are the setpoints for PS-9?", {1: PS2}, {1: PS2, 2: PS3}),
        # It cites nothing: the support check already calls every sentence unsupported.
        ("what are the setpoints for PS-3?", {}, {1: PS2, 2: PS3}),
        # No identifier in the question.
        ("what are the pump setpoints?", {1: PS2}, {1: PS2, 2: PS3}),
    ],
)
def test_an_answer_that_names_what_was_asked_or_cannot_be_compared_stands(
    question: str, cited: dict[int, str], given: dict[int, str]
) -> None:
    assert other_subject_reason(question, cited, given) is None


@pytest.mark.parametrize(
    ("question", "answer", "stands"),
    [
        ("for how many minutes must a target be down before TargetDown fires?", "It fires when up = 0 [1].", False),
        (
            "for how many minutes must a target be down before TargetDown fires?",
            "After 15 minutes of up = 0 [1].",
            True,
        ),
        ("How many MINUTES until TargetDown fires", "It waits 900 seconds [1].", True),
        ("at what percentage does the disk alert fire?", "It fires at 95 [1].", False),
        ("at what percentage does the disk alert fire?", "It fires at 95% [1].", True),
    ],
)
def test_a_value_asked_in_a_unit_is_answered_only_by_a_value_in_that_unit(
    question: str, answer: str, stands: bool
) -> None:
    source = {1: "TargetDown fires when up = 0 for 15 minutes (900 seconds). The disk alert fires at 95%."}
    report = parse_citations(answer, 1)
    assert (abstention_reason(question, check_support(report.sentences, source), source) is None) is stands


GASKETS = {1: "Reconnect the yoke with a new lead gasket, part RW-GSK-0410, at every connection."}


@pytest.mark.parametrize(
    "question",
    [
        "reconnecting VR-451 after a container change - what gasket part number do I use?",
        "What Gasket Part Number do I use when reconnecting the yoke",
        "what's the part number?",
    ],
)
def test_a_part_number_a_given_source_holds_answers_a_question_asking_for_a_number(question: str) -> None:
    def reason(answer: str) -> str | None:
        report = parse_citations(answer, 1)
        return abstention_reason(question, check_support(report.sentences, GASKETS), GASKETS)

    assert reason("Use a new lead gasket, RW-GSK-0410 [1].") is None
    assert reason("Use a new lead gasket [1].") is not None
    assert reason("Use gasket RW-GSK-0999 [1].") is not None


def test_a_word_the_source_holds_does_not_vouch_for_an_invented_part_number_beside_it() -> None:
    question = "what gasket part number do I use?"
    report = parse_citations("Use the on-call gasket RW-GSK-0999 [1].", 1)
    sources = {1: "Ask the on-call lead; reconnect with a new lead gasket, part RW-GSK-0410."}
    assert abstention_reason(question, check_support(report.sentences, sources), sources) is not None
