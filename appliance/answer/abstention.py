"""When a generated answer is not an answer: decided from the support check, after the model wrote.

Retrieval's evidence decision (retrieve/evidence.py) refuses questions about things the documents
never mention. It cannot see a near miss: the runbook for the alert exists, but it does not give
the threshold, schedule or count that is asked. Asked anyway, a small model answers with a
neighbouring fact or an invented value. Most near misses ask for a value, and that is checked:
when the question asks for a quantity (how often, how many, what percentage, what time, a
maximum…) and no supported sentence of the answer holds a number (or a value written with
separators, such as the phone number 555-0195, that the question does not name), the value asked
for is not in the sources, and the result is a refusal ("The documents do not cover this.") that still lists
the sources the model was given, with the reason.

A second near miss names a sibling: the question asks about PS-3 while the answer cites only the
source about PS-2. When an identifier of the question occurs in some source the model was given
but in none of the sources its answer cites, the answer is about something else and is refused.
(An identifier in no source at all is left alone: the sources may spell it differently, and on the
tune questions two correct answers were of that kind.)

A broader rule, "refuse when no sentence of the answer is supported", was measured and dropped:
on the tune questions it withheld 5 correct answers whose sentences the model had left uncited
and reworded (the support check is strict on purpose), and every near miss it caught was a
value question that this rule catches too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from appliance.answer.support import SupportReport, extract_terms, identifier_in

# Question forms that ask for a value rather than a procedure. "how" alone (how do I…) is not one.
_QUANTITY = re.compile(
    r"\bhow\s+(often|long|many|much|frequently|big|large|old|soon|fast|high|low)\b"
    r"|\bat\s+what\s+(point|percentage|percent|level|threshold|rate|time|size|value|age)\b"
    r"|\bwhat(?:'s|\s+is|\s+are)?\s+(?:the\s+)?(time|percentage|percent|size|number|interval|threshold|timeout"
    r"|limit|frequency|duration|rate|retention|schedule|hours|minimum|maximum|max|min|default)\b"
    r"|\b(minimum|maximum)\s+\w+|\bset\s+to\b|\b(raise|increase|lower|bump)\b[^?]*\bto\s*\?"
    r"|\bwhat\b[^?]*\b(setpoints?|hours|percentage|threshold|timeout|interval|retention|schedule)\b",
    re.IGNORECASE,
)


def asked_quantity(question: str) -> str | None:
    """The words of the question that ask for a value ("how often", "what percentage"), else None."""
    match = _QUANTITY.search(question)
    return " ".join(match.group(0).split()) if match else None


# A value written with separators, such as a phone number (555-0195) or an address (10.0.4.17), is an
# identifier to the support check, not a number; it answers "what's the number" all the same.
_DIGIT_VALUE = re.compile(r"\+?\(?\d[\d\-.()/: ]*\d")


def gives_value(sentence: str, question: str = "") -> bool:
    """Whether the sentence states a value: a number, or a digit-led identifier the question did not name."""
    terms = extract_terms(sentence)
    if terms.numbers:
        return True
    named = {identifier.casefold() for identifier in extract_terms(question).identifiers}
    return any(
        _DIGIT_VALUE.fullmatch(identifier) and identifier.casefold() not in named for identifier in terms.identifiers
    )


def abstention_reason(question: str, support: SupportReport) -> str | None:
    """Why the checked answer must be replaced by a refusal, or None when it may stand."""
    supported = [detail for detail in support.details if detail.checked and detail.supported]
    asked = asked_quantity(question)
    if asked and not any(gives_value(detail.sentence, question) for detail in supported):
        return f"the question asks for a value ({asked!r}) and no supported sentence of the answer gives one"
    return None


def other_subject_reason(question: str, cited: Mapping[int, str], given: Mapping[int, str]) -> str | None:
    """Why an answer citing `cited` (source number -> text) is about something other than the question
    asks, among the `given` sources; None when it cites nothing or names what was asked."""
    if not cited:
        return None
    elsewhere = [
        identifier
        for identifier in extract_terms(question).identifiers
        if not any(identifier_in(identifier, text) for text in cited.values())
        and any(identifier_in(identifier, text) for text in given.values())
    ]
    if not elsewhere:
        return None
    named = ", ".join(elsewhere)
    return f"the question names {named}, which the sources the answer cites do not mention"
