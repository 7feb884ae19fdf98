"""Strings one typing slip from a word: the candidates a spelling correction and a typo test look up.

The alphabet is English's: another language swaps it with the rest of this package.
"""

from __future__ import annotations

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def one_edit_variants(word: str) -> list[str]:
    """Every string one edit from `word`, swaps first (the commonest typo), then deletions, replacements, insertions."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = [a + b[1:] for a, b in splits if b]
    replaces = [a + c + b[1:] for a, b in splits if b for c in LETTERS if c != b[0]]
    inserts = [a + c + b for a, b in splits for c in LETTERS]
    return [v for v in dict.fromkeys(swapped_pairs(word) + deletes + replaces + inserts) if v and v != word]


def swapped_pairs(word: str) -> list[str]:
    """`word` with one pair of neighbouring letters swapped (the commonest typo), each distinct pair once."""
    return [word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1) if word[i] != word[i + 1]]
