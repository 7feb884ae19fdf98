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

import re
from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class DocumentControl:
    """What a controlled document says about itself: its number, title, revision and dates.

    Read by ingest from the first page's control block, the running header/footer or the file's
    properties (appliance.ingest.doc_control); every field is None when the document does not state it.
    Dates are ISO 8601 (YYYY-MM-DD) where the document's own date reads one way only, else as written.
    """

    number: str | None = None  # "SOP-CL-004"
    title: str | None = None
    revision: str | None = None  # "3", "B", "2.1"
    effective: str | None = None  # effective (or issue) date
    review: str | None = None  # the next review: as stated, or the effective date plus the stated cycle
    review_from_cycle: bool = False  # `review` was worked out from a review cycle ("Annual"), not stated

    @property
    def stated(self) -> bool:
        return any((self.number, self.revision, self.effective, self.review))

    def label(self) -> str:
        """How a citation names the revision: "SOP-CL-004 rev 3, effective 2025-05-01" ('' when nothing is stated)."""
        head = " ".join(part for part in (self.number, f"rev {self.revision}" if self.revision else None) if part)
        effective = f"effective {self.effective}" if self.effective else ""
        return ", ".join(part for part in (head, effective) if part)

    def as_json(self, today: str) -> dict[str, object]:
        """The control block as the API gives it with a citation: its fields, the label, whether the review
        date has passed on `today` (ISO)."""
        return {
            "number": self.number,
            "title": self.title,
            "revision": self.revision,
            "effective": self.effective,
            "review": self.review,
            "review_from_cycle": self.review_from_cycle,
            "review_overdue": self.review_overdue(today),
            "label": self.label(),
        }

    def review_overdue(self, today: str) -> bool:
        """The review date (ISO: a day, or a month) lies before `today` (ISO); False when it is not ISO."""
        review = self.review
        return review is not None and _ISO_DATE.fullmatch(review) is not None and review < today[: len(review)]


_ISO_DATE = re.compile(r"\d{4}-\d{2}(?:-\d{2})?")


@dataclass(frozen=True)
class DocumentMeta:
    """What a document carries besides its chunks: its control block, the page furniture taken out of its
    chunks (running headers and footers, "Page 3 of 9", licence lines: kept here, never dropped silently)
    and the loader's warnings (a broken outline, a font table without sizes: the rule it fell back on)."""

    control: DocumentControl = field(default_factory=DocumentControl)
    furniture: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
