"""Passages: retrieved chunks grown into contiguous windows of their documents.

Chunks are small (the embedder reads at most 256 tokens), so the chunk that matches a question
often holds the heading of a procedure and not its commands, or the first steps and not the
last ones. Measured on the tune questions over ../shared/data/runbooks, all the key phrases of
the answer were in the four best chunks for 53% of the answerable questions; with each retrieved
chunk followed by the next two chunks of its document, within a similar token budget, for 83%
(scripts/bench_answers.py). A source given to the model is therefore a window: one or more
retrieved chunks and the chunks that follow them, joined in document order without the overlap
the chunker repeats between neighbours, with the section heading written where it changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from appliance.index.records import ChunkRow
from appliance.text.terms import extract_terms


def section_tail(chunk: ChunkRow) -> str:
    """The chunk's section path without the document title it often starts with."""
    parts = chunk.section.split(" › ") if chunk.section else []
    if parts and parts[0] == chunk.title:
        parts = parts[1:]
    return " › ".join(parts)


@dataclass(frozen=True)
class Window:
    """Consecutive chunks of one document; `seeds` are the retrieved ones among them, best first."""

    chunks: tuple[ChunkRow, ...]  # document order, consecutive ord
    seeds: tuple[ChunkRow, ...]

    @property
    def first(self) -> ChunkRow:
        return self.chunks[0]

    @property
    def best(self) -> ChunkRow:
        return self.seeds[0] if self.seeds else self.chunks[0]

    @property
    def pages(self) -> tuple[int, ...]:
        return tuple(sorted({c.page for c in self.chunks if c.page is not None}))

    def joined(self) -> tuple[str, tuple[tuple[int, int], ...]]:
        """The window's text and, per chunk, the (start, end) of its contribution to that text."""
        text = ""
        spans: list[tuple[int, int]] = []
        previous: ChunkRow | None = None
        for chunk in self.chunks:
            piece = chunk.text
            if previous is not None:
                cut = _overlap(previous, chunk)
                piece = chunk.text[cut:]
                heading = section_tail(chunk)
                new_section = bool(heading) and chunk.section != previous.section
                if new_section or not cut:  # not a continuation of the same text: keep the two apart
                    text = text.rstrip()
                    spans[-1] = (spans[-1][0], min(spans[-1][1], len(text)))
                    text += f"\n\n### {heading}\n" if new_section else "\n\n"
                    piece = piece.lstrip()
            start = len(text)
            text += piece
            spans.append((start, len(text)))
            previous = chunk
        return text, tuple(spans)


def _overlap(previous: ChunkRow, chunk: ChunkRow) -> int:
    """Characters at the start of `chunk` that repeat the end of `previous` (the chunker's overlap).

    The offsets say how much should overlap; the texts must agree, else nothing is cut."""
    claimed = previous.end - chunk.start
    if claimed <= 0:
        return 0
    claimed = min(claimed, len(chunk.text), len(previous.text))
    return claimed if previous.text.endswith(chunk.text[:claimed]) else 0


def windows_of(chosen: Sequence[tuple[int, ChunkRow]]) -> list[Window]:
    """Group (rank, chunk) pairs into windows of consecutive chunks, ordered by their best rank.

    A rank < 0 marks a chunk that was added as a neighbour, not retrieved."""
    by_document: dict[str, list[tuple[int, ChunkRow]]] = {}
    for rank, chunk in chosen:
        by_document.setdefault(chunk.path, []).append((rank, chunk))
    ranked: list[tuple[int, Window]] = []
    for entries in by_document.values():
        entries.sort(key=lambda entry: entry[1].ord)
        run: list[tuple[int, ChunkRow]] = []
        for entry in entries:
            if run and entry[1].ord != run[-1][1].ord + 1:
                ranked.append(_window(run))
                run = []
            run.append(entry)
        ranked.append(_window(run))
    ranked.sort(key=lambda item: item[0])
    return [window for _, window in ranked]


def _window(run: list[tuple[int, ChunkRow]]) -> tuple[int, Window]:
    seeds = sorted((entry for entry in run if entry[0] >= 0), key=lambda entry: entry[0])
    best = seeds[0][0] if seeds else 1 << 30
    return best, Window(tuple(chunk for _, chunk in run), tuple(chunk for _, chunk in seeds))


def chunk_holding(
    window_chunks: Sequence[ChunkRow],
    spans: Sequence[tuple[int, int]],
    text: str,
    claims: Iterable[str],
    default: ChunkRow,
) -> ChunkRow:
    """The chunk of a window whose part of `text` shares the most words with `claims` (the answer
    sentences that cite the window): a citation then names the section and page of the words it
    relies on, not only those of the window's first chunk."""
    wanted = set().union(*(_terms(claim) for claim in claims))
    if not wanted or len(window_chunks) == 1:
        return default
    best, best_score = default, 0
    for chunk, (start, end) in zip(window_chunks, spans, strict=True):
        score = len(wanted & _terms(text[start:end]))
        if score > best_score:
            best, best_score = chunk, score
    return best


def _terms(text: str) -> set[str]:
    """Content-word stems and identifiers, as the support checker reads them."""
    terms = extract_terms(text)
    return {*terms.words, *(identifier.casefold() for identifier in terms.identifiers)}
