"""A follow-up question made standalone, so that retrieval, the evidence decision and every refusal rule
work on what the operator means ("and how long must I wait after that?" means nothing on its own).

First, for every method but none, a fitted decision (followup_model.py) asks whether the question needs the
conversation at all: a question that makes sense alone ("What is the free chlorine residual target leaving
the plant?") is searched and answered as asked, whatever came before; only an elliptical one ("and for bank
B?", "where do I write that down?") is read with the conversation, by the method of setting
`followup.rewrite`:
  none   the last question alone, always (what the appliance did before conversations)
  rule   the earlier question(s) of the conversation, then the last one, as one text ("X → Y"). Cheap: the
         decision's two searches. Earlier *answers* are left out: they are the model's words, never
         evidence, and a wrong answer must not steer the next search. An earlier turn none of whose words
         the documents hold ("Hello") gives no context and is left out too; one that does is kept whole, so
         a name the documents never mention still makes a follow-up that needs it a refusal.
  model  the local model rewrites the last question into a standalone one from the conversation (the
         earlier answers, shortened, help it resolve "that"); costs a short generation per elliptical
         follow-up.
  both   the model's rewrite, checked: when it comes back empty, rambling, or without the last
         question's own words, the rule's text is used instead.
Without a reader (no index to ask) the decision cannot be made and an elliptical reading is assumed.
A first question (no earlier turn) is never rewritten and costs nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from appliance.answer.followup_model import FollowupModel, Reader, fitted_model, signals
from appliance.answer.results import ms_since
from appliance.models.generation import ChatMessage
from appliance.text.stopwords import STOPWORDS
from appliance.text.tokens import WORD

RewriteMethod = Literal["none", "rule", "model", "both"]
REWRITE_METHODS: tuple[RewriteMethod, ...] = ("none", "rule", "model", "both")
# Tokens the model may spend on a rewrite: a question, not an answer.
REWRITE_MAX_TOKENS = 64
# Joins the earlier questions and the last one: punctuation, so it adds no word to the search.
RULE_SEPARATOR = " → "
# How much of each earlier answer the model sees (its start says what it was about).
ANSWER_PREVIEW_CHARS = 300


@dataclass(frozen=True)
class Turn:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class Standalone:
    question: str  # what is searched and answered
    original: str  # what the operator typed
    method: RewriteMethod  # the method in force for this follow-up ("none" for a first question)
    ms: float = 0.0  # time the decision and the rewrite took
    fallback: bool = False  # "both": the model's rewrite was refused and the rule's text used
    # The fitted decision's probability that the question needs the conversation (None: not decided).
    needs_conversation: float | None = None

    @property
    def rewritten(self) -> bool:
        return self.question != self.original


class Completer(Protocol):
    def complete(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> tuple[str, object]: ...


def content_words(text: str) -> set[str]:
    return {word.lower() for word in WORD.findall(text) if word.lower() not in STOPWORDS}


KnownWord = Callable[[str], bool]


def earlier_questions(history: Sequence[Turn], max_turns: int, known: KnownWord | None = None) -> list[str]:
    """The operator's earlier questions, oldest first, at most `max_turns` of the latest; with `known`, only
    those holding a word the documents hold."""
    questions = [turn.content.strip() for turn in history if turn.role == "user" and turn.content.strip()]
    if known is not None:
        questions = [q for q in questions if any(known(word) for word in content_words(q))]
    return questions[-max_turns:] if max_turns > 0 else []


def rule_rewrite(question: str, history: Sequence[Turn], max_turns: int = 1, known: KnownWord | None = None) -> str:
    """The earlier questions, then this one ("X → Y"): every word the operator typed, none the model wrote."""
    earlier = earlier_questions(history, max_turns, known)
    return RULE_SEPARATOR.join([*earlier, question.strip()]) if earlier else question.strip()


REWRITE_INSTRUCTION = """Do not answer anything. Rewrite the operator's LAST question so that it can be \
understood without the conversation: replace words like "it", "that", "this", "they", "there" and "the same" \
with what they refer to, and add the subject when it is missing. Keep the operator's own words. If the last \
question is already clear on its own, repeat it unchanged. Reply with the rewritten question only, on one line."""


def rewrite_messages(question: str, history: Sequence[Turn], max_turns: int, system: str) -> list[ChatMessage]:
    """The rewrite prompt. Its system message is the answer prompt's own, so the generator's cached system
    prefix stays valid for the answer that follows (a second system prompt would evict it)."""
    lines = []
    for turn in list(history)[-2 * max_turns :]:
        text = " ".join(turn.content.split())
        if turn.role == "assistant":
            text = text[:ANSWER_PREVIEW_CHARS] + ("…" if len(text) > ANSWER_PREVIEW_CHARS else "")
            lines.append(f"Assistant: {text}")
        else:
            lines.append(f"Operator: {text}")
    conversation = "\n".join(lines)
    user = (
        f"{REWRITE_INSTRUCTION}\n\nConversation:\n{conversation}\n\n"
        f"Last question: {question.strip()}\n\nRewritten question:"
    )
    return [ChatMessage("system", system), ChatMessage("user", user)]


def clean_model_rewrite(text: str) -> str:
    """The first non-empty line, without a label or quotes the model may add."""
    line = next((line.strip() for line in text.strip().splitlines() if line.strip()), "")
    line = line.strip("\"“”'` ")
    line = re.sub(r"^(rewritten |standalone )?question\s*:\s*", "", line, flags=re.I)
    return line.strip("\"“”'` ")


def acceptable_rewrite(rewrite: str, question: str) -> bool:
    """A rewrite worth searching: not empty, not an essay, and sharing the last question's content words
    (a model that answered instead of rewriting, or drifted to an earlier topic, fails this)."""
    if not rewrite or len(rewrite) > 3 * len(question) + 200:
        return False
    own = content_words(question)
    if not own:
        return True  # "and then?": nothing of its own to keep
    kept = len(own & content_words(rewrite)) / len(own)
    return kept >= 0.5


def standalone_question(
    question: str,
    history: Sequence[Turn],
    *,
    method: RewriteMethod,
    max_turns: int,
    generator: Completer | None = None,
    system: str = "",
    known: KnownWord | None = None,
    reader: Reader | None = None,
    model: FollowupModel | None = None,
) -> Standalone:
    """The question to search and answer. `reader` (the index, followup_model.SearchReader) lets the fitted
    decision (`model`, the shipped one by default) keep a question that makes sense alone as asked; `known`
    (is this word in the documents?) drops earlier turns that give no context; `generator` is used only for
    "model" and "both", and only for a follow-up that needs the conversation."""
    question = question.strip()
    if method == "none" or not earlier_questions(history, max_turns or 1):
        return Standalone(question, question, "none")
    started = time.perf_counter()
    rule = rule_rewrite(question, history, max_turns, known)
    probability = None
    if reader is not None and rule != question:
        decision = model or fitted_model()
        previous = earlier_questions(history, max_turns, known)[-1]
        probability = decision.probability(signals(question, previous, rule, reader, decision.scales))
        if probability < decision.threshold:
            return Standalone(question, question, method, ms_since(started), needs_conversation=probability)
    if method == "rule" or generator is None:
        return Standalone(rule, question, "rule", ms_since(started), needs_conversation=probability)
    text, _ = generator.complete(rewrite_messages(question, history, max_turns, system), max_tokens=REWRITE_MAX_TOKENS)
    rewrite = clean_model_rewrite(text)
    if method == "model":
        return Standalone(rewrite or question, question, "model", ms_since(started), needs_conversation=probability)
    if acceptable_rewrite(rewrite, question):
        return Standalone(rewrite, question, "both", ms_since(started), needs_conversation=probability)
    return Standalone(rule, question, "both", ms_since(started), fallback=True, needs_conversation=probability)
