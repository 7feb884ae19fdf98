"""A scanned page reads like its text layer: the copier's skew is measured and undone, a ruled table
comes out as the same pipe table, rows whole, even when its cells wrap over several lines, and the list
bullets OCR passes over are put back, so a heading above a list stays a heading."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFilter

from appliance.ingest.loaders import OcrLimits, PageReader, load_document
from appliance.ingest.loaders.bullets import with_bullets
from appliance.ingest.loaders.image_tables import image_tables, ruled_edges
from appliance.ingest.loaders.page_pixels import straight_pixels
from appliance.ingest.ocr import OcrLine, skew_degrees, turned
from tests.scans import FONT
from tests.test_pdf_tables import HEADER, ROW_T450, setpoint_pdf


@pytest.fixture(scope="module")
def reader(models_dir: Path) -> PageReader:
    return PageReader(models_dir / "ocr" / "ppocr-v6-small", OcrLimits(), threads=2)


def box(x: float, y: float, width: float, height: float, degrees: float) -> list[tuple[float, float]]:
    """A text box's corners (top-left, top-right, bottom-right, bottom-left; y down), its baseline
    falling to the right by `degrees`."""
    dx, dy = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return [
        (x, y),
        (x + width * dx, y + width * dy),
        (x + width * dx - height * dy, y + width * dy + height * dx),
        (x - height * dy, y + height * dx),
    ]


# --- skew ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("degrees", [-2.0, -0.7, 0.5, 1.8])
def test_the_skew_is_read_from_the_long_lines(degrees: float) -> None:
    lines = [box(100, 100 + 40 * i, 600, 30, degrees) for i in range(8)]
    stray = [box(50, 900, 40, 30, 25.0), box(300, 950, 35, 30, -30.0)]  # short words, any slope: ignored
    assert skew_degrees(np.array(lines + stray)) == pytest.approx(degrees, abs=0.01)


def test_a_straight_page_is_left_alone() -> None:
    assert skew_degrees(np.array([box(100, 100 + 40 * i, 600, 30, 0.05) for i in range(5)])) == 0.0
    assert skew_degrees(np.zeros((0, 4, 2))) == 0.0


def test_points_turn_as_pil_turns_the_image() -> None:
    image = Image.new("L", (400, 300), 255)
    ImageDraw.Draw(image).rectangle((300, 220, 303, 223), fill=0)
    straightened = np.asarray(image.rotate(2.0, resample=Image.Resampling.BILINEAR, fillcolor=255))
    ys, xs = np.nonzero(straightened < 128)
    ((x, y),) = turned(np.array([[301.5, 221.5]]), 2.0, (200, 150))
    assert (x, y) == pytest.approx((xs.mean(), ys.mean()), abs=1.0)


# --- ruled grids in pixels ----------------------------------------------------------------------------


def grid_page(xs: list[int], ys: list[int], size: tuple[int, int] = (1200, 900)) -> Image.Image:
    image = Image.new("L", size, 215)  # grey paper
    draw = ImageDraw.Draw(image)
    for y in ys:
        draw.line((xs[0], y, xs[-1], y), fill=60, width=3)
    for x in xs:
        draw.line((x, ys[0], x, ys[-1]), fill=60, width=3)
    return image.filter(ImageFilter.GaussianBlur(0.8))


def line(text: str, left: float, top: float) -> OcrLine:
    return OcrLine(text, 0.98, left, top, left + 12 * len(text), top + 24)


def test_a_wrapped_cell_keeps_its_lines_together_in_its_row() -> None:
    xs, ys = [100, 400, 800, 1100], [200, 260, 380, 440]
    lines = [
        line("Symptom", 110, 215),
        line("Probable cause", 410, 215),
        line("Action", 810, 215),
        line("Slow cranking", 110, 290),
        line("Weak batteries,", 410, 275),
        line("Check battery", 810, 280),
        line("cold engine", 410, 315),
        line("voltage", 810, 320),
        line("Black smoke", 110, 400),
        line("Wet stacking", 410, 400),
        line("Run a load bank", 810, 400),
    ]
    (table,) = image_tables(straight_pixels(grid_page(xs, ys), 0.0), lines)
    assert table.rows == [
        ["Symptom", "Probable cause", "Action"],
        ["Slow cranking", "Weak batteries, cold engine", "Check battery voltage"],
        ["Black smoke", "Wet stacking", "Run a load bank"],
    ]


def test_letters_and_underlines_are_not_rules() -> None:
    image = Image.new("L", (1200, 900), 255)
    draw = ImageDraw.Draw(image)
    draw.text((100, 100), "IIIIIIII lllll |||| ----", fill=0)
    draw.line((100, 300, 400, 300), fill=0, width=2)  # an underline: one rule, no grid
    edges = ruled_edges(straight_pixels(image, 0.0).ink)
    assert edges.vertical == [] and len(edges.horizontal) == 1
    assert image_tables(straight_pixels(image, 0.0), [line("Underlined heading", 100, 270)]) == []


def test_a_frame_around_a_note_is_not_a_table() -> None:
    page = grid_page([100, 1100], [200, 400])  # one cell: a boxed warning
    assert image_tables(straight_pixels(page, 0.0), [line("WARNING: chlorine gas is heavier than air", 120, 250)]) == []


# --- list bullets --------------------------------------------------------------------------------------


def page_with_marks(marks: list[tuple[str, int]]) -> Image.Image:
    """Grey paper; before the line at each y, a mark: a dot, a full stop, a hollow box, or nothing."""
    image = Image.new("L", (1200, 600), 215)
    draw = ImageDraw.Draw(image)
    for mark, y in marks:
        if mark == "dot":
            draw.ellipse((112, y + 8, 122, y + 18), fill=60)
        elif mark == "stop":  # a full stop: small, on the baseline
            draw.ellipse((116, y + 18, 119, y + 21), fill=60)
        elif mark == "box":
            draw.rectangle((104, y, 126, y + 22), outline=60, width=2)
    return image.filter(ImageFilter.GaussianBlur(0.6))


def test_a_dot_before_a_line_is_its_bullet_and_other_marks_are_not() -> None:
    marks = [("dot", 100), ("stop", 160), ("box", 220), ("none", 280)]
    lines = [line(f"Item read at {y}", 140, y) for _, y in marks]
    read = with_bullets(straight_pixels(page_with_marks(marks), 0.0), lines)
    assert [item.text for item in read] == ["• Item read at 100", *[f"Item read at {y}" for _, y in marks[1:]]]
    assert read[0].left < 125  # the item starts at its bullet, as in a text layer


def test_a_dot_in_another_lines_box_is_not_a_bullet() -> None:
    marks = [("dot", 100)]
    lines = [line("Item read at 100", 140, 100), OcrLine("x", 0.9, 100, 100, 130, 124)]
    first, _ = with_bullets(straight_pixels(page_with_marks(marks), 0.0), lines)
    assert first.text == "Item read at 100"


def bulleted_page() -> Image.Image:
    """A heading, then items as a word processor sets them: a dot, the text indented after it, each
    item's wrapped line under its text; then the next heading."""
    from PIL import ImageFont

    font = ImageFont.truetype(FONT, 30) if Path(FONT).is_file() else ImageFont.load_default(size=30)
    image = Image.new("L", (1300, 720), 255)
    draw = ImageDraw.Draw(image)
    rows = [
        (40, "3. Rules", False),
        (110, "The control room is never left unattended. The outgoing", True),
        (110, "operator stays until the incoming operator has signed.", False),
        (110, "Handover is done face to face, not by note or message.", True),
        (40, "4. Records", False),
        (40, "The shift log is kept for five years.", False),
    ]
    for row, (x, text, bullet) in enumerate(rows):
        y = 40 + row * 90 if row < 4 else 140 + row * 90  # space above the next heading
        if bullet:
            draw.ellipse((70, y + 12, 82, y + 24), fill=0)
        draw.text((x, y), text, fill=0, font=font)
    return image


