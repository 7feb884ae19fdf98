"""Grids of ruled tables from their rules: edges that touch form one grid, whatever drew them.

A PDF's text layer gives the rules as path objects (pdf_tables), a scanned page as lines of ink
(image_tables); both come here as horizontal and vertical edges, and a group of touching edges
with at least three lines each way is a grid of at least 2 x 2 cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Edges:
    horizontal: list[tuple[float, float, float]] = field(default_factory=list)  # (y, x0, x1)
    vertical: list[tuple[float, float, float]] = field(default_factory=list)  # (x, y0, y1)


def snap(values: list[float], tolerance: float) -> list[float]:
    """The distinct positions of `values`, those within `tolerance` of the one before merged."""
    snapped: list[float] = []
    for value in sorted(values):
        if not snapped or value - snapped[-1] > tolerance:
            snapped.append(value)
    return snapped


def grids(edges: Edges, tolerance: float) -> list[tuple[list[float], list[float]]]:
    """(xs, ys), ascending, of each group of touching edges that makes at least a 2 x 2 grid of cells."""
    segments = [("h", *h) for h in edges.horizontal] + [("v", *v) for v in edges.vertical]
    parent = list(range(len(segments)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def touches(a: tuple[str, float, float, float], b: tuple[str, float, float, float]) -> bool:
        if a[0] == b[0]:  # collinear and overlapping: one ruled line drawn in pieces
            return abs(a[1] - b[1]) <= tolerance and a[2] <= b[3] + tolerance and b[2] <= a[3] + tolerance
        h, v = (a, b) if a[0] == "h" else (b, a)
        return h[2] - tolerance <= v[1] <= h[3] + tolerance and v[2] - tolerance <= h[1] <= v[3] + tolerance

    for i in range(len(segments)):
        for j in range(i + 1, len(segments)):
            if touches(segments[i], segments[j]):
                parent[find(i)] = find(j)
    groups: dict[int, list[tuple[str, float, float, float]]] = {}
    for i, segment in enumerate(segments):
        groups.setdefault(find(i), []).append(segment)
    found = []
    for group in groups.values():
        ys = snap([s[1] for s in group if s[0] == "h"], tolerance)
        xs = snap([s[1] for s in group if s[0] == "v"], tolerance)
        if len(ys) >= 3 and len(xs) >= 3:
            found.append((xs, ys))
    return found


def mostly_filled(rows: list[list[str]]) -> bool:
    """A frame around a paragraph or a boxed note is no table: most cells of a table hold text."""
    filled = sum(1 for row in rows for cell in row if cell)
    return len(rows) >= 2 and bool(rows[0]) and filled >= 0.5 * len(rows) * len(rows[0])
