"""The section ranker's optional hidden layer: what it adds to the linear scores, and how a model file that
carries a malformed one is refused (appliance/answer/quoted/ranker.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from appliance.answer.quoted.features import FEATURES
from appliance.answer.quoted.ranker import DEFAULT_MODEL, default_ranker, load_ranker
from appliance.errors import ApplianceError


def candidates(n: int = 5, seed: int = 3) -> np.ndarray:
    ranker = default_ranker()
    rng = np.random.default_rng(seed)
    return ranker.mean + ranker.scale * rng.normal(size=(n, len(ranker.mean)))


def test_the_hidden_layer_adds_tanh_units_over_the_crossed_base_features() -> None:
    linear = replace(default_ranker(), hidden=None)
    rng = np.random.default_rng(7)
    inputs, bias, output = rng.normal(size=(len(FEATURES), 3)), rng.normal(size=3), rng.normal(size=3)
    with_layer = replace(linear, hidden=(inputs, bias, output))
    x = candidates()
    standardized = (x - linear.mean) / linear.scale
    expected = standardized @ linear.weights + np.tanh(standardized[:, : len(FEATURES)] @ inputs + bias) @ output
    assert np.allclose(with_layer.scores(x), expected)
    assert not np.allclose(with_layer.scores(x), linear.scores(x))
    assert with_layer.probabilities(x).sum() == pytest.approx(1.0)


def test_a_hidden_layer_with_zero_output_weights_is_the_linear_model() -> None:
    linear = replace(default_ranker(), hidden=None)
    units = 4
    silent = replace(linear, hidden=(np.ones((len(FEATURES), units)), np.ones(units), np.zeros(units)))
    x = candidates()
    assert np.allclose(silent.scores(x), linear.scores(x))


def test_the_hidden_layer_does_not_read_the_heading_words() -> None:
    """Only the first len(FEATURES) columns enter the hidden units: the heading-word indicators stay linear."""
    ranker = default_ranker()
    if len(ranker.mean) == len(FEATURES):
        pytest.skip("the shipped ranker weighs no heading words")
    units = 2
    rng = np.random.default_rng(1)
    layer = (rng.normal(size=(len(FEATURES), units)), rng.normal(size=units), rng.normal(size=units))
    model = replace(ranker, hidden=layer, weights=np.zeros_like(ranker.weights))
    x = candidates()
    moved = x.copy()
    moved[:, len(FEATURES) :] += 5.0  # only heading-word columns change
    assert np.allclose(model.scores(x), model.scores(moved))


@pytest.mark.parametrize(
    ("hidden", "message"),
    [
        ({"weights": [[0.1]], "bias": [0.0], "output": [1.0]}, "hidden layer has shape"),
        ({"weights": [[0.1, 0.2]] * len(FEATURES), "bias": [0.0], "output": [1.0, 2.0]}, "hidden layer has shape"),
        ({"bias": [0.0], "output": [1.0]}, "hidden layer cannot be read"),
        ({"weights": "many", "bias": [0.0], "output": [1.0]}, "hidden layer cannot be read"),
        ([1, 2, 3], "'hidden' must be an object"),
    ],
)
def test_a_malformed_hidden_layer_is_refused_naming_the_file(tmp_path: Path, hidden: object, message: str) -> None:
    data = json.loads(DEFAULT_MODEL.read_text())
    data["hidden"] = hidden
    bad = tmp_path / "section_ranker.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ApplianceError, match=message) as caught:
        load_ranker(bad)
    assert str(bad) in str(caught.value)


def test_a_well_formed_hidden_layer_loads(tmp_path: Path) -> None:
    data = json.loads(DEFAULT_MODEL.read_text())
    data["hidden"] = {"weights": [[0.5, -0.5]] * len(FEATURES), "bias": [0.1, 0.2], "output": [1.0, -1.0]}
    path = tmp_path / "section_ranker.json"
    path.write_text(json.dumps(data))
    ranker = load_ranker(path)
    assert ranker.hidden is not None
    assert ranker.hidden[0].shape == (len(FEATURES), 2)
