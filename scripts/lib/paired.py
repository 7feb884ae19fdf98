"""Paired comparison of two answer-benchmark runs on the questions both asked.

Greedy decoding makes one run reproducible, but not robust. Measured with Qwen2.5-Coder-1.5B on the
first 40 runbook tune questions: evaluating the same prompts in one piece instead of split after the
system prompt (floating-point differences only) changed the text of 19 of 32 answers and lost 2 of
14 key-phrase hits. A change that moves the rate by two or three questions out of 29 is within that
noise; the question ids that were gained and lost, and how many answers stayed word for word the
same, show whether it did what it claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]


@dataclass(frozen=True)
class PairedComparison:
    questions: int
    hits_before: int
    hits_after: int
    answerable: int
    declined_before: int
    declined_after: int
    unanswerable: int
    gained: tuple[str, ...]  # answerable: key phrases missed before, all held after
    lost: tuple[str, ...]
    refusals_added: tuple[str, ...]  # refused after, answered before
    refusals_removed: tuple[str, ...]
    generated: int  # questions where either run called the model
    identical_generations: int  # of those, the model wrote the same text in both

    def as_json(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "keyphrase_hits": {"before": self.hits_before, "after": self.hits_after, "of": self.answerable},
            "unanswerable_declined": {
                "before": self.declined_before,
                "after": self.declined_after,
                "of": self.unanswerable,
            },
            "gained": list(self.gained),
            "lost": list(self.lost),
            "refusals_added": list(self.refusals_added),
            "refusals_removed": list(self.refusals_removed),
            "identical_generations": {"same": self.identical_generations, "of": self.generated},
        }


def compare_runs(before: Sequence[Row], after: Sequence[Row]) -> PairedComparison:
    """Compare two runs' rows (as `scripts/bench_answers.py` writes them) on the ids both hold."""
    earlier = {row["id"]: row for row in before}
    pairs = [(earlier[row["id"]], row) for row in after if row["id"] in earlier]
    answerable = [(b, a) for b, a in pairs if a["answerable"]]
    unanswerable = [(b, a) for b, a in pairs if not a["answerable"]]
    generated = [(b, a) for b, a in pairs if b.get("generated") or a.get("generated")]
    return PairedComparison(
        questions=len(pairs),
        hits_before=sum(bool(b["hit"]) for b, _ in answerable),
        hits_after=sum(bool(a["hit"]) for _, a in answerable),
        answerable=len(answerable),
        declined_before=sum(bool(b["refused"]) for b, _ in unanswerable),
        declined_after=sum(bool(a["refused"]) for _, a in unanswerable),
        unanswerable=len(unanswerable),
        gained=tuple(a["id"] for b, a in answerable if a["hit"] and not b["hit"]),
        lost=tuple(a["id"] for b, a in answerable if b["hit"] and not a["hit"]),
        refusals_added=tuple(a["id"] for b, a in pairs if a["refused"] and not b["refused"]),
        refusals_removed=tuple(a["id"] for b, a in pairs if b["refused"] and not a["refused"]),
        generated=len(generated),
        identical_generations=sum(b.get("generated") == a.get("generated") for b, a in generated),
    )
