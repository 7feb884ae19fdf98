"""OCR for loaders: a page image in, the page's blocks out, each with its recognition confidence;
ruled tables come out as rows and columns (image_tables) and list bullets are put back (bullets), as
a text layer gives them.

The engine is loaded on the first page that needs it (a folder without scans never pays for it),
and every limit (pages, pixels, seconds) is checked here so that each format's loader reports a
bad file the same way: a DocumentError naming the file, the limit and the setting to change.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from appliance.errors import DocumentError
from appliance.ingest.ocr import OcrEngine, OcrLine, OcrPage, OcrTimeout, layout_text

from .bullets import with_bullets
from .common import collapse_whitespace
from .image_tables import image_tables
from .page_pixels import straight_pixels
from .pdf_tables import PageTable, blocks_with_tables
from .pdf_text import PageBlock

if TYPE_CHECKING:
    from PIL.Image import Image


@dataclass(frozen=True)
class OcrLimits:
    dpi: int = 200
    min_words: int = 20
    max_pages: int = 100
    max_pixels: int = 50_000_000
    seconds_per_page: float = 120.0


@dataclass(frozen=True)
class OcrBlock:
    block: PageBlock
    confidence: float


class PageReader:
    """Reads page images for the loaders of one ingest run; counts what it did (pages, seconds)."""

    def __init__(
        self, model_dir: Path | None, limits: OcrLimits, *, threads: int = 0, unavailable: str | None = None
    ) -> None:
        self.model_dir = model_dir
        self.limits = limits
        self.threads = threads
        self.unavailable = unavailable  # why there is no OCR (switched off, model not in the store)
        self._engine: OcrEngine | None = None
        self.pages = 0
        self.seconds = 0.0

    def engine(self, shown: str) -> OcrEngine:
        if self._engine is None:
            if self.unavailable is not None or self.model_dir is None:
                raise DocumentError(shown, f"needs OCR, which is not available: {self.unavailable}")
            try:
                self._engine = OcrEngine(self.model_dir, self.threads)
            except Exception as exc:  # a damaged model file: every scan is reported, the rest indexed
                raise DocumentError(shown, f"needs OCR, and the OCR model cannot be loaded ({exc})") from None
        return self._engine

    def check_pages(self, shown: str, count: int, what: str = "pages") -> None:
        if count > self.limits.max_pages:
            raise DocumentError(
                shown,
                f"{count} {what} to read by OCR, over the limit of {self.limits.max_pages} "
                "(setting ingest.ocr_max_pages)",
            )

    def check_pixels(self, shown: str, width: int, height: int, where: str = "image") -> None:
        if width * height > self.limits.max_pixels:
            raise DocumentError(
                shown,
                f"{where} is {width} x {height} pixels, over the limit of {self.limits.max_pixels:,} "
                "(setting ingest.ocr_max_pixels): not decoded",
            )

    def read(self, shown: str, image: Image, page: int) -> OcrPage:
        engine = self.engine(shown)
        try:
            result = engine.read(image, seconds=self.limits.seconds_per_page)
        except OcrTimeout as exc:
            raise DocumentError(shown, f"page {page}: {exc} (setting ingest.ocr_seconds_per_page)") from None
        except Exception as exc:  # the engine on a degenerate image (a one-pixel strip): that page fails
            raise DocumentError(shown, f"page {page}: OCR failed ({type(exc).__name__}: {exc})") from None
        self.pages += 1
        self.seconds += result.seconds
        return result

    def blocks(self, shown: str, image: Image, page: int) -> tuple[list[OcrBlock], OcrPage]:
        result = self.read(shown, image, page)
        tables: list[PageTable] = []
        if result.lines:
            try:
                pixels = straight_pixels(image, result.skew_degrees)
                tables = image_tables(pixels, result.lines)
                result = replace(result, lines=with_bullets(pixels, result.lines))
            except Exception:  # layout is a refinement: the page's text is still read without it
                pass
        return blocks_of(result, tables), result


def blocks_of(page: OcrPage, tables: list[PageTable]) -> list[OcrBlock]:
    """The page's blocks (as for a text layer), each ruled table in place of the lines that held its
    words, each block with the mean confidence of the lines it holds."""
    overall = page.confidence
    if overall is None:
        return []
    result = []
    for block in blocks_with_tables(layout_text(page.lines), tables, layout=True):
        held = collapse_whitespace(block.text)
        inside = [line for line in page.lines if collapse_whitespace(line.text) in held]
        result.append(OcrBlock(block, round(_mean(inside) if inside else overall, 4)))
    return result


def _mean(lines: list[OcrLine]) -> float:
    weights = [max(1, len(line.text)) for line in lines]
    return sum(line.confidence * w for line, w in zip(lines, weights, strict=True)) / sum(weights)
