"""PDF: each page's lines with their type and place (pdfium; pypdf where pdfium cannot read a page),
the running headers and footers set apart, columns and boxes read in order, paragraphs, lists, ruled
tables, and headings from the outline, the type and the numbering, each block tagged with its page.

Ruled tables keep their rows and columns (pdf_tables). A page without a text layer, or with only a
few words in it (a scanner's stamp), is read by OCR (pdf_ocr), and OCR's text is kept when it finds
more words than the layer holds.

Every failure inside pypdf becomes a DocumentError: it parses untrusted bytes and raises a wide
range of exception types on damaged files, none of which should reach the user as a traceback. What
only refines the reading (the outline, the type, the boxes) falls back to the next rule with a warning.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from appliance.errors import DocumentError
from appliance.ingest.document import DocumentBuilder, LoadedDocument

from .common import MAX_TITLE_CHARS, short_line_title, title_from_stem
from .furniture import find_furniture
from .page_ocr import OcrBlock
from .pdf_columns import reading_order
from .pdf_headings import PlacedBlock, title_of, with_headings
from .pdf_layout import layout_text
from .pdf_ocr import ocr_pages
from .pdf_outline import Outline
from .pdf_pages import PdfiumPage, PdfiumRead, read_with_pdfium
from .pdf_tables import blocks_with_tables
from .pdf_text import PageBlock, clean_page_text
from .pypdf_log import PypdfWarnings, collect_pypdf_warnings
from .source import Source

# Titles that PDF producers fill in by themselves and that say nothing about the content.
_JUNK_TITLE = re.compile(
    r"^(untitled.*|title|document\d*|no title|layout \d+|microsoft word - .*|.*\.(docx?|pdf|rtf|txt|odt|indd|qxd|tmp)"
    r"|\S*_\S*(?: \[auto-saved\])?|.*\[auto-saved\])$",
    re.IGNORECASE,
)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, PyPdfError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _open(data: bytes, shown: str, pypdf_log: PypdfWarnings) -> PdfReader:
    if b"%PDF-" not in data[:1024]:
        raise DocumentError(shown, "not a PDF file (no %PDF- header at the start)")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                decrypted = reader.decrypt("")
            except DependencyError as exc:  # AES without the 'cryptography' package installed
                raise DocumentError(shown, f"encrypted PDF: cannot decrypt it ({exc})") from None
            if decrypted == PasswordType.NOT_DECRYPTED:
                raise DocumentError(shown, "encrypted PDF: a password is required")
        _ = len(reader.pages)  # loads the page tree now, inside this try, where damage is reported
    except DocumentError:
        raise
    except Exception as exc:  # see module docstring
        reason = f"damaged PDF: {_reason(exc)}"
        if pypdf_log.messages:  # e.g. "EOF marker not found" says the file was truncated
            reason += f" (pypdf also reported: {pypdf_log.messages[0]})"
        raise DocumentError(shown, reason) from None
    return reader


def _page_text(page: PageObject) -> tuple[str, bool]:
    """(text, whether it is layout-mode text). Layout mode keeps paragraph gaps, indentation and
    table columns; it is newer and fussier, so plain mode is the fallback."""
    try:
        return page.extract_text(extraction_mode="layout"), True
    except Exception:  # a layout-mode bug on this page; plain mode is more forgiving
        return page.extract_text(), False


_NO_GEOMETRY = 100_000.0


@dataclass
class _Page:
    number: int
    lines: list[str]  # its lines top to bottom, as text: where the furniture is found
    heights: list[float]  # each line's height on the page (its baseline; for pypdf's text, its line number)
    words: int  # words in its text layer
    pdfium: PdfiumPage | None = None
    text: str = ""  # pypdf's text, where pdfium could not read the page
    layout: bool = True


def load_pdf(data: bytes, source: Source) -> LoadedDocument:
    shown = source.display_path
    builder = DocumentBuilder(shown, "pdf")
    failures: list[str] = []
    with collect_pypdf_warnings() as pypdf_log:
        reader = _open(data, shown, pypdf_log)
        if not reader.pages:
            raise DocumentError(shown, "the PDF has no pages")
        read = read_with_pdfium(data)
        pages = [_read_page(number, page, read, failures) for number, page in enumerate(reader.pages, start=1)]
        info_title = _info_title(reader)
        declares_outline = _declares_outline(reader)
    furniture = find_furniture([page.lines for page in pages], [page.heights for page in pages])
    blocks_of_page = {page.number: _blocks(page, furniture.lines_of_page[page.number - 1]) for page in pages}
    ocr = source.ocr
    read_by_ocr: dict[int, list[OcrBlock]] = {}
    if ocr is not None and ocr.unavailable is None:
        wanted = [page.number for page in pages if page.words < max(1, ocr.limits.min_words)]
        if wanted:
            ocr.check_pages(shown, len(wanted))
            read_by_ocr = ocr_pages(data, shown, wanted, ocr, failures)
    placed: list[PlacedBlock] = []
    for page in pages:
        scanned = read_by_ocr.get(page.number)
        if scanned is not None and _word_count(scanned) > page.words:
            placed += [PlacedBlock(page.number, item.block, item.confidence) for item in scanned]
        else:
            placed += [PlacedBlock(page.number, block) for block in blocks_of_page[page.number]]
    outline = read.outline if read is not None else Outline()
    if declares_outline and not outline.entries and not outline.warnings:
        outline.warnings.append("the outline (bookmarks) is damaged and was not read: headings found from the text")
    placed, heading_warnings = with_headings(placed, outline)
    page_title, placed = title_of(placed, keep=info_title)
    for item in placed:
        block = item.block
        builder.add(block.kind, block.text, level=block.level, page=item.page, ocr_confidence=item.confidence)
    if not builder.blocks:
        if failures and len(failures) >= len(pages):
            raise DocumentError(shown, f"damaged PDF: no page could be read ({failures[0]})")
        if ocr is None or ocr.unavailable is not None:
            why = ocr.unavailable if ocr is not None else "not available here"
            reason = f"no extractable text (scanned PDF? OCR is {why})"
        else:
            reason = "no text found, in the text layer or by OCR"
        if failures:
            reason += f"; {failures[0]}"
        elif pypdf_log.messages:
            reason += f"; pypdf reported: {pypdf_log.messages[0]}"
        raise DocumentError(shown, reason)
    document = builder.build(info_title or page_title or _first_title(placed) or title_from_stem(source.stem))
    document.furniture = furniture.distinct + _rotated(pages)
    document.warnings = [*outline.warnings, *heading_warnings, *_type_warnings(pages), *_unread(read, failures)]
    if info_title:
        document.properties["title"] = info_title
    return document


def _read_page(number: int, page: PageObject, read: PdfiumRead | None, failures: list[str]) -> _Page:
    """One page's lines: pdfium's where it read the page, else pypdf's layout text."""
    pdfium_page = read.pages.get(number) if read is not None else None
    # A page where pdfium finds no text is asked of pypdf too: it may read what pdfium does not, and what
    # it reports about a damaged content stream is what the error says.
    if pdfium_page is not None and pdfium_page.lines.lines:
        lines = [line.text for line in pdfium_page.lines.lines]
        heights = [line.baseline for line in pdfium_page.lines.lines]
        return _Page(number, lines, heights, sum(len(line.split()) for line in lines), pdfium=pdfium_page)
    try:
        text, layout = _page_text(page)
    except Exception as exc:  # one bad page should not lose the others
        failures.append(f"page {number}: {_reason(exc)}")
        return _Page(number, [], [], 0)
    text = clean_page_text(text)
    lines = [line for line in text.split("\n") if line.strip()]
    # Without geometry a line's place is its count from its edge of the page: the top lines count down from
    # far above any bottom line, the bottom ones up from below.
    heights = [_NO_GEOMETRY - i if i < len(lines) / 2 else -float(len(lines) - i) for i in range(len(lines))]
    return _Page(number, lines, heights, len(text.split()), text=text, layout=layout)


