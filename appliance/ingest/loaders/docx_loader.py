"""DOCX via python-docx: body paragraphs and tables in document order.

Paragraph styles give the structure: "Title", "Heading N", and list styles (or direct list
numbering) whose consecutive paragraphs are grouped into one list block.
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
    def __init__(self, document: Any, builder: DocumentBuilder) -> None:
        self.document = document
        self.builder = builder
        self.numbering = _Numbering(document)
        self.title: str | None = None
        self.first_h1: str | None = None
        self._list_lines: list[str] = []
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
        self.builder.add("list", "\n".join(self._list_lines))
        self._list_lines.clear()
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
        # Headings first: Word's numbered headings carry list numbering too.
        item = None if heading or style.lower() == "title" else self._list_item(paragraph, style)
        if item is not None:
            self._add_list_item(text, *item)
            return
        if self._list_lines:
            self._flush_list()
        if style.lower() == "title":
            if self.title is None:
                self.title = collapse_whitespace(text)
            self.builder.add("heading", collapse_whitespace(text), level=1)
        elif heading and int(heading.group(1)) >= 1:
            level = min(int(heading.group(1)), 6)
            self.builder.add("heading", collapse_whitespace(text), level=level)
            if level == 1 and self.first_h1 is None:
                self.first_h1 = collapse_whitespace(text)
        else:
            self.builder.add("paragraph", text)

    def walk(self, body: XmlElement) -> None:
        stack = list(reversed(body))
        while stack:
            element = stack.pop()
            if element.tag == _P:
                self.paragraph(element)
            elif element.tag == _TBL:
                if self._list_lines:
                    self._flush_list()
                self.builder.add("table", _render_table(element))
            elif element.tag in _CONTAINERS:
                stack.extend(reversed(element))
        if self._list_lines:
            self._flush_list()


def _core_title(document: Any) -> str | None:
    title = collapse_whitespace(str(document.core_properties.title or ""))
    return title if 0 < len(title) < MAX_TITLE_CHARS else None


def load_docx(data: bytes, source: Source) -> LoadedDocument:
    shown = source.display_path
    check_docx_archive(data, shown)
    builder = DocumentBuilder(shown, "docx")
    try:
        document = docx.Document(io.BytesIO(data))
        walker = _Walker(document, builder)
        walker.walk(document.element.body)
        core_title = _core_title(document)
    except DocumentError:
        raise
    except Exception as exc:  # python-docx raises many types on damaged archives
        reason = str(exc).strip() or type(exc).__name__
        raise DocumentError(shown, f"cannot read the .docx: {reason}") from None
    return builder.build(walker.title or core_title or walker.first_h1 or title_from_stem(source.stem))
