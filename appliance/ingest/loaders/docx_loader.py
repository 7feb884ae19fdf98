"""DOCX via python-docx: body paragraphs and tables in document order, the header and footer apart.

The structure, in order of trust: "Title" and "Heading N" styles and Word's outline levels (what its
navigation pane shows); then the rules below them (headings): a short paragraph set larger or bolder
than the document's body text ("bold Normal paragraphs" as headings), or numbered like a heading.
List styles (or direct list numbering) group consecutive paragraphs into one list block. The headers
and footers are the document's furniture and, with the core properties, where its control block is read.
"""

from __future__ import annotations

import io
import re
from typing import Any

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import qn

from appliance.errors import DocumentError
from appliance.ingest.document import DocumentBuilder, LoadedDocument

from .common import MAX_TITLE_CHARS, collapse_whitespace, pipe_table, title_from_stem
from .docx_archive import check_docx_archive
from .docx_type import TypeReader
from .furniture import says_furniture
from .headings import TITLE, Piece, assign_levels
from .source import Source

XmlElement = Any  # python-docx's oxml element classes (lxml-based, no useful static types)

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_STYLE_LEVEL = re.compile(r"\s(\d)$")  # "List Bullet 2" -> nesting level 1
# Block-level wrappers whose children are ordinary body content (content controls, custom XML).
_CONTAINERS = frozenset({qn("w:sdt"), qn("w:sdtContent"), qn("w:customXml")})
_P, _TBL = qn("w:p"), qn("w:tbl")


def _xml_text(paragraph: XmlElement) -> str:
    return str(paragraph.text)  # CT_P.text: runs and hyperlinks, tabs as \t, breaks as \n


def _render_table(table: XmlElement) -> str:
    rows = []
    for row in table.iterchildren(qn("w:tr")):
        cells = []
        for cell in row.iterchildren(qn("w:tc")):
            # A merged-away cell holds an empty paragraph; a nested table's text joins its cell.
            cells.append(" ".join(_xml_text(p) for p in cell.iter(_P)))
        rows.append(cells)
    return pipe_table(rows)


class _Numbering:
    """Whether a directly numbered paragraph (w:numPr) shows bullets or numbers, from numbering.xml."""

    def __init__(self, document: Any) -> None:
        try:
            self._root: XmlElement | None = document.part.numbering_part.element
        except (KeyError, NotImplementedError, AttributeError):
            self._root = None
        self._cache: dict[tuple[str, str], bool] = {}

    def is_bullet(self, num_id: str, level: str) -> bool:
        key = (num_id, level)
        if key not in self._cache:
            self._cache[key] = self._lookup(num_id, level)
        return self._cache[key]

    def _lookup(self, num_id: str, level: str) -> bool:
        if self._root is None or not (num_id.isdigit() and level.isdigit()):
            return True  # unknown: bullets are the commoner kind (and digits keep the XPath safe)
        abstract = self._root.xpath(f'w:num[@w:numId="{num_id}"]/w:abstractNumId/@w:val')
        if not abstract:
            return True
        fmt = self._root.xpath(
            f'w:abstractNum[@w:abstractNumId="{abstract[0]}"]/w:lvl[@w:ilvl="{level}"]/w:numFmt/@w:val'
        )
        return not fmt or fmt[0] in ("bullet", "none")


