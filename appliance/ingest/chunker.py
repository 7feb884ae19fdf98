"""Structure-aware, token-bounded chunking.

A chunk never crosses a heading (each chunk has one section path) nor a PDF page (each chunk
has one page). Within a section, blocks are packed greedily up to the embedder's token limit,
counting the "title › section" header that is embedded with the chunk. A block too large for
one chunk is split at sentence, then line, then word boundaries, so no word is ever cut; code
blocks and tables stay whole when they fit. Consecutive chunks of one section overlap by a few
whole sentences.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from appliance.index.records import Chunk
from appliance.ingest.document import Block, LoadedDocument
from appliance.text.identifiers import extract_identifiers
from appliance.text.sentences import punctuation_spans

# Bump when chunking or what the loaders give it changes: a reindex then re-chunks every document
# (embeddings are reused by text). 3: PDF tables and scans keep tags broken at a line-end hyphen whole.
# 4: PDF and DOCX headings from outlines, type and numbering; running headers and footers out of the text;
# PDF columns and boxes in reading order (issue 41).
CHUNKER_VERSION = 4
SECTION_SEPARATOR = " › "
# [CLS] and [SEP] (or a model's equivalents) are added to every embedded text.
SPECIAL_TOKENS = 2
_WORD = re.compile(r"\S+")

TokenCounter = Callable[[Sequence[str]], list[int]]


@dataclass(frozen=True)
class _Unit:
    """A piece of a block that must not be split further: a sentence, a line or a word run."""

    start: int
    end: int
    tokens: int
    page: int | None


def chunk_document(
    doc: LoadedDocument, count_tokens: TokenCounter, *, max_tokens: int = 256, overlap_tokens: int = 32
) -> list[Chunk]:
    """Split a loaded document into chunks with provenance. Deterministic for equal input."""
    chunks: list[Chunk] = []
    # Runbooks are often named after the alert they handle (KubePodCrashLooping.md) and never
    # repeat the name in their text: the file name counts as an identifier of every chunk.
    file_stem = PurePosixPath(doc.path).stem
    for section, blocks in _sections(doc):
        header = _header(doc.title, section, count_tokens, max_tokens)
        budget = max_tokens - SPECIAL_TOKENS - count_tokens([header + "\n"])[0]
        units = _units(doc.text, blocks, count_tokens, budget)
        for group in _pack(units, budget, overlap_tokens):
            start, end = group[0].start, group[-1].end
            text = doc.text[start:end]
            chunks.append(
                Chunk(
                    chunk_id="",
                    path=doc.path,
                    title=doc.title,
                    ord=len(chunks),
                    header=header,
                    text=text,
                    section=section,
                    page=group[0].page,
                    start=start,
                    end=end,
                    identifiers=" ".join(extract_identifiers(f"{file_stem}\n{header}\n{text}")),
                    ocr_confidence=_ocr_confidence(blocks, start, end),
                )
            )
    return _with_ids(doc.path, chunks)


def _ocr_confidence(blocks: list[Block], start: int, end: int) -> float | None:
    """The least trusted OCR'd block the chunk holds: one badly read line is enough to check the page."""
    read = [b.ocr_confidence for b in blocks if b.ocr_confidence is not None and b.start < end and b.end > start]
    return round(min(read), 4) if read else None


def _sections(doc: LoadedDocument) -> list[tuple[str, list[Block]]]:
    """Group body blocks under their heading path; heading-only sections yield nothing."""
    stack: list[tuple[int, str]] = []
    sections: list[tuple[str, list[Block]]] = []
    current: list[Block] = []

    def flush() -> None:
        if current:
            sections.append((SECTION_SEPARATOR.join(text for _, text in stack), list(current)))
            current.clear()

    for block in doc.blocks:
        if block.kind == "heading":
            flush()
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, _clean_heading(block.text)))
        else:
            current.append(block)
    flush()
    if not sections and doc.blocks:
        # A document of headings only: index the headings themselves rather than nothing.
        sections.append(("", list(doc.blocks)))
    return sections


def _clean_heading(text: str) -> str:
    text = re.sub(r"^\s{0,3}#{1,6}\s*", "", text.strip())  # Markdown ATX markers
    text = re.sub(r"\s*#+\s*$", "", text)
    text = re.sub(r"\n[=-]+\s*$", "", text)  # setext underline
    return " ".join(text.split())


