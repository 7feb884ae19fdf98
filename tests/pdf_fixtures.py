"""PDFs laid out the way word processors lay out SOPs, built with fpdf2 for the structure tests: running
headers and footers, headings set in larger or bold type without numbers, bookmarks, two columns, a
boxed note beside a step list; and the damaged kinds (a bookmark to a page the file lacks, an outline
that points nowhere)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from fpdf import FPDF

BODY = (
    "Operators check the dosing skid once per shift and record the readings in the log book. The "
    "readings are compared with the limits of table 2 before the skid is left unattended for the night."
)


class _RunningPdf(FPDF):
    """A page with a running header (organisation, SOP number and revision) and a footer ("Page N of M",
    "Uncontrolled when printed")."""

    def __init__(self, header: str, footer: str) -> None:
        super().__init__()
        self.running_header = header
        self.running_footer = footer
        self.alias_nb_pages("{pages}")

    def header(self) -> None:
        self.set_font("helvetica", size=8)
        self.cell(0, 6, self.running_header, new_x="LMARGIN", new_y="NEXT")
        self.ln(4)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_font("helvetica", size=8)
        self.cell(0, 5, f"{self.running_footer}    Page {self.page_no()} of {{pages}}", align="C")


def heading(pdf: FPDF, text: str, size: float, *, bold: bool = True) -> None:
    pdf.set_font("helvetica", style="B" if bold else "", size=size)
    pdf.multi_cell(0, size * 0.6, text, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(2)
    pdf.set_font("helvetica", size=10)


_WORDS = ("pump", "valve", "filter", "tank", "analyser", "blower", "screen", "clarifier", "dosing line", "meter")


def paragraph(pdf: FPDF, text: str | None = None) -> None:
    """Body text; each paragraph of a document words itself differently (repeated text would be furniture)."""
    if text is None:
        count = getattr(pdf, "paragraphs", 0)
        pdf.paragraphs = count + 1  # type: ignore[attr-defined]
        thing = _WORDS[count % len(_WORDS)]
        extra = " Any change is reported to the shift lead." * (count % 3)  # paragraphs of different lengths
        text = (
            f"Paragraph {count + 1} is about the {thing}: operators check the {thing} once per shift, record "
            f"reading {count + 1} in the log book and compare it with limit {count + 1} of table 2.{extra}"
        )
    pdf.set_font("helvetica", size=10)
    pdf.multi_cell(0, 5, text, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)


def steps(pdf: FPDF, items: list[str], *, width: float = 0) -> None:
    pdf.set_font("helvetica", size=10)
    for number, item in enumerate(items, start=1):
        pdf.multi_cell(width, 5, f"{number}. {item}", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)


def typographic_sop(path: Path, *, page_bookmarks: bool = False) -> Path:
    """Three pages: headings in bold or larger type, none numbered; a numbered step list in body type whose
    second step reads like a heading; a running header and footer on every page. `page_bookmarks`: an
    outline of one bookmark per page named after the scan ("Scan page 1"), as some scanners write."""
    pdf = _RunningPdf("Riverbend Water Treatment Plant   SOP-CHM-007 Rev 3", "Uncontrolled when printed")
    if page_bookmarks:
        add_page = pdf.add_page

        def add_bookmarked_page() -> None:
            add_page()
            pdf.start_section(f"Scan page {pdf.page_no()}", level=0)

        pdf.add_page = add_bookmarked_page  # type: ignore[method-assign]
    pdf.add_page()
    heading(pdf, "Chemical Dosing Skid Checks", 18)
    paragraph(pdf, "Effective date: 2024-03-01    Review date: 2025-03-01")
    heading(pdf, "Purpose", 13)
    paragraph(pdf)
    heading(pdf, "Scope", 13)
    paragraph(pdf)
    pdf.add_page()
    heading(pdf, "Procedure", 13)
    heading(pdf, "Before the shift", 10)
    steps(pdf, ["Open the sample tap SV-12 and let it run for one minute.", "Weight-based dosing", "Close SV-12."])
    paragraph(pdf, "Step 4: record the readings on form RWTP-F-031.")
    heading(pdf, "After the shift", 10)
    paragraph(pdf)
    pdf.add_page()
    heading(pdf, "Records", 13)
    paragraph(pdf)
    pdf.output(str(path))
    return path


def outlined_manual(path: Path, *, bookmarks: Callable[[FPDF], None] | None = None) -> Path:
    """Headings set in body type (nothing in the type says they are headings), each with a bookmark."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    chapters = (("Installation", ["Mounting", "Wiring"]), ("Operation", ["Start-up", "Running", "Shutdown"]))
    for chapter, sections in chapters:
        pdf.add_page()
        pdf.start_section(chapter, level=0)
        paragraph(pdf, chapter)
        paragraph(pdf)
        for section in sections:
            pdf.start_section(section, level=1)
            paragraph(pdf, section)
            paragraph(pdf)
    if bookmarks is not None:
        bookmarks(pdf)
    pdf.output(str(path))
    return path


def with_outline_to_a_missing_page(path: Path) -> Path:
    """An outlined manual whose last bookmark points to page 40 of a 2-page file."""
    outlined_manual(path)
    return _rewrite_outline_page(path, last_only=True)


def with_a_broken_outline(path: Path) -> Path:
    """An outlined manual whose outline root points to an object the file does not have."""
    outlined_manual(path)
    data = path.read_bytes()
    data = re.sub(rb"/Outlines \d+ 0 R", b"/Outlines 999 0 R", data)
    path.write_bytes(data)
    return path