class _Walker:
    def __init__(self, document: Any) -> None:
        self.document = document
        self.numbering = _Numbering(document)
        self.types = TypeReader(document)
        self.title: str | None = None
        self.pieces: list[Piece] = []  # every block in order; headings decided once all are read (headings)
        self._list_lines: list[str] = []
        self._list_first: Piece | None = None  # the type of the list's first item
        self._counters: dict[int, tuple[bool, int]] = {}  # per nesting level: (numbered?, last number)
        self._style_names: dict[str, str] = {}

    def _style_name(self, paragraph: XmlElement) -> str:
        """UI name ("Heading 1") of the paragraph's style; lookups are cached per style id."""
        style_id: str | None = paragraph.style  # the w:pStyle id; None means the default style
        key = style_id or ""
        if key not in self._style_names:
            style = self.document.part.get_style(style_id, WD_STYLE_TYPE.PARAGRAPH)
            self._style_names[key] = str(style.name or "")
        return self._style_names[key]

    def _flush_list(self) -> None:
        first = self._list_first
        text = "\n".join(self._list_lines)
        lines = len(self._list_lines)
        if first is not None:
            self.pieces.append(Piece("list", text, lines, first.size, first.bold, first.uniform))
        else:
            self.pieces.append(Piece("list", text, lines))
        self._list_lines.clear()
        self._list_first = None
        self._counters.clear()

    def _list_item(self, paragraph: XmlElement, style: str) -> tuple[int, bool] | None:
        """(nesting level, numbered?) if the paragraph is a list item, else None."""
        num_pr = paragraph.find(f"{qn('w:pPr')}/{qn('w:numPr')}")
        if num_pr is not None:
            num_id = num_pr.find(qn("w:numId"))
            ilvl = num_pr.find(qn("w:ilvl"))
            num = num_id.get(qn("w:val"), "0") if num_id is not None else "0"
            lvl = ilvl.get(qn("w:val"), "0") if ilvl is not None else "0"
            if num != "0":
                level = int(lvl) if lvl.isdigit() else 0
                return level, not self.numbering.is_bullet(num, lvl)
        if style.lower().startswith("list"):
            match = _STYLE_LEVEL.search(style)
            return (int(match.group(1)) - 1 if match else 0), "number" in style.lower()
        return None

    def _add_list_item(self, text: str, level: int, numbered: bool) -> None:
        if level == 0 and self._counters.get(0, (numbered, 0))[0] != numbered:
            self._flush_list()  # bullets then numbers (or back) at the top level: two lists
        for deeper in [lvl for lvl in self._counters if lvl > level]:
            del self._counters[deeper]  # a new sub-list restarts its numbering
        kind, count = self._counters.get(level, (numbered, 0))
        count = count + 1 if kind == numbered else 1
        self._counters[level] = (numbered, count)
        marker = f"{count}. " if numbered else "- "
        self._list_lines.append("  " * level + marker + collapse_whitespace(text))

    def paragraph(self, paragraph: XmlElement) -> None:
        text = _xml_text(paragraph).replace("\t", " ").strip()
        if not text:
            return  # empty paragraphs are spacing, not structure (and do not end a list)
        style = self._style_name(paragraph)
        heading = _HEADING_STYLE.match(style)
        kind = self.types.paragraph(paragraph)
        given = 1 if style.lower() == "title" else int(heading.group(1)) if heading else kind.outline_level
        given = min(given, 6)
        # Headings first: Word's numbered headings carry list numbering too.
        item = None if given else self._list_item(paragraph, style)
        if item is not None:
            if not self._list_lines:
                self._list_first = Piece("list", text, 1, kind.size, kind.bold, kind.uniform)
            self._add_list_item(text, *item)
            return
        if self._list_lines:
            self._flush_list()
        if style.lower() == "title" and self.title is None:
            self.title = collapse_whitespace(text)
        if given:
            text = collapse_whitespace(text)
        lines = text.count("\n") + 1
        self.pieces.append(Piece("paragraph", text, lines, kind.size, kind.bold, kind.uniform, given))

    def build(self, builder: DocumentBuilder) -> str | None:
        """Add the blocks to `builder`, headings decided; the title the headings suggest: the opening block
        when it is a heading, else the first top-level heading."""
        first_top: str | None = None
        levels = assign_levels(self.pieces)
        top = min((level for level in levels if level > 0), default=0)
        for index, (piece, level) in enumerate(zip(self.pieces, levels, strict=True)):
            if level == TITLE:
                # The document's name, shown with every chunk: not a section the others sit in.
                self.title = self.title or collapse_whitespace(piece.text)
                continue
            if level:
                text = collapse_whitespace(piece.text)
                builder.add("heading", text, level=level)
                if first_top is None and (level == top or index == 0):
                    first_top = text
            else:
                builder.add(piece.kind, piece.text)
        return first_top

    def walk(self, body: XmlElement) -> None:
        stack = list(reversed(body))
        while stack:
            element = stack.pop()
            if element.tag == _P:
                self.paragraph(element)
            elif element.tag == _TBL:
                if self._list_lines:
                    self._flush_list()
                self.pieces.append(Piece("table", _render_table(element)))
            elif element.tag in _CONTAINERS:
                stack.extend(reversed(element))
        if self._list_lines:
            self._flush_list()


def _core_title(document: Any) -> str | None:
    title = collapse_whitespace(str(document.core_properties.title or ""))
    return title if 0 < len(title) < MAX_TITLE_CHARS else None


def _properties(document: Any) -> dict[str, str]:
    """The core properties a control block may be read from (revision there is Word's save count: not it)."""
    core = document.core_properties
    found = {
        "title": core.title,
        "subject": core.subject,
        "identifier": core.identifier,
        "version": core.version,
        "keywords": core.keywords,
    }
    return {key: collapse_whitespace(str(value)) for key, value in found.items() if value}


def _furniture(document: Any) -> list[str]:
    """The distinct lines of every header and footer (page numbers aside)."""
    lines: list[str] = []
    for section in document.sections:
        for part in (
            section.header,
            section.footer,
            section.first_page_header,
            section.first_page_footer,
            section.even_page_header,
            section.even_page_footer,
        ):
            if part.is_linked_to_previous:
                continue
            for paragraph in part._element.iter(_P):
                for line in _xml_text(paragraph).replace("\t", "  ").split("\n"):
                    line = collapse_whitespace(line)
                    if line and line not in lines and not _page_number_only(line):
                        lines.append(line)
    return lines


def _page_number_only(line: str) -> bool:
    stripped = line.strip(" -–—")
    return stripped.isdigit() or (
        says_furniture(stripped) and len(stripped.split()) <= 4 and "page" in stripped.lower()
    )


def load_docx(data: bytes, source: Source) -> LoadedDocument:
    shown = source.display_path
    check_docx_archive(data, shown)
    builder = DocumentBuilder(shown, "docx")
    try:
        document = docx.Document(io.BytesIO(data))
        walker = _Walker(document)
        walker.walk(document.element.body)
        first_top = walker.build(builder)
        core_title = _core_title(document)
        properties = _properties(document)
        furniture = _furniture(document)
    except DocumentError:
        raise
    except Exception as exc:  # python-docx raises many types on damaged archives
        reason = str(exc).strip() or type(exc).__name__
        raise DocumentError(shown, f"cannot read the .docx: {reason}") from None
    loaded = builder.build(walker.title or core_title or first_top or title_from_stem(source.stem))
    loaded.properties = properties
    loaded.furniture = furniture
    return loaded
