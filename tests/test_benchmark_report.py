"""A benchmark ends the same way everywhere (scripts/lib/report.py): the figures as JSON on stdout and,
with --json FILE, the same JSON in that file; a long run saves after each stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.lib.report import finish, save_report

FIGURES = {"questions": 3, "recall@5": 0.667, "runs": [{"name": "hybrid", "ndcg@10": 0.71}]}


def test_finish_prints_the_figures_and_writes_the_same_json_to_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures.json"
    assert finish(FIGURES, out) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == FIGURES
    assert out.read_text(encoding="utf-8") == printed  # one newline at the end of each


def test_without_a_file_the_figures_only_go_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert finish(FIGURES, None, indent=2) == 0
    printed = capsys.readouterr().out
    assert printed == json.dumps(FIGURES, indent=2) + "\n"
    assert list(tmp_path.iterdir()) == []


def test_a_stage_saved_midway_is_replaced_by_the_next(tmp_path: Path) -> None:
    out = tmp_path / "partial.json"
    save_report({"stage": 1}, out)
    save_report({"stage": 2}, out)
    assert json.loads(out.read_text(encoding="utf-8")) == {"stage": 2}
    save_report({"stage": 3}, None)  # no --json: nothing written
    assert json.loads(out.read_text(encoding="utf-8")) == {"stage": 2}


def test_the_auc_is_the_chance_a_low_row_scores_below_a_high_one_ties_half() -> None:
    from scripts.lib.separation import auc

    assert auc([0.1, 0.2], [0.3, 0.4]) == 1.0
    assert auc([0.3, 0.4], [0.1, 0.2]) == 0.0
    assert auc([0.5], [0.5]) == 0.5
    assert auc([0.1, 0.5], [0.3]) == 0.5
    assert auc([], [0.3]) is None and auc([0.3], []) is None
