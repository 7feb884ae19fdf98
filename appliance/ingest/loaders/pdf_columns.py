"""Reading order of a page's lines: columns one after the other, a box or side note as its own block.

A gutter is a vertical strip that a run of consecutive lines leaves empty while several of them have
text on both sides of it. What is on its two sides decides how the run is read:
- both sides full of wrapped text (most lines of each side fill its width): two columns, read the left
  one, then the right one;
- one side holds text on few of the lines (a side heading, a note beside the steps) and the other is
  wrapped text: each piece of the first is read as a block of its own, just before the line of the
  other side it stands beside;
- anything else (cells of a table, a form): left as it is, line by line, for the table reader.
A box drawn around text that other text stands beside (a call-out beside a step list) is read after
that text, as a block of its own, whatever its shape.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from .pdf_lines import PdfLine, Segment

MIN_TWO_SIDED = 1  # lines with text on both sides that make a gutter
_FULL_LINE = 0.7  # a side's line at least this share of the side's widest line is a wrapped (full) line
_FULL_SHARE = 0.5  # a side of wrapped text: this share of its lines are full
_MIN_WORDS = 4  # a side of wrapped text: this many words per line on average
_SPARSE = 0.5  # a side with text on at most this share of the run's lines is sparse (side notes)
_EDGE = 1.0  # points: a segment may touch the gutter's edge
_MIN_GUTTER = 6.0  # points: a gutter narrower than this is a word space


@dataclass(frozen=True)
class Box:
    left: float
    bottom: float
    right: float
    top: float

    def holds(self, segment: Segment, line: PdfLine) -> bool:
        return (
            segment.left >= self.left - _EDGE
            and segment.right <= self.right + _EDGE
            and line.baseline >= self.bottom - _EDGE
            and line.baseline <= self.top + _EDGE
        )


@dataclass
class Flow:
    """Lines read one after another; a new flow starts a new block."""

    lines: list[PdfLine] = field(default_factory=list)


def reading_order(
    lines: list[PdfLine], boxes: Sequence[Box] = (), fixed: Sequence[tuple[float, float]] = ()
) -> list[Flow]:
    """The page's lines (top to bottom) as flows in reading order. Lines whose baseline lies in one of the
    `fixed` (bottom, top) ranges (a ruled table: the table reader takes its lines as they are) stay in place."""
    flows = _beside_boxes(lines, list(boxes))
    result: list[Flow] = []
    for flow in flows:
        result += _columns(flow.lines, fixed)
    return [flow for flow in result if flow.lines]


def _beside_boxes(lines: list[PdfLine], boxes: list[Box]) -> list[Flow]:
    """Text inside a box that other text stands beside, taken out and read after the lines it spans."""
    beside = [box for box in boxes if _box_beside(box, lines)]
    flows = [Flow()]
    pending: list[tuple[Box, Flow]] = []
    for line in lines:
        for box, flow in list(pending):  # a box ends when the lines have passed its bottom
            if line.baseline < box.bottom - _EDGE:
                flows += [flow, Flow()]
                pending.remove((box, flow))
        inside: dict[Box, list[Segment]] = {}
        outside: list[Segment] = []
        for segment in line.segments:
            holder = next((box for box in beside if box.holds(segment, line)), None)
            if holder is None:
                outside.append(segment)
            else:
                inside.setdefault(holder, []).append(segment)
        for holder, segments in inside.items():
            target = next((flow for held, flow in pending if held == holder), None)
            if target is None:
                target = Flow()
                pending.append((holder, target))
            target.lines.append(line.part(tuple(segments)))
        if outside:
            flows[-1].lines.append(line.part(tuple(outside)) if inside else line)
    for _, flow in pending:
        flows += [flow, Flow()]
    return flows


def _box_beside(box: Box, lines: list[PdfLine]) -> bool:
    """The box holds text, and other text stands beside it (within its height) on at least two lines."""
    holds = beside = 0
    for line in lines:
        if not box.bottom - _EDGE <= line.baseline <= box.top + _EDGE:
            continue
        inside = [box.holds(segment, line) for segment in line.segments]
        holds += any(inside)
        beside += not all(inside)
    return holds >= 1 and beside >= 2


def _columns(lines: list[PdfLine], fixed: Sequence[tuple[float, float]]) -> list[Flow]:
    flows: list[Flow] = [Flow()]
    index = 0
    while index < len(lines):
        found = None if _is_fixed(lines[index], fixed) else _gutter_run(lines, index, fixed)
        if found is None:
            flows[-1].lines.append(lines[index])
            index += 1
            continue
        end, left_edge, right_edge = found
        flows += _read_run(lines[index:end], left_edge, right_edge)
        flows.append(Flow())
        index = end
    return flows


def _is_fixed(line: PdfLine, fixed: Sequence[tuple[float, float]]) -> bool:
    return any(bottom - _EDGE <= line.baseline <= top + _EDGE for bottom, top in fixed)


def _gutter_run(
    lines: list[PdfLine], start: int, fixed: Sequence[tuple[float, float]]
) -> tuple[int, float, float] | None:
    """(end, gutter left, gutter right) of a run of lines from `start` that keeps a gutter, or None. The
    gutter starts as a gap of the first line and narrows to what every later line leaves free."""
    line = lines[start]
    best: tuple[int, float, float] | None = None
    for first, second in itertools.pairwise(line.segments):
        low, high = first.right, second.left
        two_sided = 0
        end = start
        while end < len(lines) and not _is_fixed(lines[end], fixed):
            narrowed = _narrowed(lines[end], low, high)
            if narrowed is None:
                break
            low, high = narrowed
            segments = lines[end].segments
            if any(s.right <= low + _EDGE for s in segments) and any(s.left >= high - _EDGE for s in segments):
                two_sided += 1
            end += 1
        if two_sided >= MIN_TWO_SIDED and (best is None or end > best[0]):
            best = (end, low, high)
    return best


def _narrowed(line: PdfLine, low: float, high: float) -> tuple[float, float] | None:
    """The gutter (low, high) this line leaves free, or None when its text crosses or fills it. Only a line
    with text on both sides narrows it; a line on one side must keep out of it."""
    two_sided = any(s.left < low for s in line.segments) and any(s.right > high for s in line.segments)
    for segment in line.segments:
        if not two_sided and segment.right > low + _EDGE and segment.left < high - _EDGE:
            return None
        if segment.right <= low + _EDGE or segment.left >= high - _EDGE:
            continue
        if segment.left <= low + _EDGE:
            low = segment.right  # a left-side segment reaching into the gutter
        elif segment.right >= high - _EDGE:
            high = segment.left  # a right-side segment starting inside it
        else:
            return None  # text inside the gutter
        if high - low < _MIN_GUTTER:
            return None
    return low, high


def _read_run(run: list[PdfLine], low: float, high: float) -> list[Flow]:
    left = [_side(line, lambda s: s.right <= low + _EDGE) for line in run]
    right = [_side(line, lambda s: s.left >= high - _EDGE) for line in run]
    left_count = sum(1 for part in left if part is not None)
    right_count = sum(1 for part in right if part is not None)
    if _wrapped(left) and _wrapped(right) and min(left_count, right_count) > _SPARSE * len(run):
        return [Flow([p for p in left if p is not None]), Flow([p for p in right if p is not None])]
    if left_count <= _SPARSE * len(run) < right_count and _wrapped(right):
        return _interleaved(left, right)
    if right_count <= _SPARSE * len(run) < left_count and _wrapped(left):
        return _interleaved(right, left)
    return [Flow(list(run))]


def _side(line: PdfLine, on_side: object) -> PdfLine | None:
    segments = tuple(s for s in line.segments if on_side(s))  # type: ignore[operator]
    return line.part(segments) if segments else None


def _wrapped(parts: list[PdfLine | None]) -> bool:
    """Most lines of the side fill its width and hold several words: running text, not cells."""
    lines = [part for part in parts if part is not None]
    if not lines:
        return False
    left = min(line.left for line in lines)
    widest = max(line.right - left for line in lines)
    full = sum(1 for line in lines if line.right - left >= _FULL_LINE * widest)
    words = sum(len(line.text.split()) for line in lines) / len(lines)
    return full >= _FULL_SHARE * len(lines) and words >= _MIN_WORDS


def _interleaved(sparse: list[PdfLine | None], dense: list[PdfLine | None]) -> list[Flow]:
    """Each piece of the sparse side as its own flow, just before the dense side's line beside its start."""
    flows = [Flow()]
    piece: Flow | None = None
    for sparse_part, dense_part in zip(sparse, dense, strict=True):
        if sparse_part is not None:
            if piece is None:
                piece = Flow()
                flows += [piece, Flow()]
            piece.lines.append(sparse_part)
        else:
            piece = None
        if dense_part is not None:
            flows[-1].lines.append(dense_part)
    return flows
