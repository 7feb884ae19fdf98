"""What a question asks for, read from its English: a value, a procedure, or a fact; and a model's refusal.

Three kinds, in this order:
- a value: how often, how many, what percentage, what time, a maximum… (`asked_quantity`): the answer is
  the line that states it;
- a procedure: how do I…, what do I do when…, the steps for…, walk me through… (`asks_for_procedure`), or
  a question with no question word at all (an alert name pasted from a pager asks what to do about it):
  the answer is the whole procedure;
- a fact: what is / which / who / where / can I / does it…: the answer is the lines that say it.

The kind chooses how much of the chosen section is shown; it never refuses anything.
"""

from __future__ import annotations

import re
from typing import Literal

QuestionKind = Literal["value", "procedure", "fact"]

# The names of values a "what" question asks for.
_VALUE_NOUNS = (
    r"(?:time|percentage|percent|size|number|interval|threshold|timeout|limit|frequency|duration|rate|retention"
    r"|schedule|hours|minimum|maximum|max|min|default)"
)
# One or two words may say which value ("what RSS limit does…", "what phone number do we call"): never a
# verb ("what does the rate limit protect?" asks what it is for), and the value's name must end the phrase
# ("what error rate alerts exist?" asks for alerts).
_MODIFIED_VALUE = (
    r"(?:(?!(?:do|does|did|should|can|could|will|would|happens?|to|if|when|is|are|was|were)\b)[\w-]+\s+){1,2}"
    + _VALUE_NOUNS
    + r"\b(?=\s*(?:[?,.:;]|$)|\s+(?:do|does|did|is|are|was|were|should|must|can|will|would|for|of|on|in|at"
    r"|before|after|when|that|we|i|you|they)\b)"
)
# Question forms that ask for a value rather than a procedure. "how" alone (how do I…) is not one.
_QUANTITY = re.compile(
    r"\bhow\s+(often|long|many|much|frequently|big|large|old|soon|fast|high|low)\b"
    r"|\bat\s+what\s+(point|percentage|percent|level|threshold|rate|time|size|value|age)\b"
    r"|\bwhat(?:'s|\s+is|\s+are)?\s+(?:the\s+)?(?:" + _VALUE_NOUNS + r"\b|" + _MODIFIED_VALUE + r")"
    r"|\b(minimum|maximum)\s+\w+|\bset\s+to\b|\b(raise|increase|lower|bump)\b[^?]*\bto\s*\?"
    r"|\bwhat\b[^?]*\b(setpoints?|hours|percentage|threshold|timeout|interval|retention|schedule)\b",
    re.IGNORECASE,
)
# A length of time or a distance: a bare number ("the gauge reads zero") does not say how long.
_ASKS_A_MEASURE = re.compile(r"\bhow\s+(long|soon|old)\b", re.IGNORECASE)
# A value asked in a named unit: "how many minutes", "what percentage".
_ASKS_A_UNIT = re.compile(r"\bhow\s+many\s+([A-Za-z]+)|\bwhat\s+(percent(?:age)?)\b", re.IGNORECASE)
TIME_UNITS = frozenset({"ms", "s", "min", "h", "d", "wk", "mo", "yr"})

