"""Ask: retrieve → (refuse without the LLM | prompt → stream the answer) → the verdict (verdict.py).

`Answerer.events()` is the one code path for the CLI and the API: it yields the evidence first
(the SOP's own sentences, so an operator can read them while the model writes), then the answer
text as it is generated, then the finished `AnswerResult` with citations and the grounding check.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from appliance.answer.evidence_sentences import best_sentences
from appliance.answer.followup import Standalone, Turn, standalone_question
from appliance.answer.generated.attribution import CorrectedCitation
from appliance.answer.generated.prompt import REFUSAL, SYSTEM_PROMPT, Prompt, Source, build_prompt
from appliance.answer.generated.quotes import Quote
from appliance.answer.generated.verdict import judge_answer
from appliance.answer.ocr_trust import lowest_confidence, ocr_note, untrusted_sources
from appliance.answer.quoted.answer import Quoted, Step, quote_answer
from appliance.answer.quoted.choice import choose_section
from appliance.answer.quoted.sections import Section
from appliance.config import AnswerMode, Settings
from appliance.index.filters import NO_FILTERS, Filters
from appliance.index.records import ChunkRecord, ChunkRow
from appliance.models.calibration import support_calibrated
from appliance.models.generation import ChatMessage, Generator, load_generator
from appliance.retrieve.search import Hit, Searcher, SearchResult
from appliance.text.questions import question_kind

# How many of the closest passages a refusal still lists, so the operator can look for himself.
REFUSAL_CLOSEST = 3


@dataclass(frozen=True)
class EvidenceSentence:
    text: str
    start: int  # character offsets in the passage text
    end: int
    score: float


@dataclass(frozen=True, kw_only=True)
class EvidenceItem(ChunkRecord):
    """A passage shown with an answer: `text` is the whole source given to the model (the best chunk's
    window), `chunk_id` its best retrieved chunk."""

    n: int | None  # source number in the prompt; None for the closest passages of a refusal
    score: float
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
    ocr_confidence: float | None = None  # the cited passage was read by OCR: its lowest chunk confidence
    ocr_note: str | None = None  # "text recognised by OCR: check the page" when that is low
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
    score: float
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
    # The model stopped at generator.max_tokens: the answer may lack its last steps (22% of the runbook
    # tune answers did with 384 tokens), so it is never shown as complete.
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
    # The source's own items, in the order shown, each cited (answer/quoted.py): empty for a generated answer.
    steps: list[Step] = field(default_factory=list)
    sections: list[ShownSection] = field(default_factory=list)
    alternatives: list[Alternative] = field(default_factory=list)
    # The evidence model's probability that the documents answer the question (retrieve/evidence.py): the
    # audit keeps it, so the gaps report can find answers given on thin evidence.
    evidence_confidence: float | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["timings_ms"] = {k: round(v, 1) for k, v in self.timings_ms.items()}
        return data


EventKind = Literal["evidence", "steps", "token", "done"]


@dataclass(frozen=True)
class AnswerEvent:
    kind: EventKind
    evidence: list[EvidenceItem] | None = None
    text: str | None = None
    result: AnswerResult | None = None
    # kind "steps": the quoted answer's kind and items, as soon as search has chosen them.
    answer_kind: str | None = None
    steps: list[Step] | None = None


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

    def _controls(self, paths: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Display path → the control block each document states (for its citations), as of today."""
        today = dt.date.today().isoformat()
        metas = self.searcher.catalog.document_meta(paths)
        return {path: meta.control.as_json(today) for path, meta in metas.items() if meta.control.stated}

    def close(self) -> None:
        self.searcher.close()
        if self._generator is not None:
            self._generator.close()

    def ask(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters = NO_FILTERS,
        history: Sequence[Turn] = (),
        mode: AnswerMode | None = None,
    ) -> AnswerResult:
        for event in self.events(question, k=k, filters=filters, history=history, mode=mode):
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
            known=self.searcher.catalog.knows_word,
            judge=self._judge,
        )

    def _judge(self, text: str) -> tuple[bool, float]:
        evidence = self.searcher.search(text, k=REFUSAL_CLOSEST).evidence
        return evidence.sufficient, evidence.probability

    def events(
        self,
        question: str,
        *,
        k: int | None = None,
        filters: Filters = NO_FILTERS,
        history: Sequence[Turn] = (),
        mode: AnswerMode | None = None,
    ) -> Iterator[AnswerEvent]:
        """The answer's events. With `history` (earlier turns) the question is made standalone first; the
        earlier answers are never given to the model as sources, only the retrieved passages are. `mode`
        overrides the setting answer.mode for this question (quoted: the documents' own text; generated:
        the model's answer)."""
        started = time.perf_counter()
        standalone = self.standalone(question, history)
        asked, question = question, standalone.question
        max_sources = k or self.settings.answer.max_sources
        quoting = (mode or self.settings.answer.mode) == "quoted"
        wanted = max(max_sources, REFUSAL_CLOSEST, self.settings.answer.section_hits if quoting else 0)
        quoted: Quoted | None = None
        section_ms = 0.0
        with self.searcher.index.reading():  # the hits, their rows and their sections from one committed state
            found = self.searcher.search(question, k=wanted, filters=filters)
            rows = self._rows(found.hits)
            if quoting and found.evidence.sufficient:
                t = time.perf_counter()
                quoted = self._quote(found.searched, found.hits, rows)
                section_ms = _ms(t)
        # A misspelt word was searched as the documents write it: the sources and the prompt use that wording too.
        question = found.searched
        timings = {"retrieve": found.timings_ms.get("total", 0.0) - found.timings_ms.get("rerank", 0.0)}
        if standalone.method != "none":
            timings["rewrite"] = standalone.ms
        if "rerank" in found.timings_ms:
            timings["rerank"] = found.timings_ms["rerank"]

        if not found.evidence.sufficient:
            closest = [
                self._evidence_item(question, None, hit, rows[hit.chunk_id]) for hit in found.hits[:REFUSAL_CLOSEST]
            ]
            yield AnswerEvent("evidence", evidence=closest)
            timings["total"] = _ms(started)
            result = self._refusal(question, closest, timings, found.evidence.reason)
            yield AnswerEvent("done", result=_as_asked(result, asked, standalone, found))
            return

        if quoted is not None:
            timings["sections"] = section_ms
            yield from self._quoted_events(question, quoted, found, rows, timings, started, asked, standalone)
            return

        generator = self.generator
        budget = min(self.settings.answer.max_prompt_tokens, generator.n_ctx - self.settings.generator.max_tokens)
        prompt = build_prompt(
            question,
            [rows[hit.chunk_id] for hit in found.hits],
            count_tokens=generator.count_tokens,
            budget_tokens=budget,
            max_sources=max_sources,
            following=self.searcher.catalog.following_chunks,
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
                "done", result=_as_asked(self._refusal(question, closest, timings, reason), asked, standalone, found)
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
        yield AnswerEvent("done", result=_as_asked(result, asked, standalone, found))

    # --- the SOP's own text (answer.mode = "quoted") ---------------------------------------------

    def _quote(self, question: str, hits: Sequence[Hit], rows: dict[str, ChunkRow]) -> Quoted | None:
        ranked = [(rows[hit.chunk_id], hit.score) for hit in hits if hit.chunk_id in rows]
        kind = question_kind(question)
        embedder = self.searcher.embedder
        vector = embedder.embed_query(question)
        # The choice reads the best documents whole; the excerpt's other sections mostly lie in them again.
        chunks_of = _read_once(self.searcher.catalog.chunks_of_documents)
        choice = choose_section(
            question,
            ranked,
            chunks_of,
            embedder.embed,
            vector,
            procedure=kind == "procedure",
            whole_words=self.settings.answer.max_procedure_words,
        )
        if choice is None:
            return None
        settings = self.settings.answer
        return quote_answer(
            question,
            kind,
            choice,
            ranked,
            chunks_of=chunks_of,
            embed_texts=embedder.embed,
            question_vector=vector,
            max_words=settings.max_procedure_words,
            excerpt_words=settings.excerpt_words,
        )

    def _quoted_events(
        self,
        question: str,
        quoted: Quoted,
        found: SearchResult,
        rows: dict[str, ChunkRow],
        timings: dict[str, float],
        started: float,
        asked: str,
        standalone: Standalone,
    ) -> Iterator[AnswerEvent]:
        files = self.searcher.catalog.document_files(
            sorted({s.path for s in quoted.sections} | {a.section.path for a in quoted.alternatives})
        )
        document_ids = {path: entry[0] for path, entry in files.items()}
        controls = self._controls(files)
        scores = {hit.chunk_id: hit.score for hit in found.hits}
        evidence = [
            self._section_item(question, n, section, quoted, scores, document_ids)
            for n, section in enumerate(quoted.sections, 1)
        ]
        if quoted.refusal_reason is not None:
            closest = [replace_n(item, None) for item in evidence]
            yield AnswerEvent("evidence", evidence=closest)
            timings["total"] = _ms(started)
            result = self._refusal(question, closest, timings, quoted.refusal_reason)
            yield AnswerEvent("done", result=_as_asked(result, asked, standalone, found))
            return
        yield AnswerEvent("evidence", evidence=evidence)
        timings["first_content"] = _ms(started)
        yield AnswerEvent("steps", answer_kind=quoted.kind, steps=quoted.steps)
        low = self.settings.ingest.ocr_low_confidence
        citations = [
            Citation(
                item.n or 0,
                item.chunk_id,
                item.path,
                item.section,
                item.page,
                item.document_id,
                item.ocr_confidence,
                ocr_note(item.ocr_confidence, low),
                controls.get(item.path),
            )
            for item in evidence
        ]
        shown = [
            ShownSection(
                n, s.path, s.title, s.heading, list(s.pages), s.words, document_ids.get(s.path), controls.get(s.path)
            )
            for n, s in enumerate(quoted.sections, start=1)
        ]
        alternatives = [
            Alternative(
                a.section.path,
                a.section.title,
                a.section.heading,
                a.section.chunks[0].page,
                (a.hits or (a.section.chunks[0].chunk_id,))[0],
                round(a.score, 4),
                document_ids.get(a.section.path),
            )
            for a in quoted.alternatives
        ]
        timings["total"] = _ms(started)
        result = AnswerResult(
            question=question,
            answer=quoted.text(),
            refused=False,
            grounded=True,  # every word shown is the source's own, at the place it cites
            verified=True,
            unsupported=[],
            citations=citations,
            evidence=evidence,
            timings_ms=timings,
            model=None,  # no model was asked
            answer_kind=quoted.kind,
            steps=quoted.steps,
            sections=shown,
            alternatives=alternatives,
        )
        yield AnswerEvent("done", result=_as_asked(result, asked, standalone, found))

    def _section_item(
        self,
        question: str,
        n: int,
        section: Section,
        quoted: Quoted,
        scores: dict[str, float],
        document_ids: dict[str, int],
    ) -> EvidenceItem:
        """A shown section as a source: its text as shown, cited at its first matched chunk (else its first)."""
        steps = [step for step in quoted.steps if step.n == n and step.kind != "omitted"]
        text = "\n".join(step.text for step in steps)
        cited = next((step for step in steps if step.matched), steps[0] if steps else None)
        chunk = next(
            (c for c in section.chunks if cited is not None and c.chunk_id == cited.chunk_id), section.chunks[0]
        )
        spans = best_sentences(question, text, k=self.settings.answer.evidence_sentences)
        return EvidenceItem(
            n=n,
            chunk_id=chunk.chunk_id,
            path=section.path,
            title=section.title,
            section=chunk.section,
            page=chunk.page,
            score=max((scores.get(c.chunk_id, 0.0) for c in section.chunks), default=0.0),
            text=text,
            sentences=[EvidenceSentence(text[s:e], s, e, round(score, 4)) for s, e, score in spans],
            chunk_ids=[c.chunk_id for c in section.chunks],
            document_id=document_ids.get(section.path),
            ocr_confidence=lowest_confidence(section.chunks),
        )

    # --- helpers -----------------------------------------------------------------------------

    def _rows(self, hits: list[Hit]) -> dict[str, ChunkRow]:
        return self.searcher.catalog.chunks_by_ids([hit.chunk_id for hit in hits])

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
        files = self.searcher.catalog.document_files([row.path])
        return EvidenceItem(
            n=n,
            chunk_id=row.chunk_id,
            path=row.path,
            title=row.title,
            section=row.section,
            page=row.page,
            score=hit.score if hit is not None else 0.0,
            text=passage,
            sentences=[EvidenceSentence(passage[s:e], s, e, round(score, 4)) for s, e, score in spans],
            chunk_ids=[chunk.chunk_id for chunk in window] or [row.chunk_id],
            document_id=files[row.path][0] if row.path in files else None,
            ocr_confidence=lowest_confidence(window or (row,)),
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
            answer_kind="refusal",
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
        # The semantic threshold is a cosine of the embedder it was chosen on: with another, lexical rules only.
        embed = self.searcher.embedder.embed if support_calibrated(self.settings) else None
        low = self.settings.ingest.ocr_low_confidence
        verdict = judge_answer(
            question,
            raw_answer,
            prompt.sources,
            embed=embed,
            semantic_threshold=self.settings.support.semantic_threshold,
            untrusted=untrusted_sources(
                [(s.n, s.chunks) for s in prompt.sources], self.settings.ingest.ocr_low_confidence
            ),
        )
        support, refused = verdict.support, verdict.refused
        by_number = {source.n: source for source in prompt.sources}
        controls = self._controls(source.chunks[0].path for source in prompt.sources if source.chunks)
        citations = []
        for n in verdict.cited:
            # A source may span several chunks: cite the one holding the words that rely on it.
            chunk = by_number[n].chunk_for([sentence.text for sentence in verdict.sentences if n in sentence.cited])
            document_id = next((item.document_id for item in evidence if item.path == chunk.path), None)
            confidence = chunk.ocr_confidence
            note = ocr_note(confidence, low)
            citations.append(
                Citation(
                    n,
                    chunk.chunk_id,
                    chunk.path,
                    chunk.section,
                    chunk.page,
                    document_id,
                    confidence,
                    note,
                    controls.get(chunk.path),
                )
            )
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
                # draft-and-verify decoding (generator.draft): tokens proposed and those the model kept
                "draft_tokens": stats.draft_tokens,
                "accepted_tokens": stats.accepted_tokens,
            }
        return AnswerResult(
            question=question,
            answer=REFUSAL if refused else verdict.text,
            refused=refused,
            grounded=False if refused else support.grounded,
            verified=False if refused else support.verified,
            unsupported=[] if refused else support.unsupported,
            citations=[] if refused else citations,
            evidence=evidence,
            timings_ms=timings,
            model=self.generator.model_id,
            refusal_reason=verdict.refusal_reason,
            answer_kind="refusal" if refused else "generated",
            removed_citations=verdict.removed,
            attributed_citations=[] if refused else verdict.attributed,
            corrected_citations=[] if refused else verdict.corrected,
            quotes=[] if refused else verdict.quotes,
            invented=[] if refused else verdict.invented,
            contradicting=[] if refused else verdict.contradicting,
            prompt={"tokens": prompt.prompt_tokens, "sources": len(prompt.sources), "dropped": prompt.dropped},
            generation=generation,
            truncated=not refused and stats is not None and stats.finish_reason == "length",
        )


def _as_asked(result: AnswerResult, asked: str, standalone: Standalone, found: SearchResult) -> AnswerResult:
    """The result under the operator's own words, with what was searched beside them."""
    result.searched = result.question
    result.question = asked
    result.rewrite = standalone.method
    result.did_you_mean = found.did_you_mean
    result.evidence_confidence = round(float(found.evidence.probability), 4)
    return result


def replace_n(item: EvidenceItem, n: int | None) -> EvidenceItem:
    return replace(item, n=n)


def _hit_of(hits: list[Hit], source: Source) -> Hit | None:
    return next((hit for hit in hits if hit.chunk_id == source.chunk.chunk_id), None)


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


def _read_once(
    chunks_of: Callable[[Sequence[str]], dict[str, list[ChunkRow]]],
) -> Callable[[Sequence[str]], dict[str, list[ChunkRow]]]:
    """`chunks_of` reading each document from the catalog once per question."""
    read: dict[str, list[ChunkRow]] = {}

    def chunks_of_once(paths: Sequence[str]) -> dict[str, list[ChunkRow]]:
        missing = [path for path in paths if path not in read]
        if missing:
            read.update(chunks_of(missing))
        return {path: read[path] for path in paths}

    return chunks_of_once
