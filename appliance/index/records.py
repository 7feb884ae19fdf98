"""The chunk records every stage passes on, one base and what each stage adds to it.

    Place         where a passage stands: its chunk, document path, section, page (and OCR confidence)
    ├─ Citation   + the source number an answer cites it by, the document's id, the OCR note  (answer)
    └─ ChunkRecord  + the document's title and the chunk's text
    ├─ Chunk      + the chunker's placement: order, header, character span, identifiers  (ingest)
    │  └─ ChunkRow  + what the catalog keeps beside it: rowid, document type             (index)
    ├─ Hit        + rank and score of a search                                            (retrieve)
    └─ EvidenceItem + source number, the best sentences and the window's chunks            (answer)

The index owns the base and the records it stores, so that ingest and retrieve import them from
here and the index imports neither. Field names are the API's (`chunk_id`, `path`), so a record and
its JSON read the same.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Place:
    chunk_id: str
    path: str  # the document's display path, as citations show it: docs_corpus/SOP-CL-004….md
    section: str  # heading path inside the document, "Procedure › Restart" ('' before the first heading)
    page: int | None  # 1-based page of paged formats (PDF), else None
    ocr_confidence: float | None = None  # text recognised by OCR: its recognition confidence (0..1)


@dataclass(frozen=True, kw_only=True)
class ChunkRecord(Place):
    title: str  # the document's title ('' when it has none)
    text: str


@dataclass(frozen=True, kw_only=True)
class Chunk(ChunkRecord):
    """A chunk as the chunker cut it."""

    ord: int  # position in its document
    header: str  # "title › section", embedded with the text
    start: int  # character span in the loaded document's text
    end: int
    identifiers: str  # the exact identifiers it holds, space-separated (the chunks_ident FTS5 table)

    @property
    def embedding_text(self) -> str:
        """What the embedder sees (and what the token bound applies to)."""
        return f"{self.header}\n{self.text}"


@dataclass(frozen=True, kw_only=True)
class ChunkRow(Chunk):
    """A chunk read back from the catalog."""

    rowid: int  # the chunks table's rowid, which both FTS5 tables are keyed on
    type: str  # its document's type: md, txt, html, pdf, docx, image
