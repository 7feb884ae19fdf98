"""PDF, DOCX and plain text → a view tree, from the loader's own blocks (what was indexed is what is shown).

DOCX is shown as its text with headings, lists and tables; a PDF as the text of each page, one
`section` per page (`page` attribute), since the page view is what a citation's page number refers
to; text files as paragraphs.
"""

from __future__ import annotations

import re

from appliance.documents.ocr_text import OCR_LABEL
from appliance.documents.tree import TreeBuilder
from appliance.ingest.document import Block, LoadedDocument
from appliance.text.pipe_tables import is_table, tables

_LIST_MARKER = re.compile(r"^(\s*)(?:[-*+•▪◦‣]|\d{1,4}[.)])\s+")


def _table(tree: TreeBuilder, text: str) -> None:
    """A pipe table (how every loader writes tables) as a real table: its header row in `thead` as `th`."""
    if not is_table(text):
        tree.element("pre", text)
        return
    for table in tables(text):
        tree.open("table")
        if table.header is not None:
            tree.open("thead")
            _row(tree, "th", table.header)
            tree.close()
        tree.open("tbody")
        for row in table.rows:
            _row(tree, "td", row.cells)
        tree.close()
        tree.close()


def _row(tree: TreeBuilder, tag: str, cells: tuple[str, ...]) -> None:
    tree.open("tr")
    for cell in cells:
        tree.element(tag, cell)
    tree.close()


def _list(tree: TreeBuilder, text: str) -> None:
    numbered = bool(re.match(r"^\s*\d", text))
    tree.open("ol" if numbered else "ul")
    for line in text.split("\n"):
        if not line.strip():
            continue
        tree.element("li", _LIST_MARKER.sub("", line, count=1).strip())
    tree.close()


def _block(tree: TreeBuilder, block: Block) -> None:
    if block.kind == "heading":
        tree.element(f"h{min(max(block.level, 1), 6)}", block.text)
    elif block.kind == "table":
        _table(tree, block.text)
    elif block.kind == "list":
        _list(tree, block.text)
    elif block.kind == "code":
        tree.element("pre", block.text)
    else:
        tree.element("p", block.text)


def render_blocks(document: LoadedDocument) -> TreeBuilder:
    tree = TreeBuilder()
    if document.doc_type != "pdf":
        for block in document.blocks:
            _block(tree, block)
        return tree
    last_page = max((block.page or 1 for block in document.blocks), default=1)
    by_page: dict[int, list[Block]] = {}
    for block in document.blocks:
        by_page.setdefault(block.page or 1, []).append(block)
    for page in range(1, last_page + 1):
        tree.open("section", page=page, id=f"page-{page}")
        tree.element("h2", f"Page {page}", kind="page-label")
        blocks = by_page.get(page, [])
        read = [block.ocr_confidence for block in blocks if block.ocr_confidence is not None]
        if read:
            tree.element("p", OCR_LABEL.format(confidence=min(read)), kind="ocr-notice")
        if not blocks:
            tree.element("p", "(no text on this page)")
        for block in blocks:
            _block(tree, block)
        tree.close()
    return tree
