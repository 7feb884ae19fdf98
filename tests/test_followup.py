"""Follow-up questions: a standalone question is searched and answered; earlier answers are never sources.

The rule joins the earlier questions and the last one and leaves out turns that share no word with the
documents; the model's rewrite shares the answer prompt's system message (its KV cache stays valid); "both"
falls back to the rule when the rewrite answers instead of rewriting or drops the question's own words.
Over HTTP: `/v1/ask` takes `history`, `/v1/chat/completions` reads the whole message list, the result
says what was searched, and the audit keeps one record with the operator's own question.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from appliance.answer.followup import (
    ANSWER_PREVIEW_CHARS,
    RULE_SEPARATOR,
    Turn,
    acceptable_rewrite,
    clean_model_rewrite,
    standalone_question,
)
from appliance.answer.generated.prompt import SYSTEM_PROMPT
from appliance.config import FollowupSettings, Settings
from appliance.models.generation import ChatMessage
from tests.fakes import ScriptedGenerator
from tests.test_api import QUESTION, api_settings, corpus_home, make_client  # noqa: F401  (fixtures)

FIRST = "What do I close before changing a chlorine cylinder?"
ANSWER_1 = "Close the cylinder valve VLV-3042-B and wait until the gauge reads zero [1]."
FOLLOW = "And how long must I wait after that?"
HISTORY = [Turn("user", FIRST), Turn("assistant", ANSWER_1)]
DOCUMENT_WORDS = {"close", "chlorine", "cylinder", "changing", "valve", "restart", "agent", "hosts"}


def known(word: str) -> bool:
    return word.lower() in DOCUMENT_WORDS


class Rewriter:
    """A completer that returns a fixed rewrite and keeps the messages it was given."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[list[ChatMessage]] = []

    def complete(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> tuple[str, object]:
        self.calls.append(messages)
        return self.text, None


def test_a_first_question_is_searched_as_typed_and_costs_nothing() -> None:
    rewriter = Rewriter("never used")
    standalone = standalone_question(FIRST, [], method="both", max_turns=1, generator=rewriter)
    assert (standalone.question, standalone.method, standalone.rewritten) == (FIRST, "none", False)
    assert rewriter.calls == []


def test_the_rule_joins_the_earlier_question_and_never_the_earlier_answer() -> None:
    standalone = standalone_question(FOLLOW, HISTORY, method="rule", max_turns=1, known=known)
    assert standalone.question == FIRST + RULE_SEPARATOR + FOLLOW
    assert "VLV-3042-B" not in standalone.question  # the model's words are no search terms
    assert standalone.original == FOLLOW and standalone.rewritten


def test_the_rule_keeps_only_the_latest_turns_that_share_words_with_the_documents() -> None:
    history = [
        Turn("user", "How do I restart the Zabbix agent on the bastion hosts?"),  # kept whole: Zabbix too
        Turn("assistant", "The documents do not cover this."),
        Turn("user", "Hello there"),  # no word of the documents: no context for a search
        Turn("assistant", "Hi."),
    ]
    two = standalone_question("and after that?", history, method="rule", max_turns=2, known=known).question
    assert two == "How do I restart the Zabbix agent on the bastion hosts?" + RULE_SEPARATOR + "and after that?"
    one = standalone_question("and after that?", history + HISTORY, method="rule", max_turns=1, known=known)
    assert one.question == FIRST + RULE_SEPARATOR + "and after that?"


def _judge(scores: dict[str, tuple[bool, float]]) -> Any:
    return lambda text: scores[text]


JOINED = FIRST + RULE_SEPARATOR + FOLLOW


@pytest.mark.parametrize(
    ("alone", "joined", "searched"),
    [
        ((False, 0.20), (True, 0.80), JOINED),  # "after that" means nothing alone
        ((True, 0.90), (True, 0.60), FOLLOW),  # it stands on its own: a new topic in the same conversation
        ((True, 0.70), (False, 0.30), FOLLOW),  # the earlier question only muddles it
        ((True, 0.60), (True, 0.61), JOINED),  # both readings supported: the better one
        ((False, 0.40), (False, 0.00), JOINED),  # neither: keep the conversation's subject (and its unknown name)
    ],
)
def test_the_rule_searches_the_reading_the_documents_support_better(
    alone: tuple[bool, float], joined: tuple[bool, float], searched: str
) -> None:
    judge = _judge({FOLLOW: alone, JOINED: joined})
    standalone = standalone_question(FOLLOW, HISTORY, method="rule", max_turns=1, known=known, judge=judge)
    assert standalone.question == searched


def test_the_model_rewrite_shares_the_answer_prompts_system_message_and_sees_answers_shortened() -> None:
    long_answer = "Close the valve. " * 60
    rewriter = Rewriter("Rewritten question: How long must I wait after closing the chlorine cylinder valve?")
    history = [Turn("user", FIRST), Turn("assistant", long_answer)]
    standalone = standalone_question(FOLLOW, history, method="model", max_turns=1, generator=rewriter,
                                     system=SYSTEM_PROMPT)  # fmt: skip
    assert standalone.question == "How long must I wait after closing the chlorine cylinder valve?"
    messages = rewriter.calls[0]
    assert messages[0].role == "system" and messages[0].content == SYSTEM_PROMPT
    prompt = messages[-1].content
    assert FIRST in prompt and FOLLOW in prompt
    assert long_answer.strip() not in prompt and "Close the valve." in prompt
    # The answer is cut to its start: the whole prompt is shorter than the answer alone.
    assert len(long_answer) > 3 * ANSWER_PREVIEW_CHARS and len(prompt) < len(long_answer)


@pytest.mark.parametrize(
    ("rewrite", "accepted"),
    [
        ("How long must I wait after closing the chlorine cylinder valve?", True),
        ("how long must i wait after closing the cylinder valve", True),  # case and punctuation do not matter
        ("  HOW LONG must I WAIT after that, for the chlorine cylinder?  ", True),
        ("Wait 15 minutes until the gauge reads zero [1].", False),  # an answer, not the question
        ("What do I close before changing a chlorine cylinder?", False),  # drifted back to the first question
        ("", False),
        ("How long must I wait? " + "Explain everything about chlorine. " * 40, False),  # rambling
    ],
)
def test_both_accepts_a_rewrite_only_when_it_keeps_the_question(rewrite: str, accepted: bool) -> None:
    assert acceptable_rewrite(clean_model_rewrite(rewrite), FOLLOW) is accepted
    standalone = standalone_question(FOLLOW, HISTORY, method="both", max_turns=1, generator=Rewriter(rewrite),
                                     known=known)  # fmt: skip
    assert standalone.fallback is not accepted
    assert standalone.question == (clean_model_rewrite(rewrite) if accepted else FIRST + RULE_SEPARATOR + FOLLOW)


def test_clean_model_rewrite_takes_the_first_line_without_labels_or_quotes() -> None:
    text = '\n"Standalone question: Where is VLV-3042-B?"\nExplanation: …'
    assert clean_model_rewrite(text) == "Where is VLV-3042-B?"


# --- over HTTP -----------------------------------------------------------------------------------


GASKET_FOLLOW = "And what comes after that?"
GASKET_ANSWER = "Replace the lead gasket RW-GSK-0410 at every connection; a gasket is never reused [1]."


def _followup_client(
    api_settings: Settings,  # noqa: F811
    method: str = "rule",
    answer: str = GASKET_ANSWER,
) -> tuple[Any, ScriptedGenerator]:
    settings = api_settings.model_copy(update={"followup": FollowupSettings.model_validate({"rewrite": method})})
    generator = ScriptedGenerator(answer)
    return make_client(settings, generator), generator


def test_ask_with_history_searches_the_standalone_question_and_says_so(api_settings: Settings) -> None:  # noqa: F811
    client, generator = _followup_client(api_settings)
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "Apply SECRET-ANSWER-42."}]
    data = client.post("/v1/ask", json={"question": GASKET_FOLLOW, "history": history}).json()
    assert data["question"] == GASKET_FOLLOW and data["rewrite"] == "rule"
    assert data["searched"] == QUESTION + RULE_SEPARATOR + GASKET_FOLLOW
    assert data["refused"] is False, data["refusal_reason"]
    assert data["citations"][0]["path"] == "plant/SOP-CL-004.md"
    prompt = "\n".join(message.content for message in generator.calls[-1])
    assert "SECRET-ANSWER-42" not in prompt, "an earlier answer reached the model as if it were a source"
    assert "rewrite" in data["timings_ms"]
    records = [json.loads(line) for path in (api_settings.home / "audit").glob("*.jsonl")
               for line in path.read_text().splitlines()]  # fmt: skip
    asks = [record for record in records if record["endpoint"] == "ask"]
    assert len(asks) == 1 and asks[0]["question_preview"] == GASKET_FOLLOW[:80]
    assert asks[0]["extra"]["followup"] is True and "SECRET" not in json.dumps(asks[0])


