"""Optical character recognition of page images, offline: PP-OCR ONNX models (detection, recognition)
run by RapidOCR's engine, loaded from the model store (never from a package's folder, never downloaded).

A page becomes `OcrLine`s (text, recognition confidence, box). `layout_text` lays them back on a
character grid, the way pypdf's layout mode lays out a text layer, so the PDF page heuristics
(paragraph gaps, lists, tables as columns) read an OCR'd page like any other.

A copier skews a page by a degree or two: across a 15 cm table row that is more than a line's
height, and the row's cells would land on different lines. The page's skew is read from the
detected text boxes' slope, and the lines' boxes are given as on the page turned straight (in the
input image's pixels), so rows stay rows; `OcrPage.skew_degrees` says by how much to turn the image
to match them (image_tables finds ruled tables there).

The time limit is checked between the stages of a page (detection, each batch of recognition): a
stage in flight is not interrupted, so a page stops at most one stage past its limit.
"""

from __future__ import annotations

import itertools
import re
import statistics
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL.Image import Image

# A model folder holds one file of each part, named as PaddleOCR names them (…_det_…, …_rec_…, …_cls_…).
PARTS = ("det", "rec", "cls")  # cls: the direction classifier, loaded by RapidOCR, not run (scans are upright)
# Lines RapidOCR itself reads below this confidence are noise (a smudge read as "e e r"): dropped.
_MIN_LINE_SCORE = 0.5
# Crops recognised between two looks at the clock.
_REC_SLICE = 24
# PP-OCRv4's recogniser (trained mostly on Chinese) often drops narrow English word spaces; its CTC
# columns still show them as a wider step between two characters. PaddleOCR splits words at a step
# of 5 columns or more; larger type has larger steps inside words too, so the step must also be 1.5x
# the line's usual one (measured: demo SOP pages, words found 0.75 -> 0.83; 'b efore' in 30 px type
# with the fixed rule alone). PP-OCRv6 writes the spaces itself, and the repair would split a wide
# letter from its word ("W here", "Rem ote"): it runs for the v4 recogniser only.
_DROPS_SPACES = "PP-OCRv4"  # in the recognition model's file name
_SPACE_STEP = 5
_SPACE_OVER_USUAL = 1.5
# The skew is read from boxes at least this many times as wide as tall (a short word's slope is noise),
# and a page turned by less than this is left as it is.
_SLOPE_MIN_ASPECT = 4.0
_MIN_SKEW_DEGREES = 0.1


class OcrTimeout(Exception):
    """A page took longer than its limit."""


@dataclass(frozen=True)
class OcrLine:
    text: str
    confidence: float  # mean per-character probability of the recogniser, 0..1
    left: float
    top: float
    right: float
    bottom: float

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclass(frozen=True)
class OcrPage:
    lines: list[OcrLine]
    seconds: float
    skew_degrees: float = 0.0  # turning the input image by this (counter-clockwise) straightens it

    @property
    def confidence(self) -> float | None:
        """Mean confidence over the page's characters (None when nothing was read)."""
        weights = [len(line.text) for line in self.lines]
        if not sum(weights):
            return None
        return sum(line.confidence * w for line, w in zip(self.lines, weights, strict=True)) / sum(weights)

    @property
    def words(self) -> int:
        return sum(len(line.text.split()) for line in self.lines)


