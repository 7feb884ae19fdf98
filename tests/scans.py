"""Scanned pages for the OCR tests: real text drawn in a real font, small so that OCR takes a second."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def page_image(lines: list[str], *, width: int = 900, size: int = 30) -> Image.Image:
    """White page, black text, one line per entry (an empty entry is a blank line)."""
    font = ImageFont.truetype(FONT, size) if Path(FONT).is_file() else ImageFont.load_default(size=size)
    pitch = int(size * 1.6)
    image = Image.new("L", (width, pitch * (len(lines) + 2)), 255)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines, start=1):
        draw.text((40, row * pitch), line, fill=0, font=font)
    return image


def image_bytes(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def tiff_pages(pages: list[Image.Image]) -> bytes:
    out = io.BytesIO()
    pages[0].save(out, format="TIFF", save_all=True, append_images=pages[1:], compression="tiff_deflate")
    return out.getvalue()


def mixed_pdf(path: Path, text_page: list[str], scanned: Image.Image, *, stamp: str | None = None) -> Path:
    """A PDF whose first page has a text layer and whose second is a scan (an image, plus `stamp` as
    the only text a scanner's software writes on it)."""
    from fpdf import FPDF

    pdf = FPDF(unit="pt", format="letter")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    for line in text_page:
        pdf.cell(0, 18, line, new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    if stamp:
        pdf.cell(0, 14, stamp, new_x="LMARGIN", new_y="NEXT")
    buffer = io.BytesIO(image_bytes(scanned, "PNG"))
    pdf.image(buffer, x=36, y=60, w=540)
    pdf.output(str(path))
    return path
