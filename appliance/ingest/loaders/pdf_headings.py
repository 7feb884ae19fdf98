"""A PDF's headings: its outline's bookmarks found in the text, then the rules below it (headings).

Each bookmark is looked for on its page (then the next and the one before, for an off-by-one
destination), in document order after the bookmark before it: a block that reads as its title is that
heading; a paragraph that opens with it is cut in two. A bookmark whose title is on none of those pages
becomes a heading of its own at the top of its page. An outline whose bookmarks mostly match no text
(page names, file names) is ignored, with a warning: the text's own typography and numbering decide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import headings as rules
from .headings import TITLE, Piece, assign_levels, body_style, heading_number, heading_shaped
from .pdf_outline import Outline, OutlineEntry
from .pdf_text import PageBlock

_KEY = re.compile(r"[^\W_]+")
_MIN_MATCHED = 0.5  # share of bookmarks found in the text for the outline to be trusted
_MIN_PART = 0.5  # a block holding this share of a title's letters (its first line) is that heading


@dataclass(frozen=True)
class PlacedBlock:
    page: int
    block: PageBlock
    confidence: float | None = None  # read by OCR: its recognition confidence


def _key(text: str) -> str:
    return "".join(_KEY.findall(text.lower()))


def with_headings(blocks: list[PlacedBlock], outline: Outline) -> tuple[list[PlacedBlock], list[str]]:
    """The blocks with their headings marked (kind "heading", a level), and warnings about the outline."""
    warnings: list[str] = []
    given: dict[int, int] = {}
    if outline.entries:
        placed, given, matched = _place_outline(blocks, outline.entries)
        if matched >= _MIN_MATCHED * len(outline.entries):
            blocks = placed
        else:
            given = {}
            warnings.append(
                f"the outline's bookmarks are not headings of the text ({matched} of {len(outline.entries)} found): "
                "headings found from the text's type and numbering"
            )
    blocks, given = _joined_title_lines(blocks, given)
    pieces = [_piece(item, given.get(index, 0)) for index, item in enumerate(blocks)]
    levels = assign_levels(pieces)
    marked = [
        replace(item, block=PageBlock("heading", item.block.text, level)) if level else _unmarked(item)
        for item, level in zip(blocks, levels, strict=True)
    ]
    return _merged_titles(marked, blocks, given), warnings


def title_of(blocks: list[PlacedBlock], keep: str | None = None) -> tuple[str | None, list[PlacedBlock]]:
    """(the title the headings set apart, the blocks without it): a title heading (level TITLE) is the
    document's name, shown with every chunk, not a section of it. Where the document is named otherwise
    (`keep`: its info title, when that says something else) the title line stays as a paragraph."""
    for index, item in enumerate(blocks):
        if item.block.kind == "heading" and item.block.level == TITLE:
            title = " ".join(item.block.text.split())
            if keep is None or keep.casefold().split() == title.casefold().split():
                return title, blocks[:index] + blocks[index + 1 :]
            paragraph = replace(item, block=PageBlock("paragraph", item.block.text))
            return title, [*blocks[:index], paragraph, *blocks[index + 1 :]]
    return None, blocks


def _joined_title_lines(blocks: list[PlacedBlock], given: dict[int, int]) -> tuple[list[PlacedBlock], dict[int, int]]:
    """Consecutive one-line paragraphs of one page in the same type, larger or bolder than the body, that
    do not end like sentences: a title set on several lines ("IRM #1" / "MALWARE" / "INFECTION"), one block."""
    body = body_style([_piece(item, 0) for item in blocks])
    joined: list[PlacedBlock] = []
    joined_given: dict[int, int] = {}
    merged: set[int] = set()  # positions in `joined` of blocks made of several lines here
    for index, item in enumerate(blocks):
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and not given  # a file with an outline says where its headings are: nothing to join
            and (_title_line(previous, body) or (len(joined) - 1) in merged)
            and _title_line(item, body)
            and previous.page == item.page
            and previous.block.style == item.block.style
            and len(previous.block.text) + len(item.block.text) < rules.MAX_HEADING_CHARS
            and heading_number(item.block.text) is None
        ):
            text = f"{previous.block.text} {item.block.text}"
            joined[-1] = replace(previous, block=replace(previous.block, text=text, line_count=1))
            merged.add(len(joined) - 1)
            continue
        if index in given:
            joined_given[len(joined)] = given[index]
        joined.append(item)
    return joined, joined_given


def _title_line(item: PlacedBlock, body: object) -> bool:
    block, style = item.block, item.block.style
    if block.kind != "paragraph" or block.line_count != 1 or style is None or style.size is None or body is None:
        return False
    larger = style.size >= body.size * rules.SIZE_RATIO  # type: ignore[attr-defined]
    return (larger or (style.bold and not body.bold)) and heading_shaped(block.text)  # type: ignore[attr-defined]


def _unmarked(item: PlacedBlock) -> PlacedBlock:
    block = item.block
    if block.kind != "heading":
        return item
    return replace(item, block=PageBlock("paragraph", block.text, line_count=block.line_count, style=block.style))


def _piece(item: PlacedBlock, given_level: int) -> Piece:
    block = item.block
    style = block.style
    kind = "paragraph" if block.kind == "heading" else block.kind
    return Piece(
        kind=kind,
        text=block.text,
        lines=block.line_count,
        size=style.size if style is not None else None,
        bold=style.bold if style is not None else False,
        uniform=block.uniform,
        given_level=given_level,
    )


def _place_outline(
    blocks: list[PlacedBlock], entries: list[OutlineEntry]
) -> tuple[list[PlacedBlock], dict[int, int], int]:
    """(blocks with each bookmark's heading found or added, the given level of each heading's index, found)."""
    result = list(blocks)
    given: dict[int, int] = {}  # id of the PlacedBlock object → level, turned into indices at the end
    levels_by_id: dict[int, int] = {}
    cursor = 0
    matched = 0
    for entry in entries:
        found = _find(result, entry, cursor)
        if found is None:
            heading = PlacedBlock(entry.page, PageBlock("paragraph", entry.title))
            at = _page_start(result, entry.page, cursor)
            result.insert(at, heading)
            levels_by_id[id(heading)] = entry.level
            cursor = at + 1
            continue
        index, cut = found
        matched += 1
        _complete_title(result, index, _key(entry.title))
        item = result[index]
        if cut is not None:
            head = PlacedBlock(item.page, PageBlock("paragraph", item.block.text[:cut].strip()), item.confidence)
            rest_block = replace(
                item.block, text=item.block.text[cut:].strip(), line_count=max(1, item.block.line_count - 1)
            )
            result[index : index + 1] = [head, replace(item, block=rest_block)]
            item = head
        levels_by_id[id(item)] = entry.level
        cursor = index + 1
    for position, item in enumerate(result):
        if id(item) in levels_by_id:
            given[position] = levels_by_id[id(item)]
    return result, given, matched


def _find(blocks: list[PlacedBlock], entry: OutlineEntry, cursor: int) -> tuple[int, int | None] | None:
    """(index, where to cut the block or None) of the block that holds the bookmark's title."""
    title = _key(entry.title)
    if not title:
        return None
    for page in (entry.page, entry.page + 1, entry.page - 1):
        for index in range(cursor, len(blocks)):
            item = blocks[index]
            if item.page != page or item.block.kind == "table":
                continue
            text = _key(item.block.text)
            if text == title or (title.startswith(text) and len(text) >= _MIN_PART * len(title)):
                return index, None
            if text and title.startswith(text) and _completes(blocks, index, title):
                return index, None  # a title set on several lines: "Removing" / "Gel Cassette"
            if text.startswith(title) and item.block.line_count > 1:
                # A paragraph that opens with the title (a run-in or side heading): cut after it.
                return index, _cut_after(item.block.text, len(title))
    return None


