"""Ask: retrieve → (refuse without the LLM | prompt → stream the answer) → check every citation.

`Answerer.events()` is the one code path for the CLI and the API: it yields the evidence first
(the SOP's own sentences, so an operator can read them while the model writes), then the answer
text as it is generated, then the finished `AnswerResult` with citations and the grounding check.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from appliance.answer.abstention import abstention_reason, other_subject_reason
from appliance.answer.attribution import attribute_citations
from appliance.answer.citations import parse_citations
from appliance.answer.evidence_sentences import best_sentences
from appliance.answer.followup import Standalone, Turn, standalone_question
from appliance.answer.prompt import REFUSAL, SYSTEM_PROMPT, Prompt, Source, build_prompt
from appliance.answer.support import check_support, extract_terms
from appliance.config import Settings
from appliance.index.catalog import ChunkRow
from appliance.models.generation import ChatMessage, Generator, load_generator
from appliance.retrieve.filters import NO_FILTERS, Filters
from appliance.retrieve.search import Hit, Searcher

# How many of the closest passages a refusal still lists, so the operator can look for himself.
REFUSAL_CLOSEST = 3
_MODEL_REFUSAL = re.compile(
    r"(the )?(documents|sources)( provided)? do(es)? not (cover|answer|contain|mention|specify|state|say|give)", re.I
)


@dataclass(frozen=True)
class EvidenceSentence:
    text: str
    start: int  # character offsets in the passage text
    end: int
    score: float


@dataclass(frozen=True)
class EvidenceItem:
    n: int | None  # source number in the prompt; None for the closest passages of a refusal
    chunk_id: str
    path: str
    title: str
    section: str
    page: int | None
    score: float
    text: str
    sentences: list[EvidenceSentence]
    # The chunks whose joined text `text` is, in document order (the retrieved one and its window).
    chunk_ids: list[str] = field(default_factory=list)
    # The document's id for GET /v1/documents/{id}/file and /view (None if it left the index meanwhile).
    document_id: int | None = None


@dataclass(frozen=True)
class Citation:
    n: int
    chunk_id: str
    path: str
    section: str
    page: int | None
    document_id: int | None = None


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
    prompt: dict[str, int] = field(default_factory=dict)
    generation: dict[str, Any] = field(default_factory=dict)
    # The model stopped at generator.max_tokens: the answer may lack its last steps (22% of the runbook
    # tune answers did with 384 tokens), so it is never shown as complete.
    truncated: bool = False
    # What was searched and answered: `question` itself, or a follow-up made standalone (answer/followup.py).
    searched: str = ""
    rewrite: str = "none"  # the method that made `searched` ("none" for a first question)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["timings_ms"] = {k: round(v, 1) for k, v in self.timings_ms.items()}
        return data


EventKind = Literal["evidence", "token", "done"]


@dataclass(frozen=True)
class AnswerEvent:
    kind: EventKind
    evidence: list[EvidenceItem] | None = None
    text: str | None = None
    result: AnswerResult | None = None


def checked_text(source: Source) -> str:
    """What an answer citing `source` is checked against: the passage, and the identifiers its label names.

    The model reads the label too, so "as SOP-LAB-001 says [1]" is not unsupported when SOP-LAB-001 is in
    the title. Only identifiers: with the label's words as well, a tune question the runbooks do not
    answer (how many gitaly-ruby workers) got a grounded answer made of the title's words.
    """
    identifiers = extract_terms(source.label).identifiers
    return f"{source.text}\n{' '.join(identifiers)}" if identifiers else source.text


class Answerer:
    """One per process: holds the searcher (index, embedder) and the generator (loaded on first use)."""

    def __init__(
        self, settings: Settings, searcher: Searcher | None = None, generator: Generator | None = None
    ) -> None:
        self.settings = settings
        self.searcher = searcher or Searcher(settings)
        self._generator = generator

    @property
    def generator(self) -> Generator:
        if self._generator is None:
            self._generator = load_generator(self.settings)
        return self._generator

    def close(self) -> None:
        self.searcher.close()
        if self._generator is not None:
            self._generator.close()

    def ask(
        self, question: str, *, k: int | None = None, filters: Filters = NO_FILTERS, history: Sequence[Turn] = ()
    ) -> AnswerResult:
        for event in self.events(question, k=k, filters=filters, history=history):
            if event.kind == "done" and event.result is not None:
                return event.result
        raise RuntimeError("the answer stream ended without a result")  # pragma: no cover

    def standalone(self, question: str, history: Sequence[Turn]) -> Standalone:
        """The question to search and answer: a follow-up rewritten with the conversation (setting followup.*)."""
        method = self.settings.followup.rewrite
        return standalone_question(
            question,
            history,
            method=method,
            max_turns=self.settings.followup.max_turns,
            generator=self.generator if method in ("model", "both") and history else None,
            system=SYSTEM_PROMPT,
            known=self.searcher.index.catalog.knows_word,
            judge=self._judge,
        )

    def _judge(self, text: str) -> tuple[bool, float]:
        evidence = self.searcher.search(text, k=REFUSAL_CLOSEST).evidence
        return evidence.sufficient, evidence.probability

    def events(
        self, question: str, *, k: int | None = None, filters: Filters = NO_FILTERS, history: Sequence[Turn] = ()
    ) -> Iterator[AnswerEvent]:
        """The answer's events. With `history` (earlier turns) the question is made standalone first; the
        earlier answers are never given to the model as sources, only the retrieved passages are."""
        started = time.perf_counter()
        standalone = self.standalone(question, history)
        asked, question = question, standalone.question
        max_sources = k or self.settings.answer.max_sources
        found = self.searcher.search(question, k=max(max_sources, REFUSAL_CLOSEST), filters=filters)
        timings = {"retrieve": found.timings_ms.get("total", 0.0) - found.timings_ms.get("rerank", 0.0)}
        if standalone.method != "none":
            timings["rewrite"] = standalone.ms
        if "rerank" in found.timings_ms:
            timings["rerank"] = found.timings_ms["rerank"]
        rows = self._rows(found.hits)

        if not found.evidence.sufficient:
            closest = [
                self._evidence_item(question, None, hit, rows[hit.chunk_id]) for hit in found.hits[:REFUSAL_CLOSEST]
            ]
            yield AnswerEvent("evidence", evidence=closest)
            timings["total"] = _ms(started)
            result = self._refusal(question, closest, timings, found.evidence.reason)
            yield AnswerEvent("done", result=_as_asked(result, asked, standalone))
            return

        generator = self.generator
        budget = min(self.settings.answer.max_prompt_tokens, generator.n_ctx - self.settings.generator.max_tokens)
        prompt = build_prompt(
            question,
            [rows[hit.chunk_id] for hit in found.hits],
            count_tokens=generator.count_tokens,
            budget_tokens=budget,
            max_sources=max_sources,
            following=self.searcher.index.catalog.following_chunks,
            window_chunks=self.settings.answer.window_chunks,
        )
        if not prompt.sources:
            # Not even the best passage fits: a model asked without sources can only invent an answer.
            closest = [
                self._evidence_item(question, None, hit, rows[hit.chunk_id]) for hit in found.hits[:REFUSAL_CLOSEST]
            ]
            yield AnswerEvent("evidence", evidence=closest)
            timings["total"] = _ms(started)
            reason = (
                f"no passage fits the prompt budget of {budget} tokens "
                "(settings answer.max_prompt_tokens, generator.n_ctx, generator.max_tokens)"
            )
            yield AnswerEvent(
                "done", result=_as_asked(self._refusal(question, closest, timings, reason), asked, standalone)
            )
            return
        evidence = [
            self._evidence_item(
                question, source.n, _hit_of(found.hits, source), source.chunk, source.text, source.chunks
            )
            for source in prompt.sources
        ]
        yield AnswerEvent("evidence", evidence=evidence)

        messages = [ChatMessage(role, content) for role, content in prompt.messages()]
        pieces: list[str] = []
        first_token_ms: float | None = None
        with generator.stream(messages, max_tokens=self.settings.generator.max_tokens) as stream:
            for piece in stream:
                if first_token_ms is None and piece.strip():
                    first_token_ms = _ms(started)
                pieces.append(piece)
                yield AnswerEvent("token", text=piece)
        stats = stream.stats
        timings["first_token"] = first_token_ms if first_token_ms is not None else _ms(started)
        timings["total"] = _ms(started)
        result = self._checked(question, "".join(pieces), prompt, evidence, timings, stats)
        yield AnswerEvent("done", result=_as_asked(result, asked, standalone))

    # --- helpers -----------------------------------------------------------------------------

    def _rows(self, hits: list[Hit]) -> dict[str, ChunkRow]:
        return self.searcher.index.catalog.chunks_by_ids([hit.chunk_id for hit in hits])

    def _evidence_item(
        self,
        question: str,
        n: int | None,
        hit: Hit | None,
        row: ChunkRow,
        text: str | None = None,
        window: tuple[ChunkRow, ...] = (),
    ) -> EvidenceItem:
        passage = text if text is not None else row.text
        spans = best_sentences(question, passage, k=self.settings.answer.evidence_sentences)
        files = self.searcher.index.catalog.document_files([row.document_path])
        return EvidenceItem(
            n=n,
            chunk_id=row.id,
            path=row.document_path,
            title=row.title,
            section=row.section,
            page=row.page,
            score=hit.score if hit is not None else 0.0,
            text=passage,
            sentences=[EvidenceSentence(passage[s:e], s, e, round(score, 4)) for s, e, score in spans],
            chunk_ids=[chunk.id for chunk in window] or [row.id],
            document_id=files[row.document_path][0] if row.document_path in files else None,
        )

    def _refusal(
        self, question: str, closest: list[EvidenceItem], timings: dict[str, float], reason: str
    ) -> AnswerResult:
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
        )

    def _checked(
        self,
        question: str,
        raw_answer: str,
        prompt: Prompt,
        evidence: list[EvidenceItem],
        timings: dict[str, float],
        stats: Any,
    ) -> AnswerResult:
        report = parse_citations(raw_answer.strip(), len(prompt.sources))
        by_number = {source.n: source for source in prompt.sources}
        source_texts = {source.n: checked_text(source) for source in prompt.sources}
        text, sentences, attributed = attribute_citations(report.text, report.sentences, source_texts)
        support = check_support(sentences, source_texts, embed=self.searcher.embedder.embed, question=question)
        if _MODEL_REFUSAL.search(report.text) and not report.cited:
            refusal_reason: str | None = "the model found no answer in the sources"
        else:
            refusal_reason = abstention_reason(question, support)
        cited = sorted({n for sentence in sentences for n in sentence.cited})
        if refusal_reason is None:
            # A source is read with its label: the title and section often carry the unit's name.
            labelled = {source.n: source.block() for source in prompt.sources}
            refusal_reason = other_subject_reason(question, {n: labelled[n] for n in cited if n in labelled}, labelled)
        refused = refusal_reason is not None
        citations = []
        for n in cited:
            # A source may span several chunks: cite the one holding the words that rely on it.
            chunk = by_number[n].chunk_for([sentence.text for sentence in sentences if n in sentence.cited])
            document_id = next((item.document_id for item in evidence if item.path == chunk.document_path), None)
            citations.append(Citation(n, chunk.id, chunk.document_path, chunk.section, chunk.page, document_id))
        generation: dict[str, Any] = {}
        if stats is not None:
            generation = {
                "prompt_tokens": stats.prompt_tokens,
                "prompt_eval_tokens": stats.prompt_eval_tokens,  # fewer when the system prompt's prefix was cached
                "completion_tokens": stats.completion_tokens,
                "prefill_ms": stats.prefill_ms,
                "decode_ms": stats.decode_ms,
                "queue_wait_ms": stats.queue_wait_ms,
                "finish_reason": stats.finish_reason,
            }
        return AnswerResult(
            question=question,
            answer=REFUSAL if refused else text,
            refused=refused,
            grounded=False if refused else support.grounded,
            verified=False if refused else support.verified,
            unsupported=[] if refused else support.unsupported,
            citations=[] if refused else citations,
            evidence=evidence,
            timings_ms=timings,
            model=self.generator.model_id,
            refusal_reason=refusal_reason,
            removed_citations=report.removed,
            attributed_citations=[] if refused else attributed,
            prompt={"tokens": prompt.prompt_tokens, "sources": len(prompt.sources), "dropped": prompt.dropped},
            generation=generation,
            truncated=not refused and stats is not None and stats.finish_reason == "length",
        )


def _as_asked(result: AnswerResult, asked: str, standalone: Standalone) -> AnswerResult:
    """The result under the operator's own words, with what was searched beside them."""
    result.searched = result.question
    result.question = asked
    result.rewrite = standalone.method
    return result


def _hit_of(hits: list[Hit], source: Source) -> Hit | None:
    return next((hit for hit in hits if hit.chunk_id == source.chunk.id), None)


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0
