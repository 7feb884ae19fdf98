"""Is an unknown word of a question English, a misspelt English word, or a name typed in one case?

A question's case says whether an unknown word is a name only when the operator capitalizes: "Zabbix agent
unreachable" reads as a product, but "zabbix agent unreachable", "ZABBIX AGENT UNREACHABLE" and "we got paged
at 3am and zabbix…" do not, and the embedder's WordPiece vocabulary cannot tell "zabbix" (three pieces) from
"sluggish" (three pieces too). A general English lexicon can: pyspellchecker's English word frequencies
(MIT; about 160,000 words counted in film subtitles, so everyday English, not product names: "sluggish",
"wonky" and "hiccup" are there, "zabbix", "grafana" and "keycloak" are not).

Four readings, each a graded weight in unknown_terms.py, never a verdict on its own:

* an English word (any word of the list): ordinary English the documents happen not to use;
* one edit from an English word ("recieve", "intermitently"), or a swapped pair and one edit from a common
  one ("usauly"): a typo of ordinary English;
* built like an English word (pagination, recoverability): an English word the lexicon lacks;
* none of these: a name written without its capitals, or jargon the lexicon lacks ("kubeconfig"). It weighs as a
  name, but less than one written with capitals, so passages that match the question well still carry it.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from functools import cache
from importlib import resources

from appliance.text.edits import one_edit_variants, swapped_pairs

# Any word of the list is English: its floor (50) holds real words too ("afterwards" is counted 50 times).
MIN_COUNT = 50
# Shorter words are one edit from too many words, English or the documents', to tell a typo from a name
# (k8s, nfs, abc).
MIN_NEAR_LENGTH = 5
# Two slips in one word, the first a swapped pair ("usauly" → "usualy" → "usually"), are read as a typo only
# of a common word, in a word long enough to hold two: any two edits make "zabbix" into "rabbit".
COMMON_COUNT = 10_000
MIN_TWO_EDIT_LENGTH = 6
# Counts between which a word goes from specific (a name, jargon, "ozone": rarity 1) to everyday ("form",
# "record", "result": 0), on a log scale.
SPECIFIC_COUNT = 50
EVERYDAY_COUNT = 100_000


# English derivational endings: a word built with one ("pagination", "acclamation", "recoverability") is an
# English word the subtitles lack more often than a product name is (zabbix, grafana, keycloak, fluxcd).
ENGLISH_ENDINGS = (
    "tion",
    "sion",
    "ment",
    "ness",
    "ity",
    "ance",
    "ence",
    "able",
    "ible",
    "ous",
    "ive",
    "ical",
    "ally",
    "ing",
    "ism",
    "ship",
    "ward",
    "wise",
)
MIN_STEM = 3

# A vocabulary word plus one of these WordPiece pieces is an inflected English word: peg ##ged, node ##s, idle ##d.
WORDPIECE_INFLECTION = re.compile(r"^##[a-z]?(?:s|es|ed|d|ing|er|ers|ly|y)$")


class EnglishWords:
    """Lookups in the English lexicon (english_words() loads it once per process: about 0.1 s, 20 MB)."""

    def __init__(self) -> None:
        data = resources.files("spellchecker").joinpath("resources", "en.json.gz").read_bytes()
        self._words: dict[str, int] = json.loads(gzip.decompress(data))

    def knows(self, word: str) -> bool:
        return self._words.get(word.lower(), 0) >= MIN_COUNT

    def count(self, word: str) -> int:
        """How often the word occurs in the lexicon's subtitles (0: not at all)."""
        return self._words.get(word.lower(), 0)

    def rarity(self, word: str) -> float:
        """How specific a word is in everyday English: 1 for a name or jargon the lexicon lacks, 0 for a common
        word, on a log scale of its count between SPECIFIC_COUNT and EVERYDAY_COUNT."""
        span = math.log10(EVERYDAY_COUNT) - math.log10(SPECIFIC_COUNT)
        return min(1.0, max(0.0, (math.log10(EVERYDAY_COUNT) - math.log10(max(self.count(word), 1))) / span))

    def misspelt(self, word: str) -> bool:
        """One edit from an English word, and not itself English."""
        lowered = word.lower()
        if len(lowered) < MIN_NEAR_LENGTH or self.knows(lowered):
            return False
        variants = one_edit_variants(lowered)
        if any(self._words.get(variant, 0) >= MIN_COUNT for variant in variants):
            return True
        if len(lowered) < MIN_TWO_EDIT_LENGTH:
            return False
        return any(
            self._words.get(second, 0) >= COMMON_COUNT
            for swap in swapped_pairs(lowered)
            for second in one_edit_variants(swap)
        )


def english_shaped(word: str) -> bool:
    lowered = word.lower()
    return any(lowered.endswith(end) and len(lowered) - len(end) >= MIN_STEM for end in ENGLISH_ENDINGS)


@cache
def english_words() -> EnglishWords:
    return EnglishWords()


def english_rarity(word: str) -> float:
    """How specific a word is in everyday English: 1 for a name or jargon the lexicon lacks, 0 for a common word."""
    return english_words().rarity(word)
