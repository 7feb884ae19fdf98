"""The SOP speaks: an answer made of the document's own text, item by item, each item cited.

The model does not write the procedure. Retrieval finds chunks; `choice.py` picks the section that answers;
what is shown depends on how the question is read (question.py):

- a procedure (how do I…, what do I do when…): the whole section, in document order: its headings,
  numbered steps and sub-steps, warnings, hold points, tables and commands, verbatim. A section longer
  than `max_words` keeps its headings and all its steps, commands, warnings and hold points, with the list
  items that belong to them (the line introducing a command, a step's own sub-items), where they come to at
  most `max_steps_words`, and drops the prose around them first (a whole SOP chosen for its procedure loses its
  purpose and scope, not a step); when even the steps do not fit, the parts the question matched are kept.
  Every part left out is said
  ("6.1 Prepare: steps 1–3 not shown: open the document"), never dropped silently;
- a value, a fact or a why: the lines that state it (lines.py: the fitted line ranker over the lines of the
  likeliest sections; a table row comes with its header row), with their section's heading, at most
  `excerpt_words` words.

Nothing here rewrites a word: each step's `text` is a slice of the indexed chunk it cites.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from appliance.answer.generated.abstention import other_subject_reason, stated_values
from appliance.answer.question import Question
from appliance.answer.quoted.choice import Choice, Ranked, overlaps
from appliance.answer.quoted.features import DOING
from appliance.answer.quoted.lines import default_line_ranker, line_features, section_lines, shown_lines
from appliance.answer.quoted.sections import Item, Section
from appliance.index.records import ChunkRow
from appliance.text.identifiers import identifier_in, is_strong_identifier
from appliance.text.quantities import unit_of
from appliance.text.questions import QuestionKind, asked_quantity, counted_noun, counts
from appliance.text.terms import extract_terms
from appliance.text.wording import is_noise_token

_STEP_NUMBER = re.compile(r"\s*(\d{1,3}(?:\.\d{1,3})*|[A-Za-z])[.)]")
EmbedTexts = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Step:
    """One item shown: the source's own `text` (kind "omitted": none; `note` says what was left out)."""

    text: str
    kind: str  # heading, step, item, text, table, code, warning, caution, hold, note; omitted
    n: int  # the number of the section (source) it comes from
    path: str
    section: str
    page: int | None
    chunk_id: str
    level: int = 0
    numbered: bool = False
    matched: bool = False  # a passage the search matched the question in
    note: str | None = None


@dataclass
class Quoted:
    """What the SOP says to a question: the sections shown (numbered from 1) and their steps."""

    kind: str  # "procedure" | "excerpt"
    sections: list[Section]
    steps: list[Step]
    refusal_reason: str | None = None
    alternatives: list[Ranked] = field(default_factory=list)
    choice: Choice | None = None

    @property
    def words(self) -> int:
        return sum(len(step.text.split()) for step in self.steps)

    def text(self) -> str:
        """The steps as plain text: what a client reading only `answer` gets, in the order shown."""
        lines: list[str] = []
        for step in self.steps:
            if step.kind == "omitted":
                lines.append(f"[… {step.note}]")
            elif step.kind == "heading":
                lines.append(("" if not lines else "\n") + f"{step.text} [{step.n}]")
            else:
                lines.append(step.text)
        return "\n".join(lines)


def quote_answer(
    question: Question,
    choice: Choice,
    hits: Sequence[tuple[ChunkRow, float]],
    *,
    chunks_of: Callable[[Sequence[str]], Mapping[str, Sequence[ChunkRow]]],
    embed_texts: EmbedTexts,
    max_words: int,
    excerpt_words: int,
    max_steps_words: int = 0,
) -> Quoted:
    """The quoted answer to `question` from the chosen section (see the module docstring)."""
    matched = {chunk.chunk_id for chunk, _ in hits}
    if question.kind == "procedure":
        steps = _trimmed(choice.section, matched, max_words, 1, max_steps_words)
        quoted = Quoted("procedure", [choice.section], steps)
    else:
        quoted = _excerpt(question, choice, hits, embed_texts, excerpt_words)
    quoted.choice = choice
    # The likeliest sections outside what is shown, the close call (if any) first: the page names them.
    others = [a for a in choice.alternatives(6) if not any(overlaps(a.section, s) for s in quoted.sections)]
    quoted.alternatives = others[:3]
    quoted.refusal_reason = _refusal(question.searched, question.kind, quoted, hits)
    return quoted


# --- a procedure, whole or trimmed -----------------------------------------------------------------


