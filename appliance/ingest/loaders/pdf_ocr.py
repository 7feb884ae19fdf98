"""Rendering the PDF pages that need OCR (pypdfium2) and reading them (page_ocr).

A page that cannot be rendered, or whose OCR fails, is noted in `failures` and keeps whatever its
text layer had: the other pages of the file are still indexed. A page over its time limit fails the
file (a stuck page would stall every reindex after it).
"""

from __future__ import annotations

import math

from appliance.errors import DocumentError

from .page_ocr import OcrBlock, PageReader

_POINTS_PER_INCH = 72.0


def ocr_pages(
    data: bytes, shown: str, numbers: list[int], reader: PageReader, failures: list[str]
) -> dict[int, list[OcrBlock]]:
    """OCR'd blocks of the given 1-based pages."""
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(data)
    except Exception as exc:  # pdfium refuses a file pypdf could parse: no page can be rendered
        failures.append(f"cannot render the PDF for OCR ({_reason(exc)})")
        return {}
    read: dict[int, list[OcrBlock]] = {}
    try:
        for number in numbers:
            try:
                image = _render(document, number, reader)
            except DocumentError:
                raise
            except Exception as exc:  # see module docstring
                failures.append(f"page {number}: cannot be rendered for OCR ({_reason(exc)})")
                continue
            blocks, _ = reader.blocks(shown, image, number)
            read[number] = blocks
    finally:
        document.close()
    return read


def _render(document: object, number: int, reader: PageReader):  # type: ignore[no-untyped-def]
    """The page as a greyscale image at ingest.ocr_dpi, or less when that would exceed ocr_max_pixels."""
    page = document[number - 1]  # type: ignore[index]
    try:
        width, height = page.get_size()
        scale = reader.limits.dpi / _POINTS_PER_INCH
        area = max(1.0, width * height)
        if area * scale * scale > reader.limits.max_pixels:
            scale = math.sqrt(reader.limits.max_pixels / area)  # a poster-sized page: render it smaller
        return page.render(scale=scale, grayscale=True).to_pil()
    finally:
        page.close()


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
