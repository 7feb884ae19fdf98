"""When a generated answer is not an answer: decided from the support check, after the model wrote.

`refusal_reason` is the one decision, its rules in this order: the model itself said the sources do
not answer (and cited nothing); a value was asked for and no supported sentence gives one; the answer
cites only sources about another subject than the question names. Each is described below.

Retrieval's evidence decision (retrieve/evidence.py) refuses questions about things the documents
never mention. It cannot see a near miss: the runbook for the alert exists, but it does not give
the threshold, schedule or count that is asked. Asked anyway, a small model answers with a
neighbouring fact or an invented value. Most near misses ask for a value, and that is checked:
when the question asks for a quantity (how often, how many, what percentage, what time, a
maximum…), the answer must state a value that a *given source* states too: a number (with its
unit), a value written with separators (the phone number 555-0195) or a frequency in words
("quarterly", "twice a year", "every shift": text/frequencies.py), not one the question itself
names. Whether the model's sentence carrying it keeps enough of the source's words does not
matter here (a reworded "the keys are rotated every quarter" answers "how often" as well as the
source's "rotate quarterly"); an invented value, in no given source, does not answer it. Else the
result is a refusal ("The documents do not cover this.") that still lists the sources the model
was given, with the reason.

A second near miss names a sibling: the question asks about PS-3 while the answer cites only the
source about PS-2. The rule is graded on what the cited sources say instead: an identifier of the
question that some given source holds but no cited one does refuses the answer only when the cited
sources are *about* a sibling of it: their label (title, section) names an identifier of the same
shape that differs in one part (PS-2 for PS-3, etcdHighCommitDurations for etcdHighFsyncDurations).
Only the citations of sentences that claim something count: a line that restates the question to
introduce a list ("The setpoints for PS-3 are:") is not judged, and the source it cites (one that
names PS-3 in passing) says nothing about the values that follow. On the demo question about PS-3
setpoints, that line was cited to a scope section naming PS-3 while every value came from the PS-2
SOP, and the answer stood, shown grounded.
A question that names its product, team or severity in words the cited runbook does not repeat
("gitlab.com", "sev2" where the runbook mentions sev1 in passing) is not asking about something
else. (An identifier in no source at all is left alone: the sources may spell it differently, and
on the tune questions two correct answers were of that kind.)

A broader rule, "refuse when no sentence of the answer is supported", was measured and dropped:
on the tune questions it withheld 5 correct answers whose sentences the model had left uncited
and reworded (the support check is strict on purpose), and every near miss it caught was a
value question that this rule catches too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from appliance.answer.generated.citations import CitationReport, CitedSentence
from appliance.answer.generated.support import SentenceSupport, SupportReport
from appliance.text.frequencies import frequencies_in
from appliance.text.identifiers import identifier_in, is_digit_value
from appliance.text.quantities import Quantity, numbers_in, unit_of, without_thousands
from appliance.text.questions import TIME_UNITS, asked_quantity, asked_unit, asks_a_measure, declines_in_words
from appliance.text.terms import extract_terms


def _asks_for_a_number(question: str) -> bool:
    """ "What gasket part number…", "what's the ticket number": a tag or code with digits (RW-GSK-0410) is
    the value."""
    asked = asked_quantity(question)
    return asked is not None and asked.casefold().endswith("number")


def _is_value(identifier: str, question: str) -> bool:
    return is_digit_value(identifier) or (_asks_for_a_number(question) and any(c.isdigit() for c in identifier))


def _answers_in_kind(quantity: Quantity, question: str) -> bool:
    """Whether a number is the kind of value asked: in the unit the question names (any unit of time for
    a time), with some unit for how long / how soon / how old, any number otherwise."""
    named = asked_unit(question)
    asked = ("%" if named == "%" else unit_of(named)) if named else None
    if asked is not None:
        return quantity.unit == asked or {quantity.unit, asked} <= TIME_UNITS
    return quantity.unit is not None or not asks_a_measure(question)


def stated_values(sentence: str, question: str = "") -> list[str]:
    """The values a sentence states, as written: numbers of the kind asked (with their units, see
    `_answers_in_kind`), digit values the question did not name (555-0195; any identifier when it asks
    for a "… number": RW-GSK-0410), and frequencies in words ("quarterly", "every shift") the question
    did not."""
    terms = extract_terms(sentence)
    named = {identifier.casefold() for identifier in extract_terms(question).identifiers}
    # A value written with separators (555-0195) is an identifier to the support check, not a number;
    # it answers "what's the number" all the same.
    digit_values = [i for i in terms.identifiers if _is_value(i, question) and i.casefold() not in named]
    asked = set(frequencies_in(question))
    words = [w for value, w in frequencies_in(sentence).items() if value not in asked]
    numbers = [q.with_unit for q in terms.numbers if _answers_in_kind(q, question)]
    return [*numbers, *digit_values, *words]


def gives_value(sentence: str, question: str = "") -> bool:
    """Whether the sentence states a value (see stated_values)."""
    return bool(stated_values(sentence, question))


def value_in_sources(sentence: str, question: str, sources: Sequence[str]) -> bool:
    """Does a given source state a value this sentence states? The same number with the same unit (or
    none), the same digit value, the same frequency ("every 3 months" is "quarterly"). The number must
    be the kind of value asked (`_answers_in_kind`): "how many minutes" is not answered by "up = 0"."""
    terms = extract_terms(sentence)
    texts = [without_thousands(text) for text in sources]
    for quantity in terms.numbers:
        if not _answers_in_kind(quantity, question):
            continue
        units: set[str | None] = set().union(*(numbers_in(text).get(quantity.value, set()) for text in texts))
        if units and (quantity.unit is None or quantity.unit in units):
            return True
    named = {identifier.casefold() for identifier in extract_terms(question).identifiers}
    for identifier in terms.identifiers:
        given_value = _is_value(identifier, question) and identifier.casefold() not in named
        if given_value and any(identifier_in(identifier, text) for text in texts):
            return True
    stated: set[str] = set().union(*(set(frequencies_in(text)) for text in texts))
    asked = set(frequencies_in(question))
    return any(value in stated and value not in asked for value in frequencies_in(sentence))


def _states_given_value(detail: SentenceSupport, question: str, given: Sequence[str]) -> bool:
    return (
        detail.checked and gives_value(detail.sentence, question) and value_in_sources(detail.sentence, question, given)
    )


def abstention_reason(question: str, support: SupportReport, given: Mapping[int, str] | None = None) -> str | None:
    """Why the checked answer must be replaced by a refusal, or None when it may stand.

    With the `given` sources (number -> text), a value question is answered by any sentence that states
    a value one of them states; without them, only by a supported sentence that states a value."""
    asked = asked_quantity(question)
    if not asked:
        return None
    if given is None:
        if any(d.checked and d.supported and gives_value(d.sentence, question) for d in support.details):
            return None
    elif any(_states_given_value(detail, question, list(given.values())) for detail in support.details):
        return None
    return f"the question asks for a value ({asked!r}) and no sentence of the answer gives one that a source states"


def _pieces(identifier: str) -> list[str]:
    """An identifier cut where a reader sees parts: separators, digits against letters, camel humps."""
    return re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^A-Za-z\d]", identifier)


def is_sibling(asked: str, other: str) -> bool:
    """Same shape, one part different: PS-2 for PS-3, sev2 for sev1, etcdHighCommitDurations for
    etcdHighFsyncDurations (never the same identifier, never one with another number of parts)."""
    a, b = _pieces(asked), _pieces(other)
    if asked.casefold() == other.casefold() or len(a) != len(b) or len(a) < 2:
        return False
    differing = [(x, y) for x, y in zip(a, b, strict=True) if x.casefold() != y.casefold()]
    return len(differing) == 1 and differing[0][0].isalnum() and differing[0][1].isalnum()


def other_subject_reason(question: str, cited: Mapping[int, str], given: Mapping[int, str]) -> str | None:
    """Why an answer citing `cited` (source number -> its label line, then its text) is about a sibling
    of what the question asks, among the `given` sources; None when it cites nothing, names what was
    asked, or is not about a sibling of it.

    A source is about what its label (title and section) names: a runbook that mentions sev1 in passing
    is not about sev1, a station's SOP titled "Pump Station PS-2" is about PS-2."""
    if not cited:
        return None
    subjects = sorted({i for text in cited.values() for i in extract_terms(text.split("\n", 1)[0]).identifiers})
    siblings: list[tuple[str, str]] = []
    for identifier in extract_terms(question).identifiers:
        if any(identifier_in(identifier, text) for text in cited.values()):
            continue
        if not any(identifier_in(identifier, text) for text in given.values()):
            continue
        other = next((subject for subject in subjects if is_sibling(identifier, subject)), None)
        if other is not None:
            siblings.append((identifier, other))
    if not siblings:
        return None
    asked = ", ".join(asked for asked, _ in siblings)
    instead = ", ".join(other for _, other in siblings)
    return f"the question names {asked}, which the sources the answer cites do not mention: they are about {instead}"


def refusal_reason(
    question: str,
    parsed: CitationReport,
    sentences: Sequence[CitedSentence],
    support: SupportReport,
    labelled: Mapping[int, str],
    given: Mapping[int, str] | None = None,
) -> str | None:
    """Why the checked answer must be replaced by a refusal, or None when it stands.

    `parsed` is the answer as the model cited it, `sentences` its sentences with the citations the
    checker added, `support` their check, `labelled` each given source's text with its label (the
    title and section often carry the unit's name), `given` the texts the answer was checked against."""
    if declines_in_words(parsed.text) and not parsed.cited:
        return "the model found no answer in the sources"
    reason = abstention_reason(question, support, given)
    if reason is not None:
        return reason
    # What the answer rests on: the sources its claims cite. A line that only restates the question to
    # introduce what follows ("The setpoints for PS-3 are:") claims nothing, so the source it was cited to
    # (one naming PS-3 in passing) does not make the values below it about PS-3.
    claims = zip(sentences, support.details, strict=True)
    cited = sorted({n for sentence, detail in claims if detail.checked for n in sentence.cited})
    return other_subject_reason(question, {n: labelled[n] for n in cited if n in labelled}, labelled)
