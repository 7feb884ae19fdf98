"""Plain text: paragraphs are separated by blank lines; line breaks inside a paragraph are kept."""

from __future__ import annotations

import re

from appliance.ingest.document import DocumentBuilder, LoadedDocument

from .common import short_line_title, title_from_stem
from .decoding import decode_text
from .source import Source

# One or more blank lines (which may hold stray spaces); the next line's indentation is kept.
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_LEADING_BLANK_LINES = re.compile(r"^\s*\n")


def load_text(data: bytes, source: Source) -> LoadedDocument:
    text = decode_text(data, source.display_path)
    builder = DocumentBuilder(source.display_path, "txt")
    for paragraph in _PARAGRAPH_BREAK.split(text):
        builder.add("paragraph", _LEADING_BLANK_LINES.sub("", paragraph).rstrip())
    return builder.build(short_line_title(text) or title_from_stem(source.stem))
