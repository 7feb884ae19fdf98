"""What the indexed documents hold, word by word: the lookups behind the evidence decision's unknown terms
and the spelling correction, answered from the two FTS5 tables and cached until the index changes.

FTS5 stems a query word as it stemmed the corpus (porter), so "restarting" is known when the documents
say "restart". Operators abbreviate, so a word of four letters or more is also known as the start of a
corpus word ("evac", "config"). A misspelling is a word of five letters or more, one edit (a deleted,
swapped, replaced or added letter) away from a word the documents write verbatim: "postgress" is
"postgres", "usualy" "usually". Among several, the one the most chunks hold wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from appliance.index.fulltext import FullText
from appliance.retrieve.fts_query import quote
from appliance.text.edits import one_edit_variants

# Chunks read to count a word's verbatim occurrences: enough to rank candidates, cheap for common words.
_COUNT_CAP = 40
# Answers kept before the cache starts over: a misspelling looks up some 500 variants, and a server may run
# for months without a reindex.
_CACHE_CAP = 200_000


class CorpusVocabulary:
    """Cached lookups over the catalog's FTS5 tables (`Catalog.fulltext`); `refresh()` drops the cache when the
    index changed."""

    def __init__(self, fulltext: FullText) -> None:
        self.fulltext = fulltext
        self._stamp: tuple[int, int] | None = None
        self._cache: dict[tuple[str, str], Any] = {}

    def refresh(self) -> None:
        """Forget every answer if the index changed since (a reindex here or in another process)."""
        stamp = self.fulltext.version()
        if stamp != self._stamp:
            self._cache.clear()
            self._stamp = stamp

    def _cached(self, kind: str, term: str, compute: Callable[[], Any]) -> Any:
        key = (kind, term)
        if key not in self._cache:
            if len(self._cache) >= _CACHE_CAP:
                self._cache.clear()
            self._cache[key] = compute()
        return self._cache[key]

    def has_word(self, word: str) -> bool:
        """Some chunk holds the word (stemmed as the index stems it)."""
        return bool(self._cached("word", word, lambda: self.fulltext.matches("words", quote(word))))

    def has_identifier(self, term: str) -> bool:
        return bool(self._cached("ident", term, lambda: self.fulltext.matches("identifiers", quote(term))))

    def has_identifier_prefix(self, prefix: str) -> bool:
        """Some identifier of the documents starts with `prefix` (sev for sev1)."""
        return bool(
            self._cached("ident-prefix", prefix, lambda: self.fulltext.matches("identifiers", quote(prefix) + "*"))
        )

    def knows(self, term: str) -> bool:
        """As a word, as an identifier, or (4+ letters) as the start of a word: "evac" for evacuation."""
        term = term.lower()
        if self.has_word(term) or self.has_identifier(term):
            return True
        return len(term) >= 4 and bool(
            self._cached("prefix", term, lambda: self.fulltext.matches("words", quote(term) + "*"))
        )

    def knows_any(self, terms: Sequence[str]) -> bool:
        """Whether any of `terms` is known as `knows` reads each: three FTS5 queries (OR of the terms) instead of
        up to three per term, for the few hundred one-edit variants of a word."""
        lowered = sorted({t.lower() for t in terms if t})
        if not lowered:
            return False

        def any_known() -> bool:
            words = " OR ".join(quote(t) for t in lowered)
            prefixes = " OR ".join(quote(t) + "*" for t in lowered if len(t) >= 4)
            return (
                self.fulltext.matches("words", words)
                or self.fulltext.matches("identifiers", words)
                or (bool(prefixes) and self.fulltext.matches("words", prefixes))
            )

        return bool(self._cached("any", "\n".join(lowered), any_known))

    def in_passage(self, word: str, rowid: int) -> bool:
        return self.fulltext.matches("words", quote(word), rowid)

    def verbatim_count(self, word: str) -> int:
        """How many chunks (of the first few FTS5 finds) write the word exactly, not only its stem."""

        def count() -> int:
            pattern = re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", re.IGNORECASE)
            texts = self.fulltext.texts_matching(quote(word), _COUNT_CAP)
            return sum(1 for text in texts if pattern.search(text))

        return int(self._cached("verbatim", word, count))

    def correction(self, word: str) -> str | None:
        """The corpus word one edit from a misspelt `word` (lower case, 5+ letters), or None."""

        def best() -> str | None:
            found = [v for v in one_edit_variants(word) if self.has_word(v)]
            counted = [(self.verbatim_count(v), -position, v) for position, v in enumerate(found)]
            counted = [c for c in counted if c[0] > 0]
            return max(counted)[2] if counted else None

        return self._cached("correction", word, best)  # type: ignore[no-any-return]
