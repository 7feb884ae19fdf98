"""Prompt assembly: numbered sources, the grounding instruction, and a token budget.

The prompt lists the sources as `[n] title › section (path, p. X)` followed by the passage text,
best first, then the question. A source is a window of its document (passages.py): a retrieved
chunk and the chunks that follow it. The prompt must fit the model's context with room for the
answer: the lowest-ranked chunks are dropped first, and a chunk is never cut mid-sentence (only
the best one may be shortened, at a sentence boundary, when even it alone is too long).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from appliance.answer.generated.passages import Window, chunk_holding, section_tail, windows_of
from appliance.index.records import ChunkRow
from appliance.text.sentences import leading_sentences

# Said without calling the model when retrieval finds no evidence. The model itself is NOT asked to
# say it: measured on the demo questions, Qwen2.5-1.5B then declined 5 of 9 answerable questions with
# the right passage in its sources; told instead to name what the sources do not cover, its answers
# held all key phrases in 78% of cases (33% before). Unsupported claims are caught by the support check.
REFUSAL = "The documents do not cover this."

# Short and exact: on 14 runbook tune questions (8 whose answers missed a key phrase that was in
# the sources), asking for the direct answer, then at most five steps with the sources' own commands
# and no summary, took the key-phrase hits from 6 to 9 with no hit lost, and halved the median answer
# length. Putting the best source last, next to the question, did worse (7 and 4 of 14).
# The citation example names no step: an example sentence ("Close valve VLV-1 before venting [1].") was
# copied as a step into 7 of 251 stored generations (5 questions), on the demo plant as on the runbooks.
SYSTEM_PROMPT = """You answer an operator's question using ONLY the numbered sources you are given \
(excerpts of the site's runbooks and standard operating procedures). Answer like an experienced colleague: \
short and exact.
- Start with the direct answer. Then give the steps, each with the exact command, setting, file name or value \
from the sources, copied character for character in `backticks`.
- Cite the source number in square brackets after each sentence or step, like [1] or [2].
- Use only what the sources say: no general advice, no checks or steps of your own.
- At most five steps. Stop after the last step: no summary.
- If the sources do not give what is asked, say which part they do not cover."""


@dataclass(frozen=True)
class Source:
    n: int
    window: Window
    text: str  # the passage as given to the model (the joined window, or the best chunk's leading sentences)
    spans: tuple[tuple[int, int], ...]  # per chunk of the window, its part of `text`

    @property
    def chunk(self) -> ChunkRow:
        """The best retrieved chunk of the window: what the source stands for by default."""
        return self.window.best

    @property
    def chunks(self) -> tuple[ChunkRow, ...]:
        return self.window.chunks

    @property
    def heading(self) -> str:
        """The document title and section of the window's first chunk, as the label shows them."""
        first = self.window.first
        return " › ".join(part for part in (first.title, section_tail(first)) if part)

    @property
    def label(self) -> str:
        first = self.window.first
        pages = self.window.pages
        page = "" if not pages else f", p. {pages[0]}" if len(pages) == 1 else f", pp. {pages[0]}–{pages[-1]}"
        return f"[{self.n}] {self.heading} ({first.path}{page})"

    def block(self) -> str:
        return f"{self.label}\n{self.text.strip()}"

    def chunk_for(self, claims: Sequence[str]) -> ChunkRow:
        """The chunk holding the words of the answer sentences that cite this source."""
        return chunk_holding(self.chunks, self.spans, self.text, claims, self.chunk)


def source_of(n: int, window: Window) -> Source:
    text, spans = window.joined()
    return Source(n, window, text, spans)


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    sources: list[Source]
    dropped: int  # candidate sources left out to fit the budget
    prompt_tokens: int

    def messages(self) -> list[tuple[str, str]]:
        return [("system", self.system), ("user", self.user)]


def user_message(question: str, sources: Sequence[Source]) -> str:
    # The question comes once, after the sources. Asked before them as well, the same 29 answerable tune
    # questions kept 14 hits (3 gained, 3 lost) but the median answer grew from 180 to 356 tokens.
    blocks = "\n\n".join(source.block() for source in sources)
    return f"Sources:\n\n{blocks}\n\nQuestion: {question.strip()}\nAnswer with citations:"


def _fits_alone(chunk: ChunkRow, room: int, count_tokens: Callable[[str], int]) -> Callable[[str], bool]:
    window = Window((chunk,), (chunk,))
    return lambda text: count_tokens(Source(1, window, text, ((0, len(text)),)).block()) + 2 <= room


Following = Callable[[ChunkRow, int], Sequence[ChunkRow]]