# How to do something, or what to do: the answer is a procedure.
_PROCEDURE = re.compile(
    r"\bhow\s+(?:do|does|did|can|could|should|would|will|must|to|are|is|am|shall)\b"
    r"|\bhow\s+(?:i|we|you)\b"
    r"|\bwhat\s+(?!does\b|did\b)(?:[\w']+\s+){1,5}(?:do|try|check)\b|\bwhat\s+(?:should|must|needs?\s+to)\s+be\s+done\b"
    # "what do I change", "what should we restart": an action asked, not a word's meaning or a name
    r"|\bwhat\s+(?:do|should|must|can|could|shall)\s+(?:i|we|you)\s+(?!(?:need\s+to\s+)?(?:know|say|mean|call|ask|tell|use|read|see|expect)\b)[a-z]+\b"
    r"|\bwhat\s+(?:now|next|do\s+i\s+do|to\s+do)\b|\bnext\s+steps?\b"
    r"|\b(?:steps?|procedure|process|sequence|instructions?|checklist|runbook|playbook)\s+(?:for|to|of|when|if|on)\b"
    r"|\bwhat(?:'s|\s+is|\s+are)?\s+(?:the|my|our)?\s*(?:steps?|procedure|process|sequence|instructions?|checklist)\b"
    # "what's the lockout/tagout sequence", "what's the response?", "what are my options to free up space":
    # a name of a course of action, after up to three words that say which one (not "response time")
    r"|\bwhat(?:'s|\s+is|\s+are)\s+(?:the|my|our)\s+(?:[\w/-]+\s+){0,3}?"
    r"(?:steps|procedure|process|sequence|instructions|checklist|response|options|actions|way\s+to)\b(?!\s+times?\b)"
    r"|\b(?:proper|right|correct|safe|best)\s+way\s+to\b"
    r"|\bwalk\s+(?:me|us)\s+through\b|\bguide\s+(?:me|us)\b|\b(?:tell|show)\s+(?:me|us)\s+how\b"
    r"|\bwhere\s+do\s+(?:i|we)\s+start\b",
    re.IGNORECASE,
)
# A question word or an auxiliary opening a question or a clause of it: a fact is asked (when nothing above
# matched). Only at a clause's start: in "hw do i swap the cylinder" the typo hides the "how", and the "do"
# after it opens nothing.
_FACT = re.compile(
    r"(?:^|[.,;:!?(]\s*|\b(?:and|but|so|or|then)\s+)(?:what|which|who|whom|whose|where|when|why|is|are|was|were"
    r"|does|do|did|can|could|should|may|will|would|has|have|must)\b",
    re.IGNORECASE,
)
# The model declining in its own words: "The documents do not specify…", "the sources provided do not cover…".
_MODEL_REFUSAL = re.compile(
    r"(the )?(documents|sources)( provided)? do(es)? not (cover|answer|contain|mention|specify|state|say|give)", re.I
)


def asked_quantity(question: str) -> str | None:
    """The words of the question that ask for a value ("how often", "what percentage"), else None."""
    match = _QUANTITY.search(question)
    return " ".join(match.group(0).split()) if match else None


def asks_a_measure(question: str) -> bool:
    """How long / how soon / how old: a bare number is no answer, it needs a unit."""
    return _ASKS_A_MEASURE.search(question) is not None


def asked_unit(question: str) -> str | None:
    """The unit a value is asked in: the word after "how many" ("minutes"), or "%" for "what percentage"."""
    match = _ASKS_A_UNIT.search(question)
    if match is None:
        return None
    return "%" if match.group(2) else match.group(1)


# "How many gitaly-ruby workers…": the thing counted, the last word of the noun phrase after "how many".
_COUNTED = re.compile(r"\bhow\s+many\s+(?:[\w-]+\s+){0,2}?([a-z]{3,}s)\b", re.IGNORECASE)


def counted_noun(question: str) -> str | None:
    """The plural noun a "how many" question counts ("workers" in "how many gitaly-ruby workers does…")."""
    match = _COUNTED.search(question)
    return match.group(1).lower() if match else None


def counts(text: str, noun: str) -> bool:
    """Whether `text` gives a number of `noun`: the number then the noun within two words ("16 workers",
    "3 Sidekiq workers"), or the noun then the number after a colon or "is"/"of" ("workers: 16")."""
    stem = re.escape(noun[:-1] if noun.endswith("s") else noun)
    number = r"\d[\d,.]*"
    pattern = rf"\b{number}\s+(?:[\w-]+\s+){{0,2}}{stem}\w*\b|\b{stem}\w*\s*(?::|=|\bis\b|\bof\b)\s*{number}"
    return re.search(pattern, text, re.IGNORECASE) is not None


def asks_for_procedure(question: str) -> bool:
    return _PROCEDURE.search(question) is not None


def question_kind(question: str) -> QuestionKind:
    """value, procedure or fact (see the module docstring)."""
    if asked_quantity(question):
        return "value"
    if asks_for_procedure(question):
        return "procedure"
    return "fact" if _FACT.search(question) else "procedure"


def declines_in_words(answer: str) -> bool:
    """Whether an answer says the sources do not answer ("The documents do not specify…")."""
    return _MODEL_REFUSAL.search(answer) is not None