def _completes(blocks: list[PlacedBlock], index: int, title: str) -> bool:
    """The block at `index` and the ones after it on its page spell the whole title."""
    text = ""
    for item in blocks[index:]:
        if item.page != blocks[index].page or item.block.kind == "table":
            return False
        text += _key(item.block.text)
        if text == title:
            return True
        if not title.startswith(text):
            return False
    return False


def _complete_title(blocks: list[PlacedBlock], index: int, title: str) -> None:
    """A title found in part ("Lower Buffer" for "Lower Buffer Chamber") takes the blocks after it that
    hold the rest, on the same page."""
    head = blocks[index]
    text = _key(head.block.text)
    while text != title and title.startswith(text) and index + 1 < len(blocks):
        following = blocks[index + 1]
        combined = text + _key(following.block.text)
        if following.page != head.page or following.block.kind == "table" or not title.startswith(combined):
            return
        merged = f"{head.block.text} {following.block.text}"
        head = replace(head, block=replace(head.block, text=merged, line_count=head.block.line_count + 1))
        blocks[index : index + 2] = [head]
        text = combined


def _cut_after(text: str, letters: int) -> int:
    """The offset in `text` just after its first `letters` letters and digits."""
    seen = 0
    for offset, char in enumerate(text):
        if char.isalnum() and char != "_":
            seen += 1
            if seen == letters:
                return offset + 1
    return len(text)


def _page_start(blocks: list[PlacedBlock], page: int, cursor: int) -> int:
    for index in range(cursor, len(blocks)):
        if blocks[index].page >= page:
            return index
    return len(blocks)


def _merged_titles(marked: list[PlacedBlock], original: list[PlacedBlock], given: dict[int, int]) -> list[PlacedBlock]:
    """A heading found by type that runs over several blocks (a title set on two lines) becomes one heading."""
    result: list[PlacedBlock] = []
    for index, item in enumerate(marked):
        previous = result[-1] if result else None
        if (
            previous is not None
            and item.block.kind == "heading"
            and previous.block.kind == "heading"
            and index not in given
            and index - 1 not in given
            and previous.page == item.page
            and previous.block.level == item.block.level
            and original[index].block.style == original[index - 1].block.style
            and heading_number(item.block.text) is None
        ):
            text = f"{previous.block.text} {item.block.text}"
            result[-1] = replace(previous, block=PageBlock("heading", text, previous.block.level))
            continue
        result.append(item)
    return result