def test_a_heading_above_a_bulleted_list_stays_a_heading(tmp_path: Path, reader: PageReader) -> None:
    page = bulleted_page()
    doc = load_document(page_to_pdf(page, tmp_path / "rules.pdf"), ocr=reader)
    kinds = [(block.kind, block.text.split()[0]) for block in doc.blocks]
    assert kinds[:3] == [("heading", "3."), ("list", "•"), ("heading", "4.")]
    assert doc.blocks[1].text.count("• ") == 2  # two items, each with its bullet


def page_to_pdf(page: Image.Image, path: Path) -> Path:
    page.save(path, format="PDF", resolution=200)
    return path


# --- a real scan through the real OCR ------------------------------------------------------------------


def scanned_copy(pdf: Path, out: Path, degrees: float) -> Path:
    """The PDF's pages rendered at 200 dpi, grey paper, turned by `degrees`, blurred, JPEG q70, as an
    image-only PDF: what a copier's scan-to-PDF makes of the printout."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(pdf))
    pages = []
    for index in range(len(document)):
        image = document[index].render(scale=200 / 72, grayscale=True).to_pil().convert("L")
        grey = image.point(lambda v: int(60 + v * 155 / 255))
        turned_page = grey.rotate(degrees, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=215)
        buffer = io.BytesIO()
        turned_page.filter(ImageFilter.GaussianBlur(0.8)).save(buffer, format="JPEG", quality=70)
        pages.append(Image.open(io.BytesIO(buffer.getvalue())).convert("L"))
    document.close()
    pages[0].save(out, format="PDF", save_all=True, append_images=pages[1:], resolution=200)
    return out


@pytest.mark.parametrize("degrees", [-1.5, 2.0])
def test_a_scanned_setpoint_table_keeps_its_rows_like_its_text_layer(
    tmp_path: Path, reader: PageReader, degrees: float
) -> None:
    original = setpoint_pdf(tmp_path / "setpoints.pdf")
    scan = scanned_copy(original, tmp_path / "setpoints-scan.pdf", degrees)
    doc = load_document(scan, ocr=reader)
    tables = [block for block in doc.blocks if block.kind == "table"]
    assert len(tables) == 1 and tables[0].ocr_confidence is not None
    rows = tables[0].text.split("\n")
    assert rows[0] == HEADER and ROW_T450 in rows
    assert any(row.startswith("| T-451 | Fluoride saturator, with a description long enough") for row in rows)
    assert "Caustic soda" not in " ".join(b.text for b in doc.blocks if b.kind != "table")
