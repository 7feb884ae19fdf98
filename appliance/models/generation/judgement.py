"""Yes/no judgements scored in one prefill: how much more likely the model's first answer token is "yes"
than "no", with no decoding at all.

A judge asks a chat model a question whose answer is yes or no (does this section answer that question?).
Sampling the answer would throw away the model's confidence; reading the logits at the position where the
answer starts keeps it: log-odds = log Σ P(yes-token) − log Σ P(no-token), summed over the spellings a
tokenizer has a single token for ("Yes", "yes", " Yes", …). The softmax's normalizer cancels in the
difference, so raw logits suffice.

Backends: `LlamaCppGenerator.yes_no_log_odds` (local.py: one prefill per prompt, the prompts' shared prefix
evaluated once) and `OpenAICompatibleGenerator.yes_no_log_odds` (remote.py: `logprobs`/`top_logprobs` with
`max_tokens: 1`). A backend or server that cannot give them raises `JudgementUnsupported`: a judge then
counts itself absent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from appliance.errors import GeneratorError
from appliance.models.generation.base import ChatMessage

YES = ("Yes", "yes", "YES", " Yes", " yes")
NO = ("No", "no", "NO", " No", " no")


class JudgementUnsupported(GeneratorError):
    """The generator cannot score a yes/no answer (no logits or log-probabilities to read)."""


@runtime_checkable
class YesNoJudge(Protocol):
    """A generator that scores yes/no prompts (both backends implement it)."""

    model_id: str

    def yes_no_log_odds(self, prompts: Sequence[list[ChatMessage]]) -> list[float]: ...


def answer_token_ids(tokenize: Callable[[str], list[int]]) -> tuple[list[int], list[int]]:
    """The single-token spellings of yes and of no in a tokenizer (`tokenize`: text → ids, no BOS).

    A spelling that takes two tokens ("Y" + "es") is left out: its first token is no answer by itself."""
    yes = sorted({ids[0] for ids in map(tokenize, YES) if len(ids) == 1})
    no = sorted({ids[0] for ids in map(tokenize, NO) if len(ids) == 1})
    if not yes or not no:
        raise JudgementUnsupported("the model's tokenizer has no single token for yes or for no")
    return yes, no


def log_odds_from_logits(logits: np.ndarray, yes: Sequence[int], no: Sequence[int]) -> float:
    """log Σ exp(logit of a yes token) − log Σ exp(logit of a no token)."""
    return _logsumexp(logits[list(yes)]) - _logsumexp(logits[list(no)])


def log_probability(logits: np.ndarray, token: int) -> float:
    """log P(token) under the softmax of `logits` (a reply's likelihood, token by token)."""
    return float(logits[token]) - _logsumexp(logits)


def log_odds_from_top(top: Iterable[tuple[str, float]]) -> float:
    """The log-odds from a server's top log-probabilities of the first token ((token text, logprob), …).

    A side missing from the list is less likely than the least likely listed token: that bound stands in for
    it, so the figure understates rather than invents confidence (0 when neither side is listed)."""
    listed = list(top)
    if not listed:
        raise JudgementUnsupported("the server listed no log-probabilities for the first answer token")
    yes = [lp for token, lp in listed if token.strip().lower() == "yes"]
    no = [lp for token, lp in listed if token.strip().lower() == "no"]
    if not yes and not no:
        return 0.0
    floor = min(lp for _, lp in listed)
    yes_lp = _logsumexp(np.asarray(yes)) if yes else floor
    no_lp = _logsumexp(np.asarray(no)) if no else floor
    return float(yes_lp - no_lp)


def top_logprobs_of(response: Mapping[str, object]) -> list[tuple[str, float]]:
    """(token, logprob) of the first generated token in an OpenAI chat completion with `logprobs: true`."""
    try:
        choice = response["choices"][0]  # type: ignore[index]
        content = choice["logprobs"]["content"]
        first = content[0]
        listed = first.get("top_logprobs") or [first]
        return [(str(entry["token"]), float(entry["logprob"])) for entry in listed]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise JudgementUnsupported(
            "the server's answer has no log-probabilities (choices[0].logprobs.content): it does not support "
            "`logprobs` for chat completions"
        ) from exc


def _logsumexp(values: np.ndarray) -> float:
    top = float(np.max(values))
    return top + math.log(float(np.sum(np.exp(values - top))))