class Placement:
    """Chunks placed in a prompt one at a time while the whole prompt fits `budget_tokens`: each entry is
    (rank, chunk), rank -1 for a neighbour; adjacent chunks of one document form one source."""

    def __init__(
        self, question: str, count_tokens: Callable[[str], int], budget_tokens: int, template_overhead: int = 32
    ) -> None:
        self.fixed = count_tokens(SYSTEM_PROMPT) + count_tokens(user_message(question, [])) + template_overhead
        self.budget_tokens = budget_tokens
        self.chosen: list[tuple[int, ChunkRow]] = []
        self.included: set[str] = set()
        # Each trial re-renders every source, but only the window that grew has new text: count each block once.
        self._block_tokens = cache(count_tokens)

    def tokens(self, sources: Sequence[Source]) -> int:
        """The whole prompt's tokens with these sources."""
        return self.fixed + sum(self._block_tokens(source.block()) + 2 for source in sources)  # +2: the blank line

    def take(self, entry: tuple[int, ChunkRow]) -> bool:
        """Place the entry if the prompt still fits with it."""
        if self.tokens(_sources_of([*self.chosen, entry])) > self.budget_tokens:
            return False
        self.chosen.append(entry)
        self.included.add(entry[1].chunk_id)
        return True

    def count_as_retrieved(self, rank: int, chunk_id: str) -> None:
        """A chunk already placed as a neighbour takes the rank it was retrieved at, for ordering and citations."""
        self.chosen[:] = [(rank if chunk.chunk_id == chunk_id else r, chunk) for r, chunk in self.chosen]

    def sources(self) -> list[Source]:
        return _sources_of(self.chosen)


def _sources_of(entries: list[tuple[int, ChunkRow]]) -> list[Source]:
    return [source_of(n, window) for n, window in enumerate(windows_of(entries), start=1)]


def build_prompt(
    question: str,
    chunks: Sequence[ChunkRow],
    *,
    count_tokens: Callable[[str], int],
    budget_tokens: int,
    max_sources: int,
    following: Following | None = None,
    window_chunks: int = 0,
    template_overhead: int = 32,
) -> Prompt:
    """Give the best `max_sources` chunks, each grown by up to `window_chunks` following chunks of its
    document (`following(chunk, n)`), as numbered sources within `budget_tokens`.

    Chunks are taken in rank order, each followed by its neighbours, until the next one does not
    fit: lower-ranked chunks are dropped, never cut. Adjacent chunks of one document form one
    source. `count_tokens` is the generator's own tokenizer; `template_overhead` covers the chat
    template's role markers around the two messages.
    """
    placement = Placement(question, count_tokens, budget_tokens, template_overhead)
    candidates = list(chunks[:max_sources])

    # Plain rank order. Taking the best document's retrieved chunks first, and letting a retrieved chunk
    # already given as a neighbour bring its own followers, put every key phrase in 85% of tune prompts
    # (77% now) but the answers gained 1 and lost 4 of 29 (numeric noise alone moves about 2, scripts/lib/paired.py):
    # more of one document distracts the 1.5B model.
    # Whole chunks, not the sentences that best match the question: keeping only the best-matching
    # sentences of the top 6 (or 12) chunks within the same 1,100 tokens put every key phrase in 55% (48%)
    # of tune prompts against 72% for windows. The phrase an answer needs (a threshold, a file name) is
    # often in a sentence that shares no word with the question.
    for rank, chunk in enumerate(candidates):
        if chunk.chunk_id in placement.included:
            placement.count_as_retrieved(rank, chunk.chunk_id)
            continue
        if not placement.take((rank, chunk)):
            break
        if following is None or window_chunks <= 0:
            continue
        for neighbour in following(chunk, window_chunks):
            if neighbour.chunk_id in placement.included or not placement.take((-1, neighbour)):
                break

    sources: list[Source] = []
    if placement.chosen:
        sources = placement.sources()
    elif candidates:
        # Even the best passage alone is too long: keep its leading whole sentences.
        best = candidates[0]
        text = leading_sentences(best.text, _fits_alone(best, budget_tokens - placement.fixed, count_tokens))
        sources = [Source(1, Window((best,), (best,)), text, ((0, len(text)),))] if text else []
    given = {chunk.chunk_id for source in sources for chunk in source.chunks}
    return Prompt(
        system=SYSTEM_PROMPT,
        user=user_message(question, sources),
        sources=sources,
        dropped=sum(1 for chunk in candidates if chunk.chunk_id not in given),
        prompt_tokens=placement.tokens(sources),
    )
