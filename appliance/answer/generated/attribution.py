"""Which given source holds each sentence: citations added where the model left none, and repaired
where it cited a source that does not hold the sentence while another given source does.

Small models often copy a source's sentence and forget the `[n]`, or put the number of the
neighbouring source: the README's own demo question was answered with the right part number,
RW-GSK-0410, cited to the source that does not name it. Rather than warning the operator off a
correct sentence, each sentence is judged (support.py, the same rules and the same similarity test)
first against what it cites; when that fails, against each given source on its own, in their order.
The first source that supports it is cited instead:

* an uncited sentence gets the marker, written into the answer so the operator sees it
  (`attributed`); a code line that a source holds (a command copied without its `[n]`) is cited the
  same way, but no marker is written into the code block, where it would change the command;
* a cited sentence that another source holds has its marker rewritten to that source's number
  (`corrected`, with the sentence and both numbers). Sentences that had inherited the old marker
  keep their citation, written out where it is no longer visible.

A sentence that no single source supports is left as the model cited it: the support check reports
it, as a rewording when the judge allows one (support.REWORD_FLOOR) and otherwise as unsupported.
A rewording of an uncited sentence is cited to the source it rewords.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from appliance.answer.generated.citations import CitationMarker, CitationReport, CitedSentence
from appliance.answer.generated.support import SentenceSupport, SupportJudge


@dataclass(frozen=True)
class CorrectedCitation:
    """A sentence whose cited source did not hold it, cited to the given source that does."""

    sentence: str
    cited: tuple[int, ...]  # what the model cited
    corrected: tuple[int, ...]  # what the sentence cites now


@dataclass(frozen=True)
class Attribution:
    text: str  # the answer with the markers added and rewritten
    sentences: list[CitedSentence]
    details: list[SentenceSupport]  # the verdict on each sentence, as finally cited
    attributed: list[int]  # source numbers cited for sentences the model left uncited
    corrected: list[CorrectedCitation]


def _first_supporting(judge: SupportJudge, sentence: CitedSentence, skip: frozenset[int]) -> SentenceSupport | None:
    for number in judge.numbers:
        if number in skip:
            continue
        trial = judge.judge(sentence, {number})
        if trial.checked and trial.supported and not trial.reworded:
            return trial
    return None


def _best_rewording(judge: SupportJudge, sentence: CitedSentence) -> SentenceSupport | None:
    """The source an uncited sentence rewords most closely, when it rewords one."""
    trials = [judge.judge(sentence, {number}) for number in judge.numbers]
    reworded = [trial for trial in trials if trial.reworded]
    return max(reworded, key=lambda trial: trial.coverage or 0.0) if reworded else None


def attribute_citations(parsed: CitationReport, judge: SupportJudge) -> Attribution:
    """Judge every sentence, citing the given source that holds it where the model cited none or a wrong one."""
    text, sentences = parsed.text, parsed.sentences
    updated = list(sentences)
    judge.prefetch(sentences)
    details = [judge.judge(sentence) for sentence in sentences]
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in `text`
    attributed: set[int] = set()
    corrected: list[CorrectedCitation] = []
    for index, sentence in enumerate(sentences):
        verdict = details[index]
        if not verdict.checked or (verdict.supported and not verdict.reworded):
            continue
        found = _first_supporting(judge, sentence, frozenset(sentence.cited))
        if found is None and not sentence.cited:
            found = _best_rewording(judge, sentence)
        if found is None:
            continue
        details[index] = found
        updated[index] = replace(sentence, cited=frozenset(found.cited), inherited=False)
        if sentence.cited:
            corrected.append(CorrectedCitation(sentence.text, tuple(sorted(sentence.cited)), found.cited))
        else:
            attributed.update(found.cited)
        if sentence.kind != "code":
            own = [] if sentence.inherited else [m for m in parsed.markers if sentence.start <= m.start < sentence.end]
            edits += _marker_edits(text, sentence, found.cited, own)
    if corrected:
        edits += _keep_inherited(text, sentences, updated, details)
    for start, end, replacement in sorted(edits, reverse=True):
        text = f"{text[:start]}{replacement}{text[end:]}"
    return Attribution(text, updated, details, sorted(attributed), corrected)


def _marker(numbers: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, sorted(numbers))) + "]"


def _marker_edits(
    text: str, sentence: CitedSentence, numbers: Sequence[int], own: Sequence[CitationMarker]
) -> list[tuple[int, int, str]]:
    """Rewrite the sentence's `own` markers as `numbers`, or add one before its closing punctuation."""
    if own:
        first, *rest = own
        # A second marker goes with the space before it: "closed [1] [3]." -> "closed [2]."
        dropped = [(m.start - 1 if text[m.start - 1 : m.start] == " " else m.start, m.end, "") for m in rest]
        return [(first.start, first.end, _marker(numbers)), *dropped]
    position = _marker_position(text, sentence)
    return [(position, position, f" {_marker(numbers)}")]


def _keep_inherited(
    text: str,
    before: Sequence[CitedSentence],
    after: Sequence[CitedSentence],
    details: Sequence[SentenceSupport],
) -> list[tuple[int, int, str]]:
    """A sentence that inherited a marker now rewritten keeps its citation: written out after it."""
    edits = []
    for index, sentence in enumerate(after):
        if not sentence.inherited or sentence.kind == "code" or not details[index].checked:
            continue
        owner = next((later for later in range(index + 1, len(before)) if not before[later].inherited), None)
        if owner is not None and after[owner].cited != before[owner].cited and before[owner].cited == sentence.cited:
            position = _marker_position(text, sentence)
            edits.append((position, position, f" {_marker(sorted(sentence.cited))}"))
    return edits


def _marker_position(text: str, sentence: CitedSentence) -> int:
    """Before the sentence's closing punctuation, where a model would have put the marker."""
    end = sentence.end
    while end > sentence.start and text[end - 1].isspace():
        end -= 1
    if end > sentence.start and text[end - 1] in ".!?;:":
        end -= 1
    return end
