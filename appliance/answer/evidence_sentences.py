"""The sentences of a retrieved chunk that best answer the question, to highlight the SOP's own words.

A sentence scores by the share of the question's terms it holds: content words (stemmed and
folded as in support.py) count 1, numbers 1.5 and identifiers 3, since an operator who types a
tag wants the line that names it. With an `embed` function (the appliance passes its embedder where
the passages are not the answer itself: a refusal's closest passages, a generated answer's sources)
the score is the mean of that share and the cosine between question and sentence: meaning lifts a
sentence that rewords the question without sharing its words. The weights and the blend were fitted
by scripts/fit_evidence_sentences.py: the answer's sentence is marked in 213 of 236 training passages,
192 by the words alone with the former hand weights. The k best sentences come back as character
spans in text order; headings are never returned, nor, by the words alone, a sentence that shares
nothing with the question (score 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from appliance.text.sentences import split_sentences
from appliance.text.terms import extract_terms

# Fitted (scripts/fit_evidence_sentences.py, scripts/results/fit_evidence_sentences.json): the answer's sentence
# among the 2 marked in 213 of 236 training passages (choice_train's fact, why and value questions), and on the
# measured sets held out 47 → 60 of 75, sampled 51 → 61 of 80, sampled_59 39 → 46 of 61 against the words alone
# with the former hand weights (2.0, 1.5, no cosine).
IDENTIFIER_WEIGHT = 3.0
NUMBER_WEIGHT = 1.5
EMBED_BLEND = 0.5  # share of the score given to the embedding cosine when embed is given

Span = tuple[int, int, float]


@dataclass(frozen=True)
class Matched:
    """How many distinct content words, identifiers and numbers: a question's own, or those of it a sentence holds."""

    words: int
    identifiers: int
    numbers: int


def term_matches(question: str, sentences: Sequence[str]) -> tuple[Matched, list[Matched]]:
    """The question's own counts, then, for each sentence, how many of them it holds."""
    wanted = extract_terms(question)
    words, identifiers = set(wanted.words), {i.casefold() for i in wanted.identifiers}
    numbers = {q.value for q in wanted.numbers}
    matched = []
    for sentence in sentences:
        terms = extract_terms(sentence)
        matched.append(
            Matched(
                len(words & set(terms.words)),
                len(identifiers & {i.casefold() for i in terms.identifiers}),
                len(numbers & {q.value for q in terms.numbers}),
            )
        )
    return Matched(len(words), len(identifiers), len(numbers)), matched


def weighted_share(
    matched: Matched, asked: Matched, identifier_weight: float = IDENTIFIER_WEIGHT, number_weight: float = NUMBER_WEIGHT
) -> float:
    """The share of the question's terms a sentence holds, each word counting 1."""
    total = asked.words + identifier_weight * asked.identifiers + number_weight * asked.numbers
    if not total:
        return 0.0
    return (matched.words + identifier_weight * matched.identifiers + number_weight * matched.numbers) / total


def lexical_scores(
    question: str,
    sentences: list[str],
    identifier_weight: float = IDENTIFIER_WEIGHT,
    number_weight: float = NUMBER_WEIGHT,
) -> list[float]:
    asked, matched = term_matches(question, sentences)
    return [weighted_share(m, asked, identifier_weight, number_weight) for m in matched]


def _cosines(
    embed: Callable[[Sequence[str]], np.ndarray], question: str, sentences: list[str], asked: np.ndarray | None
) -> list[float]:
    vectors = np.asarray(embed(sentences), dtype=np.float64)
    query = np.asarray(embed([question])[0] if asked is None else asked, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    query = query / (np.linalg.norm(query) or 1.0)
    return [float(v) for v in vectors @ query]


def best_sentences(
    question: str,
    chunk_text: str,
    k: int = 2,
    embed: Callable[[Sequence[str]], np.ndarray] | None = None,
    question_vector: np.ndarray | None = None,
) -> list[Span]:
    """(start, end, score) of the k sentences of chunk_text that best match the question, in text order.

    chunk_text[start:end] is the sentence, stripped, and never starts or ends inside a word. `embed` gives the
    sentences' vectors (and the question's, unless `question_vector` is given: the search's own).
    """
    if k <= 0:
        return []
    segments = [s for s in split_sentences(chunk_text) if s.kind != "heading"]  # a title is no evidence
    texts = [chunk_text[s.start : s.end] for s in segments]
    lexical = lexical_scores(question, texts)
    scores = lexical
    if embed is not None and texts:
        cosines = _cosines(embed, question, texts, question_vector)
        # Meaning can lift a sentence that rewords the question without sharing its words.
        scores = [
            (1 - EMBED_BLEND) * lex + EMBED_BLEND * max(cos, 0.0) for lex, cos in zip(lexical, cosines, strict=True)
        ]
    ranked = sorted(range(len(segments)), key=lambda i: (-scores[i], i))
    chosen = sorted(i for i in ranked[:k] if scores[i] > 0)
    return [(segments[i].start, segments[i].end, round(scores[i], 4)) for i in chosen]
