"""The generated answer's events: numbered sources → the model's tokens, streamed → the verdict (verdict.py).

The model writes a short answer from the retrieved passages (answer.mode = generated, or per request); every
sentence is checked against the sources it cites, citations are corrected or added, and what no source holds
is named. The events are the evidence first (the sources, so an operator can read them while the model
writes), then the tokens, then the finished result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from appliance.answer.evidence_items import Meaning, evidence_item
from appliance.answer.generated.prompt import REFUSAL, Prompt, build_prompt
from appliance.answer.generated.verdict import judge_answer
from appliance.answer.ocr_trust import ocr_note, untrusted_sources
from appliance.answer.results import AnswerEvent, AnswerResult, Citation, EvidenceItem, ms_since, refusal_result
from appliance.config import Settings
from appliance.index.records import ChunkRow
from appliance.models.generation import ChatMessage, Generator
from appliance.retrieve.search import Hit

Following = Callable[[ChunkRow, int], list[ChunkRow]]


def generated_events(
    question: str,
    hits: Sequence[Hit],
    rows: Mapping[str, ChunkRow],
    *,
    settings: Settings,
    generator: Generator,
    following: Following,
    document_ids: Mapping[str, int],
    embed: Callable[[Sequence[str]], np.ndarray] | None,
    max_sources: int,
    meaning: Meaning | None = None,
    timings: dict[str, float],
    started: float,
) -> Iterator[AnswerEvent]:
    """The events of a generated answer (see the module docstring); `embed` None: lexical support checks only
    (the semantic threshold belongs to another embedder). `meaning` marks each source's best sentences by meaning
    as well as by words (evidence_items.py): any embedder serves there."""
    budget = min(settings.answer.max_prompt_tokens, generator.n_ctx - settings.generator.max_tokens)
    prompt = build_prompt(
        question,
        [rows[hit.chunk_id] for hit in hits if hit.chunk_id in rows],
        count_tokens=generator.count_tokens,
        budget_tokens=budget,
        max_sources=max_sources,
        following=following,
        window_chunks=settings.answer.window_chunks,
    )
    sentences = settings.answer.evidence_sentences
    if not prompt.sources:
        # Not even the best passage fits: a model asked without sources can only invent an answer.
        closest = [
            evidence_item(question, None, hit.score, rows[hit.chunk_id], document_ids, sentences, meaning=meaning)
            for hit in hits[:3]
            if hit.chunk_id in rows
        ]
        yield AnswerEvent("evidence", evidence=closest)
        timings["total"] = ms_since(started)
        reason = (
            f"no passage fits the prompt budget of {budget} tokens "
            "(settings answer.max_prompt_tokens, generator.n_ctx, generator.max_tokens)"
        )
        yield AnswerEvent("done", result=refusal_result(question, closest, timings, reason))
        return
    scores = {hit.chunk_id: hit.score for hit in hits}
    evidence = [
        evidence_item(
            question,
            source.n,
            scores.get(source.chunk.chunk_id, 0.0),
            source.chunk,
            document_ids,
            sentences,
            source.text,
            source.chunks,
            meaning=meaning,
        )
        for source in prompt.sources
    ]
    yield AnswerEvent("evidence", evidence=evidence)
    messages = [ChatMessage(role, content) for role, content in prompt.messages()]
    pieces: list[str] = []
    first_token_ms: float | None = None
    with generator.stream(messages, max_tokens=settings.generator.max_tokens) as stream:
        for piece in stream:
            if first_token_ms is None and piece.strip():
                first_token_ms = ms_since(started)
            pieces.append(piece)
            yield AnswerEvent("token", text=piece)
    timings["first_token"] = first_token_ms if first_token_ms is not None else ms_since(started)
    timings["total"] = ms_since(started)
    result = checked_answer(question, "".join(pieces), prompt, evidence, timings, stream.stats, settings, embed)
    result.model = generator.model_id
    yield AnswerEvent("done", result=result)


def checked_answer(
    question: str,
    raw_answer: str,
    prompt: Prompt,
    evidence: list[EvidenceItem],
    timings: dict[str, float],
    stats: Any,
    settings: Settings,
    embed: Callable[[Sequence[str]], np.ndarray] | None,
) -> AnswerResult:
    """The model's answer judged (verdict.py): citations parsed and resolved to chunks, support checked,
    refused where the rules say so."""
    low = settings.ingest.ocr_low_confidence
    verdict = judge_answer(
        question,
        raw_answer,
        prompt.sources,
        embed=embed,
        semantic_threshold=settings.support.semantic_threshold,
        untrusted=untrusted_sources([(s.n, s.chunks) for s in prompt.sources], low),
    )
    support, refused = verdict.support, verdict.refused
    by_number = {source.n: source for source in prompt.sources}
    citations = []
    for n in verdict.cited:
        # A source may span several chunks: cite the one holding the words that rely on it.
        chunk = by_number[n].chunk_for([sentence.text for sentence in verdict.sentences if n in sentence.cited])
        document_id = next((item.document_id for item in evidence if item.path == chunk.path), None)
        citations.append(
            Citation(
                n=n,
                chunk_id=chunk.chunk_id,
                path=chunk.path,
                section=chunk.section,
                page=chunk.page,
                document_id=document_id,
                ocr_confidence=chunk.ocr_confidence,
                ocr_note=ocr_note(chunk.ocr_confidence, low),
            )
        )
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
        model=None,
        refusal_reason=verdict.refusal_reason,
        answer_kind="refusal" if refused else "generated",
        removed_citations=verdict.removed,
        attributed_citations=[] if refused else verdict.attributed,
        corrected_citations=[] if refused else verdict.corrected,
        quotes=[] if refused else verdict.quotes,
        invented=[] if refused else verdict.invented,
        contradicting=[] if refused else verdict.contradicting,
        prompt={"tokens": prompt.prompt_tokens, "sources": len(prompt.sources), "dropped": prompt.dropped},
        generation=_generation_stats(stats),
        truncated=not refused and stats is not None and stats.finish_reason == "length",
    )


def _generation_stats(stats: Any) -> dict[str, Any]:
    if stats is None:
        return {}
    return {
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
