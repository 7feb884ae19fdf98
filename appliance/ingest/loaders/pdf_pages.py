"""What pdfium reads of a PDF, page by page: the lines with their type and place (pdf_lines), the ruled
tables (pdf_tables), the boxes drawn around text, and the outline (pdf_outline).

pdfium parses untrusted bytes: a file it cannot open is read by pypdf alone (the caller's fallback), and
a page it cannot read is noted and read by pypdf; neither fails the document.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .pdf_columns import Box
from .pdf_lines import PageLines, page_lines
from .pdf_outline import Outline, read_outline
from .pdf_tables import PageTable, page_boxes, page_paths, page_tables


@dataclass
class PdfiumPage:
    lines: PageLines
    tables: list[PageTable]
    boxes: list[Box]


@dataclass
class PdfiumRead:
    pages: dict[int, PdfiumPage] = field(default_factory=dict)  # 1-based page number → what was read
    outline: Outline = field(default_factory=Outline)
    unread: list[str] = field(default_factory=list)  # "page 3: …" for the pages pdfium could not read


def read_with_pdfium(data: bytes) -> PdfiumRead | None:
    """Every page pdfium can read; None when it cannot open the file."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except Exception:  # pypdf opened it: its text is used instead
        return None
    read = PdfiumRead()
    try:
        read.outline = read_outline(document)
        for index in range(len(document)):
            try:
                read.pages[index + 1] = _page(document, index)
            except Exception as exc:  # one damaged page: pypdf reads it
                read.unread.append(f"page {index + 1}: {type(exc).__name__}")
    finally:
        document.close()
    return read


def _page(document: object, index: int) -> PdfiumPage:
    page = document[index]  # type: ignore[index]
    try:
        textpage = page.get_textpage()
        try:
            lines = page_lines(page, textpage)
        finally:
            textpage.close()
        try:
            paths = page_paths(page)
            tables = page_tables(page, paths)
            boxes = [Box(*box) for box in page_boxes(paths, tables, lines.width, lines.height)]
        except Exception:  # a damaged drawing: the text is still read, without grids or boxes
            tables, boxes = [], []
        return PdfiumPage(lines, tables, boxes)
    finally:
        page.close()
