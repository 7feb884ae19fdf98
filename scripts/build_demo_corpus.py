"""Build the PDF and DOCX documents of the demo corpus from their Markdown-subset sources.

The demo corpus (``docs_corpus/``) describes the fictional Riverbend Water Treatment Plant.
Most documents are hand-written Markdown or HTML; the PDF and DOCX documents are generated
by this script from sources in ``scripts/demo_corpus/pdf/`` and ``scripts/demo_corpus/docx/``
(one source per document, ``<name>.md`` -> ``docs_corpus/<name>.pdf`` or ``.docx``).

A source may override the folder's format with a first line ``<!-- format: pdf -->`` or
``<!-- format: docx -->``. The supported Markdown subset is: ``#`` to ``####`` headings (the
first ``#`` heading is the document title), paragraphs, ``-`` and ``1.`` lists (one nesting
level by indentation), pipe tables, fenced code blocks, and ``**bold**`` / backtick markers,
which are dropped.

The output is deterministic: fixed dates and producer metadata, no compression (so the bytes
do not depend on the zlib build), fixed ZIP entry timestamps. ``--check`` rebuilds in memory
and exits 1, naming the stale files, if the committed outputs differ.

Usage::

    python scripts/build_demo_corpus.py            # write docs_corpus/*.pdf and *.docx
    python scripts/build_demo_corpus.py --check    # verify they are up to date
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import docx
from docx.document import Document as DocxDocument
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import qn
from docx.shared import Pt
from docx.text.paragraph import Paragraph as DocxParagraph
from fpdf import FPDF, FontFace, XPos, YPos

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE_DIR = REPO_ROOT / "scripts" / "demo_corpus"
OUTPUT_DIR = REPO_ROOT / "docs_corpus"
FORMATS = ("pdf", "docx")
FIXED_DATE = datetime(2024, 1, 15, 8, 0, 0, tzinfo=UTC)
ZIP_DATE = (2024, 1, 15, 8, 0, 0)
AUTHOR = "Riverbend Water Treatment Plant (fictional, demo corpus)"
PRODUCER = "appliance build_demo_corpus.py"

FORMAT_RE = re.compile(r"^<!--\s*format:\s*(\w+)\s*-->\s*$")
COMMENT_RE = re.compile(r"^<!--.*-->\s*$")
HEADING_RE = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$")
LIST_RE = re.compile(r"^(\s*)([-*]|\d+\.)\s+(.*)$")
TABLE_SEPARATOR_RE = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


# --------------------------------------------------------------------------- document model


@dataclass(frozen=True)
class Heading:
    """A heading; level 1 is the document title."""

    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of running text."""

    text: str


@dataclass(frozen=True)
class ListItem:
    """One list item; ``level`` 0 is the outer list, 1 a nested list."""

    level: int
    ordered: bool
    text: str


@dataclass(frozen=True)
class ListBlock:
    """A contiguous list, possibly with nested items."""

    items: tuple[ListItem, ...]


@dataclass(frozen=True)
class Table:
    """A pipe table; the first row is the header row."""

    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class CodeBlock:
    """A fenced code block, kept verbatim."""

    lines: tuple[str, ...]


Block = Heading | Paragraph | ListBlock | Table | CodeBlock


@dataclass(frozen=True)
class Source:
    """One source file and the output it produces."""

    path: Path
    fmt: str

    @property
    def output_name(self) -> str:
        """File name of the generated document."""
        return f"{self.path.stem}.{self.fmt}"


# --------------------------------------------------------------------------- parsing


def clean_inline(text: str) -> str:
    """Drop the inline Markdown markers that the renderers do not support."""
    return text.replace("**", "").replace("`", "").strip()


def split_table_row(line: str) -> tuple[str, ...]:
    """Split ``| a | b |`` into its cleaned cells."""
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|"):
        stripped = stripped[:-1]
    return tuple(clean_inline(cell) for cell in stripped.split("|"))


def list_level(indent: str) -> int:
    """Nesting level from the indentation of a list marker."""
    width = len(indent.expandtabs(4))
    return 0 if width == 0 else 1


