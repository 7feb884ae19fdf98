"""The sources' own lines put in front of the operator when the answer leaves its key fact out.

A small model paraphrases: the answer says "restart the service" where the SOP says
`sudo gitlab-ctl restart gitaly`, "every few months" where it says "quarterly", or it rewords a step
so that its exact setting name is gone. The operator acts on the exact line. So, after the verdict:

* under a sentence that rewords its source (support.py, `reworded`), the source's line it rewords
  (`why` "reworded");
* under a supported sentence, the source line it rests on when that line holds an identifier, a
  number, a frequency or a command that the answer does not carry anywhere (`why` "key fact");
  a step's command that the source gives in the code block right after that line comes with it.

Designs tried and left out (scripts/bench_quote_designs.py on the stored generations; figures in
docs/measurements/generalization.md): the line of the first cited source that best matches the question (8 of 144
answers gained every key phrase, the sampled median went past 150 words, and most unanswerable questions
answered got a line that reads as an answer), the same only when it holds a value the answer lacks, and
every cited line with such a value that some answer sentence rests on (3 answers of 144 at most). The
phrases answers miss sit in lines that share little with the question or the answer: the model left the
step out.

A quote is a whole sentence, list item or code line of the source, copied verbatim (whitespace
collapsed), at most MAX_QUOTES per answer and MAX_QUOTE_WORDS words each (a longer line is not cut:
it is left out, the operator opens the source). The line resting under a sentence is the source
segment sharing most of its words and identifiers (evidence_sentences.py scores them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from appliance.answer.evidence_sentences import lexical_scores
from appliance.answer.generated.citations import CitedSentence
from appliance.answer.generated.support import SentenceSupport
from appliance.text.frequencies import frequencies_in
from appliance.text.identifiers import identifier_in
from appliance.text.sentences import Segment, split_sentences
from appliance.text.terms import extract_terms

MAX_QUOTES = 3
MAX_QUOTE_WORDS = 60
MIN_MATCH = 0.3  # share of a sentence's terms its line must hold to be the line it rests on
# An identifier and a number of the claim against its words, when its line is found: the hand weights the evidence
# marks had before scripts/fit_evidence_sentences.py (fitted there on questions, not on an answer's claims).
CLAIM_WEIGHTS = (2.0, 1.5)


@dataclass(frozen=True)
class Quote:
    n: int  # the source quoted
    text: str  # the source's line, verbatim but for whitespace
    start: int  # offsets of the line in the source's text
    end: int
    why: str  # "reworded" | "key fact"
    sentence: str  # the answer sentence it stands under


def flat_line(text: str) -> str:
    """The line with its whitespace collapsed, as it is quoted and compared."""
    return " ".join(text.split())


def line_specifics(text: str) -> list[str]:
    """Identifiers, numbers with their units, frequencies and code spans of a line."""
    terms = extract_terms(text)
    found = [*terms.identifiers, *(q.written for q in terms.numbers), *frequencies_in(text).values()]
    return found


def missing_from(specific: str, answer: str) -> bool:
    """Whether the answer carries the specific nowhere (as a whole identifier, or verbatim)."""
    return not identifier_in(specific, answer) and specific.casefold() not in answer.casefold()


def quotable_segments(text: str) -> list[Segment]:
    """The source's sentences, list items and code lines: what a quote may be (never a heading)."""
    return [s for s in split_sentences(text) if s.kind != "heading"]


def resting_line(claim: str, text: str, segments: Sequence[Segment]) -> int | None:
    """Index of the segment of `text` that the claim rests on, None when none shares enough of it."""
    if not segments:
        return None
    scores = lexical_scores(claim, [text[s.start : s.end] for s in segments], *CLAIM_WEIGHTS)
    best = max(range(len(segments)), key=lambda i: (scores[i], -i))
    return best if scores[best] >= MIN_MATCH else None


def _quote(n: int, text: str, segment: Segment, why: str, sentence: str) -> Quote | None:
    line = flat_line(text[segment.start : segment.end])
    if segment.kind == "code":
        line = "\n".join(part.rstrip() for part in text[segment.start : segment.end].strip("\n").split("\n"))
    if len(line.split()) > MAX_QUOTE_WORDS:
        return None
    return Quote(n, line, segment.start, segment.end, why, sentence)


def _with_following_code(segments: Sequence[Segment], index: int) -> list[int]:
    """The line, and the code block right after it when the line introduces a command ("Run:")."""
    chosen = [index]
    following = index + 1
    if following < len(segments) and segments[following].kind == "code" and segments[index].kind != "code":
        chosen.append(following)
    return chosen


def select_quotes(
    answer: str,
    sentences: Sequence[CitedSentence],
    details: Sequence[SentenceSupport],
    sources: Mapping[int, str],
) -> list[Quote]:
    """The quotes for an answer that stands (rules in the module docstring), in answer order."""
    segments = {n: quotable_segments(text) for n, text in sources.items()}
    quotes: list[Quote] = []
    seen: set[tuple[int, int]] = set()

    def add(n: int, index: int, why: str, sentence: str) -> None:
        segment = segments[n][index]
        if (n, segment.start) in seen or flat_line(sources[n][segment.start : segment.end]) in flat_line(answer):
            return
        quote = _quote(n, sources[n], segment, why, sentence)
        if quote is not None:
            seen.add((n, segment.start))
            quotes.append(quote)

    for sentence, verdict in zip(sentences, details, strict=True):
        if not verdict.checked or not verdict.supported or len(sentence.cited) != 1:
            continue
        n = next(iter(sentence.cited))
        if n not in sources:
            continue
        index = resting_line(sentence.text, sources[n], segments[n])
        if index is None:
            continue
        if verdict.reworded:
            for chosen in _with_following_code(segments[n], index):
                add(n, chosen, "reworded", sentence.text)
            continue
        for chosen in _with_following_code(segments[n], index):
            segment = segments[n][chosen]
            line = sources[n][segment.start : segment.end]
            if any(missing_from(specific, answer) for specific in line_specifics(line)):
                add(n, chosen, "key fact", sentence.text)
    return quotes[:MAX_QUOTES]
