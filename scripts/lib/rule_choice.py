"""The section choice as it was before the fitted ranker (answer/quoted/choice.py): hand-weighted signals and
heading word lists (rule_procedures.py). Kept in the lab only, as the baseline the benchmarks compare with
(scripts/choice_features.py, scripts/bench_sop.py --baseline); the appliance no longer runs it.

Its own description, as it was:

Which section answers the question: retrieval finds chunks, this chooses the section to show whole.

Measured outside the team on procedure questions: the top hit's own section holds 8% of the gold steps,
its parent 16%, the ancestor holding most of the top document's hits 33%. The hits land in Purpose,
Scope or Records sections of the right SOP, in an alarm guide that says "see SOP-CL-004", or in one
phase (6.3 Notify customers) of a procedure whose phases are all needed. So every section of the best
documents is a candidate, and each is scored on graded signals, none of which can veto it:

- `similarity`: the question against the section's label (document title › heading path), by the
  embedder that already reads the question: the label says what the section is about;
- `evidence`: the retrieval scores of the hits inside it, against the best document's;
- `structure`: the share of what it holds that an operator acts on (numbered steps, commands, warnings);
- `intent`: a runbook's Mitigation for "how do I fix", its Diagnosis for "find out why" (text/procedures.py);
- `front matter`: Purpose, Scope, References… count against a section, never exclude it.

A phase of one procedure stands for the whole: when the chosen section's parent is itself a procedure
and the hits or the question's match spread over the parent's parts, the parent is shown (6. Procedure
for a hit in 6.3). A parent of separate procedures (4. Procedures › 4.3 Locked account) is not, because
the question matches that one child's heading better than the parent's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from appliance.answer.quoted.sections import Section, document_sections, heading_parts, is_within
from appliance.index.records import ChunkRow
from scripts.lib.rule_procedures import (
    front_matter_share,
    intent_affinity,
    is_generic_procedure,
    is_numbered_step_heading,
    names_a_collection,
)

# Weights of the signals (fitted on the procedure tune split, scripts/qa/procedures.jsonl; see docs).
EVIDENCE_WEIGHT = 0.15
DOCUMENT_WEIGHT = 0.2
STRUCTURE_WEIGHT = 0.10
INTENT_WEIGHT = 0.08
FRONT_MATTER_WEIGHT = 0.10
# A procedure asked for is almost never a Purpose or a Meaning: front matter counts more against it then.
PROCEDURE_FRONT_MATTER_WEIGHT = 0.25
# A parent takes a child's place when it scores nearly as well (within this much).
PARENT_MARGIN = 0.05
DOCUMENTS = 4  # documents whose sections are candidates
WHOLE_DOCUMENT_WORDS = 400  # a whole document is shown as one procedure only up to this length
MIN_SECTION_WORDS = 30  # a section shorter than this is a fragment of its parent
FRAGMENT_PARENT_WORDS = 500  # the most a fragment's parent may hold to be shown in its place
SPREAD = 1.5  # a parent holding this many times a part's hits has them spread over its parts
FOCUS_SHARE = 0.7  # a part holding this share of a generic section's hits stands for it

# How much of a section's content an operator acts on, by layout kind (text/layout.py).
_ACTIONABLE = {
    "step": 1.0,
    "code": 1.0,
    "warning": 1.0,
    "caution": 1.0,
    "hold": 1.0,
    "item": 0.5,
    "note": 0.3,
    "table": 0.3,
}

EmbedTexts = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Scored:
    """One candidate section with its signals (kept for the benchmark and the API's alternatives)."""

    section: Section
    similarity: float
    evidence: float
    structure: float
    intent: float
    front_matter: float
    document: float  # its document's retrieval mass against the best document's
    mass: float  # the positive scores of every hit inside, against the best hit's (how widely it matched)
    hits: tuple[str, ...]  # the chunk ids of the hits inside, best first

    procedure: bool = True  # scored for a procedure question: steps and the question's intent count

    @property
    def score(self) -> float:
        score = self.similarity + EVIDENCE_WEIGHT * self.evidence + DOCUMENT_WEIGHT * self.document
        if not self.procedure:
            return score - FRONT_MATTER_WEIGHT * self.front_matter
        return (
            score
            + STRUCTURE_WEIGHT * self.structure
            + INTENT_WEIGHT * self.intent
            - PROCEDURE_FRONT_MATTER_WEIGHT * self.front_matter
        )


@dataclass(frozen=True)
class Choice:
    chosen: Scored
    ranked: list[Scored] = field(default_factory=list)  # every candidate, best first

    @property
    def section(self) -> Section:
        return self.chosen.section

    def response(self, question: str) -> list[Section]:
        """The sections to show for a procedure question: the chosen one, and, when it is a generic part of a
        runbook's response (Diagnosis, Mitigation…) and the question asks neither to fix nor to find the cause,
        its generic siblings with it, in document order: "KubeJobFailed is firing" gets the diagnosis and the
        mitigation, "how do I fix it" the mitigation."""
        chosen = self.section
        if not chosen.heading or not is_generic_procedure(chosen.name):
            return [chosen]
        parent = " › ".join(heading_parts(chosen.heading)[:-1])
        siblings = [
            c.section
            for c in self.ranked
            if c.section.path == chosen.path
            and c.section.depth == chosen.depth
            and is_within(c.section.heading, parent)
            and is_generic_procedure(c.section.name)
        ]
        if any(intent_affinity(question, s.name) for s in siblings) or len(siblings) < 2:
            return [chosen]
        order = {
            chunk.chunk_id: i
            for i, chunk in enumerate(sorted({c for s in siblings for c in s.chunks}, key=lambda c: c.ord))
        }
        return sorted(siblings, key=lambda s: order[s.chunks[0].chunk_id])

    def alternatives(self, count: int = 3) -> list[Scored]:
        """The best candidates outside the chosen section, one per section, none inside it or holding it."""
        picked: list[Scored] = []
        for candidate in self.ranked:
            other = candidate.section
            if other.path == self.section.path and (
                is_within(other.heading, self.section.heading) or is_within(self.section.heading, other.heading)
            ):
                continue
            if any(other.path == p.section.path and is_within(other.heading, p.section.heading) for p in picked):
                continue
            picked.append(candidate)
            if len(picked) == count:
                break
        return picked


def structure_of(section: Section) -> float:
    weights = [_ACTIONABLE.get(item.kind, 0.0) for item in section.items if item.kind != "heading"]
    return sum(weights) / len(weights) if weights else 0.0


def choose_section(
    question: str,
    hits: Sequence[tuple[ChunkRow, float]],
    chunks_of: Callable[[Sequence[str]], Mapping[str, Sequence[ChunkRow]]],
    embed_texts: EmbedTexts,
    question_vector: np.ndarray,
    *,
    procedure: bool = True,
    whole_words: int = 1000,
) -> Choice | None:
    """The section to show for `question`, from the ranked `hits` (chunk, fused score), best first. For a
    question that asks a value or a fact (`procedure` False) steps count for nothing and no part climbs to
    the procedure it belongs to; a part climbs only to a whole of at most `whole_words` (what can be shown
    whole: answer.max_procedure_words)."""
    if not hits:
        return None
    masses: dict[str, float] = {}
    for chunk, score in hits:
        masses[chunk.path] = masses.get(chunk.path, 0.0) + max(score, 0.0)
    documents = sorted(masses, key=lambda path: -masses[path])[:DOCUMENTS]
    top_score = max(max(score for _, score in hits), 1e-9)
    top_mass = max(masses[documents[0]], 1e-9)
    by_document = chunks_of(documents)
    candidates: list[Section] = []
    for path in documents:
        candidates.extend(document_sections(by_document.get(path, ())).values())
    if not candidates:
        return None
    vectors = embed_texts([section.label for section in candidates])
    similarities = vectors @ question_vector
    scored = [
        _scored(question, section, float(similarity), hits, top_score, procedure, masses[section.path] / top_mass)
        for section, similarity in zip(candidates, similarities, strict=True)
    ]
    # A whole document (or the heading holding all of it) is reached only from one of its parts
    # (_whole_procedure): compared directly, its title matches an alert-named runbook's question best and
    # it holds every hit, so it would always win and show Meaning and Impact with the Mitigation asked for.
    parts = [candidate for candidate in scored if not _whole_document(candidate.section, candidates)]
    ranked = sorted(parts or scored, key=lambda candidate: -candidate.score)
    chosen = ranked[0]
    by_heading = {(c.section.path, c.section.heading): c for c in scored}
    chosen = _focused(chosen, by_heading)
    if procedure:
        chosen = _whole_procedure(chosen, by_heading, whole_words)
    chosen = _not_a_fragment(chosen, by_heading)
    return Choice(chosen, ranked)


def _children(parent: Scored, by_heading: Mapping[tuple[str, str], Scored]) -> list[Scored]:
    return [
        c
        for (path, heading), c in by_heading.items()
        if path == parent.section.path
        and c.section.depth == parent.section.depth + 1
        and is_within(heading, parent.section.heading)
    ]


def _focused(chosen: Scored, by_heading: Mapping[tuple[str, str], Scored]) -> Scored:
    """A section whose heading names no subject of its own ("5. Procedures") stands for its parts: when the
    hits inside it are nearly all in one part, that part is the answer."""
    current = chosen
    while current.section.heading and is_generic_procedure(current.section.name) and current.mass > 0:
        best = max(_children(current, by_heading), key=lambda c: c.mass, default=None)
        if best is None or best.mass < FOCUS_SHARE * current.mass:
            break
        current = best
    return current


def _not_a_fragment(chosen: Scored, by_heading: Mapping[tuple[str, str], Scored]) -> Scored:
    """A section of a few words (a heading and one line) is shown with its parent, when that fits and is not
    a whole document with parts to read rather than do (a runbook's Meaning and Impact)."""
    current = chosen
    while current.section.words < MIN_SECTION_WORDS:
        parent = _parent(current, by_heading)
        if parent is None or parent.section.words > FRAGMENT_PARENT_WORDS:
            break
        if _is_whole_document(parent.section) and _has_front_matter_parts(parent, by_heading):
            break
        if names_a_collection(parent.section.name):
            break
        current = parent
    return current


def _parent(child: Scored, by_heading: Mapping[tuple[str, str], Scored]) -> Scored | None:
    parts = heading_parts(child.section.heading)
    return by_heading.get((child.section.path, " › ".join(parts[:-1]))) if parts else None


def _is_whole_document(section: Section) -> bool:
    """The document root, or its first heading when that heading is the title (an H1 holding everything)."""
    return not section.heading or (section.depth == 1 and section.name == section.title)


def _has_front_matter_parts(parent: Scored, by_heading: Mapping[tuple[str, str], Scored]) -> bool:
    return any(front_matter_share(child.section.name) >= 0.5 for child in _children(parent, by_heading))


def _whole_document(section: Section, candidates: Sequence[Section]) -> bool:
    """Whether the section holds all of its document that has parts: the root, or a first heading holding
    every chunk (the H1 that repeats the title), when some smaller section exists."""
    document = [c for c in candidates if c.path == section.path]
    root = next((c for c in document if not c.heading), None)
    if root is None or len(section.chunks) < len(root.chunks):
        return False
    return any(len(c.chunks) < len(root.chunks) for c in document)


def _scored(
    question: str,
    section: Section,
    similarity: float,
    hits: Sequence[tuple[ChunkRow, float]],
    top: float,
    procedure: bool,
    document: float,
) -> Scored:
    inside = [
        (chunk, score)
        for chunk, score in hits
        if chunk.path == section.path and is_within(chunk.section, section.heading)
    ]
    best = max((score for _, score in inside), default=0.0)
    mass = sum(max(score, 0.0) for _, score in inside)
    parts = heading_parts(section.heading)
    own = parts[-1] if parts else section.title
    return Scored(
        section=section,
        similarity=similarity,
        evidence=max(0.0, best / top),
        mass=mass / top,
        document=document,
        structure=structure_of(section),
        intent=intent_affinity(question, own),
        front_matter=front_matter_share(own),
        hits=tuple(chunk.chunk_id for chunk, _ in inside),
        procedure=procedure,
    )


def _whole_procedure(chosen: Scored, by_heading: Mapping[tuple[str, str], Scored], whole_words: int) -> Scored:
    """Climb from a phase of a procedure to the procedure (see the module docstring)."""
    current = chosen
    while (parent := _parent(current, by_heading)) is not None:
        names = [child.section.name for child in _children(parent, by_heading)]
        front_matter_parts = _has_front_matter_parts(parent, by_heading)
        # Numbered like steps, none of them front matter ("1. Purpose, 2. Scope" number an SOP's sections).
        stepwise = (
            len(names) >= 2 and sum(map(is_numbered_step_heading, names)) >= 0.6 * len(names) and not front_matter_parts
        )
        if not _is_procedure_parent(parent, current, stepwise, whole_words, front_matter_parts):
            break
        current = parent
    return current


def _is_procedure_parent(
    parent: Scored, child: Scored, stepwise: bool, whole_words: int, front_matter_parts: bool
) -> bool:
    """Whether `parent` is one procedure of which `child` is a phase: it is mostly steps, it is not front
    matter, it scores nearly as well, and its heading names no subject of its own (6. Procedure) or its parts
    are numbered steps (1. Check…, 2. Drill down…) or the hits spread over its parts."""
    if parent.structure < 0.5 or parent.front_matter > 0 or parent.score < child.score - PARENT_MARGIN:
        return False
    if names_a_collection(parent.section.name):
        return False  # "4. Procedures": its parts are procedures of their own
    if parent.section.words > whole_words:
        return False  # a whole that could not be shown whole is a collection of procedures, not one
    if _is_whole_document(parent.section):
        # The whole document: only a procedure in numbered parts, or one small enough to be about one thing
        # and with no part to read rather than do (a runbook's Meaning and Impact).
        return stepwise or (parent.section.words <= WHOLE_DOCUMENT_WORDS and not front_matter_parts)
    return stepwise or parent.mass > child.mass * SPREAD
