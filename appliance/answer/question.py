"""The question, read once: every stage of an answer reads this one value.

- `typed`: as the operator typed it; `standalone`: what the conversation made of it (the same text when it
  stands on its own, followup.py); `searched`: what was searched, misspellings corrected (retrieve/spelling.py);
- `kind`: how much of the chosen section is shown: a procedure whole, or the lines that state a value or a fact;
- `procedure`, `whole`: the fitted reading (appliance/answer/fitted/question_reading.json, scripts/fit_choice.py):
  how strongly it asks for something to do, and for the whole job rather than one part ("walk me through it
  from the start" against "what do I do if the pump trips on start"). Two logistic models over the question's
  word unigrams and bigrams (a vocabulary the fit keeps: the n-grams of at least three training questions, so
  a subject's name rarely survives) and the grammar's reading (text/questions.py) as three more inputs; every
  input is weighed by the fit, so no single word decides;
- `quantity`, `unit`: the value asked ("how many minutes"), for the rules that a shown line must state one;
- `terms`: its identifiers, numbers and content words; `vector`: the embedder's unit vector of `searched`.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from appliance.errors import ApplianceError
from appliance.text.questions import QuestionKind, asked_quantity, asked_unit, question_kind
from appliance.text.terms import Terms, extract_terms

FITTED = Path(__file__).resolve().parent / "fitted" / "question_reading.json"
GRAMMAR_KINDS: tuple[QuestionKind, ...] = ("value", "procedure", "fact")


@dataclass(frozen=True)
class Question:
    typed: str
    standalone: str
    searched: str
    kind: QuestionKind
    procedure: float
    whole: float
    quantity: str | None
    unit: str | None
    terms: Terms
    vector: np.ndarray


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def ngrams(text: str) -> set[str]:
    """The question's lower-case words and word pairs, "<s>" marking its start ("<s> how", "walk me")."""
    words = ["<s>", *_WORD.findall(text.lower())]
    return {*words[1:], *(f"{a} {b}" for a, b in itertools.pairwise(words))}


def reading_inputs(text: str, grammar: QuestionKind, vocabulary: Sequence[str]) -> np.ndarray:
    """The reading's inputs: the grammar's kind one-hot, then one column per vocabulary n-gram (1 if present)."""
    present = ngrams(text)
    return np.asarray(
        [
            *(1.0 if grammar == kind else 0.0 for kind in GRAMMAR_KINDS),
            *(1.0 if g in present else 0.0 for g in vocabulary),
        ]
    )


@dataclass(frozen=True)
class QuestionReading:
    """Two logistic models over reading_inputs: P(procedure), P(whole job | procedure)."""

    vocabulary: tuple[str, ...]
    procedure_coef: np.ndarray
    procedure_intercept: float
    whole_coef: np.ndarray
    whole_intercept: float

    def read(self, text: str, grammar: QuestionKind) -> tuple[float, float]:
        x = reading_inputs(text, grammar, self.vocabulary)
        return _sigmoid(x @ self.procedure_coef + self.procedure_intercept), _sigmoid(
            x @ self.whole_coef + self.whole_intercept
        )


def _sigmoid(value: float) -> float:
    return float(1.0 / (1.0 + np.exp(-value)))


def load_reading(path: Path = FITTED) -> QuestionReading:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        reading = QuestionReading(
            vocabulary=tuple(data["vocabulary"]),
            procedure_coef=np.asarray(data["procedure"]["coef"], dtype=np.float64),
            procedure_intercept=float(data["procedure"]["intercept"]),
            whole_coef=np.asarray(data["whole"]["coef"], dtype=np.float64),
            whole_intercept=float(data["whole"]["intercept"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ApplianceError(f"question reading {path}: cannot be read ({exc})") from exc
    width = len(GRAMMAR_KINDS) + len(reading.vocabulary)
    if reading.procedure_coef.shape != (width,) or reading.whole_coef.shape != (width,):
        raise ApplianceError(f"question reading {path}: {width} inputs but coefficients of another size")
    return reading


@lru_cache(maxsize=1)
def default_reading() -> QuestionReading:
    return load_reading()


def answer_kind(grammar: QuestionKind, procedure: float) -> QuestionKind:
    """How a question is answered, from the grammar's reading and the fitted P(procedure). A value asked ("how
    many minutes", "what percentage") is answered by the line that states it whatever else the question says;
    otherwise the fitted reading decides between a procedure and a fact. Shared with scripts/fit_choice.py."""
    return "value" if grammar == "value" else "procedure" if procedure >= 0.5 else "fact"


def read_question(
    typed: str, standalone: str, searched: str, vector: np.ndarray, reading: QuestionReading | None = None
) -> Question:
    """The question read once (see the module docstring); `reading` None: the shipped fitted model."""
    grammar = question_kind(searched)
    procedure, whole = (reading or default_reading()).read(searched, grammar)
    kind = answer_kind(grammar, procedure)
    return Question(
        typed=typed,
        standalone=standalone,
        searched=searched,
        kind=kind,
        procedure=procedure,
        whole=whole,
        quantity=asked_quantity(searched),
        unit=asked_unit(searched),
        terms=extract_terms(searched),
        vector=vector,
    )