def _rewrite_outline_page(path: Path, *, last_only: bool) -> Path:
    data = path.read_bytes()
    destinations = list(re.finditer(rb"/Dest \[(\d+) 0 R", data))
    if last_only:
        destinations = destinations[-1:]
    for match in reversed(destinations):
        data = data[: match.start(1)] + b"9999" + data[match.end(1) :]
    path.write_bytes(data)
    return path


def two_columns(path: Path) -> Path:
    """One page set in two columns of running text, each column's sentences numbered in order."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    left = " ".join(f"Left column sentence {n} explains the intake screen in plain words." for n in range(1, 9))
    right = " ".join(f"Right column sentence {n} explains the backwash pump in plain words." for n in range(1, 9))
    top = pdf.get_y()
    pdf.set_xy(10, top)
    pdf.multi_cell(90, 5, left)
    pdf.set_xy(110, top)
    pdf.multi_cell(90, 5, right)
    pdf.output(str(path))
    return path


def note_beside_steps(path: Path) -> Path:
    """A numbered step list on the left and, beside it, a boxed note."""
    pdf = FPDF()
    pdf.add_page()
    heading(pdf, "Changing the filter cartridge", 13)
    top = pdf.get_y()
    items = [
        "Stop the feed pump P-101 at its local panel.",
        "Close the inlet valve VLV-201 and the outlet valve VLV-202.",
        "Open the drain valve and wait until the housing is empty.",
        "Unscrew the housing and take out the old cartridge.",
        "Fit the new cartridge and screw the housing back on.",
    ]
    pdf.set_xy(10, top)
    pdf.set_font("helvetica", size=10)
    for number, item in enumerate(items, start=1):
        pdf.set_x(10)
        pdf.multi_cell(110, 5, f"{number}. {item}", new_x="LMARGIN", new_y="NEXT")
    pdf.rect(130, top, 70, 32)
    pdf.set_xy(133, top + 2)
    pdf.multi_cell(64, 5, "NOTE: The housing holds 12 litres of treated water. Wear gloves and goggles.")
    pdf.set_y(top + 40)
    paragraph(pdf, "Return the pump to service under SOP-PMP-001.")
    pdf.output(str(path))
    return path


def long_manual(path: Path, pages: int) -> Path:
    """A manual of `pages` pages, one numbered section per page, with a running footer."""
    pdf = _RunningPdf("Pump station manual", "Issue 4")
    for number in range(1, pages + 1):
        pdf.add_page()
        thing = _WORDS[number % len(_WORDS)]
        heading(pdf, f"{number}. Inspecting the {thing} of bay {number}", 12)
        paragraph(pdf)
    pdf.output(str(path))
    return path


def unsized_fonts_pdf() -> bytes:
    """One page set in a Type 3 font at 1 point, scaled only by the font's own matrix: the file gives no
    font size pdfium can report (as old LaTeX bitmap fonts do). A 16-point heading over 10-point text."""
    lines = [
        (16, "Isolate the pump"),
        (10, "Close the valve and wait until the gauge reads zero before you open the casing of the pump."),
        (10, "Then drain it."),
    ]
    chars = sorted(set("".join(t for _, t in lines)) - {" "})
    codes = {c: 65 + i for i, c in enumerate(chars)}
    names = {c: ("space" if c == " " else f"g{ord(c)}") for c in chars}
    procs = b" ".join(b"/%s %d 0 R" % (names[c].encode(), 10 + i) for i, c in enumerate(chars))
    diffs = b" ".join(b"%d /%s" % (codes[c], names[c].encode()) for c in chars)
    first, last = min(codes.values()), max(codes.values())
    widths = b" ".join(b"600" for _ in range(first, last + 1))
    tounicode_map = b"\n".join(b"<%02X> <%04X>" % (codes[c], ord(c)) for c in chars)
    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def "
        b"1 begincodespacerange <00> <FF> endcodespacerange %d beginbfchar\n"
        % len(chars)
        + tounicode_map
        + b"\nendbfchar endcmap CMapName currentdict /CMap defineresource pop end end"
    )
    content = b""
    y = 700
    for scale, text in lines:
        enc = b"".join(b"\\040" if c == " " else bytes([codes[c]]) for c in text)
        content += b"BT /T%d 1 Tf 72 %d Td (%s) Tj ET\n" % (
            int(scale),
            y,
            enc.replace(b"(", b"\\(").replace(b")", b"\\)"),
        )
        y -= int(scale * 1.6)
    objs = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        4: b"<< /Length %d >>\nstream\n" % len(content) + content + b"endstream",
        5: b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
    }
    fonts = b""
    for k, (scale, _) in enumerate(sorted({(s, "") for s, _ in lines})):
        oid = 6 + k
        fm = b"%.4f" % (scale / 1000)
        objs[oid] = (
            b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 600 700] /FontMatrix ["
            + fm
            + b" 0 0 "
            + fm
            + b" 0 0] /CharProcs << "
            + procs
            + b" >> /Encoding << /Type /Encoding /Differences ["
            + diffs
            + b"] >> /FirstChar %d /LastChar %d /Widths [" % (first, last)
            + widths
            + b"] /ToUnicode 5 0 R >>"
        )
        fonts += b"/T%d %d 0 R " % (int(scale), oid)
    objs[3] = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << "
        + fonts
        + b">> >> /Contents 4 0 R >>"
    )
    glyph = b"600 0 0 0 600 700 d1 0 0 500 650 re f"
    for i, _ in enumerate(chars):
        objs[10 + i] = b"<< /Length %d >>\nstream\n" % len(glyph) + glyph + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for oid in sorted(objs):
        offsets[oid] = len(out)
        out += b"%d 0 obj\n" % oid + objs[oid] + b"\nendobj\n"
    size = max(objs) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for oid in range(1, size):
        out += (b"%010d 00000 n \n" % offsets[oid]) if oid in offsets else b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)
