"""Which section answers: every candidate (candidates.py) scored by the fitted ranker (ranker.py over
features.py), the most probable shown (for a procedure: the shortest section that holds most of the
probability), the close calls named.

There is no rule after the ranker: whether the whole procedure or one part answers is the ranker's choice
between a parent and its parts (both are candidates; the question's reading, whole job or one part, is one
of its inputs), and so is a document's Purpose against its steps, an alarm guide against the SOP it points
to. What the choice reports besides the section:
- `probability`: the ranker's probability of the chosen section, and of the chosen region (the section with
  every candidate inside it or holding it: a parent and its part are one answer, not two rivals);
- `alternatives`: the best sections outside that region, each with its probability, for "Also matches";
- `close`: the best alternative when it is nearly as probable as the choice (the ratio is the fitted model's
  `close_ratio`: scripts/fit_choice.py measures how often the ranker was right at each ratio, out of fold),
  shown on the first screen and never badged as certain;
- `chosen`: for a value or a fact, the likeliest section (its lines are picked from it and its rivals); for a
  procedure, shown whole, the shortest section, short enough to be shown whole, inside which at least the
  ranker's fitted `shown_mass` of the probability lies (`shown_section`). Where the ranker spreads its
  probability over the parts of one procedure (a 6.3 and a 6.4 of 0.3 each), the procedure holding them is
  shown, not one part; where it is sure of one part, that part. Its `probability` is that mass;
- `certain`: no close rival and the chosen region's probability at least the model's `certain_probability`
  (where the choice was right 90% of the time out of fold).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from appliance.answer.question import Question
from appliance.answer.quoted.candidates import Candidate, ChunksOf, DocumentsNamed, gather_candidates
from appliance.answer.quoted.features import EmbedTexts, candidate_features
from appliance.answer.quoted.ranker import SectionRanker, default_ranker
from appliance.answer.quoted.sections import Section, is_within
from appliance.index.records import ChunkRow

ChunkVectors = Callable[[Sequence[str]], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class Ranked:
    candidate: Candidate
    probability: float

    @property
    def section(self) -> Section:
        return self.candidate.section

    @property
    def hits(self) -> tuple[str, ...]:
        """The chunk ids of the hits inside, best first."""
        return tuple(chunk.chunk_id for chunk, _, _ in self.candidate.hits)


@dataclass(frozen=True)
class Choice:
    chosen: Ranked
    ranked: list[Ranked] = field(default_factory=list)  # every candidate, most probable first
    close_ratio: float = 0.5
    certain_probability: float = 1.0

    @property
    def section(self) -> Section:
        return self.chosen.section

    @property
    def region_probability(self) -> float:
        """The probability that the answer lies in the chosen section, a part of it or a section holding it."""
        return sum(r.probability for r in self.ranked if overlaps(r.section, self.section))

    def alternatives(self, count: int = 3) -> list[Ranked]:
        """The most probable sections outside the chosen region, one per region."""
        picked: list[Ranked] = []
        for candidate in self.ranked:
            if overlaps(candidate.section, self.section) or any(overlaps(candidate.section, p.section) for p in picked):
                continue
            picked.append(candidate)
            if len(picked) == count:
                break
        return picked

    @property
    def close(self) -> Ranked | None:
        """The best alternative when it is nearly as probable as the choice (a close call), else None."""
        others = self.alternatives(1)
        if others and others[0].probability >= self.close_ratio * self.chosen.probability:
            return others[0]
        return None

    @property
    def certain(self) -> bool:
        return self.close is None and self.region_probability >= self.certain_probability


def mass_inside(regions: Sequence[tuple[str, str]], probabilities: Sequence[float], index: int) -> float:
    """The probability of every candidate inside candidate `index` (itself included); regions are (path, heading)."""
    path, heading = regions[index]
    return float(
        sum(
            p
            for (other_path, other), p in zip(regions, probabilities, strict=True)
            if other_path == path and is_within(other, heading)
        )
    )


def shown_section(
    regions: Sequence[tuple[str, str]],
    words: Sequence[int],
    probabilities: Sequence[float],
    mass: float,
    max_words: int,
) -> int | None:
    """The index of the shortest candidate of at most `max_words` words inside which at least `mass` of the
    probability lies (ties: the more probable), or None when none does. Shared with scripts/fit_choice.py,
    which fits `mass` out of fold."""
    holding = [
        i for i in range(len(regions)) if words[i] <= max_words and mass_inside(regions, probabilities, i) >= mass
    ]
    return min(holding, key=lambda i: (words[i], -probabilities[i])) if holding else None


def overlaps(a: Section, b: Section) -> bool:
    return a.path == b.path and (is_within(a.heading, b.heading) or is_within(b.heading, a.heading))


def choose_section(
    question: Question,
    hits: Sequence[tuple[ChunkRow, float]],
    chunks_of: ChunksOf,
    embed_texts: EmbedTexts,
    chunk_vectors: ChunkVectors,
    documents_named: DocumentsNamed | None = None,
    ranker: SectionRanker | None = None,
) -> Choice | None:
    """The section to show for `question` from the ranked `hits` (chunk, fused score; best first)."""
    candidates = gather_candidates(hits, chunks_of, documents_named, question=question.searched)
    if not candidates:
        return None
    vectors = chunk_vectors([chunk.chunk_id for c in candidates for chunk in c.section.chunks])
    model = ranker or default_ranker()
    features = candidate_features(question, candidates, embed_texts, vectors, model.vocabulary)
    probabilities = model.probabilities(features)
    ranked = sorted(
        (Ranked(candidate, float(p)) for candidate, p in zip(candidates, probabilities, strict=True)),
        key=lambda r: -r.probability,
    )
    chosen = ranked[0]
    if question.kind == "procedure" and model.shown_mass is not None:
        regions = [(r.section.path, r.section.heading) for r in ranked]
        odds = [r.probability for r in ranked]
        index = shown_section(
            regions, [r.section.words for r in ranked], odds, model.shown_mass, model.shown_whole_words
        )
        if index is not None:
            chosen = Ranked(ranked[index].candidate, mass_inside(regions, odds, index))
    return Choice(chosen, ranked, model.close_ratio, model.certain_probability)
