"""A PDF's outline (its bookmarks), as the headings its author set: title, level, page and height.

pdfium walks the outline (and stops at a bookmark that points back up the tree). A bookmark without a
destination, or whose page the file does not have, is left out with a warning that names it; an outline
that cannot be read at all is a warning too, and the headings then come from the rules below it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

from .common import collapse_whitespace

MAX_DEPTH = 8
MAX_ENTRIES = 5000
_MAX_NAMED = 3  # warnings name this many bookmarks, then count the rest


@dataclass(frozen=True)
class OutlineEntry:
    title: str
    level: int  # 1 = top
    page: int  # 1-based
    top: float | None  # the destination's height on the page (PDF points from the bottom), when it has one


@dataclass
class Outline:
    entries: list[OutlineEntry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_outline(document: Any) -> Outline:
    """The outline of a pypdfium2 document; never raises."""
    import pypdfium2.raw as raw

    outline = Outline()
    pages = len(document)
    missing: list[str] = []
    try:
        for bookmark in document.get_toc(max_depth=MAX_DEPTH):
            if len(outline.entries) >= MAX_ENTRIES:
                outline.warnings.append(f"the outline has more than {MAX_ENTRIES} bookmarks: the rest are ignored")
                break
            title = collapse_whitespace(bookmark.get_title() or "")
            if not title:
                continue
            page, top = _destination(raw, document, bookmark)
            if page is None or not 0 <= page < pages:
                missing.append(title)
                continue
            outline.entries.append(OutlineEntry(title, bookmark.level + 1, page + 1, top))
    except Exception as exc:  # a damaged outline costs the bookmarks, never the document
        outline.warnings.append(f"the outline could not be read ({type(exc).__name__}): headings found from the text")
        outline.entries.clear()
        return outline
    if missing:
        named = ", ".join(f"“{title[:40]}”" for title in missing[:_MAX_NAMED])
        more = f" and {len(missing) - _MAX_NAMED} more" if len(missing) > _MAX_NAMED else ""
        outline.warnings.append(f"bookmarks without a page in this file ignored: {named}{more}")
    if outline.entries:
        top_level = min(entry.level for entry in outline.entries)
        outline.entries = [OutlineEntry(e.title, e.level - top_level + 1, e.page, e.top) for e in outline.entries]
    return outline


def _destination(raw: Any, document: Any, bookmark: Any) -> tuple[int | None, float | None]:
    """(0-based page index, height on the page) of a bookmark's destination, or of its GoTo action's."""
    dest = raw.FPDFBookmark_GetDest(document.raw, bookmark.raw)
    if not dest:
        action = raw.FPDFBookmark_GetAction(bookmark.raw)
        dest = raw.FPDFAction_GetDest(document.raw, action) if action else None
    if not dest:
        return None, None
    index = raw.FPDFDest_GetDestPageIndex(document.raw, dest)
    has_x, has_y, has_zoom = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    x, y, zoom = ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    top = None
    if (
        raw.FPDFDest_GetLocationInPage(
            dest, ctypes.byref(has_x), ctypes.byref(has_y), ctypes.byref(has_zoom), x, y, zoom
        )
        and has_y.value
    ):
        top = float(y.value)
    return (index if index >= 0 else None), top