class OcrEngine:
    """One loaded recogniser; `read` is not thread-safe (one ONNX session set per engine)."""

    def __init__(self, model_dir: Path, threads: int = 0) -> None:
        from rapidocr_onnxruntime import RapidOCR

        paths = model_files(model_dir)
        self._repair_spaces = _DROPS_SPACES in paths["rec"].name
        self._engine = RapidOCR(
            det_model_path=str(paths["det"]),
            rec_model_path=str(paths["rec"]),
            cls_model_path=str(paths["cls"]),
            use_cls=False,
            text_score=_MIN_LINE_SCORE,
            intra_op_num_threads=threads or -1,
            inter_op_num_threads=1,
        )

    def read(self, image: Image, *, seconds: float | None = None) -> OcrPage:
        """Recognise the text of one page image (any mode; converted to RGB)."""
        import numpy as np
        from PIL import Image

        started = time.monotonic()
        deadline = None if seconds is None else started + seconds
        engine = self._engine
        scale = 1.0
        if max(image.size) > engine.max_side_len:
            # RapidOCR would shrink it with cv2's bilinear resize, which aliases small print (a 300 dpi
            # page); shrink it here with a filter that averages. Boxes are scaled back to the input's pixels.
            scale = engine.max_side_len / max(image.size)
            size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
            image = image.resize(size, Image.Resampling.LANCZOS)
        pixels = np.asarray(image.convert("RGB"))
        raw_h, raw_w = pixels.shape[:2]
        scaled, ratio_h, ratio_w = engine.preprocess(pixels)
        record: dict[str, Any] = {"preprocess": {"ratio_h": ratio_h, "ratio_w": ratio_w}}
        scaled, record = engine.maybe_add_letterbox(scaled, record)  # a lone line gets room around it
        boxes, _ = engine.auto_text_det(scaled)
        if not boxes:
            return OcrPage([], time.monotonic() - started)
        crops = engine.get_crop_img_list(scaled, boxes)
        results: list[Any] = []
        for first in range(0, len(crops), _REC_SLICE):
            _check(deadline, seconds)
            recognised, _ = engine.text_rec(crops[first : first + _REC_SLICE], True)
            results.extend(recognised)
        origin = engine._get_origin_points(boxes, record, raw_h, raw_w)
        skew = skew_degrees(origin)
        straight = turned(origin, skew, (raw_w / 2, raw_h / 2)) / scale
        lines = []
        for box, result in zip(straight, results, strict=True):
            text = _spaced(result) if self._repair_spaces else str(result[0])
            text, confidence = _clean(text), float(result[1])
            if confidence < _MIN_LINE_SCORE or not text.strip():
                continue
            xs, ys = box[:, 0], box[:, 1]
            left, top, right, bottom = float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max())
            lines.append(OcrLine(text.strip(), confidence, left, top, right, bottom))
        return OcrPage(lines, time.monotonic() - started, skew)


def skew_degrees(boxes: Any) -> float:
    """The page's skew from the slope of its long text boxes (corners: top-left, top-right, bottom-right,
    bottom-left; y down): the length-weighted median, in degrees, positive when lines fall to the right."""
    import numpy as np

    quads = np.asarray(boxes, dtype=np.float64)
    if quads.ndim != 3 or not len(quads):
        return 0.0
    top = quads[:, 1] - quads[:, 0]
    width = np.hypot(top[:, 0], top[:, 1])
    height = np.hypot(*(quads[:, 3] - quads[:, 0]).T)
    long = width >= _SLOPE_MIN_ASPECT * np.maximum(height, 1.0)
    if not long.any():
        return 0.0
    angles = np.degrees(np.arctan2(top[long, 1], top[long, 0]))
    order = np.argsort(angles)
    weights = np.cumsum(width[long][order])
    median = float(angles[order][np.searchsorted(weights, weights[-1] / 2)])
    return median if abs(median) >= _MIN_SKEW_DEGREES else 0.0


def turned(points: Any, degrees: float, centre: tuple[float, float]) -> Any:
    """Points (…, 2; y down) as they lie once the image is turned `degrees` counter-clockwise about
    `centre`, the way PIL's Image.rotate(degrees) turns it."""
    import numpy as np

    array = np.asarray(points, dtype=np.float64)
    if not degrees:
        return array
    theta = np.radians(degrees)
    cos, sin = np.cos(theta), np.sin(theta)
    dx, dy = array[..., 0] - centre[0], array[..., 1] - centre[1]
    return np.stack([centre[0] + dx * cos + dy * sin, centre[1] - dx * sin + dy * cos], axis=-1)


def model_files(model_dir: Path) -> dict[str, Path]:
    """The detection, recognition and classifier ONNX files of a model folder, one of each."""
    found: dict[str, Path] = {}
    for part in PARTS:
        matches = sorted(model_dir.glob(f"*_{part}_*.onnx"))
        if len(matches) != 1:
            raise FileNotFoundError(f"{model_dir}: expected one *_{part}_*.onnx file, found {len(matches)}")
        found[part] = matches[0]
    return found


