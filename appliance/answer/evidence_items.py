"""A passage shown beside an answer, with its best sentences marked: the sources of a generated answer, the
closest passages of a refusal."""

from __future__ import annotations

from collections.abc import Mapping

from appliance.answer.evidence_sentences import best_sentences
from appliance.answer.ocr_trust import lowest_confidence
from appliance.answer.results import EvidenceItem, EvidenceSentence
from appliance.index.records import ChunkRow


def evidence_item(
    question: str,
    n: int | None,
    score: float,
    row: ChunkRow,
    document_ids: Mapping[str, int],
    sentences: int,
    text: str | None = None,
    window: tuple[ChunkRow, ...] = (),
) -> EvidenceItem:
    """`row` (or the window of chunks `text` joins) as a source numbered `n`, its `sentences` best marked."""
    passage = text if text is not None else row.text
    spans = best_sentences(question, passage, k=sentences)
    return EvidenceItem(
        n=n,
        chunk_id=row.chunk_id,
        path=row.path,
        title=row.title,
        section=row.section,
        page=row.page,
        score=score,
        text=passage,
        sentences=[EvidenceSentence(passage[s:e], s, e, round(sc, 4)) for s, e, sc in spans],
        chunk_ids=[chunk.chunk_id for chunk in window] or [row.chunk_id],
        document_id=document_ids.get(row.path),
        ocr_confidence=lowest_confidence(window or (row,)),
    )