def _step(item: Item, n: int, matched: set[str]) -> Step:
    chunk = item.chunk
    return Step(
        item.text,
        item.kind,
        n,
        chunk.path,
        chunk.section,
        chunk.page,
        chunk.chunk_id,
        item.level,
        item.numbered,
        chunk.chunk_id in matched,
    )


def _trimmed(section: Section, matched: set[str], max_words: int, n: int = 1, max_steps_words: int = 0) -> list[Step]:
    """Every item of the section when it fits `max_words`; else its headings and its steps, commands, warnings
    and hold points with their parts (DOING: all of them or none, a procedure is not shown with steps missing;
    they may fill `max_steps_words`, more than `max_words`: the prose gives way, not a step), then its matched
    items while the whole fits `max_words`; a note for each run of items left out."""
    items = list(section.items)
    if section.words <= max_words:
        return [_step(item, n, matched) for item in items]
    keep = [item.kind == "heading" for item in items]
    headings = sum(len(i.text.split()) for i, k in zip(items, keep, strict=True) if k)
    budget = max_words - headings
    doing = _with_their_parts(items, [i for i, item in enumerate(items) if item.kind in DOING])
    cost = sum(len(items[i].text.split()) for i in doing)
    if doing and cost <= max(budget, max_steps_words - headings):  # all of them or none
        for index in doing:
            keep[index] = True
        budget = max(0, budget - cost)
    order = _by_match(items, matched)
    budget = _fill(items, keep, [i for i in order if items[i].chunk.chunk_id in matched], budget)
    if not any(k for k, item in zip(keep, items, strict=True) if item.kind != "heading"):
        _fill(items, keep, order, budget)  # nothing matched fits: the items in match order, as many as fit
    steps: list[Step] = []
    run: list[Item] = []
    for item, kept in zip(items, keep, strict=True):
        if kept:
            if run:
                steps.append(_omitted(run, n))
                run = []
            steps.append(_step(item, n, matched))
        else:
            run.append(item)
    if run:
        steps.append(_omitted(run, n))
    return steps


def _with_their_parts(items: Sequence[Item], doing: Sequence[int]) -> list[int]:
    """The DOING items and the list items that belong to them: the line that introduces a command or a step
    ("- Restart the virt-launcher pod:" above its code block) and a step's own sub-items: the list items right
    after it, while nested deeper than the step (all of them where the step ends with a colon)."""
    parts = set(doing)
    for i in doing:
        before = i - 1
        introduces = before >= 0 and items[before].kind not in DOING and items[before].kind != "heading"
        if introduces and items[before].text.rstrip().endswith(":"):
            parts.add(before)
        opens = items[i].text.rstrip().endswith(":")
        after = i + 1
        while after < len(items) and items[after].kind == "item":
            if not (items[after].level > items[i].level or opens):
                break
            parts.add(after)
            after += 1
    return sorted(parts)


def _fill(items: Sequence[Item], keep: list[bool], order: Sequence[int], budget: int) -> int:
    """Keep the items at `order` that are not kept yet, in that order, while they fit; the budget left."""
    for index in order:
        words = len(items[index].text.split())
        if not keep[index] and words <= budget:
            keep[index] = True
            budget -= words
    return budget


def _by_match(items: Sequence[Item], matched: set[str]) -> list[int]:
    """Item positions, matched ones first, each in document order."""
    hit = [i for i, item in enumerate(items) if item.kind != "heading" and item.chunk.chunk_id in matched]
    return hit + [i for i, item in enumerate(items) if item.kind != "heading" and i not in hit]


def _omitted(run: Sequence[Item], n: int) -> Step:
    first = run[0].chunk
    numbers = [m.group(1) for m in (_STEP_NUMBER.match(item.text) for item in run if item.numbered) if m]
    pages = sorted({item.chunk.page for item in run if item.chunk.page is not None})
    where = f" (p. {pages[0]})" if len(pages) == 1 else f" (pp. {pages[0]}–{pages[-1]})" if pages else ""
    if numbers:
        what = f"step {numbers[0]}" if len(numbers) == 1 else f"steps {numbers[0]}–{numbers[-1]}"
    else:
        what = f"{len(run)} {'part' if len(run) == 1 else 'parts'}"
    return Step(
        "",
        "omitted",
        n,
        first.path,
        first.section,
        first.page,
        first.chunk_id,
        note=f"{what} not shown{where}: open the document",
    )


# --- a value or a fact: the lines that state it ----------------------------------------------------


