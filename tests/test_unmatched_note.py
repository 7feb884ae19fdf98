"""Which words the documents never use are named under an answer (answer/unmatched_note.py).

Every unknown word is read (its name weight, shape, everyday-English rarity, typo of English, the known words
beside it, the question's evidence) and a fitted logistic model says whether it may name a subject the
documents do not cover. These tests pin the readings and the mechanics with hand-set weights; the shipped
model's behaviour on whole questions is in tests/test_quoted_answers.py.
"""

from __future__ import annotations

import pytest

from appliance.answer.unmatched_note import FEATURES, NoteModel, fitted_note_model, term_features, warning_terms
from appliance.retrieve.unknown_terms import UnknownTerm


class Corpus:
    """The documents' words, as CorpusVocabulary.knows reads them (lower case)."""

    def __init__(self, *words: str) -> None:
        self.words = set(words)

    def knows(self, term: str) -> bool:
        return term in self.words


PLANT = Corpus("chlorine", "generator", "leak", "handle", "call", "start")
DIOXIDE = UnknownTerm("dioxide", 0.1, "English word", False)
BIGGER = UnknownTerm("bigger", 0.1, "English word", False)


def test_a_word_inside_a_known_noun_phrase_has_known_words_on_both_sides() -> None:
    question = "How do I start up the chlorine dioxide generator?"
    assert term_features(DIOXIDE, question, PLANT, 0.6)["beside_known"] == 1.0


def test_a_word_between_function_words_has_no_known_neighbour() -> None:
    question = "Who do I call if the chlorine leak is bigger than we can handle?"
    assert term_features(BIGGER, question, PLANT, 0.6)["beside_known"] == 0.0


@pytest.mark.parametrize(
    "question",
    [
        "HOW DO I START UP THE CHLORINE DIOXIDE GENERATOR?",
        "hey, quick one: chlorine dioxide generator - how do i start it",
        "chlorine dioxide generator start up steps pls",
    ],
)
def test_the_neighbours_are_read_whatever_the_case_or_lead_in(question: str) -> None:
    typed = "DIOXIDE" if question.isupper() else "dioxide"
    term = UnknownTerm(typed, 0.1, "English word", False)
    assert term_features(term, question, PLANT, 0.6)["beside_known"] == 1.0


def test_every_reading_is_graded_between_0_and_1() -> None:
    for term, question in (
        (DIOXIDE, "How do I start up the chlorine dioxide generator?"),
        (UnknownTerm("VLV-9999-B", 1.0, "tag", True), "VLV-9999-B stuck, what now?"),
        (UnknownTerm("genny", 0.25, "plain word", False), "how do i start the genny"),
    ):
        features = term_features(term, question, PLANT, 0.42)
        assert set(features) == set(FEATURES)
        assert all(0.0 <= value <= 1.0 for value in features.values()), features


def test_a_typo_of_an_english_word_is_read_as_one() -> None:
    typo = UnknownTerm("intermitently", 0.1, "misspelt English word", False)
    assert term_features(typo, "pump trips intermitently", PLANT, 0.5)["misspelt_english"] == 1.0
    assert term_features(DIOXIDE, "chlorine dioxide generator", PLANT, 0.5)["misspelt_english"] == 0.0


def test_the_words_at_or_above_the_threshold_are_named_likeliest_first() -> None:
    # Hand-set weights: the known neighbours alone decide here.
    model = NoteModel(FEATURES, (0.0, 0.0, 0.0, 0.0, 4.0, 0.0), -2.0, 0.5)
    question = "Who do I call if the chlorine dioxide generator leak is bigger than we can handle?"
    assert warning_terms([BIGGER, DIOXIDE], question, PLANT, 0.6, model) == ["dioxide"]
    assert warning_terms([BIGGER], question, PLANT, 0.6, model) == []
    assert warning_terms([], question, PLANT, 0.6, model) == []


def test_weak_evidence_makes_every_unknown_word_more_likely_to_be_named() -> None:
    model = fitted_note_model()
    question = "How do I start up the chlorine dioxide generator?"
    weak = model.probability(term_features(DIOXIDE, question, PLANT, 0.41))
    strong = model.probability(term_features(DIOXIDE, question, PLANT, 0.95))
    assert weak > strong


def test_the_shipped_model_reads_every_feature_it_was_fitted_on() -> None:
    model = fitted_note_model()
    assert model.features == FEATURES
    assert 0.0 < model.threshold < 1.0
