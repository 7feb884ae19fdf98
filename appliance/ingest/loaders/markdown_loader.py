"""Markdown: markdown-it-py finds the top-level blocks; each block keeps its original source text."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from appliance.ingest.document import BlockKind, DocumentBuilder, LoadedDocument

from .common import collapse_whitespace, title_from_stem
from .decoding import decode_text
from .source import Source

# CommonMark plus GFM pipe tables. No plugins: nothing outside markdown-it-py itself is needed.
_PARSER = MarkdownIt("commonmark").enable("table")

# Top-level token type -> block kind. Headings are handled separately (they carry a level).
_KINDS: dict[str, BlockKind] = {
    "paragraph_open": "paragraph",
    "fence": "code",
    "code_block": "code",
    "table_open": "table",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "paragraph",
    "html_block": "paragraph",
}

_FRONT_MATTER_TITLE = re.compile(r"^title:\s*(.*?)\s*$")
_HTML_TAG = re.compile(r"<[^>]*>")


def split_front_matter(text: str) -> tuple[str | None, str]:
    """Drop YAML front matter ('---' ... '---' or '...' at the very top); return (its title, the rest).

    Only a plain top-level `title:` line is read; a full YAML parser is not worth a dependency here.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return None, text
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return None, text  # no closing fence: it was a thematic break, not front matter
    title = None
    for line in lines[1:end]:
        match = _FRONT_MATTER_TITLE.match(line)
        if match:
            value = match.group(1)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            if value and value[0] not in "|>":  # block scalars are not worth parsing
                title = value.strip() or None
            break
    return title, "\n".join(lines[end + 1 :])


def _source_of(lines: list[str], line_map: list[int]) -> str:
    start, end = line_map
    chunk = lines[start:end]
    while chunk and not chunk[-1].strip():
        chunk.pop()
    return "\n".join(chunk)


def _plain_inline(token: Token) -> str:
    """Readable text of an inline token (for the title): markup dropped, code and alt text kept."""
    parts = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "image", "html_inline"):
            parts.append(child.content if child.type != "html_inline" else "")
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return collapse_whitespace("".join(parts))


def load_markdown(data: bytes, source: Source) -> LoadedDocument:
    front_title, body = split_front_matter(decode_text(data, source.display_path))
    lines = body.split("\n")
    builder = DocumentBuilder(source.display_path, "md")
    first_h1: str | None = None
    tokens = _PARSER.parse(body)
    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue  # nested tokens belong to a top-level block already taken whole
        if token.type == "heading_open":
            inline = tokens[index + 1]
            level = int(token.tag[1])
            builder.add("heading", inline.content.strip(), level=level)
            if level == 1 and first_h1 is None:
                first_h1 = _plain_inline(inline) or None
            continue
        kind = _KINDS.get(token.type)
        if kind is None:
            continue  # thematic breaks and the like carry no text
        text = _source_of(lines, token.map)
        if token.type == "html_block" and not _HTML_TAG.sub("", text).strip():
            continue  # comments and bare tags: markup without words
        builder.add(kind, text)
    return builder.build(front_title or first_h1 or title_from_stem(source.stem))