def _excerpt(
    question: Question,
    choice: Choice,
    hits: Sequence[tuple[ChunkRow, float]],
    embed_texts: EmbedTexts,
    excerpt_words: int,
) -> Quoted:
    """The lines that answer a value, fact or why question (lines.py: the fitted line ranker over the lines of
    the likeliest sections), in document order under their section headings."""
    model = default_line_ranker()
    ranked = [choice.chosen, *choice.alternatives(model.sections - 1)]
    sections = [r.section for r in ranked]
    lines = [line for section in sections for line in section_lines(section, model.paragraph_words)]
    if not lines:
        return Quoted("excerpt", [choice.section], _trimmed(choice.section, set(), excerpt_words))
    region = {
        (r.section.path, r.section.heading): sum(o.probability for o in choice.ranked if overlaps(o.section, r.section))
        for r in ranked
    }
    hit_ranks = {chunk.chunk_id: rank for rank, (chunk, _) in enumerate(hits, start=1)}
    features = line_features(
        question.searched, question.vector, lines, region, choice.section, hit_ranks, embed_texts, model.features
    )
    picked = shown_lines(lines, model.probabilities(features), excerpt_words, model.next_ratio, model.seeds)
    shown = [s for s in sections if any(line.section is s for line in picked)]
    steps: list[Step] = []
    for n, section in enumerate(shown, start=1):
        own = sorted((line for line in picked if line.section is section), key=lambda line: (line.item, line.part))
        steps.append(
            Step(section.name, "heading", n, section.path, section.heading, own[0].chunk.page, own[0].chunk.chunk_id)
        )
        for line in own:
            chunk = line.chunk
            steps.append(
                Step(
                    line.text,
                    line.kind,
                    n,
                    chunk.path,
                    chunk.section,
                    chunk.page,
                    chunk.chunk_id,
                    matched=chunk.chunk_id in hit_ranks,
                )
            )
    return Quoted("excerpt", shown, steps)


# --- when the documents do not answer after all ---------------------------------------------------


def _states_asked_value(question: str, step: Step, quoted: Quoted, named: Sequence[str]) -> bool:
    """Whether a shown line states the value asked, of the thing asked: a value of the kind asked
    (abstention.stated_values), in a line that, with its section's label, names every one of `named`
    (mon_osd_down_out_interval, KubeletTooManyPods: a neighbour's value is no answer), and for "how many
    workers" a number of workers."""
    if step.kind in ("heading", "omitted") or not stated_values(step.text, question):
        return False
    label = next((s.label for s in quoted.sections if s.path == step.path), "")
    context = f"{label}\n{step.section}\n{step.text}"
    if not all(identifier_in(identifier, context) for identifier in named):
        return False
    noun = counted_noun(question)
    return noun is None or unit_of(noun) is not None or counts(step.text, noun)


def _named_things(question: str, hits: Sequence[tuple[ChunkRow, float]]) -> list[str]:
    """The strong identifiers of the question that the documents found hold, as they write them. A token the
    documents do not hold (a pager's labels, `p99`, `5xx`, a name typed in capitals) is the evidence
    decision's to weigh, never a reason here."""
    named: list[str] = []
    for identifier in extract_terms(question).identifiers:
        if not is_strong_identifier(identifier) or is_noise_token(identifier):
            continue
        for chunk, _ in hits:
            written = _as_written(identifier, f"{chunk.identifiers}\n{chunk.text}")
            if written is not None:
                named.append(written)
                break
    return named


def _as_written(identifier: str, text: str) -> str | None:
    if identifier_in(identifier, text):
        return identifier
    folded = identifier.casefold()
    tokens = (token.strip(".,;:()[]`'\"") for token in text.split())
    return next((token for token in tokens if token.casefold() == folded), None)


def _refusal(question: str, kind: QuestionKind, quoted: Quoted, hits: Sequence[tuple[ChunkRow, float]]) -> str | None:
    """A value asked that no line shown states, or a section about a sibling of what the question names."""
    shown = "\n".join(step.text for step in quoted.steps)
    named = _named_things(question, hits) if kind == "value" else []
    if kind == "value" and not any(_states_asked_value(question, line, quoted, named) for line in quoted.steps):
        asked = asked_quantity(question)
        return f"the question asks for a value ({asked!r}) and no passage found states one"
    labels = "\n".join(f"{section.label}" for section in quoted.sections)
    given = {n: chunk.text for n, (chunk, _) in enumerate(hits, start=2)}
    return other_subject_reason(question, {1: f"{labels}\n{shown}"}, {1: f"{labels}\n{shown}", **given})
