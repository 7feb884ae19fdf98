"""PDF via pypdf: paragraphs, lists, tables and numbered headings, each tagged with its 1-based page.

Ruled tables keep their rows and columns (pdf_tables). A page without a text layer, or with only a
few words in it (a scanner's stamp), is read by OCR (pdf_ocr), and OCR's text is kept when it finds
more words than the layer holds.

Every failure inside pypdf becomes a DocumentError: it parses untrusted bytes and raises a wide
range of exception types on damaged files, none of which should reach the user as a traceback.
"""

from __future__ import annotations

import io
import re

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from appliance.errors import DocumentError
from appliance.ingest.document import DocumentBuilder, LoadedDocument

from .common import MAX_TITLE_CHARS, short_line_title, title_from_stem
from .page_ocr import OcrBlock
from .pdf_ocr import ocr_pages
from .pdf_tables import PageTable, blocks_with_tables, page_tables
from .pdf_text import PageBlock, clean_page_text
from .pypdf_log import PypdfWarnings, collect_pypdf_warnings
from .source import Source

# Titles that PDF producers fill in by themselves and that say nothing about the content.
_JUNK_TITLE = re.compile(
    r"^(untitled.*|title|document\d*|no title|microsoft word - .*|.*\.(docx?|pdf|rtf|txt|odt|indd|qxd|tmp))$",
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


def _title(reader: PdfReader, first_page_text: str) -> str | None:
    try:
        meta = reader.metadata
        title = " ".join(str(meta.title or "").split()) if meta is not None else ""
    except Exception:  # a broken Info dictionary only costs us the title
        title = ""
    if 3 <= len(title) < MAX_TITLE_CHARS and not _JUNK_TITLE.match(title):
        return title
    return short_line_title(clean_page_text(first_page_text))


def load_pdf(data: bytes, source: Source) -> LoadedDocument:
    shown = source.display_path
    builder = DocumentBuilder(shown, "pdf")
    first_page_text = ""
    failures: list[str] = []
    pages: list[tuple[int, list[PageBlock], int]] = []  # (number, text-layer blocks, words in the layer)
    with collect_pypdf_warnings() as pypdf_log:
        reader = _open(data, shown, pypdf_log)
        if not reader.pages:
            raise DocumentError(shown, "the PDF has no pages")
        ruled = _ruled_tables(data)
        for number, page in enumerate(reader.pages, start=1):
            try:
                text, layout = _page_text(page)
                blocks = blocks_with_tables(text, ruled.get(number, []), layout=layout)
            except Exception as exc:  # one bad page should not lose the others
                failures.append(f"page {number}: {_reason(exc)}")
                pages.append((number, [], 0))
                continue
            pages.append((number, blocks, len(text.split())))
            if number == 1:
                first_page_text = text
        title = _title(reader, first_page_text)
    ocr = source.ocr
    read_by_ocr: dict[int, list[OcrBlock]] = {}
    if ocr is not None and ocr.unavailable is None:
        wanted = [number for number, _, words in pages if words < max(1, ocr.limits.min_words)]
        if wanted:
            ocr.check_pages(shown, len(wanted))
            read_by_ocr = ocr_pages(data, shown, wanted, ocr, failures)
    for number, blocks, words in pages:
        scanned = read_by_ocr.get(number)
        if scanned is not None and _word_count(scanned) > words:
            for item in scanned:
                block = item.block
                builder.add(block.kind, block.text, level=block.level, page=number, ocr_confidence=item.confidence)
            continue
        for block in blocks:
            builder.add(block.kind, block.text, level=block.level, page=number)
    if not builder.blocks:
        if failures and len(failures) >= len(reader.pages):
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
    return builder.build(title or title_from_stem(source.stem))


def _ruled_tables(data: bytes) -> dict[int, list[PageTable]]:
    """Each page's ruled tables (pdf_tables); none when pdfium cannot open the file (pypdf still reads it)."""
    import pypdfium2 as pdfium

    found: dict[int, list[PageTable]] = {}
    try:
        document = pdfium.PdfDocument(data)
    except Exception:  # see module docstring: tables are a refinement, the text is what matters
        return found
    try:
        for index in range(len(document)):
            page = document[index]
            try:
                tables = page_tables(page)
            except Exception:  # a damaged page's drawing: its text is still read, without the grid
                tables = []
            finally:
                page.close()
            if tables:
                found[index + 1] = tables
    finally:
        document.close()
    return found


def _word_count(blocks: list[OcrBlock]) -> int:
    return sum(len(item.block.text.split()) for item in blocks)
