"""The sections that may answer a question: every section of the documents the hits land in, and the
sections those documents point to.

Retrieval ranks chunks; the answer is a section. The hits' best documents (by their share of the fused
scores) give every section they have (the whole document, each heading and every heading below it), so the
section that answers is a candidate even when no chunk of it was retrieved (a Purpose section that matched
the question's words while the steps sit in "6. Procedure"). A document that a hit's text names by its
number ("see SOP-CL-004 section 6") joins the candidates: an alarm guide points to the SOP that holds the
steps, and that SOP must be able to win. Which candidate answers is decided by the fitted ranker
(ranker.py) over the features of features.py; this module only gathers and remembers where each came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from appliance.answer.quoted.sections import Section, document_sections, is_within
from appliance.index.records import ChunkRow
from appliance.text.identifiers import is_identifier, is_strong_identifier
from appliance.text.tokens import CANDIDATE

# The best documents by hit mass whose sections are candidates: 3, 5 and 8 tie out of fold (scripts/choice_features.py
# --documents, then fit_choice.py; docs/measurements/section-choice.md, "How many documents give candidates").
DOCUMENTS = 5
# Documents named by the best POINTING_HITS hits that join the candidates. 10 hits / 2 documents tie with 20 / 4
# end to end (scripts/measure_gathering.py: 4 of 528 training questions more within reach, none of seven measured
# sets; fit_choice.py refitted on both: level), so the smaller reach stays (docs/measurements/section-choice.md,
# "How far a hit's pointers reach").
REFERENCED_DOCUMENTS = 2
# "SOP-CL-004 section 6.2", "SOP-CL-004, §6", "see section 4.3 of SOP-…": the section number after a name.
_SECTION_NUMBER = re.compile(r"(?:section|sect\.|sec\.|§)\s*(\d{1,2}(?:\.\d{1,2}){0,3})", re.IGNORECASE)
# Names looked up per question, and how many documents may hold a name before it is no name (a common tag, a
# product): any of 8 / 24 / 64 and 1 / 2 / 4 reaches the same within one of 528 training questions and the same on
# seven measured sets (scripts/measure_gathering.py --limits; docs/measurements/section-choice.md).
MAX_NAMES = 24
SHARED_NAME_DOCUMENTS = 2
POINTING_HITS = 10  # the best hits whose text is read for pointers to other documents (see REFERENCED_DOCUMENTS)


@dataclass(frozen=True)
class Candidate:
    """One section that may answer, with how the search reached it."""

    section: Section
    hits: tuple[tuple[ChunkRow, float, int], ...]  # the hits inside: chunk, fused score, rank (1 = best)
    document_rank: int  # 1 = the document holding most of the hit mass; 0 = reached only by a reference
    document_mass: float  # its document's positive hit mass against the best document's (0..1)
    referenced: float  # 1: a hit of another document names this section (its hits count as inside); 0.5: its document
    refers_out: float  # 1: the section names another indexed document (it points elsewhere)


ChunksOf = Callable[[Sequence[str]], Mapping[str, Sequence[ChunkRow]]]
# Indexed documents whose title or path holds each name: {name: [path, …]}.
DocumentsNamed = Callable[[Sequence[str]], Mapping[str, Sequence[str]]]


def gather_candidates(
    hits: Sequence[tuple[ChunkRow, float]],
    chunks_of: ChunksOf,
    documents_named: DocumentsNamed | None = None,
    *,
    question: str = "",
    documents: int = DOCUMENTS,
    referenced_documents: int = REFERENCED_DOCUMENTS,
    pointing_hits: int = POINTING_HITS,
    max_names: int = MAX_NAMES,
    shared_name_documents: int = SHARED_NAME_DOCUMENTS,
) -> list[Candidate]:
    """Every section of the best `documents` documents of `hits` (chunk, fused score; best first), and of up
    to `referenced_documents` more that the best `pointing_hits` hits name (the first `max_names` names read,
    each held by at most `shared_name_documents` documents)."""
    if not hits:
        return []
    masses: dict[str, float] = {}
    for chunk, score in hits:
        masses[chunk.path] = masses.get(chunk.path, 0.0) + max(score, 0.0)
    ranked_paths = sorted(masses, key=lambda path: -masses[path])[:documents]
    top_mass = max(masses[ranked_paths[0]], 1e-9)
    references = (
        _references(hits[:pointing_hits], documents_named, question, max_names, shared_name_documents)
        if documents_named
        else {}
    )
    extra = [path for path in references if path not in ranked_paths][:referenced_documents]
    by_document = chunks_of([*ranked_paths, *extra])
    ranked_hits = [(chunk, score, rank) for rank, (chunk, score) in enumerate(hits, start=1)]
    names = _document_names(by_document)
    found: list[Candidate] = []
    for position, path in enumerate([*ranked_paths, *extra]):
        sections = document_sections(by_document.get(path, ()))
        pointers = references.get(path, {})
        # Two headings over the same chunks (a document's root and the first heading that holds all of it,
        # its title) are one candidate: the heading is kept.
        unique: dict[frozenset[str], Section] = {}
        for section in sorted(sections.values(), key=lambda s: s.depth):
            unique[section.chunk_ids] = section
        for section in unique.values():
            inside = tuple(h for h in ranked_hits if h[0].path == path and is_within(h[0].section, section.heading))
            # A hit that names this section ("see SOP-CL-001 section 6.3") counts as a hit inside it: the
            # evidence that found the pointer finds what it points to.
            number = _own_number(section)
            pointing = tuple(ranked_hits[i] for i in pointers.get(number, ())) if number else ()
            found.append(
                Candidate(
                    section=section,
                    hits=tuple(sorted({*inside, *pointing}, key=lambda h: h[2])),
                    document_rank=position + 1 if path in ranked_paths else 0,
                    document_mass=masses.get(path, 0.0) / top_mass,
                    referenced=1.0 if pointing else 0.5 if pointers else 0.0,
                    refers_out=_refers_out(section, path, names),
                )
            )
    return found


def _references(
    hits: Sequence[tuple[ChunkRow, float]],
    documents_named: DocumentsNamed,
    question: str,
    max_names: int = MAX_NAMES,
    shared_name_documents: int = SHARED_NAME_DOCUMENTS,
) -> dict[str, dict[str, list[int]]]:
    """Documents named in the hits' lines ("SOP-CL-004"): for each, the section numbers named on the same
    line ("section 6.2"; "" for the document alone) and the positions of the hits that name them. Where the
    question names a tag or an alarm, only the lines naming it point (an alarm guide's row for that alarm, not
    its neighbours')."""
    asked = {token.casefold() for token in _strong_names(question)}
    found: dict[str, dict[str, list[int]]] = {}
    lines = [
        (position, line)
        for position, (chunk, _) in enumerate(hits)
        for line in chunk.text.splitlines()
        if not asked or asked & {token.casefold() for token in _strong_names(line)}
    ]
    # In the order the best hits name them: where there are more than MAX_NAMES, the best hits' names are read.
    names = list(dict.fromkeys(token for _, line in lines for token in _strong_names(line)))[:max_names]
    if not names:
        return {}
    named = documents_named(names)
    for position, line in lines:
        own = hits[position][0].path
        for name, paths in named.items():
            # A document's own number in its own text is no pointer; a name shared by many documents is no name.
            others = [path for path in paths if path != own]
            if not others or len(paths) > shared_name_documents or name.lower() not in line.lower():
                continue
            numbers = {m.group(1) for m in _SECTION_NUMBER.finditer(line)} or {""}
            for path in others:
                for number in numbers:
                    pointed = found.setdefault(path, {}).setdefault(number, [])
                    if position not in pointed:
                        pointed.append(position)
    return found


def _own_number(section: Section) -> str:
    """The number a heading starts with ("6.3" of "6.3 Second-stage leak alarm"), else ''."""
    match = re.match(r"(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s", section.name) if section.heading else None
    return match.group(1) if match else ""


def _strong_names(text: str) -> list[str]:
    """Tags, document numbers and alert names as written (SOP-CL-004, KubePodNotReady)."""
    tokens = (match.group() for match in CANDIDATE.finditer(text))
    return list(dict.fromkeys(t for t in tokens if is_identifier(t) and is_strong_identifier(t)))


def _document_names(by_document: Mapping[str, Sequence[ChunkRow]]) -> dict[str, str]:
    """Each candidate document's own strong identifiers in its title (SOP-CL-004), lower-cased → its path."""
    names: dict[str, str] = {}
    for path, chunks in by_document.items():
        if chunks:
            for token in _strong_names(chunks[0].title):
                names.setdefault(token.lower(), path)
    return names


def _refers_out(section: Section, path: str, names: Mapping[str, str]) -> float:
    text = " ".join(chunk.text.lower() for chunk in section.chunks)
    return 1.0 if any(other != path and name in text for name, other in names.items()) else 0.0
