"""Paired comparison of two answer-benchmark runs: which questions moved, not only the rates."""

from __future__ import annotations

from scripts.lib.paired import Row, compare_runs


def row(id: str, *, answerable: bool = True, hit: bool = False, refused: bool = False, text: str = "") -> Row:
    return {"id": id, "answerable": answerable, "hit": hit, "refused": refused, "generated": text}


def test_gains_losses_and_refusal_changes_are_named_by_question() -> None:
    before = [
        row("q1", hit=True, text="Run `a` [1]."),
        row("q2", hit=False, text="Maybe b."),
        row("q3", hit=True, text="Run `c` [1]."),
        row("u1", answerable=False, refused=True),
        row("u2", answerable=False, refused=False, text="A guess."),
    ]
    after = [
        row("q1", hit=True, text="Run `a` [1]."),
        row("q2", hit=True, text="Run `b` [2]."),
        row("q3", hit=False, refused=True, text="Perhaps c."),
        row("u1", answerable=False, refused=True),
        row("u2", answerable=False, refused=True, text="A guess."),
    ]
    comparison = compare_runs(before, after)
    assert comparison.gained == ("q2",) and comparison.lost == ("q3",)
    assert (comparison.hits_before, comparison.hits_after, comparison.answerable) == (2, 2, 3)
    assert (comparison.declined_before, comparison.declined_after, comparison.unanswerable) == (1, 2, 2)
    assert comparison.refusals_added == ("q3", "u2") and comparison.refusals_removed == ()
    # u1 never reached the model; of the four that did, q1 and u2 were written word for word the same.
    assert (comparison.identical_generations, comparison.generated) == (2, 4)


def test_only_questions_both_runs_asked_are_compared() -> None:
    comparison = compare_runs([row("q1", hit=True), row("q2")], [row("q2", hit=True), row("q3", hit=True)])
    assert comparison.questions == 1
    assert comparison.gained == ("q2",) and comparison.lost == ()
    assert comparison.as_json()["keyphrase_hits"] == {"before": 0, "after": 1, "of": 1}
