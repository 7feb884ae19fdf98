"""Which of the words the documents never use are worth a warning under an answer.

An answer to a question with a word no document uses may be about something else: "How do I start up the
chlorine dioxide generator?" finds the standby generator's steps, and no SOP writes "dioxide". But most such
words are harmless: "Who do I call if the chlorine leak is bigger than we can handle?" is answered by the
notifications section, which never writes "bigger"; the training questions' slang and typos ("genny", "thru")
are the same. A note on every one of them teaches operators to skip it, and takes the ✓ from right answers.

So each unknown word is weighed by a logistic model fitted on questions with known answerability
(scripts/fit_unmatched_note.py writes fitted/unmatched_note.json): how much it reads as a name (its weight in
unknown_terms.py), whether it is shaped like one, how specific it is in everyday English, whether it is a typo
of an English word, how many of its neighbours are words the documents use (a modifier inside a known noun
phrase, "chlorine *dioxide* generator", changes the subject; a comparative between function words does not),
and how well the search matched the question overall. A word is named in the note where the model's
probability that the question is one the documents do not answer reaches the fitted threshold. No word, and no
list of words, decides: only these graded readings of it.

The ✓ stays as strict as before: an answer that would carry one ("certain", or grounded) on a question with any
word the documents never use names every such word and loses the ✓. The fitted reading leaves notes out only
where the badge already says to check the section (a close call, a best match only); an out-of-scope question
whose other words match one section so well that it looks certain is the case no fitted model saw (none of the
105 unanswerable questions answered on the measured and training sets was certain), and the one where a
missing note would cost most.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Protocol

from appliance.answer.logistic import LogisticModel
from appliance.retrieve.unknown_terms import UnknownTerm
from appliance.text.english import english_rarity, english_words
from appliance.text.stopwords import STOPWORDS
from appliance.text.tokens import SEARCH_WORD

FITTED = Path(__file__).parent / "fitted" / "unmatched_note.json"
FEATURES = ("reading_weight", "name_shaped", "english_rarity", "misspelt_english", "beside_known", "evidence")


class KnownWords(Protocol):
    def knows(self, term: str) -> bool: ...


def term_features(
    term: UnknownTerm, question: str, vocabulary: KnownWords, evidence_probability: float
) -> dict[str, float]:
    """The graded readings of one unknown word of `question` (each 0..1)."""
    word = term.typed.lower()
    return {
        "reading_weight": term.weight,
        "name_shaped": 1.0 if term.name_shaped else 0.0,
        "english_rarity": english_rarity(word),
        "misspelt_english": 1.0 if english_words().misspelt(word) else 0.0,
        "beside_known": _known_neighbours(term.typed, question, vocabulary) / 2.0,
        "evidence": evidence_probability,
    }


def _known_neighbours(typed: str, question: str, vocabulary: KnownWords) -> int:
    """How many of the words right before and after the term are content words the documents use (0..2)."""
    match = re.search(rf"(?<![\w-]){re.escape(typed)}(?![\w-])", question, flags=re.IGNORECASE)
    if match is None:
        match = re.search(re.escape(typed), question, flags=re.IGNORECASE)
    if match is None:
        return 0
    before = SEARCH_WORD.findall(question[: match.start()])
    after = SEARCH_WORD.findall(question[match.end() :])
    neighbours = [words[i] for words, i in ((before, -1), (after, 0)) if words]
    return sum(1 for w in neighbours if w.lower() not in STOPWORDS and vocabulary.knows(w.lower()))


class NoteModel(LogisticModel):
    """Logistic model: p(the documents do not answer the question | this unknown word) = sigmoid(z)."""


@cache
def fitted_note_model(path: Path = FITTED) -> NoteModel:
    """The shipped model (scripts/fit_unmatched_note.py writes it)."""
    return NoteModel.read(path)


def warning_terms(
    unknown: Sequence[UnknownTerm],
    question: str,
    vocabulary: KnownWords,
    evidence_probability: float,
    model: NoteModel | None = None,
) -> list[str]:
    """The unknown words to name under the answer, as typed, likeliest first."""
    model = model or fitted_note_model()
    scored = [
        (model.probability(term_features(term, question, vocabulary, evidence_probability)), term.typed)
        for term in unknown
    ]
    return [typed for probability, typed in sorted(scored, key=lambda s: -s[0]) if probability >= model.threshold]


def named_under_answer(unknown: Sequence[str], warned: Sequence[str], shows_tick: bool) -> list[str]:
    """What the note names: every unknown word where the answer would otherwise carry the ✓, else the fitted ones."""
    return list(unknown) if shows_tick and unknown else list(warned)
