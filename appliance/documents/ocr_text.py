"""The text OCR read from a document's scanned pages, rebuilt from its indexed chunks.

OCR takes seconds a page, too slow to run again when an operator opens the document: the view shows
what was indexed, page by page, from the chunks (their spans into the loaded text let overlapping
chunks be joined without repeating the overlap), marked as OCR'd text with its confidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from appliance.index.records import ChunkRow
from appliance.ingest.document import Block, BlockKind, LoadedDocument

OCR_LABEL = "Text recognised by OCR (confidence {confidence:.2f}): check it against the page of the original."


def ocr_blocks(chunks: Sequence[ChunkRow]) -> list[Block]:
    """The OCR'd chunks' text as blocks (a heading where the section changes), in document order."""
    blocks: list[Block] = []
    section = None
    merged: list[tuple[int, int, str, int | None, float, str]] = []  # start, end, text, page, confidence, section
    for chunk in sorted((c for c in chunks if c.ocr_confidence is not None), key=lambda c: (c.start, c.end)):
        confidence = float(chunk.ocr_confidence or 0.0)
        last = merged[-1] if merged else None
        if last is not None and chunk.start < last[1] and chunk.page == last[3] and chunk.section == last[5]:
            start, end, text, page, low, heading = last
            text += chunk.text[end - chunk.start :] if chunk.end > end else ""
            merged[-1] = (start, max(end, chunk.end), text, page, min(low, confidence), heading)
        else:
            merged.append((chunk.start, chunk.end, chunk.text, chunk.page, confidence, chunk.section))
    for start, end, text, page, confidence, heading in merged:
        if heading and heading != section:
            title = heading.split(" › ")[-1]
            blocks.append(Block("heading", title, start, start, level=2, page=page, ocr_confidence=confidence))
        section = heading
        for paragraph in (part for part in text.split("\n\n") if part.strip()):
            kind: BlockKind = "table" if paragraph.lstrip().startswith("|") else "paragraph"
            blocks.append(Block(kind, paragraph, start, end, page=page, ocr_confidence=confidence))
    return blocks


def with_ocr_pages(
    document: LoadedDocument | None, chunks: Sequence[ChunkRow], path: str, doc_type: str
) -> LoadedDocument:
    """The document with the pages OCR read replaced by their indexed text (an image: all of it)."""
    read = ocr_blocks(chunks)
    pages = {block.page for block in read}
    kept = [block for block in document.blocks if block.page not in pages] if document is not None else []
    blocks = sorted([*kept, *read], key=lambda block: (block.page or 0, block.start))
    base = document or LoadedDocument(path=path, doc_type=doc_type, title="")
    return replace(base, blocks=blocks, doc_type="pdf" if doc_type == "image" else base.doc_type)
