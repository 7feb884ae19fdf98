"""Trust in OCR'd text: a passage read with low confidence is cited with a warning to check the page,
and its identifiers and numbers vouch for no answer (a misread digit must not confirm the model's)."""

from __future__ import annotations

from appliance.answer.generated.citations import CitedSentence
from appliance.answer.generated.support import check_support
from appliance.answer.ocr_trust import OCR_NOTE, lowest_confidence, ocr_note, untrusted_sources
from appliance.index.records import ChunkRecord

SOURCES = {1: "Before the restart, close valve VLV-3042-B and hold the level below 85 % for 10 minutes."}


def sentence(text: str) -> CitedSentence:
    return CitedSentence(text=text, cited=frozenset({1}), start=0, end=len(text), kind="text")


def chunk(confidence: float | None) -> ChunkRecord:
    return ChunkRecord(chunk_id="c", path="p.pdf", title="", section="", page=3, text="t", ocr_confidence=confidence)


def test_a_low_confidence_passage_vouches_for_no_tag_and_no_number() -> None:
    claims = [sentence("Close valve VLV-3042-B before the restart."), sentence("Hold the level below 85 %.")]
    trusted = check_support(claims, SOURCES)
    assert trusted.grounded
    doubtful = check_support(claims, SOURCES, untrusted={1})
    assert not doubtful.grounded
    reasons = [detail.reason for detail in doubtful.details]
    assert "identifier VLV-3042-B not in the cited sources" in reasons[0]
    assert "number 85" in reasons[1]


def test_the_words_of_a_low_confidence_passage_still_count() -> None:
    # Nothing specific in the claim: OCR's confidence does not matter to it.
    assert check_support([sentence("Close the valve before the restart.")], SOURCES, untrusted={1}).grounded


def test_only_a_low_confidence_passage_gets_the_note() -> None:
    assert ocr_note(0.72, 0.9) == OCR_NOTE == "text recognised by OCR: check the page"
    assert ocr_note(0.95, 0.9) is None
    assert ocr_note(None, 0.9) is None  # a text layer or a text format


def test_a_passage_is_as_trusted_as_its_least_trusted_ocr_chunk() -> None:
    assert lowest_confidence([chunk(None), chunk(0.97), chunk(0.81)]) == 0.81
    assert lowest_confidence([chunk(None)]) is None
    sources = [(1, [chunk(None), chunk(0.97)]), (2, [chunk(0.97), chunk(0.6)]), (3, [chunk(None)])]
    assert untrusted_sources(sources, 0.9) == {2}
