"""What a loader hands to the chunker: a document as a flat list of typed blocks.

Offsets (`start`, `end`) are character offsets into `LoadedDocument.text`, the document's
extracted text, which is the blocks' texts joined by blank lines. They let a citation point
at the exact passage the answer came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from appliance.index.records import DocumentControl, DocumentMeta

BlockKind = Literal["heading", "paragraph", "code", "table", "list"]

# Loaders join blocks with this separator when they build `LoadedDocument.text`.
BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Block:
    """One structural unit of a document, in reading order."""

    kind: BlockKind
    text: str
    start: int
    end: int
    level: int = 0  # heading level 1..6 for kind == "heading", else 0
    page: int | None = None  # 1-based page number for paged formats (PDF, multi-page TIFF)
    ocr_confidence: float | None = None  # read by OCR: mean recognition confidence of its lines (0..1)


@dataclass
class LoadedDocument:
    """A parsed document: its title, its blocks, and the text the offsets refer to."""

    path: str
    doc_type: str  # "md", "txt", "html", "pdf", "docx", "image"
    title: str
    blocks: list[Block] = field(default_factory=list)
    text: str = ""
    # Page furniture taken out of the blocks (running headers and footers, "Page 3 of 9", licence lines),
    # each distinct line once: the document's metadata, never its text.
    furniture: list[str] = field(default_factory=list)
    # What the loader fell back on, per file ("the outline points to page 40 of 12: bookmark ignored").
    warnings: list[str] = field(default_factory=list)
    # The file's own properties where a control block may be read (DOCX core properties, PDF info).
    properties: dict[str, str] = field(default_factory=dict)
    control: DocumentControl = field(default_factory=DocumentControl)  # read after loading (ingest.doc_control)

    @property
    def meta(self) -> DocumentMeta:
        return DocumentMeta(self.control, tuple(self.furniture), tuple(self.warnings))


class DocumentBuilder:
    """Accumulates blocks and keeps offsets and the joined text consistent."""

    def __init__(self, path: str, doc_type: str) -> None:
        self.path = path
        self.doc_type = doc_type
        self._parts: list[str] = []
        self._length = 0
        self.blocks: list[Block] = []

    def add(
        self,
        kind: BlockKind,
        text: str,
        *,
        level: int = 0,
        page: int | None = None,
        ocr_confidence: float | None = None,
    ) -> None:
        text = text.strip("\n")
        if not text.strip():
            return
        if self._parts:
            self._parts.append(BLOCK_SEPARATOR)
            self._length += len(BLOCK_SEPARATOR)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        self.blocks.append(
            Block(
                kind=kind,
                text=text,
                start=start,
                end=self._length,
                level=level,
                page=page,
                ocr_confidence=ocr_confidence,
            )
        )

    def build(self, title: str) -> LoadedDocument:
        return LoadedDocument(
            path=self.path,
            doc_type=self.doc_type,
            title=title,
            blocks=self.blocks,
            text="".join(self._parts),
        )