def parse_markdown(text: str) -> list[Block]:
    """Parse the supported Markdown subset into blocks."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or COMMENT_RE.match(stripped):
            i += 1
        elif stripped.startswith("```"):
            i = _parse_code(lines, i, blocks)
        elif match := HEADING_RE.match(line):
            blocks.append(Heading(len(match.group(1)), clean_inline(match.group(2))))
            i += 1
        elif stripped.startswith("|"):
            i = _parse_table(lines, i, blocks)
        elif LIST_RE.match(line):
            i = _parse_list(lines, i, blocks)
        else:
            i = _parse_paragraph(lines, i, blocks)
    return blocks


def _parse_code(lines: list[str], start: int, blocks: list[Block]) -> int:
    end = start + 1
    while end < len(lines) and not lines[end].strip().startswith("```"):
        end += 1
    blocks.append(CodeBlock(tuple(lines[start + 1 : end])))
    return end + 1


def _parse_table(lines: list[str], start: int, blocks: list[Block]) -> int:
    rows: list[tuple[str, ...]] = []
    end = start
    while end < len(lines) and lines[end].strip().startswith("|"):
        if not TABLE_SEPARATOR_RE.match(lines[end].strip()):
            rows.append(split_table_row(lines[end]))
        end += 1
    width = max(len(row) for row in rows)
    blocks.append(Table(tuple(row + ("",) * (width - len(row)) for row in rows)))
    return end


def _parse_list(lines: list[str], start: int, blocks: list[Block]) -> int:
    items: list[ListItem] = []
    end = start
    while end < len(lines):
        line = lines[end]
        match = LIST_RE.match(line)
        if match:
            ordered = match.group(2)[0].isdigit()
            items.append(ListItem(list_level(match.group(1)), ordered, match.group(3)))
        elif line.strip() and line[0].isspace() and items:
            last = items[-1]
            items[-1] = ListItem(last.level, last.ordered, f"{last.text} {line.strip()}")
        else:
            break
        end += 1
    blocks.append(ListBlock(tuple(ListItem(it.level, it.ordered, clean_inline(it.text)) for it in items)))
    return end


def _parse_paragraph(lines: list[str], start: int, blocks: list[Block]) -> int:
    parts: list[str] = []
    end = start
    while end < len(lines):
        stripped = lines[end].strip()
        starts_block = stripped.startswith(("```", "|")) or HEADING_RE.match(lines[end])
        if not stripped or starts_block or LIST_RE.match(lines[end]) or COMMENT_RE.match(stripped):
            break
        parts.append(stripped)
        end += 1
    blocks.append(Paragraph(clean_inline(" ".join(parts))))
    return end


def numbered(items: Sequence[ListItem]) -> Iterator[tuple[ListItem, str]]:
    """Yield each item with its marker ("3." or "-"); numbering restarts per nested run."""
    counters = [0, 0]
    for item in items:
        if item.level == 0:
            counters[1] = 0
        counters[item.level] += 1
        yield item, (f"{counters[item.level]}." if item.ordered else "-")


# --------------------------------------------------------------------------- PDF rendering


class CorpusPDF(FPDF):
    """FPDF with a "Page N" footer."""

    def footer(self) -> None:
        """Draw the centred "Page N" footer."""
        self.set_y(-12)
        self.set_font("Helvetica", size=8)
        self.set_text_color(90, 90, 90)
        self.cell(0, 6, f"Page {self.page_no()}", align="C")
        self.set_text_color(0, 0, 0)


PDF_HEADING_SIZES = {1: 16.0, 2: 13.0, 3: 11.5, 4: 10.5}
PDF_BODY_SIZE = 10.0
PDF_LINE = 5.0


def column_widths(pdf: FPDF, rows: Sequence[Sequence[str]], padding: float) -> tuple[float, ...]:
    """Column widths (mm) that fill the page width and never split a word.

    Each column gets at least its longest word; the remaining width is shared in proportion
    to how much wider than that each column would like to be (its longest cell).
    """
    extra = 2 * padding + 1.0
    minimum = []
    natural = []
    for col in range(len(rows[0])):
        cells = [row[col] for row in rows]
        words = [word for cell in cells for word in cell.split()] or [""]
        minimum.append(max(pdf.get_string_width(word) for word in words) + extra)
        natural.append(max(pdf.get_string_width(cell) for cell in cells) + extra)
    spare = pdf.epw - sum(minimum)
    wish = [n - m for n, m in zip(natural, minimum, strict=True)]
    if spare <= 0 or sum(wish) <= 0:
        return tuple(minimum)
    if sum(natural) <= pdf.epw:
        return tuple(n * pdf.epw / sum(natural) for n in natural)
    return tuple(m + spare * w / sum(wish) for m, w in zip(minimum, wish, strict=True))


def pdf_heading(pdf: FPDF, block: Heading, keep_mm: float = 30.0) -> None:
    """Bold heading; starts a new page unless ``keep_mm`` of the page is left below it."""
    size = PDF_HEADING_SIZES[block.level]
    if pdf.get_y() > pdf.h - pdf.b_margin - keep_mm and block.level > 1:
        pdf.add_page()
    pdf.ln(4 if block.level > 1 else 0)
    pdf.set_font("Helvetica", style="B", size=size)
    pdf.multi_cell(0, size * 0.5, block.text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(1.5)
    pdf.set_font("Helvetica", size=PDF_BODY_SIZE)


def pdf_paragraph(pdf: FPDF, block: Paragraph) -> None:
    """Write wrapped body text."""
    pdf.multi_cell(0, PDF_LINE, block.text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(2)


def pdf_list(pdf: FPDF, block: ListBlock) -> None:
    """Numbered or bulleted list with hanging markers."""
    for item, marker in numbered(block.items):
        indent = 4.0 + 7.0 * item.level
        pdf.set_x(pdf.l_margin + indent)
        pdf.cell(7, PDF_LINE, marker)
        pdf.multi_cell(pdf.epw - indent - 7, PDF_LINE, item.text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.ln(0.8)
    pdf.ln(1.5)


def pdf_table(pdf: FPDF, block: Table) -> None:
    """Bordered table with a shaded header row (repeated after page breaks)."""
    padding = 1.2
    pdf.set_font("Helvetica", style="B", size=8.5)
    widths = column_widths(pdf, block.rows, padding)
    pdf.set_font("Helvetica", size=8.5)
    headings = FontFace(emphasis="BOLD", fill_color=(225, 225, 225))
    with pdf.table(
        col_widths=widths,
        line_height=4.2,
        text_align="LEFT",
        headings_style=headings,
        padding=padding,
    ) as table:
        for row in block.rows:
            cells = table.row()
            for cell in row:
                cells.cell(cell)
    pdf.set_font("Helvetica", size=PDF_BODY_SIZE)
    pdf.ln(3)


def pdf_code(pdf: FPDF, block: CodeBlock) -> None:
    """Monospaced block on a grey background."""
    pdf.set_font("Courier", size=8)
    pdf.set_fill_color(242, 242, 242)
    pdf.multi_cell(0, 3.8, "\n".join(block.lines), fill=True, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_font("Helvetica", size=PDF_BODY_SIZE)
    pdf.ln(3)


def document_title(blocks: Sequence[Block], fallback: str) -> str:
    """Text of the first level-1 heading, else ``fallback``."""
    for block in blocks:
        if isinstance(block, Heading) and block.level == 1:
            return block.text
    return fallback


def render_pdf(blocks: Sequence[Block], name: str) -> bytes:
    """Render blocks to PDF bytes (US Letter, core Helvetica/Courier fonts)."""
    pdf = CorpusPDF(format="Letter", unit="mm")
    pdf.set_compression(False)
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_producer(PRODUCER)
    pdf.set_creator(PRODUCER)
    pdf.set_author(AUTHOR)
    pdf.set_title(document_title(blocks, name))
    pdf.set_margins(20, 18, 20)
    pdf.set_auto_page_break(True, margin=18)
    pdf.add_page()
    pdf.set_font("Helvetica", size=PDF_BODY_SIZE)
    for index, block in enumerate(blocks):
        if isinstance(block, Heading):
            followed_by_heading = index + 1 < len(blocks) and isinstance(blocks[index + 1], Heading)
            pdf_heading(pdf, block, keep_mm=45.0 if followed_by_heading else 30.0)
        elif isinstance(block, Paragraph):
            pdf_paragraph(pdf, block)
        elif isinstance(block, ListBlock):
            pdf_list(pdf, block)
        elif isinstance(block, Table):
            pdf_table(pdf, block)
        else:
            pdf_code(pdf, block)
    return bytes(pdf.output())


# --------------------------------------------------------------------------- DOCX rendering


DOCX_HEADING_STYLES = {1: "Title", 2: "Heading 1", 3: "Heading 2", 4: "Heading 3"}


def add_code_style(document: DocxDocument) -> None:
    """Add a monospaced paragraph style named "Code"."""
    style = document.styles.add_style("Code", WD_STYLE_TYPE.PARAGRAPH)
    style.base_style = document.styles["Normal"]
    style.font.name = "Courier New"
    style.font.size = Pt(9)
    style.paragraph_format.space_after = Pt(0)
    style.paragraph_format.space_before = Pt(0)


def restart_numbering(document: DocxDocument, style_name: str) -> int:
    """Create a new numbering instance of ``style_name``'s list that starts again at 1."""
    numbering = document.part.numbering_part.element
    style_num_id = document.styles[style_name].element.pPr.numPr.numId.val
    abstract_id = numbering.num_having_numId(style_num_id).abstractNumId.val
    num = numbering.add_num(abstract_id)
    num.add_lvlOverride(ilvl=0).add_startOverride(1)
    return int(num.numId)


