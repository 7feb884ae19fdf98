"""Prompt assembly: numbered sources, the grounding instruction, and a token budget.

The prompt lists the retrieved passages as `[n] title › section (path, p. X)` followed by the
passage text, best first, then the question. It must fit the model's context with room for the
answer: the lowest-ranked sources are dropped first, and a source is never cut mid-sentence
(only the best one may be shortened, at a sentence boundary, when even it alone is too long).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from appliance.index.catalog import ChunkRow

# Said without calling the model when retrieval finds no evidence. The model itself is NOT asked to
# say it: measured on the demo questions, Qwen2.5-1.5B then declined 5 of 9 answerable questions with
# the right passage in its sources; told instead to name what the sources do not cover, its answers
# held all key phrases in 78% of cases (33% before). Unsupported claims are caught by the support check.
REFUSAL = "The documents do not cover this."

SYSTEM_PROMPT = """You answer questions from plant operators using ONLY the numbered sources you are given \
(excerpts of the site's standard operating procedures and runbooks).
- Answer with the facts or steps the sources give, keeping their own wording for steps, limits, tags and commands.
- End every sentence with the number of the source it comes from, in square brackets, like this: \
"Close valve VLV-1 before venting [1]. Record the reading on form F-2 [2]."
- Never add steps, numbers, tags or commands that the sources do not contain. Be brief.
- If the sources do not give what is asked, say which part they do not cover."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n\s*\n")


@dataclass(frozen=True)
class Source:
    n: int
    chunk: ChunkRow
    text: str  # the passage as given to the model (the whole chunk, or its leading sentences)

    @property
    def label(self) -> str:
        where = self.chunk.document_path + (f", p. {self.chunk.page}" if self.chunk.page else "")
        heading = " › ".join(part for part in (self.chunk.title, _section_tail(self.chunk)) if part)
        return f"[{self.n}] {heading} ({where})"

    def block(self) -> str:
        return f"{self.label}\n{self.text.strip()}"


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    sources: list[Source]
    dropped: int  # candidate sources left out to fit the budget
    prompt_tokens: int

    def messages(self) -> list[tuple[str, str]]:
        return [("system", self.system), ("user", self.user)]


def _section_tail(chunk: ChunkRow) -> str:
    # The section path often starts with the document's H1, which repeats the title.
    parts = chunk.section.split(" › ") if chunk.section else []
    if parts and parts[0] == chunk.title:
        parts = parts[1:]
    return " › ".join(parts)


def user_message(question: str, sources: Sequence[Source]) -> str:
    blocks = "\n\n".join(source.block() for source in sources)
    return f"Sources:\n\n{blocks}\n\nQuestion: {question.strip()}\nAnswer with citations:"


def leading_sentences(text: str, fits: Callable[[str], bool]) -> str:
    """The longest run of whole leading sentences of `text` that `fits`; '' when not even one does."""
    ends = [m.start() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    best = ""
    for end in ends:
        candidate = text[:end].rstrip()
        if not fits(candidate):
            break
        best = candidate
    return best


def _fits_alone(chunk: ChunkRow, room: int, count_tokens: Callable[[str], int]) -> Callable[[str], bool]:
    return lambda text: count_tokens(Source(1, chunk, text).block()) + 2 <= room


def build_prompt(
    question: str,
    chunks: Sequence[ChunkRow],
    *,
    count_tokens: Callable[[str], int],
    budget_tokens: int,
    max_sources: int,
    template_overhead: int = 32,
) -> Prompt:
    """Number the best chunks as sources and keep as many as fit in `budget_tokens`.

    `count_tokens` is the generator's own tokenizer; `template_overhead` covers the chat
    template's role markers around the two messages.
    """
    fixed = count_tokens(SYSTEM_PROMPT) + count_tokens(user_message(question, [])) + template_overhead
    sources: list[Source] = []
    used = fixed
    candidates = list(chunks[:max_sources])
    for chunk in candidates:
        source = Source(len(sources) + 1, chunk, chunk.text)
        cost = count_tokens(source.block()) + 2  # the blank line between sources
        if used + cost <= budget_tokens:
            sources.append(source)
            used += cost
            continue
        if not sources:
            # Even the best passage alone is too long: keep its leading whole sentences.
            room = budget_tokens - used
            text = leading_sentences(chunk.text, _fits_alone(chunk, room, count_tokens))
            if text:
                source = Source(1, chunk, text)
                sources.append(source)
                used += count_tokens(source.block()) + 2
        break  # lower-ranked sources are dropped, never cut
    user = user_message(question, sources)
    return Prompt(
        system=SYSTEM_PROMPT,
        user=user,
        sources=sources,
        dropped=len(candidates) - len(sources),
        prompt_tokens=used,
    )
