"""The judge after the steps are shown: the ranker's section at once, then the local model's check.

On the CPU the judge costs seconds a question (docs/measurements/llm-judge.md) against a first-content goal of
2 s. So the ranker's pick is shown first, its steps event saying that a check follows (`checking`); then the
judge runs, outside the index's read guard, and

- keeps the pick: the result is the one already shown, with the judge's probabilities (the ✓, the close call and
  the alternatives as after the judge: judge.py), and no steps change;
- picks another section: a "revised" event carries that section's sources and steps and names the section shown
  first; the result says so too (`judge.first_shown`), so that the page and the CLI tell the operator why the
  steps changed and let him open the first one.

A judge that fails or cannot be asked leaves the ranker's answer as shown, with no `judge` in the result. The
first content is the ranker's: the result's `timings_ms.first_content` stays that of the first steps; `judge`
holds the model's time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from appliance.answer.quoted.choice import Choice
from appliance.answer.results import Alternative, AnswerEvent, AnswerResult, JudgeCheck, ms_since


def first_shown_of(choice: Choice, document_ids: dict[str, int]) -> Alternative:
    """The ranker's pick as the section shown first (an Alternative: what the page offers to open)."""
    chosen = choice.chosen
    section = chosen.section
    return Alternative(
        section.path,
        section.title,
        section.heading,
        section.chunks[0].page,
        (chosen.hits or (section.chunks[0].chunk_id,))[0],
        round(chosen.probability, 4),
        document_ids.get(section.path),
    )


def checked_after(
    shown: Iterator[AnswerEvent],
    choice: Choice,
    judge: Callable[[Choice], Choice],
    judged_by: Callable[[], tuple[float, list[float]]],
    requote: Callable[[Choice], Iterator[AnswerEvent] | None],
    first_shown: Callable[[], Alternative],
    started: float,
) -> Iterator[AnswerEvent]:
    """`shown`: the quoted answer's events for the ranker's `choice`; `requote`: the same for a judged choice
    (None where it cannot be shown); `started`: when the ask began (perf_counter). Yields `shown` with its steps
    marked `checking`, then the judged answer."""
    held: AnswerResult | None = None
    for event in shown:
        if event.kind == "done":
            held = event.result
        elif event.kind == "steps":
            yield replace(event, checking=True)
        else:
            yield event
    if held is None:  # pragma: no cover (quoted_events always ends with its result)
        return
    judged = judge(choice)
    ms, odds = judged_by()
    ms = round(ms, 1)
    if judged is choice:  # not judged (one region only, a failing or unsupported model): the answer stands
        yield AnswerEvent("done", result=held)
        return
    events = requote(judged)
    if events is None:
        yield AnswerEvent("done", result=_unshowable(held, judged, choice, ms, odds, started))
        return
    evidence, steps, result = [], None, None
    for event in events:
        if event.kind == "evidence":
            evidence = event.evidence or []
        elif event.kind == "steps":
            steps = event
        elif event.kind == "done":
            result = event.result
    if result is None or result.refused or steps is None:
        yield AnswerEvent("done", result=_unshowable(held, judged, choice, ms, odds, started))
        return
    if judged.chosen.section is choice.chosen.section:
        kept = JudgeCheck("after", kept=True, ms=ms, odds=odds)
        yield AnswerEvent("done", result=_checked(_as_shown(held, result), held, kept, started))
        return
    first = first_shown()
    yield AnswerEvent("revised", evidence=evidence, answer_kind=steps.answer_kind, steps=steps.steps, first_shown=first)
    replaced = JudgeCheck("after", kept=False, ms=ms, first_shown=first, odds=odds)
    yield AnswerEvent("done", result=_checked(result, held, replaced, started))


def _as_shown(shown: AnswerResult, judged: AnswerResult) -> AnswerResult:
    """The answer already shown, with what the judge's probabilities change: the ✓ and the close call, the
    alternatives, the choice's probability and the words the note names under a ✓ withheld. The shown text stays:
    the judged probabilities also move which lines a fact's excerpt or which part of a procedure is likeliest,
    and a kept pick must not change what the operator has read."""
    return replace(
        shown,
        confidence=judged.confidence,
        alternatives=judged.alternatives,
        choice_probability=judged.choice_probability,
        unmatched_warning_terms=judged.unmatched_warning_terms,
    )


def _checked(result: AnswerResult, shown: AnswerResult, check: JudgeCheck, started: float) -> AnswerResult:
    """`result` with the judge's check, and the first content of the answer shown first."""
    timings = dict(result.timings_ms)
    if "first_content" in shown.timings_ms:
        timings["first_content"] = shown.timings_ms["first_content"]
    timings["judge"] = check.ms
    timings["total"] = ms_since(started)
    return replace(result, judge=check, timings_ms=timings)


def _unshowable(
    held: AnswerResult, judged: Choice, choice: Choice, ms: float, odds: list[float], started: float
) -> AnswerResult:
    """The answer shown stands where the judged one cannot be shown; an overturned pick loses its ✓."""
    result = _checked(held, held, JudgeCheck("after", kept=True, ms=ms, odds=odds), started)
    if judged.chosen.section is not choice.chosen.section and result.confidence == "certain":
        result = replace(result, confidence="uncertain")
    return result
