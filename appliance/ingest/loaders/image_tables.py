"""Ruled tables of a scanned page, kept as rows and columns, like a text layer's (pdf_tables).

OCR reads a table line by line across the page, so a cell that wraps ("Weak batteries, cold engine /
(block heater off)") is interleaved with its neighbours' lines. The page's rules are found in its
pixels, on the page turned straight by the skew OCR measured: ink is separated from paper by a local
threshold, and a morphological opening with a long thin kernel keeps only runs of ink longer than
any letter (horizontal and vertical rules). Those runs are the edges of ruled_grid; each grid cell
takes the OCR lines whose centre lies inside it, top to bottom.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from appliance.ingest.ocr import OcrLine

from .common import joined_lines
from .pdf_tables import PageTable
from .ruled_grid import Edges, grids, mostly_filled

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image

# A rule is a run of ink longer than this share of the page's width (horizontal) or height
# (vertical): letters are far shorter (a 10 pt capital is ~1.5 % of a letter page's height).
_RULE_SHARE_WIDE = 1 / 35
_RULE_SHARE_TALL = 1 / 50
_RULE_MAX_THICKNESS = 1 / 150  # of the page's width: thicker ink is a bar or a photo, not a rule
# Edges this close are one grid line: 2.5 points on a letter page's 612.
_SNAP_SHARE = 2.5 / 612
# Local threshold: ink is this much darker than its neighbourhood's mean (grey paper, copier noise).
_THRESHOLD_WINDOW = 31
_THRESHOLD_OFFSET = 15


def ruled_edges(gray: np.ndarray) -> Edges:
    """The horizontal and vertical rules of a greyscale page (uint8, paper light) as grid edges."""
    import cv2

    height, width = gray.shape
    ink = cv2.adaptiveThreshold(
        gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, _THRESHOLD_WINDOW, _THRESHOLD_OFFSET
    )
    thickness = max(3, round(width * _RULE_MAX_THICKNESS))
    edges = Edges()
    wide = max(15, round(width * _RULE_SHARE_WIDE))
    rows = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (wide, 1)))
    for x, y, w, h in _components(rows):
        if w >= wide and h <= thickness:
            edges.horizontal.append((y + h / 2, float(x), float(x + w)))
    tall = max(15, round(height * _RULE_SHARE_TALL))
    columns = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, tall)))
    for x, y, w, h in _components(columns):
        if h >= tall and w <= thickness:
            edges.vertical.append((x + w / 2, float(y), float(y + h)))
    return edges


def _components(mask: np.ndarray) -> list[tuple[int, int, int, int]]:
    import cv2

    count, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return [(int(s[0]), int(s[1]), int(s[2]), int(s[3])) for s in stats[1:count]]


def image_tables(image: Image, lines: list[OcrLine], skew_degrees: float) -> list[PageTable]:
    """The ruled tables of a scanned page, top first, their cells filled with the page's OCR lines
    (whose boxes are already on the page turned straight by `skew_degrees`)."""
    import numpy as np
    from PIL import Image as PILImage

    gray = image.convert("L")
    if skew_degrees:
        gray = gray.rotate(skew_degrees, resample=PILImage.Resampling.BILINEAR, fillcolor=255)
    pixels = np.asarray(gray)
    tolerance = max(2.0, pixels.shape[1] * _SNAP_SHARE)
    tables = []
    for xs, ys in grids(ruled_edges(pixels), tolerance):
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
