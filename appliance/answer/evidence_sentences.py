"""The sentences of a retrieved chunk that best answer the question, to highlight the SOP's own words.

A sentence scores by the share of the question's terms it holds: content words (stemmed and
folded as in support.py) count 1, numbers 1.5 and identifiers 2, since an operator who types a
tag wants the line that names it. With an `embed` function the score is the mean of that share
and the cosine between question and sentence. The k best sentences come back as character spans
in text order; sentences that share nothing with the question (score 0) and headings are never
returned.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from appliance.text.sentences import split_sentences
from appliance.text.terms import extract_terms

IDENTIFIER_WEIGHT = 2.0
NUMBER_WEIGHT = 1.5
EMBED_BLEND = 0.5  # share of the score given to the embedding cosine when embed is given

Span = tuple[int, int, float]


def lexical_scores(question: str, sentences: list[str]) -> list[float]:
    wanted = extract_terms(question)
    weights: dict[tuple[str, str], float] = {("word", w): 1.0 for w in wanted.words}
    weights.update({("id", i.casefold()): IDENTIFIER_WEIGHT for i in wanted.identifiers})
    weights.update({("num", q.value): NUMBER_WEIGHT for q in wanted.numbers})
    total = sum(weights.values())
    if not total:
        return [0.0] * len(sentences)
    scores = []
    for sentence in sentences:
        terms = extract_terms(sentence)
        have = {("word", w) for w in terms.words} | {("id", i.casefold()) for i in terms.identifiers}
        have |= {("num", q.value) for q in terms.numbers}
        scores.append(sum(weight for key, weight in weights.items() if key in have) / total)
    return scores


def _cosines(embed: Callable[[list[str]], np.ndarray], question: str, sentences: list[str]) -> list[float]:
    vectors = np.asarray(embed([question, *sentences]), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    return [float(v) for v in vectors[1:] @ vectors[0]]


def best_sentences(
    question: str,
    chunk_text: str,
    k: int = 2,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> list[Span]:
    """(start, end, score) of the k sentences of chunk_text that best match the question, in text order.

    chunk_text[start:end] is the sentence, stripped, and never starts or ends inside a word.
    """
    if k <= 0:
        return []
    segments = [s for s in split_sentences(chunk_text) if s.kind != "heading"]  # a title is no evidence
    texts = [chunk_text[s.start : s.end] for s in segments]
    lexical = lexical_scores(question, texts)
    scores = lexical
    if embed is not None and texts:
        cosines = _cosines(embed, question, texts)
        # Meaning can lift a sentence that rewords the question without sharing its words.
        scores = [
            (1 - EMBED_BLEND) * lex + EMBED_BLEND * max(cos, 0.0) for lex, cos in zip(lexical, cosines, strict=True)
        ]
    ranked = sorted(range(len(segments)), key=lambda i: (-scores[i], i))
    chosen = sorted(i for i in ranked[:k] if scores[i] > 0)
    return [(segments[i].start, segments[i].end, round(scores[i], 4)) for i in chosen]
