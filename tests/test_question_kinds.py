"""What a question asks for decides the shape of a quoted answer: a procedure shown whole, or the
lines that state a value or a fact. The wording varies; the kind must not."""

from __future__ import annotations

import pytest

from appliance.text.questions import question_kind

PROCEDURES = [
    "How do I change a chlorine ton container?",
    "walk me through a filter backwash",
    "The HIHI turbidity alarm is in. What's the response?",
    "the hihi turbidity alarm is in. whats the response",
    "THE HIHI TURBIDITY ALARM IS IN. WHAT'S THE RESPONSE?",
    "what is the shutdown sequence of pump P-101?",
    "what's the lockout/tagout sequence I have to follow to isolate the motor?",
    "What are my options to free up space on the volume?",
    "What's the proper way to hand over my shift?",
    "so, what is the right way to restart the chlorinator?",
]
VALUES = [
    "What is the response time of the API?",
    "how many minutes does the backwash take?",
    "What percentage of chlorine is left when the container counts as empty?",
]
FACTS = [
    "What is the high level alarm of the clearwell?",
    "Which valve isolates bank B?",
    "Who approves a hot work permit?",
]


@pytest.mark.parametrize("question", PROCEDURES)
def test_a_course_of_action_asked_for_is_a_procedure(question: str) -> None:
    assert question_kind(question) == "procedure"


@pytest.mark.parametrize("question", VALUES)
def test_a_quantity_asked_for_is_a_value(question: str) -> None:
    assert question_kind(question) == "value"


@pytest.mark.parametrize("question", FACTS)
def test_a_thing_asked_about_is_a_fact(question: str) -> None:
    assert question_kind(question) == "fact"
