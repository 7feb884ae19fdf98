"""The quoted path of an ask: the section chosen (choice.py), judged by the local model where answer.llm_judge
runs it (judge.py: before the steps are shown, or after them: checked_after.py), quoted (answer.py), as events
(respond.py).

`QuotedAnswers.choose` runs inside the index's read guard with the search; the events, and a judge that runs
after the steps are shown, outside it (a re-quote takes the guard again for its own reads).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from appliance.answer.evidence_items import Meaning
from appliance.answer.question import Question
from appliance.answer.quoted.answer import Quoted, quote_answer
from appliance.answer.quoted.checked_after import checked_after, first_shown_of
from appliance.answer.quoted.choice import Choice, choose_section
from appliance.answer.quoted.judge import SectionJudge
from appliance.answer.quoted.label_vectors import LabelVectors
from appliance.answer.quoted.respond import quoted_events
from appliance.answer.results import AnswerEvent, JudgeCheck
from appliance.config import Settings
from appliance.index.records import ChunkRow
from appliance.retrieve.search import Hit, Searcher


@dataclass(frozen=True)
class Quoting:
    """What a quoted answer was chosen from: kept for the judge that runs after the steps are shown."""

    question: Question
    choice: Choice
    ranked: list[tuple[ChunkRow, float]]
    chunks_of: Callable[[Sequence[str]], dict[str, list[ChunkRow]]]
    check: JudgeCheck | None  # the judge's check where it ran before the steps were shown


class QuotedAnswers:
    """One process's quoted path: the searcher's catalog and embedder, the label vectors, the judge (or None)."""

    def __init__(
        self,
        settings: Settings,
        searcher: Searcher,
        labels: Callable[[], LabelVectors],
        judge: Callable[[], SectionJudge | None],
        controls: Callable[[Iterable[str]], dict[str, dict[str, Any]]],
    ) -> None:
        self.settings = settings
        self.searcher = searcher
        self._labels = labels
        self._judge = judge
        self._controls = controls

    def choose(self, question: Question, hits: Sequence[Hit], rows: dict[str, ChunkRow]) -> Quoting | None:
        """The ranker's section choice, judged now where the judge runs before the steps are shown."""
        ranked = [(rows[hit.chunk_id], hit.score) for hit in hits if hit.chunk_id in rows]
        catalog = self.searcher.catalog
        # The choice reads the best documents whole; the excerpt's other sections mostly lie in them again.
        chunks_of = read_once(catalog.chunks_of_documents)
        choice = choose_section(
            question,
            ranked,
            chunks_of,
            self._labels(),
            lambda ids: dict(catalog.embeddings(dict.fromkeys(ids))),
            catalog.documents_named,
        )
        if choice is None:
            return None
        check = None
        judge = self._judge()
        if judge is not None and judge.timing == "before":
            judged = judge(question, choice)
            if judged is not choice:
                kept = judged.chosen.section is choice.chosen.section
                check = JudgeCheck("before", kept=kept, ms=round(judge.last_ms, 1), odds=judge.last_odds)
            choice = judged
        return Quoting(question, choice, ranked, chunks_of, check)

    def quote(self, state: Quoting, choice: Choice | None = None) -> Quoted | None:
        settings = self.settings.answer
        return quote_answer(
            state.question,
            choice or state.choice,
            state.ranked,
            chunks_of=state.chunks_of,
            embed_texts=self._labels(),  # fact lines recur as their documents do: embedded once
            max_words=settings.max_procedure_words,
            excerpt_words=settings.excerpt_words,
            max_steps_words=settings.max_steps_words,
        )

    def events(
        self,
        searched: str,
        state: Quoting,
        quoted: Quoted,
        scores: dict[str, float],
        document_ids: dict[str, int],
        controls: dict[str, dict[str, Any]],
        timings: dict[str, float],
        started: float,
    ) -> Iterator[AnswerEvent]:
        """The quoted answer's events; where the judge runs after the steps are shown, its check follows them
        (`controls` gains the revision blocks of the sections a revised answer shows)."""
        shown = self._events(searched, quoted, scores, document_ids, timings, started)
        if state.check is not None:  # judged before the steps were shown: the result says so
            return _with_check(shown, state.check)
        judge = self._judge()
        if judge is None or judge.timing != "after" or quoted.refusal_reason is not None:
            return shown
        catalog = self.searcher.catalog

        def requote(judged: Choice) -> Iterator[AnswerEvent] | None:
            with self.searcher.index.reading():
                again = self.quote(state, judged)
                if again is None or again.refusal_reason is not None:
                    return None
                paths = {*(s.path for s in again.sections), *(a.section.path for a in again.alternatives)}
                new = sorted(paths - document_ids.keys())
                ids = {**document_ids, **{path: entry[0] for path, entry in catalog.document_files(new).items()}}
                controls.update(self._controls(sorted(paths - controls.keys())))
            return self._events(searched, again, scores, ids, dict(timings), started)

        return checked_after(
            shown,
            state.choice,
            lambda choice: judge(state.question, choice),
            lambda: (judge.last_ms, judge.last_odds),
            requote,
            lambda: first_shown_of(state.choice, document_ids),
            started,
        )

    def _events(
        self,
        searched: str,
        quoted: Quoted,
        scores: dict[str, float],
        document_ids: dict[str, int],
        timings: dict[str, float],
        started: float,
    ) -> Iterator[AnswerEvent]:
        return quoted_events(
            searched,
            quoted,
            scores,
            document_ids,
            sentences=self.settings.answer.evidence_sentences,
            ocr_low_confidence=self.settings.ingest.ocr_low_confidence,
            timings=timings,
            started=started,
            # By meaning only where the operator must find the answer in the passages (a refusal's closest sections):
            # where the steps shown are the answer, embedding their sentences would delay them (0.33 → 0.71 s median
            # on 2 cores, docs/measurements/retrieval-and-answers.md).
            meaning=Meaning(self._labels(), self.searcher.embedder.embed_query(searched))
            if quoted.refusal_reason is not None
            else None,
        )


def _with_check(events: Iterator[AnswerEvent], check: JudgeCheck) -> Iterator[AnswerEvent]:
    for event in events:
        if event.kind == "done" and event.result is not None:
            event = replace(event, result=replace(event.result, judge=check))
        yield event


def read_once(
    chunks_of: Callable[[Sequence[str]], dict[str, list[ChunkRow]]],
) -> Callable[[Sequence[str]], dict[str, list[ChunkRow]]]:
    """`chunks_of` reading each document from the catalog once per question."""
    read: dict[str, list[ChunkRow]] = {}

    def chunks_of_once(paths: Sequence[str]) -> dict[str, list[ChunkRow]]:
        missing = [path for path in paths if path not in read]
        if missing:
            read.update(chunks_of(missing))
        return {path: read[path] for path in paths if path in read}

    return chunks_of_once
