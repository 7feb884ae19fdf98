"""Sections of an indexed document, rebuilt from its chunks: the unit an SOP answer is shown in.

Retrieval matches chunks; an operator needs the section they belong to, whole and in order. The
catalog holds every chunk with its heading path and its character span in the loaded document, so
a section (its heading path and every path below it) is the run of chunks under that path, joined
without the overlap the chunker repeats between neighbours, with the headings of its subsections
written where they start. What is shown is therefore the indexed text itself: the same words the
citations point at, never a re-read of a file that may have changed since.

Between two chunks the document's text is either a block separator (a blank line), the heading of
the next section, or the whitespace inside one block (a long paragraph or list cut in two): the
span offsets tell which, so a step cut across two chunks (or a PDF paragraph across a page break)
reads as one item again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from appliance.index.records import ChunkRow
from appliance.text.layout import ItemKind, TextItem, ends_sentence, layout_items, list_marker

SEPARATOR = " › "


@dataclass(frozen=True)
class Item:
    """One thing shown: the source's own text with where it stands (kind: a layout kind or "heading")."""

    kind: ItemKind | str
    text: str
    chunk: ChunkRow  # the chunk the item starts in (its citation: section, page)
    level: int = 0  # list nesting; for a heading, its depth below the shown section (0 = the section itself)
    numbered: bool = False

    @property
    def section(self) -> str:
        return self.chunk.section

    @property
    def page(self) -> int | None:
        return self.chunk.page


def heading_parts(section: str) -> list[str]:
    return section.split(SEPARATOR) if section else []


def is_within(section: str, ancestor: str) -> bool:
    """Whether heading path `section` is `ancestor` or lies below it ('' holds the whole document)."""
    return not ancestor or section == ancestor or section.startswith(ancestor + SEPARATOR)


@dataclass(frozen=True)
class Section:
    """A heading path of one document and every chunk under it, in document order."""

    path: str  # the document's display path
    title: str
    heading: str  # the heading path ('' = the whole document)
    chunks: tuple[ChunkRow, ...]

    @property
    def name(self) -> str:
        """The section's own heading (its last part), or the document's title for the whole document."""
        parts = heading_parts(self.heading)
        return parts[-1] if parts else self.title

    @property
    def depth(self) -> int:
        return len(heading_parts(self.heading))

    @property
    def label(self) -> str:
        """Title › heading path, without a first heading that repeats the title."""
        parts = heading_parts(self.heading)
        if parts and parts[0] == self.title:
            parts = parts[1:]
        return SEPARATOR.join(part for part in (self.title, *parts) if part)

    @property
    def chunk_ids(self) -> frozenset[str]:
        return frozenset(chunk.chunk_id for chunk in self.chunks)

    @property
    def pages(self) -> tuple[int, ...]:
        return tuple(sorted({chunk.page for chunk in self.chunks if chunk.page is not None}))

    @cached_property
    def items(self) -> tuple[Item, ...]:
        """The section's text as items: its own heading, then body and subsection headings in order."""
        return tuple(_items(self))

    @cached_property
    def words(self) -> int:
        return sum(len(item.text.split()) for item in self.items)

    def children(self, sections: Iterable[Section]) -> list[Section]:
        return [
            s
            for s in sections
            if s.path == self.path and s.depth == self.depth + 1 and is_within(s.heading, self.heading)
        ]


def document_sections(chunks: Sequence[ChunkRow]) -> dict[str, Section]:
    """Every section of one document (its chunks in document order), by heading path; '' is the whole document."""
    if not chunks:
        return {}
    first = chunks[0]
    headings: dict[str, None] = {"": None}
    for chunk in chunks:
        parts = heading_parts(chunk.section)
        for depth in range(1, len(parts) + 1):
            headings.setdefault(SEPARATOR.join(parts[:depth]), None)
    return {
        heading: Section(first.path, first.title, heading, tuple(c for c in chunks if is_within(c.section, heading)))
        for heading in headings
    }


def _items(section: Section) -> list[Item]:
    items: list[Item] = []
    base = heading_parts(section.heading)
    if base:
        items.append(Item("heading", base[-1], section.chunks[0], level=0))
    previous: ChunkRow | None = None
    shown_parts = base
    for chunk in section.chunks:
        parts = heading_parts(chunk.section)
        if previous is None or chunk.section != previous.section:
            common = _common(shown_parts, parts)
            for depth in range(max(common, len(base)), len(parts)):
                items.append(Item("heading", parts[depth], chunk, level=depth + 1 - len(base)))
            shown_parts = parts
            piece, joins = chunk.text, False
        else:
            piece, joins = _continuation(previous, chunk)
        laid = layout_items(piece)
        for position, laid_item in enumerate(laid):
            item = _item(piece, laid_item, chunk)
            if items and _continues(items[-1], item, joins and position == 0):
                items[-1] = Item(
                    items[-1].kind,
                    f"{items[-1].text}\n{item.text}",
                    items[-1].chunk,
                    items[-1].level,
                    items[-1].numbered,
                )
            else:
                items.append(item)
        previous = chunk
    return items


def _common(a: Sequence[str], b: Sequence[str]) -> int:
    count = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        count += 1
    return count


def _continuation(previous: ChunkRow, chunk: ChunkRow) -> tuple[str, bool]:
    """The part of `chunk` after `previous` in the document, and whether it continues the same block."""
    claimed = previous.end - chunk.start
    if claimed > 0 and claimed <= len(chunk.text) and previous.text.endswith(chunk.text[:claimed]):
        piece = chunk.text[claimed:]
        return piece, not piece.startswith("\n\n") and bool(piece.strip())
    gap = chunk.start - previous.end
    return chunk.text, gap <= 1


def _item(text: str, laid: TextItem, chunk: ChunkRow) -> Item:
    return Item(laid.kind, text[laid.start : laid.end], chunk, laid.level, laid.numbered)


def _continues(last: Item, item: Item, joins: bool) -> bool:
    """Whether `item` is the rest of `last`: the same block cut between two chunks, or a paragraph of a
    PDF that a page break split (it starts in lower case after a line that ends no sentence), or the rows of a
    table cut between two chunks."""
    if joins and last.kind == item.kind == "table":
        return True
    if last.kind in ("heading", "table", "code") or item.kind in ("heading", "table", "code"):
        return False
    if list_marker(item.text) is not None:
        return False
    if joins:
        return True
    head = item.text.lstrip()[:1]
    return bool(head) and (head.islower() or head.isdigit()) and not ends_sentence(last.text)