def set_num_id(paragraph: DocxParagraph, num_id: int) -> None:
    """Attach a list paragraph to numbering instance ``num_id``."""
    num_pr = paragraph._p.get_or_add_pPr().get_or_add_numPr()
    num_pr.get_or_add_ilvl().val = 0
    num_pr.get_or_add_numId().val = num_id


def docx_list(document: DocxDocument, block: ListBlock) -> None:
    """List Number / List Bullet paragraphs (``... 2`` styles when nested); numbering restarts per list."""
    num_ids: dict[int, int] = {}
    for item in block.items:
        if item.level == 0:
            num_ids.pop(1, None)
        kind = "List Number" if item.ordered else "List Bullet"
        style = kind if item.level == 0 else f"{kind} 2"
        paragraph = document.add_paragraph(item.text, style=style)
        if item.ordered:
            if item.level not in num_ids:
                num_ids[item.level] = restart_numbering(document, style)
            set_num_id(paragraph, num_ids[item.level])


def docx_table(document: DocxDocument, block: Table) -> None:
    """Word table in the "Table Grid" style with a bold header row."""
    table = document.add_table(rows=len(block.rows), cols=len(block.rows[0]))
    table.style = document.styles["Table Grid"]
    for r, row in enumerate(block.rows):
        for c, text in enumerate(row):
            cell_paragraph = table.cell(r, c).paragraphs[0]
            run = cell_paragraph.add_run(text)
            run.bold = r == 0
    document.add_paragraph()


