"""Ruled tables of a scanned page, kept as rows and columns, like a text layer's (pdf_tables).

OCR reads a table line by line across the page, so a cell that wraps ("Weak batteries, cold engine /
(block heater off)") is interleaved with its neighbours' lines. The page's rules are found in its
ink, on the page turned straight (page_pixels): a morphological opening with a long thin kernel keeps
only runs of ink longer than any letter (horizontal and vertical rules). Those runs are the edges of
ruled_grid; each grid cell takes the OCR lines whose centre lies inside it, top to bottom.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from appliance.ingest.ocr import OcrLine

from .common import joined_lines
from .page_pixels import PagePixels, components
from .pdf_tables import PageTable
from .ruled_grid import Edges, grids, mostly_filled

if TYPE_CHECKING:
    import numpy as np

# A rule is a run of ink longer than this share of the page's width (horizontal) or height
# (vertical): letters are far shorter (a 10 pt capital is ~1.5 % of a letter page's height).
_RULE_SHARE_WIDE = 1 / 35
_RULE_SHARE_TALL = 1 / 50
_RULE_MAX_THICKNESS = 1 / 150  # of the page's width: thicker ink is a bar or a photo, not a rule
# Edges this close are one grid line: 2.5 points on a letter page's 612.
_SNAP_SHARE = 2.5 / 612


def ruled_edges(ink: np.ndarray) -> Edges:
    """The horizontal and vertical rules of a page's ink mask (uint8, 255 = ink) as grid edges."""
    import cv2

    height, width = ink.shape
    thickness = max(3, round(width * _RULE_MAX_THICKNESS))
    edges = Edges()
    wide = max(15, round(width * _RULE_SHARE_WIDE))
    rows = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (wide, 1)))
    for x, y, w, h, _ in components(rows):
        if w >= wide and h <= thickness:
            edges.horizontal.append((y + h / 2, float(x), float(x + w)))
    tall = max(15, round(height * _RULE_SHARE_TALL))
    columns = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, tall)))
    for x, y, w, h, _ in components(columns):
        if h >= tall and w <= thickness:
            edges.vertical.append((x + w / 2, float(y), float(y + h)))
    return edges


def image_tables(page: PagePixels, lines: list[OcrLine]) -> list[PageTable]:
    """The ruled tables of a scanned page, top first, their cells filled with the page's OCR lines
    (boxes on the page turned straight, as `page` is)."""
    tolerance = max(2.0, page.width * _SNAP_SHARE)
    tables = []
    for xs, ys in grids(ruled_edges(page.ink), tolerance):
        rows = []
        for top, bottom in itertools.pairwise(ys):
            cells = [_cell_text(lines, left, top, right, bottom) for left, right in itertools.pairwise(xs)]
            if any(cells):
                rows.append(cells)
        if mostly_filled(rows):
            tables.append(PageTable(-ys[0], rows))
    return sorted(tables, key=lambda table: -table.top)


def _cell_text(lines: list[OcrLine], left: float, top: float, right: float, bottom: float) -> str:
    inside = [
        line
        for line in lines
        if left <= (line.left + line.right) / 2 <= right and top <= (line.top + line.bottom) / 2 <= bottom
    ]
    return joined_lines([line.text for line in sorted(inside, key=lambda line: (line.top, line.left))])
