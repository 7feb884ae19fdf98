"""Ruled tables of a PDF page's text layer, kept as rows and columns (pypdfium2).

Plain and layout-mode text lose a table whose cells wrap: "Caustic soda / storage tank" becomes
lines of their own, and "what is the high-level alarm of T-450?" no longer finds its row with its
header. A table drawn with rules has its grid in the page's path objects: each rule (a thin path) or
cell rectangle gives edges; edges that touch form a grid (ruled_grid, shared with scanned pages);
each grid cell's text is read within its bounds. The table is rendered as the same pipe table as
DOCX, HTML and Markdown tables, and it takes the place of the lines of the layout text that held its
words.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass

from .common import joined_lines, pipe_table
from .pdf_text import LineStyle, PageBlock, page_blocks
from .ruled_grid import Edges, grids, mostly_filled

_THIN = 2.0  # points: a path this thin is a rule
_MIN_EDGE = 8.0  # points: shorter paths are marks, not rules
_SNAP = 2.5  # points: edges this close are one line of the grid
_MIN_BOX = 40.0  # points: a box around text is at least this wide (and half as high)
_SHARE = 0.7  # a layout line belongs to a table when this share of its words are the table's
_PIECE = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class PageTable:
    top: float  # for ordering, larger is higher: PDF points from the bottom, or an image's -y
    rows: list[list[str]]
    bounds: tuple[float, float, float, float] | None = None  # (left, bottom, right, top) in PDF points

    @property
    def text(self) -> str:
        return pipe_table(self.rows)


def page_paths(page: object) -> list[tuple[float, float, float, float]]:
    """(left, bottom, right, top) of each path object drawn on the page (rules, boxes); a frame or background
    the size of the page is none of them (joined to a margin's decoration it would make a page-sized grid)."""
    import pypdfium2.raw as raw

    width, height = page.get_size()  # type: ignore[attr-defined]
    objects = page.get_objects(filter=[raw.FPDF_PAGEOBJ_PATH], max_depth=2)  # type: ignore[attr-defined]
    paths = [tuple(obj.get_bounds()) for obj in objects]
    return [path for path in paths if not _page_sized(path, width, height)]


def _page_sized(path: tuple[float, float, float, float], width: float, height: float) -> bool:
    left, bottom, right, top = path
    return right - left > 0.9 * width and top - bottom > 0.5 * height


def _edges(paths: list[tuple[float, float, float, float]]) -> Edges:
    edges = Edges()
    for left, bottom, right, top in paths:
        width, height = right - left, top - bottom
        if height <= _THIN and width >= _MIN_EDGE:
            edges.horizontal.append(((bottom + top) / 2, left, right))
        elif width <= _THIN and height >= _MIN_EDGE:
            edges.vertical.append(((left + right) / 2, bottom, top))
        elif width >= _MIN_EDGE and height >= _MIN_EDGE:  # a cell's rectangle: its four sides
            edges.horizontal += [(bottom, left, right), (top, left, right)]
            edges.vertical += [(left, bottom, top), (right, bottom, top)]
    return edges


def page_tables(page: object, paths: list[tuple[float, float, float, float]] | None = None) -> list[PageTable]:
    """The ruled tables of a pypdfium2 page, top first; cells read within their bounds. `paths`: the page's
    path objects when the caller has read them already (page_paths)."""
    textpage = page.get_textpage()  # type: ignore[attr-defined]
    tables = []
    try:
        for xs, ys in grids(_edges(page_paths(page) if paths is None else paths), _SNAP):
            rows = []
            for top, bottom in zip(reversed(ys[1:]), reversed(ys[:-1]), strict=True):  # top row first
                cells = [
                    _cell_text(textpage.get_text_bounded(left + 0.5, bottom + 0.5, right - 0.5, top - 0.5))
                    for left, right in itertools.pairwise(xs)
                ]
                if any(cells):
                    rows.append(cells)
            if mostly_filled(rows):
                tables.append(PageTable(ys[-1], rows, (xs[0], ys[0], xs[-1], ys[-1])))
    finally:
        textpage.close()
    return sorted(tables, key=lambda table: -table.top)


def page_boxes(
    paths: list[tuple[float, float, float, float]], tables: list[PageTable], width: float, height: float
) -> list[tuple[float, float, float, float]]:
    """Rectangles that frame or shade a block of text (a call-out, a note), outside every ruled table and
    smaller than the page: (left, bottom, right, top)."""
    boxes = []
    for left, bottom, right, top in paths:
        if right - left < _MIN_BOX or top - bottom < _MIN_BOX / 2:
            continue
        if any(_inside((left, bottom, right, top), table.bounds) for table in tables if table.bounds):
            continue
        boxes.append((left, bottom, right, top))
    return boxes


def _inside(box: tuple[float, float, float, float], bounds: tuple[float, float, float, float]) -> bool:
    return (
        box[0] >= bounds[0] - _SNAP
        and box[1] >= bounds[1] - _SNAP
        and box[2] <= bounds[2] + _SNAP
        and box[3] <= bounds[3] + _SNAP
    )


def _cell_text(text: str) -> str:
    """A cell's text from pdfium: its lines joined; pdfium writes a hyphen that ended a line as \x02
    and joins the lines around it ("LIT\x02420A/B"): the hyphen is on the page, so it is kept."""
    return joined_lines(text.replace("\x02", "-").splitlines())


def table_lines(lines: list[str], table: PageTable, taken: set[int]) -> range | None:
    """The run of layout-text lines (indices) that hold the table's words, or None when none does.

    Words are compared by their letter-and-digit pieces: a cell's "RWTP-F-051" is "RWTP-F-" on one
    layout line and "051" on the next, and both lines are the table's."""
    words = Counter(piece for row in table.rows for cell in row for piece in _PIECE.findall(cell))
    best: range | None = None
    best_words = 0
    start = None
    count = 0
    for index, line in enumerate([*lines, ""]):
        tokens = [pieces for pieces in (_PIECE.findall(token) for token in line.split()) if pieces]
        last = index == len(lines)  # past the end: closes a run still open
        if not tokens and start is not None and not last:
            continue  # a blank line inside the table (a tall row), or only punctuation
        inside = (
            bool(tokens)
            and index not in taken
            and not last
            and sum(1 for pieces in tokens if all(p in words for p in pieces)) >= _SHARE * len(tokens)
        )
        if inside:
            if start is None:
                start, count = index, 0
            count += sum(len(pieces) for pieces in tokens)
            continue
        if start is not None:
            end = index
            while end > start and not lines[end - 1].strip():
                end -= 1
            if count > best_words:
                best, best_words = range(start, end), count
            start = None
    total = sum(words.values())
    return best if best is not None and best_words >= 0.5 * total else None


def blocks_with_tables(
    text: str,
    tables: list[PageTable],
    *,
    layout: bool,
    styles: list[LineStyle | None] | None = None,
    headings: bool = True,
) -> list[PageBlock]:
    """The page's blocks, each ruled table in place of the layout lines that held its words (`styles` and
    `headings` as for page_blocks)."""
    lines = text.split("\n")

    def blocks_of(start: int, stop: int | None) -> list[PageBlock]:
        part = styles[start:stop] if styles is not None else None
        return page_blocks("\n".join(lines[start:stop]), layout=layout, styles=part, headings=headings)

    taken: set[int] = set()
    placed: list[tuple[range, PageTable]] = []
    for table in tables:
        run = table_lines(lines, table, taken)
        if run is not None:
            taken.update(run)
            placed.append((run, table))
    if not placed:
        return blocks_of(0, None)
    blocks: list[PageBlock] = []
    position = 0
    for run, table in sorted(placed, key=lambda item: item[0].start):
        blocks += blocks_of(position, run.start)
        blocks.append(PageBlock("table", table.text))
        position = run.stop
    blocks += blocks_of(position, None)
    return blocks
