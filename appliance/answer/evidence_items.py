"""A passage shown beside an answer, with its best sentences marked: the sources of a generated answer, the
closest passages of a refusal."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from appliance.answer.evidence_sentences import best_sentences
from appliance.answer.ocr_trust import lowest_confidence
from appliance.answer.results import EvidenceItem, EvidenceSentence
from appliance.index.records import ChunkRow


@dataclass(frozen=True)
class Meaning:
    """What marks a passage's sentences by meaning as well as by words: the embedder, through the process's memory
    of the texts it embedded (a document's sentences recur as it does), and the question's vector (the search's)."""

    embed: Callable[[Sequence[str]], np.ndarray]
    question: np.ndarray


def evidence_item(
    question: str,
    n: int | None,
    score: float,
    row: ChunkRow,
    document_ids: Mapping[str, int],
    sentences: int,
    text: str | None = None,
    window: tuple[ChunkRow, ...] = (),
    meaning: Meaning | None = None,
) -> EvidenceItem:
    """`row` (or the window of chunks `text` joins) as a source numbered `n`, its `sentences` best marked (by
    words and, with `meaning`, by meaning: evidence_sentences.py)."""
    passage = text if text is not None else row.text
    embed, asked = (meaning.embed, meaning.question) if meaning is not None else (None, None)
    spans = best_sentences(question, passage, k=sentences, embed=embed, question_vector=asked)
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
