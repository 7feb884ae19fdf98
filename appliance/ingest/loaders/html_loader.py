"""HTML: lxml builds the tree; an explicit-stack walk turns it into blocks (no recursion, so deep
nesting cannot raise RecursionError). Script-like content is removed before any text is read."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from typing import Any

import lxml.etree
import lxml.html

from appliance.ingest.document import DocumentBuilder, LoadedDocument

from .common import collapse_whitespace, pipe_table, title_from_stem
from .decoding import decode_text
from .html_stream import BREAKING_TAGS, HEADING_LEVELS, SKIPPED_TAGS, read_flat_html
from .source import Source

Element = Any  # lxml.html.HtmlElement; lxml ships no type stubs

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
_UNICODE_FAMILY = ("utf-8", "utf-16", "utf-32")
_LIST_TAGS = frozenset({"ul", "ol", "li"})
_ATOMIC_TAGS = frozenset({"pre", "ul", "ol", "table", *HEADING_LEVELS})


def _declared_charset(data: bytes) -> str | None:
    """A <meta charset> near the top naming a real, non-Unicode codec (Unicode is handled by BOM/UTF-8)."""
    match = _META_CHARSET.search(data[:4096])
    if not match:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
    except LookupError:
        return None
    return None if name.startswith(_UNICODE_FAMILY) else name


def parse_html(text: str) -> Element | None:
    """The lxml tree, or None when libxml2 gave up part-way (then the stream fallback is used; the
    document viewer falls back the same way)."""
    parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True, remove_comments=True, remove_pis=True)
    try:
        root = lxml.html.document_fromstring(text.encode("utf-8"), parser=parser)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None
    # A fatal error (e.g. "Excessive depth in document") means the tree stops where the error was.
    if any(error.level == lxml.etree.ErrorLevels.FATAL for error in parser.error_log):
        return None
    return root


def _separates(tag: object) -> bool:
    """Block-level tags and <br> separate words even when the source has no whitespace there."""
    return tag == "br" or tag in BREAKING_TAGS or tag in HEADING_LEVELS


def _text_of(element: Element) -> str:
    """Inline text of a whole subtree, one space between words (iterwalk is iterative, in C)."""
    parts: list[str] = []
    for event, node in lxml.etree.iterwalk(element, events=("start", "end")):
        if _separates(node.tag):
            parts.append(" ")
        if event == "start":
            parts.append(node.text or "")
        elif node is not element:
            parts.append(node.tail or "")
    return collapse_whitespace("".join(parts))


def _is_layout_table(element: Element) -> bool:
    """A table used for page layout (old intranet pages): it holds headings, code or other tables.
    Its content is walked like any other instead of being flattened into one pipe table."""
    if element.tag != "table":
        return False
    return next(element.iterdescendants("table", "pre", *HEADING_LEVELS), None) is not None


def _preformatted(element: Element) -> str:
    """<pre> text with its whitespace as is; <br> is a line break there, not a space."""
    parts: list[str] = []
    for event, node in lxml.etree.iterwalk(element, events=("start", "end")):
        if event == "start":
            parts.append("\n" if node.tag == "br" else "")
            parts.append(node.text or "")
        elif node is not element:
            parts.append(node.tail or "")
    return "".join(parts).rstrip()


def _render_table(table: Element) -> str:
    rows = []
    for row in table.iter("tr"):
        if next(row.iterancestors("table"), None) is not table:
            continue  # a nested table's row: its text is already in the enclosing cell
        rows.append([_text_of(cell) for cell in row if cell.tag in ("td", "th")])
    return pipe_table(rows)


@dataclass
class _Item:
    lead: str  # indentation plus "- " or "3. "; spaces only once the item's first line is out
    parts: list[str] = field(default_factory=list)


class _ListRenderer:
    """ul/ol -> '- item' / '1. item' lines, nested lists indented two spaces per level."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._numbers: list[int | None] = []  # per open list: the next item number, None for bullets
        self._items: list[_Item] = []  # open <li> elements, innermost last
        self._loose = _Item("")  # text inside a list but outside any <li>

    def _indent(self) -> str:
        return "  " * max(0, len(self._numbers) - 1)

    def _flush_item(self) -> None:
        item = self._items[-1] if self._items else self._loose
        text = collapse_whitespace("".join(item.parts))
        item.parts.clear()
        if text:
            lead = item.lead if self._items else self._indent()
            self.lines.append(lead + text)
            item.lead = " " * len(item.lead)  # text after a nested list continues under the item

    def text(self, text: str | None) -> None:
        if text:
            (self._items[-1] if self._items else self._loose).parts.append(text)

    def enter(self, element: Element) -> None:
        if element.tag in _LIST_TAGS:
            self._flush_item()
        elif _separates(element.tag):
            self.text(" ")
        if element.tag in ("ul", "ol"):
            start = element.get("start", "1")
            self._numbers.append((int(start) if start.isdigit() else 1) if element.tag == "ol" else None)
        elif element.tag == "li":
            number = self._numbers[-1] if self._numbers else None
            if number is None:
                prefix = "- "
            else:
                prefix = f"{number}. "
                self._numbers[-1] = number + 1
            self._items.append(_Item(self._indent() + prefix))
        self.text(element.text)

    def leave(self, element: Element) -> None:
        if element.tag not in _LIST_TAGS:
            if _separates(element.tag):
                self.text(" ")
            return
        self._flush_item()
        if element.tag in ("ul", "ol") and self._numbers:
            self._numbers.pop()
        elif element.tag == "li" and self._items:
            self._items.pop()

    def render(self, root: Element) -> str:
        stack: list[tuple[Element, bool]] = [(root, True)]
        while stack:
            element, entering = stack.pop()
            if entering:
                self.enter(element)
                stack.append((element, False))
                stack.extend((child, True) for child in reversed(element))
            else:
                self.leave(element)
                if element is not root:
                    self.text(element.tail)
        self._flush_item()
        return "\n".join(self.lines)


