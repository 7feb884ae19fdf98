"""Comparing two runs of the answer benchmark: every changed answer is found and judged by the gold."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from scripts.lib.sop_runs import compare_runs, report_lines

REPO = Path(__file__).resolve().parent.parent


def _row(id_: str, **fields: Any) -> dict[str, Any]:
    row = {
        "id": id_,
        "answerable": True,
        "refused": False,
        "answer_kind": "excerpt",
        "sections": ["a.md § 1"],
        "citations": ["a.md § 1"],
        "words": 40,
        "gold_cited": True,
        "keyphrases_shown": True,
        "total_ms": 12.0,
        "refusal_reason": None,
    }
    return row | fields


def _run() -> dict[str, Any]:
    return {
        "heldout": {
            "quoted": {
                "summary": {"every_keyphrase_shown": "100% (2 of 2)", "total_ms_median": 10.0},
                "rows": [
                    _row("q1"),
                    _row("q2"),
                    _row("u1", answerable=False, refused=True, answer_kind="refusal", sections=[], words=0),
                ],
            },
            "perturbations": {
                "summary": {"answerable": {"flips": 0}},
                "rows": [
                    {"id": "q1", "kind": "typo", "answerable": True, "flipped": False, "moved": False},
                    {"id": "q1", "kind": "5xx", "answerable": True, "flipped": False, "moved": False},
                    {"id": "q1", "kind": "5xx", "answerable": True, "flipped": False, "moved": False},
                ],
            },
        }
    }


def test_identical_runs_differ_nowhere_even_in_their_times() -> None:
    before, after = _run(), _run()
    after["heldout"]["quoted"]["rows"][0]["total_ms"] = 99.0
    after["heldout"]["quoted"]["summary"]["total_ms_median"] = 80.0
    after["heldout"]["quoted"]["rows"][2]["refusal_reason"] = "confidence 0.01 < 0.45"  # wording, not outcome
    for part in compare_runs(before, after):
        assert part.changes == [] and part.summary == {}


def test_a_lost_key_phrase_a_newly_refused_and_a_newly_answered_question_are_each_named() -> None:
    before, after = _run(), copy.deepcopy(_run())
    rows = after["heldout"]["quoted"]["rows"]
    rows[0].update(keyphrases_shown=False, sections=["b.md § 2"], gold_cited=False)  # another document
    rows[1].update(refused=True, answer_kind="refusal")
    rows[2].update(refused=False, answer_kind="excerpt")  # an unanswerable question answered
    after["heldout"]["quoted"]["summary"]["every_keyphrase_shown"] = "50% (1 of 2)"
    quoted = next(part for part in compare_runs(before, after) if part.name == "heldout/quoted")
    verdicts = {change.id: change.verdict for change in quoted.changes}
    assert verdicts == {"q1": "lost", "q2": "lost", "u1": "lost"}
    assert quoted.summary == {"every_keyphrase_shown": ("100% (2 of 2)", "50% (1 of 2)")}
    assert quoted.changes[0].fields["sections"] == (["a.md § 1"], ["b.md § 2"])


def test_a_gain_and_a_section_moved_without_gain_are_told_apart() -> None:
    before, after = _run(), _run()
    before["heldout"]["quoted"]["rows"][0]["keyphrases_shown"] = False
    after["heldout"]["quoted"]["rows"][1].update(sections=["a.md § 1.2"], words=25)  # same phrases, shorter part
    quoted = next(part for part in compare_runs(before, after) if part.name == "heldout/quoted")
    assert {change.id: change.verdict for change in quoted.changes} == {"q1": "gained", "q2": "moved"}


def test_variants_of_one_question_and_kind_are_compared_with_their_own_counterpart() -> None:
    before, after = _run(), _run()
    after["heldout"]["perturbations"]["rows"][2]["moved"] = True  # the second "5xx" variant only
    variants = next(part for part in compare_runs(before, after) if part.name == "heldout/perturbations")
    assert variants.rows_compared == 3
    assert [change.id for change in variants.changes] == ["q1 5xx #2"]


def test_the_script_prints_the_changes_and_writes_them_as_json(tmp_path: Path) -> None:
    before, after = _run(), _run()
    after["heldout"]["quoted"]["rows"][0]["keyphrases_shown"] = False
    (tmp_path / "before.json").write_text(json.dumps(before))
    (tmp_path / "after.json").write_text(json.dumps(after))
    script = str(REPO / "scripts" / "compare_sop_runs.py")
    done = subprocess.run(
        [sys.executable, script, "before.json", "after.json", "--json", "out.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "heldout/quoted: 1 of 3 rows changed (gained 0, lost 1, moved 0)" in done.stdout
    assert "[lost] q1: keyphrases_shown True → False" in done.stdout
    written = json.loads((tmp_path / "out.json").read_text())
    assert written[0]["changes"][0]["verdict"] == "lost"
    assert report_lines(compare_runs(before, after))[0] == done.stdout.splitlines()[0]