def set_core_properties(document: DocxDocument, title: str) -> None:
    """Set fixed core properties so that the output does not depend on the build time."""
    props = document.core_properties
    props.author = AUTHOR
    props.last_modified_by = AUTHOR
    props.title = title
    props.subject = "Riverbend Water Treatment Plant standard operating procedure"
    props.keywords = "RWTP; SOP; demo corpus"
    props.comments = "Fictional document written for the appliance demo corpus."
    props.category = "SOP"
    props.created = FIXED_DATE.replace(tzinfo=None)
    props.modified = FIXED_DATE.replace(tzinfo=None)
    props.last_printed = FIXED_DATE.replace(tzinfo=None)
    props.revision = 1


def normalize_zip(data: bytes) -> bytes:
    """Rewrite a ZIP with fixed timestamps and attributes, entries stored uncompressed."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            entry.compress_type = zipfile.ZIP_STORED
            entry.create_system = 3
            entry.external_attr = 0o644 << 16
            dst.writestr(entry, src.read(info.filename))
    return out.getvalue()


def render_docx(blocks: Sequence[Block], name: str) -> bytes:
    """Render blocks to DOCX bytes with Title / Heading 1-3 / List styles and Word tables."""
    document = docx.Document()
    add_code_style(document)
    set_core_properties(document, document_title(blocks, name))
    for block in blocks:
        if isinstance(block, Heading):
            document.add_paragraph(block.text, style=DOCX_HEADING_STYLES[block.level])
        elif isinstance(block, Paragraph):
            document.add_paragraph(block.text)
        elif isinstance(block, ListBlock):
            docx_list(document, block)
        elif isinstance(block, Table):
            docx_table(document, block)
        else:
            for line in block.lines:
                document.add_paragraph(line, style="Code")
    # Drop the empty paragraph python-docx's template starts with, if still present.
    body = document.element.body
    first = body[0]
    if first.tag == qn("w:p") and not "".join(first.itertext()):
        body.remove(first)
    buffer = io.BytesIO()
    document.save(buffer)
    return normalize_zip(buffer.getvalue())


# --------------------------------------------------------------------------- build / check


def source_format(path: Path) -> str:
    """Format from a ``<!-- format: x -->`` first line, else from the parent folder name."""
    with path.open(encoding="utf-8") as handle:
        first = handle.readline().strip()
    match = FORMAT_RE.match(first)
    fmt = match.group(1).lower() if match else path.parent.name
    if fmt not in FORMATS:
        raise ValueError(f"{path}: unknown output format {fmt!r}")
    return fmt


def find_sources(source_dir: Path) -> list[Source]:
    """All sources under ``source_dir/pdf`` and ``source_dir/docx``, sorted by output name."""
    paths = [p for fmt in FORMATS for p in sorted((source_dir / fmt).glob("*.md"))]
    return sorted((Source(p, source_format(p)) for p in paths), key=lambda s: s.output_name)


def build(source: Source) -> bytes:
    """Render one source to the bytes of its output file."""
    text = source.path.read_text(encoding="utf-8")
    if source.fmt == "pdf":
        bad = sorted({ch for ch in text if ord(ch) > 0xFF})
        if bad:
            raise ValueError(f"{source.path}: characters outside Latin-1 for PDF: {''.join(bad)!r}")
    blocks = parse_markdown(text)
    render = render_pdf if source.fmt == "pdf" else render_docx
    return render(blocks, source.path.stem)


def stale_outputs(sources: Sequence[Source], output_dir: Path) -> list[str]:
    """Output names that are missing or differ from a fresh build, plus orphaned outputs."""
    stale = []
    for source in sources:
        target = output_dir / source.output_name
        if not target.is_file() or target.read_bytes() != build(source):
            stale.append(source.output_name)
    expected = {s.output_name for s in sources}
    generated = [p for fmt in FORMATS for p in sorted(output_dir.glob(f"*.{fmt}"))]
    orphans = [p.name for p in generated if p.name not in expected]
    return stale + [f"{name} (no source)" for name in orphans]


def write_outputs(sources: Sequence[Source], output_dir: Path) -> list[str]:
    """Build every source; write only files whose bytes changed. Returns names written."""
    output_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        data = build(source)
        target = output_dir / source.output_name
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
            written.append(source.output_name)
    return written


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="verify outputs are up to date; exit 1 if not")
    parser.add_argument("--source-dir", type=Path, default=SOURCE_DIR, help="folder with pdf/ and docx/")
    parser.add_argument("--output-dir", type=Path, default=OUTPUT_DIR, help="corpus folder to write")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Build (or with ``--check`` verify) the generated corpus documents; return the exit code."""
    args = parse_args(argv)
    sources = find_sources(args.source_dir)
    if args.check:
        stale = stale_outputs(sources, args.output_dir)
        for name in stale:
            print(f"stale: {args.output_dir / name}", file=sys.stderr)
        if stale:
            print("run: python scripts/build_demo_corpus.py", file=sys.stderr)
            return 1
        print(f"{len(sources)} generated documents up to date")
        return 0
    written = write_outputs(sources, args.output_dir)
    for name in written:
        print(f"wrote {args.output_dir / name}")
    print(f"{len(sources)} documents built, {len(written)} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
