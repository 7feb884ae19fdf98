"""Does a decision flip when the question is reworded? Flip rates per perturbation kind.

`decision_flips` asks a decision function (refuse or not, and why) about each question and each of
its perturbations (scripts/lib/perturb.py), and `summarize_flips` counts, per kind and
separately for answerable and unanswerable questions, how often the decision differs from the one
on the original wording. For answerable questions a flip is a new refusal; for unanswerable ones a
new answer. The invented-name controls must all be refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from scripts.lib.perturb import KINDS, invented_name_controls, perturb

Decide = Callable[[str], tuple[bool, str]]  # question → (refused, reason)


@dataclass(frozen=True)
class Question:
    set_name: str
    id: str
    text: str
    answerable: bool


@dataclass(frozen=True)
class FlipRow:
    set_name: str
    id: str
    answerable: bool
    kind: str  # a perturbation kind, or "original"
    text: str
    refused: bool
    reason: str
    original_refused: bool

    @property
    def flipped(self) -> bool:
        return self.kind != "original" and self.refused != self.original_refused


def decision_flips(decide: Decide, questions: Iterable[Question]) -> list[FlipRow]:
    rows: list[FlipRow] = []
    for question in questions:
        refused, reason = decide(question.text)
        rows.append(
            FlipRow(
                question.set_name, question.id, question.answerable, "original", question.text, refused, reason, refused
            )
        )
        for variant in perturb(question.text, question.id):
            variant_refused, variant_reason = decide(variant.text)
            rows.append(
                FlipRow(
                    question.set_name,
                    question.id,
                    question.answerable,
                    variant.kind,
                    variant.text,
                    variant_refused,
                    variant_reason,
                    refused,
                )
            )
    return rows


def _rate(flips: int, total: int) -> float | None:
    return round(flips / total, 4) if total else None


def _counts(variants: list[FlipRow]) -> dict[str, Any]:
    """Flips, and which way: a new refusal (the harm for an answerable question) or a new answer (for an
    unanswerable one)."""
    flips = [r for r in variants if r.flipped]
    return {
        "variants": len(variants),
        "flips": len(flips),
        "flip_rate": _rate(len(flips), len(variants)),
        "newly_refused": sum(1 for r in flips if r.refused),
        "newly_answered": sum(1 for r in flips if not r.refused),
    }


def summarize_flips(rows: list[FlipRow]) -> dict[str, Any]:
    """Per answerability class: the original refusals, then per kind how many variants flipped, and which way."""
    summary: dict[str, Any] = {}
    for label, answerable in (("answerable", True), ("unanswerable", False)):
        mine = [r for r in rows if r.answerable == answerable]
        originals = [r for r in mine if r.kind == "original"]
        per_kind: dict[str, Any] = {}
        for kind in KINDS:
            per_kind[kind] = _counts([r for r in mine if r.kind == kind])
        variants = [r for r in mine if r.kind != "original"]
        summary[label] = {
            "questions": len(originals),
            "refused_originals": sum(1 for r in originals if r.refused),
            **_counts(variants),
            "questions_with_any_flip": len({(r.set_name, r.id) for r in variants if r.flipped}),
            "per_kind": per_kind,
        }
    return summary


def control_refusals(decide: Decide, questions: Iterable[Question]) -> dict[str, Any]:
    """The invented-name controls of the answerable questions: each must be refused."""
    controls = invented_name_controls((f"{q.set_name}/{q.id}", q.text) for q in questions if q.answerable)
    answered = []
    for key, text in controls:
        refused, reason = decide(text)
        if not refused:
            answered.append({"id": key, "text": text, "reason": reason})
    by_kind: dict[str, dict[str, int]] = {}
    for key, _ in controls:
        kind = key.rsplit("/", 1)[-1]
        by_kind.setdefault(kind, {"controls": 0, "answered": 0})["controls"] += 1
    for item in answered:
        by_kind[item["id"].rsplit("/", 1)[-1]]["answered"] += 1
    return {"controls": len(controls), "answered": len(answered), "by_kind": by_kind, "answered_controls": answered}


def flip_rows_json(rows: list[FlipRow]) -> list[dict[str, Any]]:
    """The variants that flipped, for reading one by one."""
    return [asdict(r) for r in rows if r.flipped]
