"""Mark the cited sentences in a view tree and find the place to scroll to.

A sentence is found by its skeleton: its letters and digits, lowercased, with everything else
(spaces, Markdown markers, table pipes, line breaks, punctuation) ignored on both sides, because the
indexed text and the rendered text differ exactly there (`**Close** VLV-3042-B` is rendered as
"Close VLV-3042-B"; a pipe table becomes cells). The search looks inside the cited section (or PDF
page) first, then the whole document. A match may span several text pieces (bold inside a sentence):
each piece gets its own `mark`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from appliance.documents.tree import HEADINGS, Node

# Sentences shorter than this skeleton are too generic to find ("Close it.").
MIN_SKELETON = 12
_RUNS = re.compile(r"[^\W_]+")
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
_TAG = re.compile(r"<[^>\n]{0,200}>")
SECTION_SEPARATOR = " › "


def skeleton(text: str) -> tuple[str, list[int]]:
    """(letters and digits lowercased, the offset in `text` of each of them)."""
    chars: list[str] = []
    offsets: list[int] = []
    for run in _RUNS.finditer(text):
        for i, char in enumerate(run.group()):
            low = char.lower()
            chars.append(low if len(low) == 1 else char)
            offsets.append(run.start() + i)
    return "".join(chars), offsets


def _skeleton_only(text: str) -> str:
    joined = "".join(_RUNS.findall(text))
    low = joined.lower()
    return low if len(low) == len(joined) else skeleton(text)[0]


@dataclass
class _Leaf:
    parent: Node
    index: int
    text: str


@dataclass
class _Place:
    node: Node
    start: int  # first leaf
    end: int = -1  # one past the last leaf
    level: int = 0
    page: int | None = None
    path: list[str] = field(default_factory=list)  # heading texts from the top (headings only)


@dataclass
class Highlighted:
    target: str | None  # the id to scroll to: the first cited sentence, else the cited section or page
    found: int  # how many of the sentences were found
    sentences: int


def _walk(root: Node) -> tuple[list[_Leaf], list[_Place], list[_Place]]:
    """Text leaves in reading order, the headings (with their section paths) and the PDF pages."""
    leaves: list[_Leaf] = []
    headings: list[_Place] = []
    pages: dict[int, _Place] = {}  # id(section node) → its page
    path: list[tuple[int, str]] = []
    stack: list[list[Node | int]] = [[root, 0]]  # (node, next child): iterative, whatever the depth
    while stack:
        frame = stack[-1]
        node, position = frame[0], frame[1]
        assert isinstance(node, Node) and isinstance(position, int)
        if position >= len(node.children):
            stack.pop()
            if id(node) in pages:
                pages[id(node)].end = len(leaves)
            continue
        frame[1] = position + 1
        child = node.children[position]
        if isinstance(child, str):
            leaves.append(_Leaf(node, position, child))
            continue
        if child.tag in HEADINGS and child.attrs.get("kind") != "page-label":
            level = HEADINGS[child.tag]
            path = [entry for entry in path if entry[0] < level] + [(level, child.text())]
            headings.append(_Place(child, len(leaves), level=level, path=[text for _, text in path]))
        page = child.attrs.get("page")
        if child.tag == "section" and isinstance(page, int):
            pages[id(child)] = _Place(child, len(leaves), page=page)
        stack.append([child, 0])
    for number, heading in enumerate(headings):
        following = (h for h in headings[number + 1 :] if h.level <= heading.level)
        heading.end = next((h.start for h in following), len(leaves))
    return leaves, headings, list(pages.values())


def _same(a: str, b: str) -> bool:
    return bool(a) and _skeleton_only(a) == _skeleton_only(b)


def find_section(headings: list[_Place], section: str) -> _Place | None:
    """The heading whose path is `section` (the chunker's "A › B › C"), else the first one named like its end."""
    wanted = [part for part in section.split(SECTION_SEPARATOR) if part.strip()]
    if not wanted:
        return None
    for heading in headings:
        if len(heading.path) >= len(wanted) and all(
            _same(a, b) for a, b in zip(heading.path[-len(wanted) :], wanted, strict=True)
        ):
            return heading
    return next((heading for heading in headings if _same(heading.path[-1], wanted[-1])), None)


def _clean(sentence: str) -> str:
    return _TAG.sub(" ", _LINK_TARGET.sub("]", sentence))


def highlight(root: Node, sentences: list[str], *, section: str = "", page: int | None = None) -> Highlighted:
    """Wrap each sentence's first occurrence (in the cited place if there, else anywhere) in `mark` nodes."""
    leaves, headings, pages = _walk(root)
    place = next((p for p in pages if p.page == page), None) if page is not None else None
    heading = find_section([h for h in headings if place is None or place.start <= h.start < place.end], section)
    cited = heading or place
    skeletons = [_skeleton_only(leaf.text) for leaf in leaves]
    bounds = [0]
    for text in skeletons:
        bounds.append(bounds[-1] + len(text))
    whole = "".join(skeletons)
    lo, hi = (bounds[cited.start], bounds[cited.end]) if cited is not None else (0, len(whole))
    if place is not None and heading is not None:
        hi = max(hi, bounds[place.end])  # a section may run on to the end of its page
    marks: dict[int, list[tuple[int, int, int]]] = {}
    found = 0
    first_in_place: tuple[int, int] | None = None  # (skeleton offset, sentence number)
    first_anywhere: tuple[int, int] | None = None
    for number, sentence in enumerate(sentences):
        wanted = _skeleton_only(_clean(sentence))
        if len(wanted) < MIN_SKELETON:
            continue
        at = whole.find(wanted, lo, hi)
        inside = at >= 0
        if not inside:
            at = whole.find(wanted)
        if at < 0:
            continue
        found += 1
        if inside and (first_in_place is None or at < first_in_place[0]):
            first_in_place = (at, number)
        if first_anywhere is None or at < first_anywhere[0]:
            first_anywhere = (at, number)
        _add_marks(marks, leaves, skeletons, bounds, at, at + len(wanted), number)
    first = first_in_place or first_anywhere
    target = _apply(leaves, marks, first[1] if first is not None else None)
    if target is None and cited is not None:
        cited.node.attrs["id"] = "cited-place"
        target = "cited-place"
    return Highlighted(target=target, found=found, sentences=len(sentences))


def _add_marks(
    marks: dict[int, list[tuple[int, int, int]]],
    leaves: list[_Leaf],
    skeletons: list[str],
    bounds: list[int],
    start: int,
    end: int,
    number: int,
) -> None:
    first = bisect.bisect_right(bounds, start) - 1
    last = bisect.bisect_right(bounds, end - 1) - 1
    for index in range(first, last + 1):
        if not skeletons[index]:
            continue
        offsets = skeleton(leaves[index].text)[1]
        local_start = max(start - bounds[index], 0)
        local_end = min(end - bounds[index], len(offsets))
        char_start = offsets[local_start] if index == first else 0
        char_end = offsets[local_end - 1] + 1 if index == last else len(leaves[index].text)
        if char_end > char_start:
            marks.setdefault(index, []).append((char_start, char_end, number))


def _apply(leaves: list[_Leaf], marks: dict[int, list[tuple[int, int, int]]], first: int | None) -> str | None:
    """Split the marked leaves into text and `mark` nodes; the first piece of sentence `first` gets id
    "cited". Leaves of one parent are split last one first, so the indices of the others hold."""
    anchor = next(
        ((index, start) for index in sorted(marks) for start, _, number in sorted(marks[index]) if number == first),
        None,
    )
    placed = False
    for index in sorted(marks, key=lambda i: (id(leaves[i].parent), -leaves[i].index)):
        leaf = leaves[index]
        pieces: list[Node | str] = []
        pos = 0
        for start, end, number in sorted(marks[index]):
            if start < pos:
                continue  # overlaps an earlier sentence: keep that one
            pieces.append(leaf.text[pos:start])
            mark = Node("mark", [leaf.text[start:end]], {"n": number})
            if (index, start) == anchor:
                mark.attrs["id"] = "cited"
                placed = True
            pieces.append(mark)
            pos = end
        pieces.append(leaf.text[pos:])
        leaf.parent.children[leaf.index : leaf.index + 1] = [piece for piece in pieces if piece != ""]
    return "cited" if placed else None