def _blocks(page: _Page, furniture: set[int]) -> list[PageBlock]:
    """The page's blocks, its furniture left out."""
    if page.pdfium is not None:
        kept = [line for index, line in enumerate(page.pdfium.lines.lines) if index not in furniture]
        tables = [(t.bounds[1], t.bounds[3]) for t in page.pdfium.tables if t.bounds is not None]
        text, styles = layout_text(reading_order(kept, page.pdfium.boxes, tables))
        return blocks_with_tables(text, page.pdfium.tables, layout=True, styles=styles, headings=False)
    kept_lines: list[str] = []
    position = 0
    for line in page.text.split("\n"):
        if line.strip():
            if position not in furniture:
                kept_lines.append(line)
            position += 1
        else:
            kept_lines.append(line)
    return blocks_with_tables("\n".join(kept_lines), [], layout=page.layout, headings=False)


def _declares_outline(reader: PdfReader) -> bool:
    """The file's catalog names an outline with bookmarks in it, or one that cannot be resolved."""
    try:
        root: Any = reader.trailer["/Root"]
        if "/Outlines" not in root:
            return False
    except Exception:  # a damaged catalog: the pages were read, the outline is simply not there
        return False
    try:
        outlines: Any = root["/Outlines"].get_object()
        return outlines is None or "/First" in outlines
    except Exception:  # named, but pointing nowhere: a damaged outline
        return True


def _info_title(reader: PdfReader) -> str | None:
    try:
        meta = reader.metadata
        title = " ".join(str(meta.title or "").split()) if meta is not None else ""
    except Exception:  # a broken Info dictionary only costs us the title
        title = ""
    if 3 <= len(title) < MAX_TITLE_CHARS and not _JUNK_TITLE.match(title):
        return title
    return None


def _first_title(placed: list[PlacedBlock]) -> str | None:
    """The first page's top heading, else its first line."""
    first_page = [item.block for item in placed if item.page == placed[0].page] if placed else []
    headings = [block for block in first_page if block.kind == "heading"]
    if headings:
        top = min(block.level for block in headings)
        title = next(block.text for block in headings if block.level == top)
        if len(title) < MAX_TITLE_CHARS:
            return title
    return short_line_title(first_page[0].text) if first_page else None


def _rotated(pages: list[_Page]) -> list[str]:
    seen: list[str] = []
    for page in pages:
        if page.pdfium is not None:
            for text in page.pdfium.lines.rotated:
                if text not in seen:
                    seen.append(text)
    return seen


def _type_warnings(pages: list[_Page]) -> list[str]:
    missing = [page.number for page in pages if page.pdfium is not None and page.pdfium.lines.sizes_missing]
    if not missing:
        return []
    return [f"the fonts give no sizes on {len(missing)} page(s): sizes read from the glyphs' height"]


def _unread(read: PdfiumRead | None, failures: list[str]) -> list[str]:
    warnings = []
    if read is None:
        warnings.append("pdfium cannot open this file: its text read by pypdf, without type or boxes")
    elif read.unread:
        warnings.append(f"{len(read.unread)} page(s) read by pypdf, without type or boxes ({read.unread[0]})")
    warnings += failures
    return warnings


def _word_count(blocks: list[OcrBlock]) -> int:
    return sum(len(item.block.text.split()) for item in blocks)
