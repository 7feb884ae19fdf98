"""Which sections may answer (answer/quoted/candidates.py): every section of the hits' best documents, and of the
documents their best hits point to ("See SOP-ZZ-009 section 2")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from appliance.answer.quoted.candidates import MAX_NAMES, Candidate, gather_candidates
from appliance.index.records import ChunkRow
from tests.fakes import chunk_row

GUIDE = "docs/ALM-GUIDE.md"
SOP = "docs/SOP-ZZ-009.md"


def _row(n: int, path: str, title: str, section: str, text: str) -> ChunkRow:
    return chunk_row(n, path, title, section, text, ord=n)


# The guide's best hit points to the SOP; its later hits name many tags no document is named by, all of which sort
# before "SOP-…": more names than a question looks up.
TAGS = [f"AAA-{100 + i}-X" for i in range(MAX_NAMES + 6)]
POINTER = _row(1, GUIDE, "Alarm guide", "Area 9", "| ALM-ZZ-01 | Loss of flow | See SOP-ZZ-009 section 2 |")
TAG_ROWS = [
    _row(2 + i, GUIDE, "Alarm guide", f"Area {i}", " ".join(f"Tag {tag} trips on low level." for tag in TAGS[i::4]))
    for i in range(4)
]
SOP_ROWS = [
    _row(20, SOP, "SOP-ZZ-009 Flow loss response", "1. Purpose", "What to do when the flow is lost."),
    _row(21, SOP, "SOP-ZZ-009 Flow loss response", "2. Steps", "1. Start the standby pump.\n2. Confirm flow."),
]
DOCUMENTS = {GUIDE: [POINTER, *TAG_ROWS], SOP: SOP_ROWS}


def _chunks_of(paths: Sequence[str]) -> Mapping[str, Sequence[ChunkRow]]:
    return {path: DOCUMENTS.get(path, []) for path in paths}


def _documents_named(names: Sequence[str]) -> Mapping[str, Sequence[str]]:
    return {name: [SOP] for name in names if name == "SOP-ZZ-009"}


def _gather(**reach: int) -> list[Candidate]:
    hits = [(POINTER, 0.9), *((row, 0.5) for row in TAG_ROWS)]
    return gather_candidates(hits, _chunks_of, _documents_named, question="loss of flow alarm, what now?", **reach)


def _referenced(candidates: Sequence[Candidate]) -> dict[str, float]:
    return {c.section.heading: c.referenced for c in candidates if c.section.path == SOP}


def test_the_best_hits_pointer_is_followed_however_many_names_later_hits_hold() -> None:
    referenced = _referenced(_gather())
    assert referenced["SOP-ZZ-009 Flow loss response › 2. Steps"] == 1.0  # the section the pointer names
    assert referenced["SOP-ZZ-009 Flow loss response › 1. Purpose"] == 0.5  # its document's other sections


def test_no_pointer_is_followed_when_no_hit_is_read_for_names_or_no_document_may_join() -> None:
    assert _referenced(_gather(pointing_hits=0)) == {}
    assert _referenced(_gather(referenced_documents=0)) == {}
