"""Ask: the question made standalone and read once → search → (refuse | the documents' own text | the model's
checked answer), as events.

`Answerer.events()` is the one code path for the CLI and the API. It only orchestrates: the conversation
(followup.py), the search (retrieve/), the question's reading (question.py), the section choice and the quoted
answer (quoted/), the generated answer (generated/); the records they return are results.py's.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any

from appliance.answer.evidence_items import Meaning, evidence_item
from appliance.answer.followup import Standalone, Turn, standalone_question
from appliance.answer.followup_model import SearchReader
from appliance.answer.generated.prompt import SYSTEM_PROMPT
from appliance.answer.generated.respond import generated_events
from appliance.answer.question import Question, read_question
from appliance.answer.quoted.answer import Quoted
from appliance.answer.quoted.judge import SectionJudge, section_judge
from appliance.answer.quoted.label_vectors import LabelVectors
from appliance.answer.quoted.quoting import QuotedAnswers, Quoting
from appliance.answer.results import (  # noqa: F401  (the records callers import from here)
    Alternative,
    AnswerEvent,
    AnswerResult,
    Citation,
    EvidenceItem,
    EvidenceSentence,
    JudgeCheck,
    ShownSection,
    ms_since,
    refusal_result,
)
from appliance.answer.unmatched_note import named_under_answer, warning_terms
from appliance.config import AnswerMode, Settings
from appliance.index.filters import NO_FILTERS, Filters
from appliance.index.records import ChunkRow
from appliance.models.calibration import support_calibrated
from appliance.models.generation import Generator, load_generator
from appliance.retrieve.search import Searcher, SearchResult

# How many of the closest passages a refusal still lists, so the operator can look for himself.
REFUSAL_CLOSEST = 3


class Answerer:
    """One per process: holds the searcher (index, embedder) and the generator (loaded on first use).

    The server answers each request through a view of its own (server/answering.py) that shares the process's
    searcher, generator and `labels`: a view with label vectors of its own would embed every candidate's label
    again on every question (a second and more on 2 cores)."""

    def __init__(
        self,
        settings: Settings,
        searcher: Searcher | None = None,
        generator: Generator | None = None,
        labels: LabelVectors | None = None,
    ) -> None:
        self.settings = settings
        self.searcher = searcher or Searcher(settings)
        self._generator = generator
        # The embedder's vectors of section labels, kept while the process runs (quoted/label_vectors.py). Made
        # here, not on first use, where two first questions at once would each make one and keep only the last;
        # the embedder itself still loads on first use. (`is None`: an empty LabelVectors is falsy.)
        self.labels = labels if labels is not None else LabelVectors(lambda texts: self.searcher.embedder.embed(texts))

    @property
    def generator(self) -> Generator:
        if self._generator is None:
            self._generator = load_generator(self.settings)
        return self._generator

    @cached_property
    def judge(self) -> SectionJudge | None:
        """The local model judging the section choice, where answer.llm_judge turns it on (quoted/judge.py)."""
        return section_judge(self.settings, lambda: self.generator)

    @cached_property
    def quoted(self) -> QuotedAnswers:
        """The quoted path (quoted/quoting.py): section choice, the judge, the documents' own text."""
        return QuotedAnswers(self.settings, self.searcher, lambda: self.labels, lambda: self.judge, self._controls)

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
            reader=SearchReader(self.searcher),
        )

    def _controls(self, paths: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Display path → the control block each document states (for its citations), as of today."""
        today = dt.date.today().isoformat()
        metas = self.searcher.catalog.document_meta(paths)
        return {path: meta.control.as_json(today) for path, meta in metas.items() if meta.control.stated}

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
        max_sources = k or self.settings.answer.max_sources
        quoting = (mode or self.settings.answer.mode) == "quoted"
        wanted = max(max_sources, REFUSAL_CLOSEST, self.settings.answer.section_hits if quoting else 0)
        quoted: Quoted | None = None
        quoting_state: Quoting | None = None
        timings: dict[str, float] = {}
        with self.searcher.index.reading():  # the hits, their rows and their sections from one committed state
            found = self.searcher.search(standalone.question, k=wanted, filters=filters)
            rows = self.searcher.catalog.chunks_by_ids([hit.chunk_id for hit in found.hits])
            warned = self._warning_terms(found)
            if quoting and found.evidence.sufficient:
                t = time.perf_counter()
                quoting_state = self.quoted.choose(self._read(question, standalone, found), found.hits, rows)
                quoted = self.quoted.quote(quoting_state) if quoting_state is not None else None
                timings["sections"] = ms_since(t)
        timings["retrieve"] = found.timings_ms.get("total", 0.0) - found.timings_ms.get("rerank", 0.0)
        if standalone.method != "none":
            timings["rewrite"] = standalone.ms
        if "rerank" in found.timings_ms:
            timings["rerank"] = found.timings_ms["rerank"]
        # A misspelt word was searched as the documents write it: the sources and the prompt use that wording too.
        searched = found.searched
        paths = sorted({hit.path for hit in found.hits})
        if quoted is not None:
            paths = sorted({*paths, *(s.path for s in quoted.sections), *(a.section.path for a in quoted.alternatives)})
        document_ids = {path: entry[0] for path, entry in self.searcher.catalog.document_files(paths).items()}
        controls = self._controls(paths)
        if not found.evidence.sufficient:
            events = self._refusal_events(searched, found, rows, document_ids, timings, started)
        elif quoted is not None and quoting_state is not None:
            scores = {hit.chunk_id: hit.score for hit in found.hits}
            events = self.quoted.events(
                searched, quoting_state, quoted, scores, document_ids, controls, timings, started
            )
        else:
            events = generated_events(
                searched,
                found.hits,
                rows,
                settings=self.settings,
                generator=self.generator,
                following=self.searcher.catalog.following_chunks,
                document_ids=document_ids,
                # The semantic threshold is a cosine of the embedder it was chosen on: with another, lexical rules only.
                embed=self.searcher.embedder.embed if support_calibrated(self.settings) else None,
                max_sources=max_sources,
                meaning=self._meaning(searched),
                timings=timings,
                started=started,
            )
        for event in events:
            if event.kind == "done" and event.result is not None:
                result = _with_controls(_as_asked(event.result, question, standalone, found, warned), controls)
                event = AnswerEvent("done", result=result)
            yield event

    def _meaning(self, searched: str) -> Meaning:
        """The passages' sentences marked by meaning too (evidence_items.py); the question's vector is the search's,
        from the embedder's memory of recent queries."""
        return Meaning(self.labels, self.searcher.embedder.embed_query(searched))

    def _warning_terms(self, found: SearchResult) -> list[str]:
        """The unknown words worth naming under an answer (unmatched_note.py); none for a refusal."""
        signals = found.evidence.signals
        if not found.evidence.sufficient or signals is None or not signals.unknown:
            return []
        return warning_terms(signals.unknown, found.searched, self.searcher.vocabulary, found.evidence.probability)

    def _read(self, typed: str, standalone: Standalone, found: SearchResult) -> Question:
        vector = self.searcher.embedder.embed_query(found.searched)
        return read_question(typed, standalone.question, found.searched, vector)

    def _refusal_events(
        self,
        question: str,
        found: SearchResult,
        rows: dict[str, ChunkRow],
        document_ids: dict[str, int],
        timings: dict[str, float],
        started: float,
    ) -> Iterator[AnswerEvent]:
        meaning = self._meaning(question)
        closest = [
            evidence_item(
                question,
                None,
                hit.score,
                rows[hit.chunk_id],
                document_ids,
                self.settings.answer.evidence_sentences,
                meaning=meaning,
            )
            for hit in found.hits[:REFUSAL_CLOSEST]
            if hit.chunk_id in rows
        ]
        yield AnswerEvent("evidence", evidence=closest)
        timings["total"] = ms_since(started)
        yield AnswerEvent("done", result=refusal_result(question, closest, timings, found.evidence.reason))


def _with_controls(result: AnswerResult, controls: Mapping[str, dict[str, Any]]) -> AnswerResult:
    """The result's citations and sections with the revision their document states (its control block)."""
    result.citations = [replace(c, document_control=controls.get(c.path)) for c in result.citations]
    result.sections = [replace(s, document_control=controls.get(s.path)) for s in result.sections]
    return result


def _shows_tick(result: AnswerResult) -> bool:
    """Whether the answer would carry the ✓: a quoted choice the ranker is sure of, or a grounded generated one."""
    return result.confidence == "certain" or (result.confidence is None and result.grounded)


def _as_asked(
    result: AnswerResult, asked: str, standalone: Standalone, found: SearchResult, warned: list[str]
) -> AnswerResult:
    """The result under the operator's own words, with what was searched beside them."""
    result.searched = result.question
    result.question = asked
    result.rewrite = standalone.method
    result.did_you_mean = found.did_you_mean
    result.evidence_confidence = round(float(found.evidence.probability), 4)
    if not result.refused and found.evidence.signals is not None:
        result.unmatched_terms = list(found.evidence.signals.unknown_terms)
        result.unmatched_warning_terms = named_under_answer(result.unmatched_terms, warned, _shows_tick(result))
    return result