class _BlockWalker:
    """Walks the body in document order, emitting atomic blocks whole and gathering inline text."""

    def __init__(self, builder: DocumentBuilder) -> None:
        self.builder = builder
        self._inline: list[str] = []

    def _flush(self) -> None:
        self.builder.add("paragraph", collapse_whitespace("".join(self._inline)))
        self._inline.clear()

    def _emit_atomic(self, element: Element) -> None:
        tag = element.tag
        if tag in HEADING_LEVELS:
            self.builder.add("heading", _text_of(element), level=HEADING_LEVELS[tag])
        elif tag == "pre":
            self.builder.add("code", _preformatted(element))
        elif tag == "table":
            caption = element.find("caption")
            if caption is not None:
                self.builder.add("paragraph", _text_of(caption))
                caption.drop_tree()
            self.builder.add("table", _render_table(element))
        else:
            self.builder.add("list", _ListRenderer().render(element))

    def walk(self, body: Element) -> None:
        stack: list[tuple[Element, bool]] = [(body, True)]
        while stack:
            element, entering = stack.pop()
            tag = element.tag if isinstance(element.tag, str) else ""  # entities and the like
            if not entering:
                if tag in BREAKING_TAGS:
                    self._flush()
                if element is not body and element.tail:
                    self._inline.append(element.tail)
                continue
            if tag in _ATOMIC_TAGS and not _is_layout_table(element):
                self._flush()
                self._emit_atomic(element)
                if element.tail:
                    self._inline.append(element.tail)
                continue
            if tag in BREAKING_TAGS:
                self._flush()
            elif tag == "br":
                self._inline.append(" ")
            if element.text:
                self._inline.append(element.text)
            stack.append((element, False))
            stack.extend((child, True) for child in reversed(element))
        self._flush()


def _load_tree(root: Element, builder: DocumentBuilder) -> str:
    """Fill `builder` from an lxml tree; return the <title> text ('' if none)."""
    # The document's <title>, not an <svg> image's.
    titles = (el for el in root.iter("title") if next(el.iterancestors("svg"), None) is None)
    title_element = next(titles, None)
    title = _text_of(title_element) if title_element is not None else ""
    for element in list(root.iter(*SKIPPED_TAGS, "head")):
        element.drop_tree()  # keeps the tail text, which belongs to the parent
    body = root.find("body")
    _BlockWalker(builder).walk(body if body is not None else root)
    return title


def load_html(data: bytes, source: Source) -> LoadedDocument:
    text = decode_text(data, source.display_path, declared_encoding=_declared_charset(data))
    builder = DocumentBuilder(source.display_path, "html")
    root = parse_html(text) if text.strip() else None
    if root is not None:
        title = _load_tree(root, builder)
    else:
        title, flat_blocks = read_flat_html(text)
        for level, block_text in flat_blocks:
            builder.add("heading" if level else "paragraph", block_text, level=level)
    first_h1 = next((b.text for b in builder.blocks if b.kind == "heading" and b.level == 1), None)
    return builder.build(title or first_h1 or title_from_stem(source.stem))
