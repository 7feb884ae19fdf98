"""The question, read once: every stage of an answer reads this one value.

- `typed`: as the operator typed it; `standalone`: what the conversation made of it (the same text when it
  stands on its own, followup.py); `searched`: what was searched, misspellings corrected (retrieve/spelling.py);
- `kind`: how much of the chosen section is shown: a procedure whole, or the lines that state a value or a fact;
- `procedure`, `whole`: the fitted reading (appliance/answer/fitted/question_reading.json, scripts/fit_choice.py):
  how strongly it asks for something to do, and for the whole job rather than one part ("walk me through it
  from the start" against "what do I do if the pump trips on start"). The grammar's reading (text/questions.py)
  is one input of that model among the embedding's 384, so no single word decides;
- `quantity`, `unit`: the value asked ("how many minutes"), for the rules that a shown line must state one;
- `terms`: its identifiers, numbers and content words; `vector`: the embedder's unit vector of `searched`.
"""

from __future__ import annotations

import json
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


@dataclass(frozen=True)
class QuestionReading:
    """Two logistic models over [embedding, the grammar's kind one-hot]: P(procedure), P(whole | procedure)."""

    procedure_coef: np.ndarray
    procedure_intercept: float
    whole_coef: np.ndarray
    whole_intercept: float
    embedder: str

    def read(self, vector: np.ndarray, grammar: QuestionKind) -> tuple[float, float]:
        x = np.concatenate([vector, [1.0 if grammar == kind else 0.0 for kind in GRAMMAR_KINDS]])
        if x.shape != self.procedure_coef.shape:
            raise ApplianceError(
                f"question reading {FITTED}: fitted on {len(self.procedure_coef) - 3}-d vectors, "
                f"the embedder gives {len(vector)}-d; refit with scripts/fit_choice.py --write"
            )
        return _sigmoid(x @ self.procedure_coef + self.procedure_intercept), _sigmoid(
            x @ self.whole_coef + self.whole_intercept
        )


def _sigmoid(value: float) -> float:
    return float(1.0 / (1.0 + np.exp(-value)))


def load_reading(path: Path = FITTED) -> QuestionReading:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return QuestionReading(
            procedure_coef=np.asarray(data["procedure"]["coef"], dtype=np.float64),
            procedure_intercept=float(data["procedure"]["intercept"]),
            whole_coef=np.asarray(data["whole"]["coef"], dtype=np.float64),
            whole_intercept=float(data["whole"]["intercept"]),
            embedder=str(data.get("embedder", "")),
        )
    except (OSError, ValueError, KeyError) as exc:
        raise ApplianceError(f"question reading {path}: cannot be read ({exc})") from exc


@lru_cache(maxsize=1)
def default_reading() -> QuestionReading:
    return load_reading()


def read_question(
    typed: str, standalone: str, searched: str, vector: np.ndarray, reading: QuestionReading | None = None
) -> Question:
    """The question read once (see the module docstring); `reading` None: the shipped fitted model."""
    grammar = question_kind(searched)
    procedure, whole = (reading or default_reading()).read(vector, grammar)
    # A value asked ("how many minutes", "what percentage") is answered by the line that states it whatever
    # else the question says; otherwise the fitted reading decides between a procedure and a fact.
    kind: QuestionKind = "value" if grammar == "value" else "procedure" if procedure >= 0.5 else "fact"
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
