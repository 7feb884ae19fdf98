"""Fallback HTML reader for documents lxml cannot build a tree for (e.g. nesting deeper than libxml2's
limit, where lxml silently drops everything after the limit).

It uses the standard library's event parser, which keeps no tree and cannot recurse, and yields
headings and paragraphs only: lists, tables and preformatted text come out as plain paragraphs.
"""

from __future__ import annotations

from html.parser import HTMLParser

from .common import collapse_whitespace

# Content that is never document text: scripts and their kin, then embedded non-text media.
# (The stdlib parser already reads script/style content as raw text, so no tag inside can confuse it.)
_SCRIPT_LIKE = frozenset({"script", "style", "noscript", "template"})
# <noframes> content reaches lxml as raw markup text, useless either way.
SKIPPED_TAGS = _SCRIPT_LIKE | {"svg", "iframe", "object", "embed", "canvas", "noframes"}
HEADING_LEVELS = {f"h{n}": n for n in range(1, 7)}
# Tags whose start or end ends the current paragraph.
BREAKING_TAGS = frozenset(
    {
        "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "blockquote",
        "figure", "figcaption", "address", "dl", "dt", "dd", "form", "fieldset", "details", "summary",
        "hr", "ul", "ol", "li", "pre", "table", "caption", "tr", "td", "th", "thead", "tbody", "tfoot",
        "body", "html", "head", "title",
    }
)  # fmt: skip


class _FlatParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[int, str]] = []  # (heading level or 0 for a paragraph, text)
        self.title_parts: list[str] = []
        self._parts: list[str] = []
        self._skip_depth = 0
        self._heading_level = 0
        self._in_title = False

    def flush(self) -> None:
        text = collapse_whitespace("".join(self._parts))
        self._parts.clear()
        if text:
            self.blocks.append((self._heading_level, text))
        self._heading_level = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self._skip_depth += 1
        elif self._skip_depth:
            return
        elif tag in HEADING_LEVELS:
            self.flush()
            self._heading_level = HEADING_LEVELS[tag]
        elif tag in BREAKING_TAGS:
            self.flush()
            self._in_title = tag == "title"
        elif tag == "br":
            self._parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
        elif self._skip_depth:
            return
        elif tag in HEADING_LEVELS or tag in BREAKING_TAGS:
            if self._in_title:
                self.title_parts.extend(self._parts)
                self._parts.clear()
                self._in_title = False
            self.flush()

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self._parts.append(data)


def read_flat_html(text: str) -> tuple[str, list[tuple[int, str]]]:
    """Return (title or '', [(heading level or 0, text), ...]) in document order."""
    parser = _FlatParser()
    parser.feed(text)
    parser.close()
    parser.flush()  # text after the last tag
    return collapse_whitespace("".join(parser.title_parts)), parser.blocks
