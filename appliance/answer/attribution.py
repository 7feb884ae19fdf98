"""Citations for sentences the model left uncited, when exactly one kind of evidence is clear.

Small models often copy a source's sentence and forget the `[n]`. Rather than calling such a
sentence unsupported, each uncited sentence is checked against every source on its own (the same
support rules: every identifier and number present, enough of its words); the first source that
supports it is cited, and the marker is written into the answer so the operator sees it. A
code line that a source holds (a command copied without its `[n]`) is cited the same way, but no
marker is written into the code block, where it would change the command; the citation is listed
with the others. A sentence no single source supports stays uncited and is reported as unsupported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from appliance.answer.citations import CitedSentence
from appliance.answer.support import check_support


def attribute_citations(
    text: str, sentences: Sequence[CitedSentence], sources: Mapping[int, str]
) -> tuple[str, list[CitedSentence], list[int]]:
    """(answer text with the added markers, sentences with their citations, source numbers added)."""
    updated = list(sentences)
    insertions: list[tuple[int, int]] = []  # (position in text, source number)
    added: set[int] = set()
    for index, sentence in enumerate(sentences):
        if sentence.cited or sentence.kind == "heading":
            continue
        for number, source in sources.items():
            trial = check_support([replace(sentence, cited=frozenset({number}))], {number: source})
            if trial.details and trial.details[0].checked and trial.details[0].supported:
                updated[index] = replace(sentence, cited=frozenset({number}), inherited=False)
                added.add(number)
                if sentence.kind != "code":
                    insertions.append((_marker_position(text, sentence), number))
                break
    for position, number in sorted(insertions, reverse=True):
        text = f"{text[:position]} [{number}]{text[position:]}"
    return text, updated, sorted(added)


def _marker_position(text: str, sentence: CitedSentence) -> int:
    """Before the sentence's closing punctuation, where a model would have put the marker."""
    end = sentence.end
    while end > sentence.start and text[end - 1].isspace():
        end -= 1
    if end > sentence.start and text[end - 1] in ".!?;:":
        end -= 1
    return end
