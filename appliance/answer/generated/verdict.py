"""After the model wrote: the checked answer, and whether it stands or becomes a refusal.

`judge_answer` is the one decision made after generation, in this order: the citation markers are
parsed and those to sources not given removed (citations.py); every sentence is judged against what
it cites and, where that fails, cited to the given source that holds it (attribution.py: citations
added where the model left none, corrected where it cited the wrong one; support.py holds the
rules); the refusal rules run on that check (abstention.py); for an answer that stands, the sources'
own lines that carry what the answer leaves out are quoted (quotes.py), and the identifiers, numbers and
commands of its unsupported sentences that no given source holds are named (`invented`), so that the
warning says what to check. The answerer only
orchestrates: it builds the prompt, streams the model and turns a verdict into the result.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from appliance.answer.generated.abstention import refusal_reason
from appliance.answer.generated.attribution import CorrectedCitation, attribute_citations
from appliance.answer.generated.citations import CitedSentence, parse_citations
from appliance.answer.generated.prompt import Source
from appliance.answer.generated.quotes import Quote, select_quotes
from appliance.answer.generated.support import (
    REWORD_FLOOR,
    SEMANTIC_THRESHOLD,
    Embed,
    SentenceSupport,
    SupportJudge,
    SupportReport,
)
from appliance.text.terms import extract_terms


@dataclass(frozen=True)
class Verdict:
    text: str  # the answer with canonical markers, plus those the checker added or corrected
    sentences: list[CitedSentence]  # with their citations, attributed and corrected ones included
    support: SupportReport
    removed: list[int]  # source numbers cited but not given, removed from the text
    attributed: list[int]  # source numbers the checker cited for uncited sentences
    refusal_reason: str | None  # why the answer becomes a refusal; None when it stands
    corrected: list[CorrectedCitation] = field(default_factory=list)  # citations moved to the source holding them
    quotes: list[Quote] = field(default_factory=list)  # the sources' own lines shown under the answer
    invented: list[str] = field(default_factory=list)  # identifiers, numbers, commands found in no given source
    contradicting: list[str] = field(default_factory=list)  # sentences negating (or reversing) their source

    @property
    def refused(self) -> bool:
        return self.refusal_reason is not None

    @property
    def cited(self) -> list[int]:
        return sorted({n for sentence in self.sentences for n in sentence.cited})


def checked_text(source: Source) -> str:
    """What an answer citing `source` is checked against: the passage, and the identifiers its label
    names and the numbers its heading states.

    The model reads the label too, so "as SOP-LAB-001 says [1]" is not unsupported when SOP-LAB-001 is in
    the title, nor "the 4.13 kernel" when the section is "Remove unlucky 4.13 kernel…". Only identifiers
    and numbers: with the label's words as well, a tune question the runbooks do not answer (how many
    gitaly-ruby workers) got a grounded answer made of the title's words.
    """
    identifiers = extract_terms(source.label).identifiers
    numbers = [quantity.with_unit for quantity in extract_terms(source.heading).numbers]
    extra = " ".join([*identifiers, *numbers])
    return f"{source.text}\n{extra}" if extra else source.text


def judge_answer(
    question: str,
    raw_answer: str,
    sources: Sequence[Source],
    *,
    embed: Embed | None = None,
    semantic_threshold: float = SEMANTIC_THRESHOLD,
    reword_floor: float | None = REWORD_FLOOR,
    untrusted: Collection[int] = (),
) -> Verdict:
    """Check the model's answer to `question` against the numbered `sources` it was given; `embed` (with the
    `semantic_threshold` calibrated for it) lets a close rewording of a source sentence count as support,
    `reword_floor` a looser one that keeps every specific of its source (None: none); the `untrusted` sources
    (read by OCR with low confidence) vouch for no identifier or number."""
    parsed = parse_citations(raw_answer.strip(), len(sources))
    source_texts = {source.n: checked_text(source) for source in sources}
    judge = SupportJudge(
        source_texts,
        embed=embed,
        question=question,
        semantic_threshold=semantic_threshold,
        reword_floor=reword_floor,
        untrusted=untrusted,
    )
    attribution = attribute_citations(parsed, judge)
    support = judge.report(attribution.details)
    labelled = {source.n: source.block() for source in sources}
    reason = refusal_reason(question, parsed, attribution.sentences, support, labelled, source_texts)
    quotes: list[Quote] = []
    invented = invented_specifics(judge, attribution.sentences, attribution.details)
    contradicting = [d.sentence for d in attribution.details if d.contradicts_source]
    if reason is None:
        passages = {source.n: source.text for source in sources}
        quotes = select_quotes(attribution.text, attribution.sentences, attribution.details, passages)
    return Verdict(
        attribution.text,
        attribution.sentences,
        support,
        parsed.removed,
        attribution.attributed,
        reason,
        attribution.corrected,
        quotes,
        invented,
        contradicting,
    )


def invented_specifics(
    judge: SupportJudge, sentences: Sequence[CitedSentence], details: Sequence[SentenceSupport]
) -> list[str]:
    """The identifiers, numbers, frequencies and commands of the unsupported sentences that no given source
    holds, in answer order: what the operator must not act on unchecked (`oc get fluentbit -A`, "every 6
    months", `+1-800-555-1234`). Each sentence is judged against all the given sources together, so a name
    that one source holds and a number another holds are not invented; an unsupported sentence with none of
    these is only worded differently from its sources."""
    everything = frozenset(judge.numbers)
    found: list[str] = []
    for sentence, detail in zip(sentences, details, strict=True):
        if not detail.checked or detail.supported:
            continue
        for item in judge.judge(sentence, everything).missing:
            item = item.strip()
            if item and item not in found:
                found.append(item)
    return found
