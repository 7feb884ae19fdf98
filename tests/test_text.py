"""The language rules of appliance/text, one module at a time: what every layer reads text with."""

from __future__ import annotations

import pytest

from appliance.text.identifiers import (
    extract_identifiers,
    identifier_in,
    is_checked_identifier,
    is_digit_value,
    is_strong_identifier,
)
from appliance.text.negation import negated_words
from appliance.text.quantities import canonical_number, numbers_in, unit_after, without_thousands
from appliance.text.sentences import punctuation_spans
from appliance.text.stems import stem
from appliance.text.stopwords import CLAIM_STOPWORDS, STOPWORDS
from appliance.text.terms import all_stems, extract_terms
from appliance.text.tokens import word_terms


def test_search_words_drop_stopwords_unless_nothing_else_is_left() -> None:
    assert word_terms("How do I restart the Gitaly service?") == ["restart", "gitaly", "service"]
    assert word_terms("what is it") == ["what", "is", "it"]
    assert word_terms("pump pump PUMP") == ["pump"]
    assert len(word_terms(" ".join(f"w{i}" for i in range(100)))) == 64


def test_claim_stopwords_extend_the_search_stopwords() -> None:
    assert STOPWORDS < CLAIM_STOPWORDS
    assert "according" in CLAIM_STOPWORDS and "according" not in STOPWORDS


@pytest.mark.parametrize("token", ["VLV-3042-B", "KubePodCrashLooping", "gitlab-ctl", "10.0.0.1", "ec2"])
def test_identifiers_are_tags_names_commands_and_addresses(token: str) -> None:
    assert extract_identifiers(f"see {token} now, twice: {token}") == [token.lower()]


def test_words_with_one_dot_are_not_identifiers() -> None:
    assert extract_identifiers("e.g. the valve, i.e. this one") == []


def test_checked_identifiers_leave_out_units_and_word_pairs() -> None:
    assert is_checked_identifier("VLV-3042-B")
    assert not is_checked_identifier("mg/L")
    assert not is_checked_identifier("and/or")


def test_strong_identifiers_have_capitals_digits_or_underscores() -> None:
    assert is_strong_identifier("PS-3") and is_strong_identifier("max_connections")
    assert not is_strong_identifier("bare-metal")


def test_digit_values_are_numbers_written_with_separators() -> None:
    assert is_digit_value("555-0195") and is_digit_value("10.0.4.17")
    assert not is_digit_value("PS-3")


def test_identifier_occurs_only_as_a_whole_token() -> None:
    assert not identifier_in("VLV-3042", "close VLV-3042-B first")
    assert identifier_in("gitlab.rb", "edit /etc/gitlab/gitlab.rb")
    assert identifier_in("follow-up", "schedule a follow up call")


def test_numbers_are_canonical_and_carry_their_folded_unit() -> None:
    assert canonical_number("0.50") == "0.5" and canonical_number("1000") == "1000"
    assert without_thousands("1,000 gallons, 2, 3") == "1000 gallons, 2, 3"
    text = "wait 15 minutes at 72 psi"
    assert unit_after(text, text.index("15") + 2)[0] == "min"
    assert numbers_in("two pumps, 72 psi") == {"2": {None}, "72": {"psi"}}


def test_the_tail_of_a_tag_is_not_a_number() -> None:
    assert numbers_in("valve F-011 and AIT301") == {}


def test_stems_fold_inflections_synonyms_and_number_words() -> None:
    assert stem("close") == stem("closes") == stem("closed") == stem("closing") == stem("shut")
    assert stem("two") == "2"
    assert stem("pump") != stem("pipe")


def test_terms_separate_words_identifiers_and_quantities() -> None:
    terms = extract_terms("Close VLV-3042-B when pressure reaches 72 psi.")
    assert terms.identifiers == ("VLV-3042-B",)
    assert [(q.value, q.unit, q.with_unit) for q in terms.numbers] == [("72", "psi", "72 psi")]
    assert terms.words == (stem("close"), stem("pressure"), stem("reaches"))


def test_all_stems_of_a_source_include_its_numbers() -> None:
    assert {"2", stem("pumps")} <= all_stems("Start two pumps.")


def test_negation_applies_to_the_next_content_word() -> None:
    assert negated_words("Do not increase the flow.") == {stem("increase")}
    assert negated_words("no more than 5 minutes") == set()
    assert negated_words("Do not return it until approved.") == set()


def test_punctuation_spans_cut_after_every_sentence_mark() -> None:
    text = "One. Two; three: four"
    assert [text[s:e] for s, e in punctuation_spans(text, 0, len(text))] == ["One.", "Two;", "three:", "four"]
