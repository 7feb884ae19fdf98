"""How far a passage read by OCR is trusted: its recognition confidence (ingest stores each chunk's),
the note a citation of a badly read passage carries, and which sources may not vouch for specifics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from appliance.index.records import ChunkRecord

OCR_NOTE = "text recognised by OCR: check the page"


def lowest_confidence(chunks: Iterable[ChunkRecord]) -> float | None:
    """The least trusted OCR'd chunk of a passage (None when none of it came from OCR)."""
    read = [chunk.ocr_confidence for chunk in chunks if chunk.ocr_confidence is not None]
    return min(read) if read else None


def ocr_note(confidence: float | None, threshold: float) -> str | None:
    """The note for a citation: only when OCR read the cited passage with confidence below `threshold`."""
    return OCR_NOTE if confidence is not None and confidence < threshold else None


def untrusted_sources(sources: Sequence[tuple[int, Iterable[ChunkRecord]]], threshold: float) -> set[int]:
    """The numbers of the sources whose text holds a chunk read by OCR below `threshold`."""
    return {n for n, chunks in sources if ocr_note(lowest_confidence(chunks), threshold) is not None}
