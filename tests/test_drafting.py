"""Draft-and-verify decoding, as a specification: what prompt lookup drafts, and how the decoded tokens
become streamed text. That the drafted decoding gives plain greedy decoding's text on real generations
is checked in tests/test_generator.py (SmolLM2) and scripts/bench_generation.py (Qwen 1.5B)."""

from __future__ import annotations

import numpy as np

from appliance.models.generation.drafting import PromptLookup, TextAssembler


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.intc)


def test_prompt_lookup_drafts_what_followed_the_last_tokens_earlier_in_the_context() -> None:
    # "... 6 7 8 9 1 2 3 ... 6 7 8" → after 6 7 8 came 9 1 2 3.
    context = ids(5, 6, 7, 8, 9, 1, 2, 3, 4, 6, 7, 8)
    assert PromptLookup(max_draft=4)(context, limit=10) == [9, 1, 2, 3]
    assert PromptLookup()(context, limit=10) == [9]  # one token by default (generator.draft_max_tokens)


def test_prompt_lookup_prefers_the_longest_match_and_its_latest_occurrence() -> None:
    # 0 1 2 occurs twice (followed by 8, then by 6); 9 0 1 2 once, followed by 7.
    context = ids(9, 0, 1, 2, 7, 5, 0, 1, 2, 8, 0, 1, 2, 6, 3, 9, 0, 1, 2)
    assert PromptLookup(max_draft=2)(context, limit=5) == [7, 5]
    assert PromptLookup(max_ngram=3, max_draft=2)(context, limit=5) == [6, 3]


def test_prompt_lookup_drafts_nothing_after_a_short_match_or_without_room() -> None:
    assert PromptLookup()(ids(1, 2, 3, 4), limit=10) == []
    assert PromptLookup()(ids(5, 1, 2, 7, 1, 2), limit=10) == []  # a match of two tokens is too weak
    assert PromptLookup(min_ngram=2, max_draft=3)(ids(5, 1, 2, 7, 1, 2), limit=10) == [7, 1, 2]
    assert PromptLookup()(ids(1, 2, 3, 1, 2, 3), limit=0) == []
    assert PromptLookup(max_draft=3)(ids(4, 1, 2, 3, 5, 6, 7, 1, 2, 3), limit=2) == [5, 6]


def pieces(tokens: dict[int, bytes]) -> TextAssembler:
    return TextAssembler(lambda chosen: b"".join(tokens[t] for t in chosen), ["<|im_end|>"])


def test_text_is_shown_in_whole_characters() -> None:
    degree = "°".encode()  # two bytes, split over two tokens
    text = pieces({1: b"12 ", 2: degree[:1], 3: degree[1:] + b"C"})
    shown = [text.add(1), text.add(2), text.add(3), text.finish()]
    assert shown == ["12 ", "", "°C", ""]
    assert text.text == "12 °C"


def test_text_stops_before_a_stop_string_and_never_shows_its_start_early() -> None:
    text = pieces({1: b"Done.", 2: b"<|im", 3: b"_end|>", 4: b" more"})
    assert text.add(1) == "Done."
    assert text.add(2) == ""  # could be the start of the stop string
    assert text.add(3) == ""
    assert text.stopped
    assert text.finish() == ""
    assert text.text == "Done."


def test_a_held_back_prefix_that_is_not_a_stop_string_is_shown_later() -> None:
    text = pieces({1: b"a <|i", 2: b"s not it"})
    assert text.add(1) == "a "
    assert text.add(2) == "<|is not it"
    assert not text.stopped
