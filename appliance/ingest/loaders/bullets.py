"""List bullets on a scanned page. OCR's detector passes over the small dot or square before a list
item, so the item's first line reads as a continuation of whatever came before ("3. Rules" followed by
its unmarked items reads as one numbered list item, and the heading is lost). A text layer keeps the
bullet glyph; here it is found in the ink: the first blob of ink at a line's start (left of its box, or
inside it where the detector took the dot in without reading it), compact, solid, about the size of a
letter's body, centred on the line, a space's width or more before the text, no other line in between.
"""

from __future__ import annotations

from dataclasses import replace

from appliance.ingest.ocr import OcrLine

from .page_pixels import PagePixels, components
from .pdf_text import LIST_ITEM

BULLET = "•"
# Dot-like marks the recogniser itself reads at a line's start are written as the one bullet.
_DOT_LIKE = ("●", "·", "▪", "■")
# Where the blob may sit: from this many line heights left of the box to this many inside it.
_REACH, _INSIDE = 2.5, 1.0
_GAP = 0.3  # at least this many line heights of paper between the bullet and the text after it
# Its size against the line's height (a box OCR pads by a little; measured: a Word bullet is 0.26-0.29
# of it, centred within 0.05): a full stop is smaller and sits on the baseline, a check box is bigger.
_MIN_SIZE, _MAX_SIZE = 0.18, 0.5
_MAX_ASPECT = 1.8  # a dash is wider: not a bullet (OCR reads dashes itself)
# Share of its bounding box inked: a solid dot (measured 0.84) or square; a letter's ring or strokes
# ("o", "a", "e") fill less.
_MIN_FILL = 0.65
_CENTRED = 0.15  # its centre within this share of the line's height from the line's middle


def with_bullets(page: PagePixels, lines: list[OcrLine]) -> list[OcrLine]:
    """The lines, each that has a bullet before it starting with "• " where the bullet is (as a text
    layer gives it: the item's wrapped lines then sit to the right of its bullet)."""
    result = []
    for line in lines:
        if line.text[:1] in _DOT_LIKE and line.text[1:2] == " ":
            result.append(replace(line, text=BULLET + line.text[1:]))
            continue
        at = _bullet_at(page, line, lines)
        result.append(line if at is None else replace(line, text=f"{BULLET} {line.text}", left=at))
    return result


def _bullet_at(page: PagePixels, line: OcrLine, lines: list[OcrLine]) -> float | None:
    """The left edge of the bullet before the line, or None when there is none."""
    if LIST_ITEM.match(line.text):
        return None  # OCR read its marker (a bullet, a dash, a step number), as the PDF text reader knows them
    height = line.height
    left = max(0, int(line.left - _REACH * height))
    right = min(page.width, int(line.left + _INSIDE * height), int(line.right))
    top, bottom = max(0, int(line.top)), min(page.height, int(line.bottom) + 1)
    if right - left < 2 or bottom - top < 2:
        return None
    for other in lines:  # a word or cell of another line in the gap: whatever is there is not a bullet
        overlaps = other.right > left and other.left < line.left and other.bottom > top and other.top < bottom
        if other is not line and overlaps:
            return None
    blobs = sorted(b for b in components(page.ink[top:bottom, left:right]) if max(b[2], b[3]) >= _MIN_SIZE * height / 2)
    if not blobs:
        return None
    x, y, width, tall, area = blobs[0]
    following = blobs[1][0] if len(blobs) > 1 else right - left
    if following - (x + width) < _GAP * height:
        return None  # a letter of the text, or a mark set close to it
    if left + x >= line.left - 1 and len(line.text.split()[0]) == 1:
        return None  # inside the box, and the recogniser read a one-letter word there: that is the blob
    size_ok = _MIN_SIZE * height <= max(width, tall) <= _MAX_SIZE * height
    aspect_ok = max(width, tall) <= _MAX_ASPECT * max(1, min(width, tall))
    centre = top + y + tall / 2
    centred = abs(centre - (line.top + line.bottom) / 2) <= _CENTRED * height
    solid = area >= _MIN_FILL * width * tall
    return float(left + x) if size_ok and aspect_ok and solid and centred else None
