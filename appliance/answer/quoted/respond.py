"""The quoted answer's events: the sections shown as sources, then their steps at once, then the result.

Nothing here writes a word: every step is a slice of the chunk it cites (answer.py). What the result adds
is how sure the choice is (choice.py): "certain" when no other section comes close, "close" when one does (it
is named first among the alternatives, for the page's "Also matches"), "uncertain" when the chosen section is
the likeliest but not likely.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from appliance.answer.evidence_items import Meaning, evidence_item
from appliance.answer.ocr_trust import ocr_note
from appliance.answer.quoted.answer import Quoted
from appliance.answer.quoted.sections import Section
from appliance.answer.results import (
    Alternative,
    AnswerEvent,
    AnswerResult,
    Citation,
    Confidence,
    EvidenceItem,
    ShownSection,
    ms_since,
    refusal_result,
)


def confidence_of(quoted: Quoted) -> Confidence | None:
    choice = quoted.choice
    if choice is None:
        return None
    if choice.close is not None:
        return "close"
    return "certain" if choice.certain else "uncertain"


def quoted_events(
    question: str,
    quoted: Quoted,
    scores: Mapping[str, float],
    document_ids: Mapping[str, int],
    *,
    sentences: int,
    ocr_low_confidence: float,
    timings: dict[str, float],
    started: float,
    meaning: Meaning | None = None,
) -> Iterator[AnswerEvent]:
    evidence = [
        section_item(question, n, section, quoted, scores, document_ids, sentences, meaning)
        for n, section in enumerate(quoted.sections, 1)
    ]
    if quoted.refusal_reason is not None:
        closest = [item.unnumbered() for item in evidence]
        yield AnswerEvent("evidence", evidence=closest)
        timings["total"] = ms_since(started)
        yield AnswerEvent("done", result=refusal_result(question, closest, timings, quoted.refusal_reason))
        return
    yield AnswerEvent("evidence", evidence=evidence)
    timings["first_content"] = ms_since(started)
    yield AnswerEvent("steps", answer_kind=quoted.kind, steps=quoted.steps)
    citations = [
        Citation(
            n=item.n or 0,
            chunk_id=item.chunk_id,
            path=item.path,
            section=item.section,
            page=item.page,
            document_id=item.document_id,
            ocr_confidence=item.ocr_confidence,
            ocr_note=ocr_note(item.ocr_confidence, ocr_low_confidence),
        )
        for item in evidence
    ]
    shown = [
        ShownSection(n, s.path, s.title, s.heading, list(s.pages), s.words, document_ids.get(s.path))
        for n, s in enumerate(quoted.sections, start=1)
    ]
    alternatives = [
        Alternative(
            a.section.path,
            a.section.title,
            a.section.heading,
            a.section.chunks[0].page,
            (a.hits or (a.section.chunks[0].chunk_id,))[0],
            round(a.probability, 4),
            document_ids.get(a.section.path),
        )
        for a in quoted.alternatives
    ]
    timings["total"] = ms_since(started)
    result = AnswerResult(
        question=question,
        answer=quoted.text(),
        refused=False,
        grounded=True,  # every word shown is the source's own, at the place it cites
        verified=True,
        unsupported=[],
        citations=citations,
        evidence=evidence,
        timings_ms=timings,
        model=None,  # no model was asked
        answer_kind=quoted.kind,
        steps=quoted.steps,
        sections=shown,
        alternatives=alternatives,
        confidence=confidence_of(quoted),
        choice_probability=round(quoted.choice.region_probability, 4) if quoted.choice else None,
    )
    yield AnswerEvent("done", result=result)


def section_item(
    question: str,
    n: int,
    section: Section,
    quoted: Quoted,
    scores: Mapping[str, float],
    document_ids: Mapping[str, int],
    sentences: int,
    meaning: Meaning | None = None,
) -> EvidenceItem:
    """A shown section as a source: its text as shown, cited at its first matched chunk (else its first)."""
    steps = [step for step in quoted.steps if step.n == n and step.kind != "omitted"]
    text = "\n".join(step.text for step in steps)
    cited = next((step for step in steps if step.matched), steps[0] if steps else None)
    chunk = next((c for c in section.chunks if cited is not None and c.chunk_id == cited.chunk_id), section.chunks[0])
    score = max((scores.get(c.chunk_id, 0.0) for c in section.chunks), default=0.0)
    return evidence_item(
        question, n, score, chunk, document_ids, sentences, text=text, window=section.chunks, meaning=meaning
    )
