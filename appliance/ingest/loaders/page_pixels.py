"""A scanned page's pixels turned straight, and its ink: what the layout finders read beside OCR's lines.

OCR gives each line's box on the page turned straight by the skew it measured (ingest.ocr); the same
turn applied to the image puts rules, bullets and lines in one frame. Ink is told from paper by a
local threshold, so grey paper, a copier's uneven toner and light falling off across a photo all work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from PIL.Image import Image

# Ink is this much darker than its neighbourhood's mean (pixels, grey levels).
_THRESHOLD_WINDOW = 31
_THRESHOLD_OFFSET = 15


@dataclass(frozen=True)
class PagePixels:
    gray: np.ndarray  # uint8, paper light, the page turned straight
    ink: np.ndarray  # uint8, 255 where there is ink

    @property
    def width(self) -> int:
        return int(self.gray.shape[1])

    @property
    def height(self) -> int:
        return int(self.gray.shape[0])


def straight_pixels(image: Image, skew_degrees: float) -> PagePixels:
    import cv2
    import numpy as np
    from PIL import Image as PILImage

    gray = image.convert("L")
    if skew_degrees:
        gray = gray.rotate(skew_degrees, resample=PILImage.Resampling.BILINEAR, fillcolor=255)
    pixels = np.asarray(gray)
    ink = cv2.adaptiveThreshold(
        pixels, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, _THRESHOLD_WINDOW, _THRESHOLD_OFFSET
    )
    return PagePixels(pixels, ink)


def components(mask: np.ndarray) -> list[tuple[int, int, int, int, int]]:
    """(x, y, width, height, area) of each connected blob of ink."""
    import cv2

    count, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return [(int(s[0]), int(s[1]), int(s[2]), int(s[3]), int(s[4])) for s in stats[1:count]]
