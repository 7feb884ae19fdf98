"""Did you mean …? A question's misspelt words, corrected to what the documents write, before it is searched.

Only a word that cannot be an English word or a name is corrected: letters only, written in lower case
(or in a question typed all in one case), not part of an identifier or a hyphenated compound, unknown to
the documents, not a whole word of the embedder's WordPiece vocabulary (its ~20,000 whole English
words: "blows" and "dew" are words the documents lack, not typos, while "usualy", "diffrent" and "postgress"
split into pieces), and, where the English lexicon is given (text/english.py), not one of its words: "overlay",
"varnish", "upload", "freezer", "anode" and "preemptive" split into pieces too, and were corrected to "overly",
"vanish", "unload", "freeze", "node" and the documents' own "preemtive" (stop 66, scripts/fit_spelling.py).
A typo of a stopword ("wich") becomes that stopword, but for a word after a number ("4 hrs" is a unit, not
"4 hers"); any other word of five letters or more (MIN_CORRECTED_LENGTH, measured by that script) becomes the
corpus word one edit away (vocabulary.py). Capitalized words are left alone, even first in a sentence: "Linkerd"
and "Envoy" are names the documents may lack, not typos of "linked" and "enjoy". The operator is told what was
searched instead ("did you mean …?"), so a wrong correction is visible, never silent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from appliance.retrieve.vocabulary import CorpusVocabulary
from appliance.text.edits import one_edit_variants
from appliance.text.stopwords import STOPWORDS
from appliance.text.tokens import CANDIDATE
from appliance.text.wording import case_is_informative

MIN_CORRECTED_LENGTH = 5


@dataclass(frozen=True)
class Correction:
    typed: str
    suggested: str

    def as_json(self) -> dict[str, str]:
        return {"typed": self.typed, "suggested": self.suggested}


@dataclass(frozen=True)
class Spelling:
    text: str  # the question with every correction applied: what is searched
    corrections: tuple[Correction, ...] = ()

    def as_json(self) -> dict[str, Any] | None:
        """The `did_you_mean` field: None when nothing was corrected."""
        if not self.corrections:
            return None
        return {"question": self.text, "corrections": [c.as_json() for c in self.corrections]}


def did_you_mean_line(did_you_mean: dict[str, Any]) -> str:
    """What the operator reads, from the `did_you_mean` field: "Did you mean postgres? Searched as: …"."""
    suggested = ", ".join(c["suggested"] for c in did_you_mean["corrections"])
    return f"Did you mean {suggested}? Searched as: {did_you_mean['question']}"


# A number just before a word: "4 hrs", "30 mins", "2.5 secs".
_NUMBER_BEFORE = re.compile(r"\d\s*$")


def _correctable(token: str, informative: bool) -> bool:
    return token.isalpha() and (token.islower() or not informative)


def in_compound(text: str, start: int, end: int) -> bool:
    """Joined to another word by a hyphen, an underscore or a dot: a compound or a name, judged whole."""
    return (start > 0 and text[start - 1] in "-_./") or (end < len(text) and text[end] in "-_/" and end + 1 < len(text))


def _as_cased(suggestion: str, typed: str) -> str:
    if typed.isupper():
        return suggestion.upper()
    if typed[:1].isupper():
        return suggestion[:1].upper() + suggestion[1:]
    return suggestion


def suggestion_for(
    word: str,
    vocabulary: CorpusVocabulary,
    word_pieces: Callable[[str], list[str]] | None = None,
    english: Callable[[str], bool] | None = None,
    *,
    after_number: bool = False,
) -> str | None:
    """What a misspelt word (lower case) was meant to be, or None when it is not a misspelling we can see.
    `english`: whether a word is in the English lexicon (text/english.py), where one is installed; `after_number`:
    the word follows a number, where it is a unit ("4 hrs"), never a slip of a stopword ("hers")."""
    if word in STOPWORDS or vocabulary.knows(word):
        return None
    if word_pieces is not None and len(word_pieces(word)) == 1:
        return None  # a whole word of the vocabulary: English, just not the documents' English
    if english is not None and english(word):
        return None  # an English word the documents lack, in more pieces than one
    if len(word) >= 3 and not after_number:
        # The longest: a letter left out is the commonest slip ("wich" is "which" rather than "with").
        stopwords = [v for v in one_edit_variants(word) if v in STOPWORDS and len(v) >= 3]
        if stopwords:
            return max(stopwords, key=len)
    if len(word) < MIN_CORRECTED_LENGTH:
        return None
    return vocabulary.correction(word)


def correct_spelling(
    text: str,
    vocabulary: CorpusVocabulary,
    word_pieces: Callable[[str], list[str]] | None = None,
    english: Callable[[str], bool] | None = None,
) -> Spelling:
    informative = case_is_informative(text)
    corrections: list[Correction] = []
    pieces: list[str] = []
    last = 0
    for match in CANDIDATE.finditer(text):
        token, start, end = match.group(), match.start(), match.end()
        if not _correctable(token, informative) or in_compound(text, start, end):
            continue
        after_number = _NUMBER_BEFORE.search(text, 0, start) is not None
        suggested = suggestion_for(token.lower(), vocabulary, word_pieces, english, after_number=after_number)
        if suggested is None:
            continue
        replacement = _as_cased(suggested, token)
        corrections.append(Correction(token, replacement))
        pieces += [text[last:start], replacement]
        last = end
    if not corrections:
        return Spelling(text)
    return Spelling("".join([*pieces, text[last:]]), tuple(corrections))