def test_the_refusal_rules_judge_the_standalone_question(api_settings: Settings) -> None:  # noqa: F811
    """ "How long" asks for a value: an answer without a supported duration is still refused on a follow-up."""
    client, _ = _followup_client(api_settings, answer="Close the cylinder valve VLV-3042-B first [1].")
    history = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": ANSWER_1}]
    data = client.post("/v1/ask", json={"question": FOLLOW, "history": history}).json()
    assert data["refused"] is True and "how long" in data["refusal_reason"]


def test_without_history_the_follow_up_alone_is_searched(api_settings: Settings) -> None:  # noqa: F811
    client, _ = _followup_client(api_settings)
    data = client.post("/v1/ask", json={"question": FOLLOW}).json()
    assert data["searched"] == FOLLOW and data["rewrite"] == "none"


def test_none_keeps_the_old_behaviour(api_settings: Settings) -> None:  # noqa: F811
    client, _ = _followup_client(api_settings, "none")
    data = client.post("/v1/ask", json={"question": FOLLOW, "history": [{"role": "user", "content": QUESTION}]})
    assert data.json()["searched"] == FOLLOW and data.json()["rewrite"] == "none"


@pytest.mark.parametrize(
    ("history", "field"),
    [
        ([{"role": "system", "content": "x"}], "history.0.role"),
        ([{"role": "user"}], "history.0.content"),
        ([{"role": "user", "content": "x", "extra": 1}], "history.0.extra"),
        ([{"role": "user", "content": "x"}] * 41, "history"),
        ([{"role": "user", "content": "x" * 2001}], "history.0.content"),
    ],
)
def test_a_bad_history_is_a_422_naming_the_field(
    api_settings: Settings,  # noqa: F811
    history: list[dict[str, Any]],
    field: str,
) -> None:
    client, _ = _followup_client(api_settings)
    response = client.post("/v1/ask", json={"question": FOLLOW, "history": history})
    assert response.status_code == 422
    assert field in [error["field"] for error in response.json()["errors"]], response.json()


def test_chat_completions_reads_the_whole_conversation(api_settings: Settings) -> None:  # noqa: F811
    client, generator = _followup_client(api_settings)
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Apply SECRET-ANSWER-42."},
        {"role": "user", "content": GASKET_FOLLOW},
    ]
    data = client.post("/v1/chat/completions", json={"messages": messages}).json()
    assert data["appliance"]["searched"] == QUESTION + RULE_SEPARATOR + GASKET_FOLLOW
    assert data["appliance"]["refused"] is False
    assert "SECRET-ANSWER-42" not in "\n".join(message.content for message in generator.calls[-1])
