"""What an answer is made of, for both paths (quoted/ and generated/): the records the CLI, the API and the
audit read. Field names are the API's contract; fields are added, never renamed.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from appliance.answer.generated.attribution import CorrectedCitation
from appliance.answer.generated.prompt import REFUSAL
from appliance.answer.generated.quotes import Quote
from appliance.answer.quoted.answer import Step
from appliance.index.records import ChunkRecord, Place


@dataclass(frozen=True)
class EvidenceSentence:
    text: str
    start: int  # character offsets in the passage text
    end: int
    score: float


@dataclass(frozen=True, kw_only=True)
class EvidenceItem(ChunkRecord):
    """A passage shown with an answer: `text` is the whole source given to the model (the best chunk's
    window), or a quoted section as shown; `chunk_id` its best retrieved chunk."""

    n: int | None  # source number; None for the closest passages of a refusal
    score: float
    sentences: list[EvidenceSentence]
    # The chunks whose joined text `text` is, in document order (the retrieved one and its window).
    chunk_ids: list[str] = field(default_factory=list)
    # The document's id for GET /v1/documents/{id}/file and /view (None if it left the index meanwhile).
    document_id: int | None = None

    def unnumbered(self) -> EvidenceItem:
        return replace(self, n=None)


@dataclass(frozen=True, kw_only=True)
class Citation(Place):
    n: int
    document_id: int | None = None
    ocr_note: str | None = None  # "text recognised by OCR: check the page" when its confidence is low
    # What the cited document states of itself (DocumentControl.as_json: number, revision, effective and review
    # dates, "label", "review_overdue"); None when it states none of them.
    document_control: dict[str, Any] | None = None


@dataclass(frozen=True)
class ShownSection:
    """A section a quoted answer shows (its steps carry its number `n`)."""

    n: int
    path: str
    title: str
    section: str  # heading path ('' = the whole document)
    pages: list[int]
    words: int  # the whole section's length, shown or not
    document_id: int | None = None
    document_control: dict[str, Any] | None = None  # as Citation.document_control


@dataclass(frozen=True)
class Alternative:
    """Another section that scored close: offered to open, never shown as an answer."""

    path: str
    title: str
    section: str
    page: int | None
    chunk_id: str
    score: float  # the ranker's probability that this section answers
    document_id: int | None = None


Confidence = Literal["certain", "close", "uncertain"]


@dataclass(frozen=True)
class JudgeCheck:
    """What the local model's check of a quoted answer's section did (answer/quoted/judge.py)."""

    timing: Literal["before", "after"]  # before the steps were shown, or after (they were then replaced or kept)
    kept: bool  # the ranker's pick stood
    ms: float
    # Timing "after" with the pick changed: the section shown first, then replaced by the judged one.
    first_shown: Alternative | None = None
    # The model's log-odds that each judged section answers ("Yes" against "No"), the ranker's pick first.
    odds: list[float] = field(default_factory=list)


@dataclass
class AnswerResult:
    question: str
    answer: str
    refused: bool
    grounded: bool
    verified: bool
    unsupported: list[str]
    citations: list[Citation]
    evidence: list[EvidenceItem]
    timings_ms: dict[str, float]
    model: str | None
    refusal_reason: str | None = None
    removed_citations: list[int] = field(default_factory=list)
    # Sentences the model left uncited but that one source supports: [n] added by the checker.
    attributed_citations: list[int] = field(default_factory=list)
    # Sentences cited to a source that does not hold them, cited to the given source that does:
    # {"sentence", "cited" (the model's numbers), "corrected" (the numbers now in the answer)}.
    corrected_citations: list[CorrectedCitation] = field(default_factory=list)
    # The sources' own lines under the answer sentences that reword them or leave their key fact out:
    # {"n", "text", "start", "end" (offsets in that source's evidence text), "why", "sentence"}.
    quotes: list[Quote] = field(default_factory=list)
    # The identifiers, numbers, frequencies and commands of unsupported sentences that no given source holds
    # (verdict.invented_specifics): what "check before acting" is about. Empty, like `contradicting`, while
    # `grounded` is False: the unsupported sentences are worded differently from the sources, name nothing
    # the sources do not, and negate nothing they say.
    invented: list[str] = field(default_factory=list)
    # Sentences that assert what their source negates, or swap a word for its opposite (support.py).
    contradicting: list[str] = field(default_factory=list)
    prompt: dict[str, int] = field(default_factory=dict)
    generation: dict[str, Any] = field(default_factory=dict)
    # The model stopped at generator.max_tokens: the answer may lack its last steps, so it is never shown as
    # complete.
    truncated: bool = False
    # What was searched and answered: `question` itself, or a follow-up made standalone (answer/followup.py).
    searched: str = ""
    rewrite: str = "none"  # the method that made `searched` ("none" for a first question)
    # Misspelt words searched as the documents' words ({"question": searched, "corrections": [{typed,
    # suggested}]}, retrieve/spelling.py); None when nothing was corrected.
    did_you_mean: dict[str, Any] | None = None
    # What kind of answer this is: "procedure" (a section's steps, verbatim), "excerpt" (the lines that state
    # a value or a fact, verbatim), "generated" (the model's words, checked) or "refusal".
    answer_kind: str = "generated"
    # The source's own items, in the order shown, each cited (answer/quoted/): empty for a generated answer.
    steps: list[Step] = field(default_factory=list)
    sections: list[ShownSection] = field(default_factory=list)
    alternatives: list[Alternative] = field(default_factory=list)
    # The evidence model's probability that the documents answer the question (retrieve/evidence.py): the
    # audit keeps it, so the gaps report can find answers given on thin evidence.
    evidence_confidence: float | None = None
    # How sure the quoted answer's choice is (answer/quoted/choice.py): "certain" (no rival close to it),
    # "close" (another section nearly as likely: named first in `alternatives`) or "uncertain" (the chosen
    # section is more likely than any other but not likely); None for generated answers and refusals.
    confidence: Confidence | None = None
    # The ranker's probability that the shown section (or a part of it, or a section holding it) answers.
    choice_probability: float | None = None
    # Words of the question the documents never use (retrieve/evidence.py's unknown terms, misspellings already
    # corrected). Most are harmless ("bigger", slang, a typo of English).
    unmatched_terms: list[str] = field(default_factory=list)
    # Those of them that may name a subject the documents do not cover (answer/unmatched_note.py, fitted): an
    # answer given despite them may be about something else ("the chlorine dioxide generator" answered from the
    # standby generator's test), so the page and the CLI name them and withhold the ✓.
    unmatched_warning_terms: list[str] = field(default_factory=list)
    # The local model's check of the section choice, where answer.llm_judge runs it; None where it did not run.
    judge: JudgeCheck | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["timings_ms"] = {k: round(v, 1) for k, v in self.timings_ms.items()}
        return data


EventKind = Literal["evidence", "steps", "revised", "token", "done"]


@dataclass(frozen=True)
class AnswerEvent:
    kind: EventKind
    evidence: list[EvidenceItem] | None = None
    text: str | None = None
    result: AnswerResult | None = None
    # kind "steps": the quoted answer's kind and items, as soon as search has chosen them.
    answer_kind: str | None = None
    steps: list[Step] | None = None
    # kind "steps": the local model checks the choice next (a "revised" event may replace these steps).
    checking: bool = False
    # kind "revised": the judged section's evidence, answer_kind and steps replace what was shown; this names
    # the section shown first.
    first_shown: Alternative | None = None


def refusal_result(question: str, closest: list[EvidenceItem], timings: dict[str, float], reason: str) -> AnswerResult:
    """ "The documents do not cover this", with the closest passages so the operator can look himself."""
    return AnswerResult(
        question=question,
        answer=REFUSAL,
        refused=True,
        grounded=False,
        verified=False,
        unsupported=[],
        citations=[],
        evidence=closest,
        timings_ms=timings,
        model=None,  # no model was asked
        refusal_reason=reason,
        answer_kind="refusal",
    )


def ms_since(started: float) -> float:
    """Milliseconds since `started` (a time.perf_counter() reading): what `timings_ms` holds."""
    return (time.perf_counter() - started) * 1000.0
