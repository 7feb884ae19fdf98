"""The lines that answer a fact (answer/quoted/lines.py): how the shown lines are picked from the ranker's
probabilities, and what the fitted line ranker may read. Which lines are likeliest is the fitted model's
(scripts/fit_lines.py); these tests pin what is done with its probabilities."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from appliance.answer.quoted.lines import (
    ALONE_COSINES,
    LINE_FEATURES,
    Line,
    default_line_ranker,
    in_context,
    line_features,
    load_line_ranker,
    pick_lines,
    pick_passages,
    reciprocal_places,
    section_lines,
    shown_lines,
)
from appliance.errors import ApplianceError


class Part:
    """A candidate section: the picking compares sections only by identity."""


def lines_of(*sections: tuple[Part, list[str]]) -> list[Line]:
    """Candidate lines in document order, section after section."""
    lines: list[Line] = []
    for section, texts in sections:
        for text in texts:
            lines.append(Line(text, "text", section, len(lines), None))  # type: ignore[arg-type]
    return lines


def texts(picked: list[Line]) -> list[str]:
    return [line.text for line in picked]


A, B = Part(), Part()
CANDIDATES = lines_of(
    (A, ["a0 one two", "a1 one two", "a2 one two", "a3 one two"]),
    (B, ["b0 one two", "b1 one two", "b2 one two"]),
)


def test_a_passage_grows_from_the_likeliest_line_to_the_likelier_neighbour_in_its_section() -> None:
    p = np.array([0.05, 0.1, 0.5, 0.2, 0.1, 0.03, 0.02])
    assert texts(pick_passages(CANDIDATES, p, max_words=9, seeds=1)) == ["a1 one two", "a2 one two", "a3 one two"]


def test_a_passage_never_crosses_into_the_next_section_even_where_that_line_is_likelier() -> None:
    p = np.array([0.01, 0.01, 0.05, 0.5, 0.4, 0.02, 0.01])
    picked = texts(pick_passages(CANDIDATES, p, max_words=6, seeds=1))
    assert picked == ["a2 one two", "a3 one two"]


def test_passages_start_at_the_seeds_likeliest_lines_and_come_back_in_document_order() -> None:
    p = np.array([0.02, 0.02, 0.02, 0.04, 0.1, 0.7, 0.1])
    picked = texts(pick_passages(CANDIDATES, p, max_words=9, seeds=2))
    assert picked == ["b0 one two", "b1 one two", "b2 one two"]
    p = np.array([0.3, 0.02, 0.02, 0.02, 0.02, 0.6, 0.02])
    assert texts(pick_passages(CANDIDATES, p, max_words=6, seeds=2)) == ["a0 one two", "b1 one two"]


def test_the_word_budget_holds_and_the_likeliest_line_is_shown_whatever_its_length() -> None:
    long = lines_of((A, ["word " * 40, "short one", "short two"]))
    p = np.array([0.8, 0.1, 0.1])
    assert texts(pick_passages(long, p, max_words=10, seeds=1)) == ["word " * 40]
    p = np.array([0.1, 0.8, 0.1])
    assert texts(pick_passages(long, p, max_words=5, seeds=1)) == ["short one", "short two"]


def test_a_line_that_introduces_the_next_is_shown_with_it() -> None:
    options = lines_of((A, ["Storage goes read-only at 85%.", "Two options:", "Scale storage", "Delete data"]))
    p = np.array([0.1, 0.6, 0.05, 0.25])  # the introduction is likeliest, what it introduces is not
    assert texts(pick_passages(options, p, max_words=5, seeds=1)) == ["Two options:", "Scale storage"]


def test_an_introduction_whose_line_does_not_fit_is_dropped_and_its_words_go_to_the_passage() -> None:
    lines = lines_of((A, ["the pool is full", "run the following:", "kubectl get pods -n pool --watch here"]))
    p = np.array([0.6, 0.3, 0.1])
    # Before: "the pool is full" and "run the following:" (7 words), the command never fits; the introduction
    # alone says nothing, so it goes.
    assert texts(pick_passages(lines, p, max_words=7, seeds=2)) == ["the pool is full"]


def test_a_code_block_or_a_table_row_ending_in_a_colon_introduces_nothing() -> None:
    lines = [
        Line("spec:", "code", A, 0, None),  # type: ignore[arg-type]
        Line("a later line of the section", "text", A, 1, None),  # type: ignore[arg-type]
        Line("| key | value: |", "table", B, 2, None),  # type: ignore[arg-type]
    ]
    p = np.array([0.3, 0.2, 0.5])  # the line after the code block does not fit: the block stays all the same
    assert texts(pick_passages(lines, p, max_words=6, seeds=2)) == ["spec:", "| key | value: |"]
    prose = [Line("spec:", "text", A, 0, None), *lines[1:]]  # type: ignore[arg-type]
    assert texts(pick_passages(prose, p, max_words=6, seeds=2)) == ["| key | value: |"]


def test_without_seeds_the_likeliest_lines_are_shown_while_nearly_as_likely_as_the_best() -> None:
    p = np.array([0.4, 0.02, 0.02, 0.02, 0.3, 0.02, 0.22])
    assert texts(shown_lines(CANDIDATES, p, 100, next_ratio=0.5, seeds=0)) == texts(pick_lines(CANDIDATES, p, 100, 0.5))
    assert sorted(texts(shown_lines(CANDIDATES, p, 100, next_ratio=0.5, seeds=0))) == [
        "a0 one two",
        "b0 one two",
        "b2 one two",
    ]


def test_the_shipped_line_ranker_reads_signals_this_version_computes() -> None:
    ranker = default_line_ranker()
    assert ranker.columns and all(0 <= column < len(LINE_FEATURES) for column in ranker.columns)
    features = np.random.default_rng(0).normal(size=(5, len(LINE_FEATURES)))
    probabilities = ranker.probabilities(features)
    assert probabilities.shape == (5,) and probabilities.sum() == pytest.approx(1.0)


def test_a_line_ranker_fitted_on_a_signal_this_version_lacks_is_refused_by_name(tmp_path: Path) -> None:
    fitted = json.loads(Path(default_line_ranker().source).read_text(encoding="utf-8"))
    fitted["features"] = [*fitted["features"][:-1], "reader_mood"]
    path = tmp_path / "line_ranker.json"
    path.write_text(json.dumps(fitted), encoding="utf-8")
    with pytest.raises(ApplianceError, match="reader_mood"):
        load_line_ranker(path)


def _retention_lines() -> list[Line]:
    section = SimpleNamespace(path="sop.md", heading="Retention", title="SOP", name="Retention")
    chunk = SimpleNamespace(chunk_id="c1", section="Retention › Audit logs")
    return [
        Line("Kept for 90 days.", "text", section, 0, chunk),  # type: ignore[arg-type]
        Line("Then archived to tape.", "text", section, 1, chunk),  # type: ignore[arg-type]
    ]


def _features(needed: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    embedded: list[str] = []

    def embed(batch: Sequence[str]) -> np.ndarray:
        embedded.extend(batch)
        rows = np.random.default_rng(len(embedded)).normal(size=(len(batch), 4))
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    lines = _retention_lines()
    vector = np.ones(4) / 2.0
    features = line_features("how long are audit logs kept", vector, lines, {}, lines[0].section, {}, embed, needed)
    return features, embedded


def test_a_model_that_reads_lines_under_their_headings_only_embeds_each_line_once() -> None:
    needed = [name for name in LINE_FEATURES if name not in ALONE_COSINES]
    features, embedded = _features(needed)
    assert embedded == [in_context(line) for line in _retention_lines()]
    alone = [LINE_FEATURES.index(name) for name in ALONE_COSINES]
    assert not features[:, alone].any()
    assert features[:, LINE_FEATURES.index("ctx_cos")].any()


def test_a_model_that_reads_the_line_alone_gets_its_cosines() -> None:
    features, embedded = _features(LINE_FEATURES)
    assert len(embedded) == 4 and "Kept for 90 days." in embedded
    assert features[:, LINE_FEATURES.index("cos")].any()


def test_a_line_s_place_is_one_over_one_plus_the_lines_that_score_higher_and_ties_share_it() -> None:
    places = reciprocal_places(np.array([0.2, 0.9, 0.5, 0.9, 0.0]))
    assert places.tolist() == pytest.approx([1 / 4, 1.0, 1 / 3, 1.0, 1 / 5])


def test_each_line_s_place_among_the_candidates_is_read_from_its_heading_cosine_and_its_coverage() -> None:
    needed = [name for name in LINE_FEATURES if name not in ALONE_COSINES]
    features, _ = _features(needed)
    for level, place in (("ctx_cos", "ctx_cos_rr"), ("lex", "lex_rr")):
        scores, places = features[:, LINE_FEATURES.index(level)], features[:, LINE_FEATURES.index(place)]
        assert places.tolist() == pytest.approx(reciprocal_places(scores).tolist())
        assert places[int(np.argmax(scores))] == 1.0


def test_the_shipped_line_ranker_says_which_signals_it_reads() -> None:
    ranker = default_line_ranker()
    assert ranker.features == tuple(LINE_FEATURES[column] for column in ranker.columns)


def _section_with_paragraph(words: int) -> SimpleNamespace:
    sentence = "The relief valve lifts at ten bar and reseats at nine"  # 11 words
    text = " ".join(f"{sentence}." for _ in range(words // 11))
    chunk = SimpleNamespace(chunk_id="c1", section="Relief valve")
    return SimpleNamespace(items=(SimpleNamespace(kind="text", text=text, chunk=chunk),))


def test_a_paragraph_longer_than_the_split_is_offered_sentence_by_sentence() -> None:
    section = _section_with_paragraph(44)
    assert [line.part for line in section_lines(section, paragraph_words=40)] == [0, 1, 2, 3]  # type: ignore[arg-type]
    whole = section_lines(section, paragraph_words=60)  # type: ignore[arg-type]
    assert len(whole) == 1 and whole[0].text == section.items[0].text


def test_the_paragraph_split_is_the_fitted_model_s_and_an_older_model_file_keeps_forty(tmp_path: Path) -> None:
    fitted = json.loads(Path(default_line_ranker().source).read_text(encoding="utf-8"))
    assert default_line_ranker().paragraph_words == fitted["paragraph_words"]
    path = tmp_path / "line_ranker.json"
    path.write_text(json.dumps({**fitted, "paragraph_words": 25}), encoding="utf-8")
    assert load_line_ranker(path).paragraph_words == 25
    del fitted["paragraph_words"]
    path.write_text(json.dumps(fitted), encoding="utf-8")
    assert load_line_ranker(path).paragraph_words == 40
