"""The gaps report: what operators asked in a period that the documents did not answer well, by topic.

Input, all from the audit log (no new personal data): the answers of the period that were refused,
given with an evidence confidence below `reports.low_confidence`, or rated down (appliance/feedback.py),
each as the question preview its record keeps (the first `audit.question_preview_chars` characters).

Topics: the previews, exact repeats merged (case and spacing aside), are embedded with the appliance's
own embedder and grouped greedily, most asked first: a question joins the topic whose centroid it is
closest to when that cosine reaches `reports.cluster_similarity`, else it starts a topic.

Each topic is labelled by searching the index again with up to five of its distinct questions, most
asked first. The best evidence confidence among them is the topic's `coverage`, a graded signal:
  * "covered but not found": some wording of the topic reaches a section with confidence at least
    `reports.covered_confidence`: the documents hold it, operators' words did not find it (or the
    answer found was rated down): a wording, synonym or findability problem for the SOP owner;
  * "not covered": no wording reaches one: a procedure to write.
The nearest document and section is the best hit of the best-scoring wording, whatever its label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from appliance.audit.reader import read_records
from appliance.config import ReportsSettings
from appliance.reports.feedback import ANSWER_ENDPOINTS, rated_down
from appliance.reports.period import Period

REFUSED = "refused"
LOW_CONFIDENCE = "low_confidence"
RATED_DOWN = "rated_down"
WHY = (REFUSED, LOW_CONFIDENCE, RATED_DOWN)
NOT_COVERED = "not covered"
COVERED_NOT_FOUND = "covered but not found"
EXAMPLES = 5  # example questions shown per topic
PROBES = 5  # distinct questions of a topic searched again

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Probe:
    """One question searched again: the evidence confidence and the best hit, if there is one."""

    confidence: float
    path: str | None = None
    title: str | None = None
    section: str | None = None


SearchProbe = Callable[[str], Probe]


@dataclass
class GapQuestion:
    """A distinct question preview and how often, and why, it was a gap in the period."""

    text: str
    count: int = 0
    why: Counter[str] = field(default_factory=Counter)


@dataclass
class Topic:
    count: int
    questions: int  # distinct question previews
    examples: list[str]
    why: dict[str, int]
    label: str
    coverage: float  # the best evidence confidence of the topic's wordings, searched again
    nearest: dict[str, Any] | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def gap_questions(audit_dir: Path, period: Period, low_confidence: float) -> tuple[list[GapQuestion], int]:
    """The period's gap questions, merged by wording, most frequent first; and how many answers it had."""
    found: dict[str, GapQuestion] = {}
    answers = 0

    def add(text: str, why: str) -> None:
        item = found.setdefault(_key(text), GapQuestion(text))
        item.count += 1
        item.why[why] += 1

    down = rated_down(audit_dir, period)
    for record in read_records(audit_dir, since=period.start):
        if record.get("endpoint") not in ANSWER_ENDPOINTS or record.get("status") != 200:
            continue
        answers += 1
        text = record.get("question_preview")
        if not text or not text.strip() or record.get("request_id") in down:
            continue  # a rated-down answer counts once, below, as rated down
        confidence = (record.get("extra") or {}).get("evidence_confidence")
        if record.get("refused"):
            add(text, REFUSED)
        elif isinstance(confidence, int | float) and confidence < low_confidence:
            add(text, LOW_CONFIDENCE)
    for rating in down.values():
        if rating.question and rating.question.strip():
            add(rating.question, RATED_DOWN)
    ordered = sorted(found.values(), key=lambda item: (-item.count, item.text))
    return ordered, answers


def cluster(vectors: np.ndarray, similarity: float) -> list[list[int]]:
    """Greedy centroid clustering of unit vectors, in the given order (most asked first): indices per group."""
    groups: list[list[int]] = []
    sums = np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0), dtype=np.float64)
    centroids = sums.copy()
    for index, vector in enumerate(vectors):
        if groups:
            scores = centroids @ vector
            best = int(np.argmax(scores))
            if scores[best] >= similarity:
                groups[best].append(index)
                sums[best] += vector
                centroids[best] = sums[best] / (np.linalg.norm(sums[best]) or 1.0)
                continue
        groups.append([index])
        sums = np.vstack([sums, vector[None, :]])
        centroids = np.vstack([centroids, vector[None, :] / (np.linalg.norm(vector) or 1.0)])
    return groups


def label_topic(probes: Sequence[Probe], covered_confidence: float) -> tuple[str, float, Probe | None]:
    """The label, the coverage (best confidence) and the best probe of a topic's searched wordings."""
    if not probes:
        return NOT_COVERED, 0.0, None
    best = max(probes, key=lambda probe: probe.confidence)
    label = COVERED_NOT_FOUND if best.confidence >= covered_confidence else NOT_COVERED
    return label, round(best.confidence, 4), best


def build_topics(
    questions: Sequence[GapQuestion], embed: Embed, probe: SearchProbe, config: ReportsSettings
) -> list[Topic]:
    """Group the gap questions into topics, label each, most asked first."""
    if not questions:
        return []
    vectors = np.asarray(embed([item.text for item in questions]), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    topics: list[Topic] = []
    for members in cluster(vectors, config.cluster_similarity):
        items = sorted((questions[i] for i in members), key=lambda item: (-item.count, item.text))
        why: Counter[str] = Counter()
        for item in items:
            why.update(item.why)
        label, coverage, best = label_topic([probe(item.text) for item in items[:PROBES]], config.covered_confidence)
        nearest = None
        if best is not None and best.path is not None:
            nearest = {"path": best.path, "title": best.title, "section": best.section, "confidence": coverage}
        topics.append(
            Topic(
                count=sum(item.count for item in items),
                questions=len(items),
                examples=[item.text for item in items[:EXAMPLES]],
                why={reason: why.get(reason, 0) for reason in WHY},
                label=label,
                coverage=coverage,
                nearest=nearest,
            )
        )
    return sorted(topics, key=lambda topic: (-topic.count, topic.label, topic.examples[0]))


def gaps_report(
    audit_dir: Path, period: Period, config: ReportsSettings, embed: Embed, probe: SearchProbe
) -> dict[str, Any]:
    """`appliance report gaps` and GET /v1/admin/gaps."""
    questions, answers = gap_questions(audit_dir, period, config.low_confidence)
    topics = build_topics(questions, embed, probe, config)
    return {
        "period": period.as_json(),
        "answers": answers,
        "gap_questions": sum(item.count for item in questions),
        "topics": [topic.as_json() for topic in topics],
        "not_covered": sum(topic.label == NOT_COVERED for topic in topics),
        "covered_but_not_found": sum(topic.label == COVERED_NOT_FOUND for topic in topics),
        "settings": {
            "low_confidence": config.low_confidence,
            "cluster_similarity": config.cluster_similarity,
            "covered_confidence": config.covered_confidence,
        },
    }


def searcher_probe(search: Callable[[str], Any]) -> SearchProbe:
    """A probe over `Searcher.search`-like callables (query -> SearchResult)."""

    def probe(question: str) -> Probe:
        result = search(question)
        hit = result.hits[0] if result.hits else None
        confidence = float(result.evidence.probability)
        if hit is None:
            return Probe(confidence)
        return Probe(confidence, hit.path, hit.title or None, hit.section or None)

    return probe
