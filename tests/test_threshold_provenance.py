"""The evidence thresholds the appliance ships are the ones the committed script chose on the training sets.

scripts/quoted_threshold.py measures, for the quoted default, how many unanswerable questions are answered anyway
once the evidence decision lets them through, and counts both errors at the thresholds its cost rule allows; it
records the threshold with the fewest errors for the shipped model and for the scale-free one. A default edited
by hand, or a rerun whose choice moved without the default following, fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

from appliance.config import load_settings

RESULTS = Path(__file__).resolve().parent.parent / "scripts" / "results" / "quoted_threshold.json"


def test_the_shipped_evidence_threshold_is_the_one_with_the_fewest_training_errors() -> None:
    chosen = json.loads(RESULTS.read_text(encoding="utf-8"))
    errors = chosen["errors_by_threshold"]
    assert float(chosen["fewest_errors"]) == load_settings({}).evidence.threshold
    assert errors[chosen["fewest_errors"]] == min(errors.values())


def test_the_scale_free_threshold_is_the_one_with_the_fewest_training_errors() -> None:
    chosen = json.loads(RESULTS.read_text(encoding="utf-8"))
    errors = chosen["scale_free_errors_by_threshold"]
    assert float(chosen["scale_free_fewest_errors"]) == load_settings({}).evidence.scale_free_threshold
    assert errors[chosen["scale_free_fewest_errors"]] == min(errors.values())


def test_the_quoted_default_answers_most_unanswerable_questions_the_decision_lets_through() -> None:
    """The premise of a threshold above the generated design's 0.4: m, the share answered anyway, is above 2/3."""
    m = json.loads(RESULTS.read_text(encoding="utf-8"))["m"]
    assert all(cell["m"] > 2 / 3 for cell in m.values() if cell["questions"])