def _check(deadline: float | None, seconds: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise OcrTimeout(f"OCR of the page took longer than {seconds:g} s")


def _spaced(result: Any) -> str:
    """The recognised text with the word spaces its CTC columns show (see _SPACE_STEP)."""
    text, _, details = result
    chars = [char for word in details[1] for char in word]
    columns = [column for word in details[2] for column in word]
    if len(chars) != len(text) or len(chars) < 2:
        return str(text)
    steps = [b - a for a, b in itertools.pairwise(columns)]
    threshold = max(_SPACE_STEP, _SPACE_OVER_USUAL * statistics.median(steps))
    out = chars[0]
    for index, char in enumerate(chars[1:]):
        previous = out[-1]
        wide = steps[index] >= threshold
        # Never inside an identifier's capitals and digits (P-BW-001, HMI, 3090): a wide letter is not a space.
        tag_like = _tag_char(previous) and _tag_char(char)
        if wide and not tag_like and char != " " and previous != " ":
            out += " "
        out += char
    return out


# "3.1Filter data": the recogniser drops the space after a section number, which hides the heading.
_GLUED_NUMBER = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3}\.?)(?=[A-Z][a-z])")


# A tag's number read with letters for digits: "SOP-ELC-oo1", "SOP-SAF-o02" (the recogniser's o and 0
# look alike in most fonts). Only a last segment of digits and o/O/l/I after a capitalised prefix.
_TAG_NUMBER = re.compile(r"\b([A-Z]{1,6}(?:-[A-Z]{1,6})*-)([0-9oOlI]{2,6})\b")
_AS_DIGIT = str.maketrans({"o": "0", "O": "0", "l": "1", "I": "1"})


def _clean(text: str) -> str:
    """NFKC (the recogniser writes full-width punctuation: '（', '，'), a section number's space, tag digits."""
    text = _GLUED_NUMBER.sub(r"\1 ", unicodedata.normalize("NFKC", text).strip())
    return _TAG_NUMBER.sub(_tag_digits, text)


def _tag_digits(match: re.Match[str]) -> str:
    number = match.group(2)
    if not any(char.isdigit() for char in number):
        return match.group(0)  # "SOP-lOI" is a word, not a misread number
    return match.group(1) + number.translate(_AS_DIGIT)


def _tag_char(char: str) -> bool:
    return char.isdigit() or char.isupper() or char in "-./"


def layout_text(lines: list[OcrLine]) -> str:
    """The page's lines on a character grid: rows in reading order, blank lines for vertical gaps
    wider than the usual line pitch, and columns by horizontal position (pypdf layout-mode style)."""
    if not lines:
        return ""
    heights = sorted(line.height for line in lines)
    line_height = max(1.0, heights[len(heights) // 2])
    char_width = max(1.0, statistics.median((line.right - line.left) / max(1, len(line.text)) for line in lines))
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda item: (item.top + item.bottom) / 2):
        centre = (line.top + line.bottom) / 2
        if rows and abs(centre - _centre(rows[-1])) < line_height / 2:
            rows[-1].append(line)
        else:
            rows.append([line])
    centres = [_centre(row) for row in rows]
    pitches = [b - a for a, b in itertools.pairwise(centres)]
    pitch = min(pitches, default=line_height)
    pitch = max(pitch, line_height)
    left_margin = min(line.left for line in lines)
    text_rows: list[str] = []
    for index, row in enumerate(rows):
        if index:
            gap = max(0, round(pitches[index - 1] / pitch) - 1)
            text_rows.extend([""] * gap)
        text = ""
        for line in sorted(row, key=lambda item: item.left):
            column = round((line.left - left_margin) / char_width)
            if text:
                column = max(column, len(text) + 1)
            text = text.ljust(column) + line.text
        text_rows.append(text)
    return "\n".join(text_rows)


def _centre(row: list[OcrLine]) -> float:
    return statistics.fmean((line.top + line.bottom) / 2 for line in row)
