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

DOCUMENTS = 5  # the best documents by hit mass whose sections are candidates
REFERENCED_DOCUMENTS = 2  # documents named by the hits that join them
# "SOP-CL-004 section 6.2", "SOP-CL-004, §6", "see section 4.3 of SOP-…": the section number after a name.
_SECTION_NUMBER = re.compile(r"(?:section|sect\.|sec\.|§)\s*(\d{1,2}(?:\.\d{1,2}){0,3})", re.IGNORECASE)
MAX_NAMES = 24  # names looked up per question
_NEAR = 60  # characters after a document's name in which its section number is read


@dataclass(frozen=True)
class Candidate:
    """One section that may answer, with how the search reached it."""

    section: Section
    hits: tuple[tuple[ChunkRow, float, int], ...]  # the hits inside: chunk, fused score, rank (1 = best)
    document_rank: int  # 1 = the document holding most of the hit mass; 0 = reached only by a reference
    document_mass: float  # its document's positive hit mass against the best document's (0..1)
    referenced: float  # 1: a hit of another document names this section; 0.5: names its document
    refers_out: float  # 1: the section names another indexed document (it points elsewhere)


ChunksOf = Callable[[Sequence[str]], Mapping[str, Sequence[ChunkRow]]]
# Indexed documents whose title or path holds each name: {name: [path, …]}.
DocumentsNamed = Callable[[Sequence[str]], Mapping[str, Sequence[str]]]


def gather_candidates(
    hits: Sequence[tuple[ChunkRow, float]],
    chunks_of: ChunksOf,
    documents_named: DocumentsNamed | None = None,
    *,
    documents: int = DOCUMENTS,
) -> list[Candidate]:
    """Every section of the best `documents` documents of `hits` (chunk, fused score; best first), and of up
    to REFERENCED_DOCUMENTS more that the best hits name."""
    if not hits:
        return []
    masses: dict[str, float] = {}
    for chunk, score in hits:
        masses[chunk.path] = masses.get(chunk.path, 0.0) + max(score, 0.0)
    ranked_paths = sorted(masses, key=lambda path: -masses[path])[:documents]
    top_mass = max(masses[ranked_paths[0]], 1e-9)
    references = _references(hits, ranked_paths, documents_named) if documents_named else {}
    extra = [path for path in references if path not in ranked_paths][:REFERENCED_DOCUMENTS]
    by_document = chunks_of([*ranked_paths, *extra])
    ranked_hits = [(chunk, score, rank) for rank, (chunk, score) in enumerate(hits, start=1)]
    names = _document_names(by_document)
    found: list[Candidate] = []
    for position, path in enumerate([*ranked_paths, *extra]):
        sections = document_sections(by_document.get(path, ()))
        numbers = references.get(path)
        for section in sections.values():
            inside = tuple(h for h in ranked_hits if h[0].path == path and is_within(h[0].section, section.heading))
            found.append(
                Candidate(
                    section=section,
                    hits=inside,
                    document_rank=position + 1 if path in ranked_paths else 0,
                    document_mass=masses.get(path, 0.0) / top_mass,
                    referenced=_referenced(section, numbers),
                    refers_out=_refers_out(section, path, names),
                )
            )
    return found


def _references(
    hits: Sequence[tuple[ChunkRow, float]], ranked_paths: Sequence[str], documents_named: DocumentsNamed
) -> dict[str, set[str]]:
    """Documents named in the best hits' text ("SOP-CL-004"), with the section numbers named after them."""
    texts = [chunk.text for chunk, _ in hits[:10]]
    names = sorted({token for text in texts for token in _strong_names(text)})[:MAX_NAMES]
    if not names:
        return {}
    named = documents_named(names)
    found: dict[str, set[str]] = {}
    for chunk, _ in hits[:10]:
        lowered = chunk.text.lower()
        for name, paths in named.items():
            # A document's own number in its own text is no pointer; a name shared by many documents is no name.
            others = [path for path in paths if path != chunk.path]
            if not others or len(paths) > 2:
                continue
            for match in re.finditer(re.escape(name.lower()), lowered):
                window = chunk.text[max(0, match.start() - _NEAR) : match.end() + _NEAR]
                numbers = {m.group(1) for m in _SECTION_NUMBER.finditer(window)}
                for path in others:
                    found.setdefault(path, set()).update(numbers)
    return found


def _strong_names(text: str) -> list[str]:
    """Tags, document numbers and alert names as written (SOP-CL-004, KubePodNotReady)."""
    tokens = (match.group() for match in CANDIDATE.finditer(text))
    return list(dict.fromkeys(t for t in tokens if is_identifier(t) and is_strong_identifier(t)))


def _referenced(section: Section, numbers: set[str] | None) -> float:
    if numbers is None:
        return 0.0
    own = section.name.split(" ", 1)[0].rstrip(".")
    return 1.0 if numbers and own in numbers else 0.5


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
