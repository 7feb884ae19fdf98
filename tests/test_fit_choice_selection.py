"""How scripts/fit_choice.py settles between the shipped settings and the ones a refit prefers.

Settings whose out-of-fold merit differs by less than the noise trade places from one refit to the next; the
shipped ones are kept unless another beats them by more than one paired standard error of the difference.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from scripts.fit_choice import FITTED, SHOWN_MASSES, clearly_better, incumbent_settings, settings_kept


def merits(n: int, better_on: int, worse_on: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(holder, challenger): the same n questions, the challenger one point better on `better_on` of them and
    one point worse on `worse_on` others."""
    holder = np.ones(n)
    challenger = holder.copy()
    challenger[:better_on] += 1
    challenger[better_on : better_on + worse_on] -= 1
    return holder, challenger


def test_a_few_questions_more_is_not_clearly_better() -> None:
    # +0.011 with answers moving both ways (a paired standard error of 0.021, as measured between settings): what
    # moved the choice between two refits on near-identical vectors.
    holder, challenger = merits(544, better_on=70, worse_on=64)
    better, difference, error = clearly_better(challenger, holder)
    assert not better and 0 < difference < error


def test_a_gain_beyond_the_noise_is_clearly_better() -> None:
    holder, challenger = merits(544, better_on=90, worse_on=40)
    better, difference, error = clearly_better(challenger, holder)
    assert better and difference > error


def test_a_loss_is_never_clearly_better() -> None:
    holder, challenger = merits(544, better_on=0, worse_on=80)
    assert not clearly_better(challenger, holder)[0]


def test_the_incumbent_is_read_from_the_shipped_models() -> None:
    ranker = json.loads((FITTED / "section_ranker.json").read_text())
    reading = json.loads((FITTED / "question_reading.json").read_text())
    held = incumbent_settings()
    assert held is not None
    l2, c, hidden, mass = held
    assert l2 == (ranker["l2"]["base_features"], ranker["l2"]["heading_words"])
    assert c == reading["regularization_c"]
    assert hidden == (ranker["hidden_layer"]["units"], ranker["hidden_layer"]["l2"])
    assert mass == ranker["shown_mass"] and mass in SHOWN_MASSES


def test_keeping_the_settings_takes_the_shipped_ones_or_says_why_it_cannot() -> None:
    shipped = incumbent_settings()
    assert shipped is not None
    assert settings_kept(shipped) == shipped
    with pytest.raises(SystemExit, match="no shipped models"):
        settings_kept(None)
    with pytest.raises(SystemExit, match=r"shown_mass 0\.42"):
        settings_kept((shipped[0], shipped[1], shipped[2], 0.42))