def _header(title: str, section: str, count_tokens: TokenCounter, max_tokens: int) -> str:
    parts = [title] if title else []
    if section and section != title:
        # The document's H1 usually repeats the title: drop it from the section path.
        first, _, rest = section.partition(SECTION_SEPARATOR)
        section_shown = rest if first == title and rest else section
        parts.append(section_shown)
    header = SECTION_SEPARATOR.join(parts)
    limit = max(8, max_tokens // 4)
    words = header.split(" ")
    while len(words) > 1 and count_tokens([" ".join(words)])[0] > limit:
        words = words[:-1]
    return " ".join(words) if len(words) == len(header.split(" ")) else " ".join(words) + " …"


def _units(text: str, blocks: list[Block], count_tokens: TokenCounter, budget: int) -> list[_Unit]:
    """Cut blocks into unsplittable units that each fit the budget."""
    spans: list[tuple[int, int, int | None]] = []
    whole = count_tokens([b.text for b in blocks])
    for block, tokens in zip(blocks, whole, strict=True):
        if tokens <= budget:
            spans.append((block.start, block.end, block.page))
        elif block.kind in ("code", "table", "list"):
            spans.extend((s, e, block.page) for s, e in _line_spans(text, block.start, block.end))
        else:
            spans.extend((s, e, block.page) for s, e in punctuation_spans(text, block.start, block.end))
    counts = count_tokens([text[s:e] for s, e, _ in spans])
    units: list[_Unit] = []
    for (start, end, page), tokens in zip(spans, counts, strict=True):
        if tokens <= budget:
            units.append(_Unit(start, end, tokens, page))
        else:
            units.extend(_word_windows(text, start, end, page, count_tokens, budget))
    return units


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    for match in re.finditer(r"[^\n]+", text[start:end]):
        if match.group().strip():
            spans.append((start + match.start(), start + match.end()))
    return spans


def _word_windows(
    text: str, start: int, end: int, page: int | None, count_tokens: TokenCounter, budget: int
) -> list[_Unit]:
    """Last resort for a run-on sentence: windows of whole words that fit the budget."""
    words = [(start + m.start(), start + m.end()) for m in _WORD.finditer(text[start:end])]
    counts = count_tokens([text[s:e] for s, e in words])
    units: list[_Unit] = []
    window_start, used = words[0][0], 0
    previous_end = words[0][1]
    for (word_start, word_end), tokens in zip(words, counts, strict=True):
        tokens = min(tokens, budget)  # a single absurd "word" still becomes its own unit
        if used and used + tokens > budget:
            units.append(_Unit(window_start, previous_end, used, page))
            window_start, used = word_start, 0
        used += tokens
        previous_end = word_end
    units.append(_Unit(window_start, previous_end, used, page))
    return units


def _pack(units: list[_Unit], budget: int, overlap_tokens: int) -> list[list[_Unit]]:
    """Greedy packing; a page change starts a new chunk; overlap by trailing whole units."""
    groups: list[list[_Unit]] = []
    current: list[_Unit] = []
    used = 0
    fresh = 0  # units in `current` that are not overlap copies
    for unit in units:
        page_change = bool(current) and unit.page != current[-1].page
        if current and (used + unit.tokens > budget or page_change):
            groups.append(current)
            current = [] if page_change else _overlap(current, overlap_tokens, budget - unit.tokens)
            used = sum(u.tokens for u in current)
            fresh = 0
        current.append(unit)
        used += unit.tokens
        fresh += 1
    if current and fresh:
        groups.append(current)
    return groups


def _overlap(previous: list[_Unit], overlap_tokens: int, room: int) -> list[_Unit]:
    carried: list[_Unit] = []
    total = 0
    for unit in reversed(previous[1:]):  # never carry the whole previous chunk
        if total + unit.tokens > min(overlap_tokens, room):
            break
        carried.insert(0, unit)
        total += unit.tokens
    return carried


def _with_ids(path: str, chunks: list[Chunk]) -> list[Chunk]:
    """Ids from the document path and the chunk's content: stable across unrelated edits."""
    seen: dict[str, int] = {}
    result = []
    for chunk in chunks:
        digest = hashlib.sha256(f"{path}\0{chunk.header}\0{chunk.text}".encode()).hexdigest()
        occurrence = seen.get(digest, 0)
        seen[digest] = occurrence + 1
        if occurrence:
            digest = hashlib.sha256(f"{digest}\0{occurrence}".encode()).hexdigest()
        result.append(replace(chunk, chunk_id=digest[:32]))
    return result
