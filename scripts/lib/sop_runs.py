"""Two runs of `scripts/bench_sop.py` side by side: which measures moved, which answers changed and how.

A change that claims "the answers are identical" or "3 answers moved between near ties" needs the rows
compared field by field, not a glance at the summaries: a summary can stay level while one answer is
gained and another lost. Times are left out (they differ every run); everything an operator would see
differently is compared: the kind of answer, refused or not, the sections shown and cited, the words, the
key phrases or steps shown, the right document cited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Run = dict[str, Any]
Row = dict[str, Any]

# Row fields that say what the operator was shown; times and the refusal's wording are not among them.
OUTCOME_FIELDS = (
    "refused",
    "answer_kind",
    "sections",
    "citations",
    "words",
    "gold_cited",
    "keyphrases_shown",
    "step_recall",
    "complete",
    "flipped",
    "moved",  # a variant shown another section than its original
)
TIMING_WORDS = ("_ms", "seconds")


@dataclass(frozen=True)
class RowChange:
    id: str  # the question's id; a variant's also names its kind: "rbh-010 lower_case"
    fields: dict[str, tuple[Any, Any]]  # field → (before, after)
    verdict: str  # "gained", "lost" or "moved" (shown differently, no better or worse by the gold)


@dataclass
class SetComparison:
    name: str
    rows_compared: int = 0
    summary: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    changes: list[RowChange] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(change.verdict == verdict for change in self.changes)


def _is_timing(key: str) -> bool:
    return any(word in key for word in TIMING_WORDS)


def _verdict(before: Row, after: Row) -> str:
    """Better or worse by the set's gold: answerable questions by what was shown, unanswerable ones by refusal."""
    answerable = after.get("answerable", after.get("label") not in {"UNANSWERABLE"})
    if not answerable:
        if before.get("refused") != after.get("refused"):
            return "gained" if after.get("refused") else "lost"
        return "moved"
    score_before, score_after = _answer_score(before), _answer_score(after)
    if score_after > score_before:
        return "gained"
    if score_after < score_before:
        return "lost"
    return "moved"


def _answer_score(row: Row) -> tuple[float, ...]:
    """What an answerable question's answer achieved, compared as a tuple: not refused, then complete and the
    key phrases, then the share of steps, then the right document."""
    return (
        0.0 if row.get("refused") else 1.0,
        float(bool(row.get("complete"))) + float(bool(row.get("keyphrases_shown"))),
        float(row.get("step_recall") or 0.0),
        float(bool(row.get("gold_cited"))),
    )


def _keyed(rows: list[Row]) -> dict[str, Row]:
    """Rows by question id; an operator-style variant (`--perturb`) by id, kind and its place among the
    variants of that kind."""
    keyed: dict[str, Row] = {}
    for row in rows:
        key = row["id"] if "kind" not in row else f"{row['id']} {row['kind']}"
        place, base = 2, key
        while key in keyed:
            key, place = f"{base} #{place}", place + 1
        keyed[key] = row
    return keyed


def _rows_and_summary(part: Any) -> tuple[list[Row], dict[str, Any]] | None:
    if isinstance(part, dict) and isinstance(part.get("rows"), list):
        return part["rows"], part.get("summary", {})
    return None


def _parts(run: Run, prefix: str = "") -> dict[str, tuple[list[Row], dict[str, Any]]]:
    """Every (rows, summary) in a run by its path: "procedures/quoted", "mtrag/quoted/clapnq"."""
    found: dict[str, tuple[list[Row], dict[str, Any]]] = {}
    for key, value in run.items():
        path = f"{prefix}/{key}" if prefix else key
        pair = _rows_and_summary(value)
        if pair is not None:
            found[path] = pair
        elif isinstance(value, dict):
            found.update(_parts(value, path))
    return found


def _flat(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in summary.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            flat.update(_flat(value, path))
        elif not _is_timing(key):
            flat[path] = value
    return flat


def compare_runs(before: Run, after: Run) -> list[SetComparison]:
    """Each part both runs hold, with its summary measures that differ and its rows that changed."""
    old_parts, new_parts = _parts(before), _parts(after)
    comparisons = []
    for name, (rows, summary) in new_parts.items():
        if name not in old_parts:
            continue
        old_rows, old_summary = old_parts[name]
        comparison = SetComparison(name)
        old_flat, new_flat = _flat(old_summary), _flat(summary)
        for key in sorted(set(old_flat) | set(new_flat)):
            if old_flat.get(key) != new_flat.get(key):
                comparison.summary[key] = (old_flat.get(key), new_flat.get(key))
        old_keyed = _keyed(old_rows)
        for key, row in _keyed(rows).items():
            old = old_keyed.get(key)
            if old is None:
                continue
            comparison.rows_compared += 1
            changed = {
                outcome: (old.get(outcome), row.get(outcome))
                for outcome in OUTCOME_FIELDS
                if old.get(outcome) != row.get(outcome)
            }
            if changed:
                comparison.changes.append(RowChange(key, changed, _verdict(old, row)))
        comparisons.append(comparison)
    return comparisons


def report_lines(comparisons: list[SetComparison]) -> list[str]:
    lines = []
    for comparison in comparisons:
        lines.append(
            f"{comparison.name}: {len(comparison.changes)} of {comparison.rows_compared} rows changed "
            f"(gained {comparison.count('gained')}, lost {comparison.count('lost')}, moved {comparison.count('moved')})"
        )
        for key, (old, new) in comparison.summary.items():
            lines.append(f"    {key}: {old} → {new}")
        for change in comparison.changes:
            shown = ", ".join(f"{key} {_short(old)} → {_short(new)}" for key, (old, new) in change.fields.items())
            lines.append(f"    [{change.verdict}] {change.id}: {shown}")
    return lines


def _short(value: Any, width: int = 60) -> str:
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"
