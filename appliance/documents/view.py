"""The rendered view of an original document, with the cited sentences marked, as JSON for the page.

Markdown and HTML are rendered from the file (`render_markdown`, `render_html`); PDF, DOCX and text
from the loader's blocks (`render_blocks`): a PDF as one section per page. The cited chunk names the
section (and page) to open at; the sentences are those the page shows highlighted in the passage.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from appliance.documents.highlight import highlight
from appliance.documents.ocr_text import with_ocr_pages
from appliance.documents.original import Original
from appliance.documents.render_blocks import render_blocks
from appliance.documents.render_html import render_html
from appliance.documents.render_markdown import render_markdown
from appliance.documents.tree import TreeBuilder
from appliance.errors import DocumentError
from appliance.index.records import ChunkRow
from appliance.ingest.loaders import load_bytes
from appliance.ingest.loaders.decoding import decode_text
from appliance.ingest.loaders.markdown_loader import split_front_matter

CHANGED_NOTICE = (
    "This file has changed on disk since it was indexed: what is shown is the file as it is now, "
    "not the version the answer cites. Reindex, then ask again."
)


def _tree(original: Original, chunks: Sequence[ChunkRow] = ()) -> TreeBuilder:
    document = original.document
    if chunks and document.type in ("pdf", "image"):
        text_layer = None
        if document.type == "pdf":
            try:
                text_layer = load_bytes(original.data, Path(document.abs_path), document.path)
            except DocumentError:  # every page is a scan: nothing but OCR's text to show
                text_layer = None
        return render_blocks(with_ocr_pages(text_layer, chunks, document.path, document.type))
    if document.type in ("md", "html"):
        text = decode_text(original.data, document.path)
        return render_markdown(split_front_matter(text)[1]) if document.type == "md" else render_html(text)
    # Exactly the bytes that were checked and hashed, not the file read a second time.
    return render_blocks(load_bytes(original.data, Path(document.abs_path), document.path))


def document_view(
    original: Original,
    *,
    section: str = "",
    page: int | None = None,
    sentences: list[str] | None = None,
    chunks: Sequence[ChunkRow] = (),
) -> dict[str, Any]:
    """{"document": …, "target": id to scroll to, "page", "highlighted", "sentences", "truncated", "body": tree}.

    `chunks`: the document's chunks read by OCR, shown (and marked) for the pages OCR read."""
    document = original.document
    try:
        tree = _tree(original, chunks)
    except DocumentError as exc:  # the file changed into something its loader refuses
        tree = TreeBuilder()
        tree.element("p", f"This file can no longer be read: {exc.reason}. Open the original file.")
    marked = highlight(tree.root, list(sentences or []), section=section, page=page)
    return {
        "document": {
            "id": document.id,
            "path": document.path,
            "title": document.title,
            "type": document.type,
            "size": len(original.data),
            "changed": original.changed,
            "notice": CHANGED_NOTICE if original.changed else None,
            "file": f"/v1/documents/{document.id}/file",
        },
        "target": marked.target,
        "page": page,
        "section": section,
        "highlighted": marked.found,
        "sentences": marked.sentences,
        "truncated": tree.truncated,
        "body": tree.root.as_json(),
    }
