"""The section choice's memory of embedded labels: each text is embedded once, even when many operators'
first questions reach the same documents at the same moment."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from appliance.answer.quoted.label_vectors import LabelVectors


class CountingEmbedder:
    """A vector per text (its length and first letter), counting what it was asked for; optionally slow, or
    failing on its first call."""

    def __init__(self, seconds: float = 0.0, fail_first: bool = False) -> None:
        self.seconds = seconds
        self.fail_first = fail_first
        self.calls: list[list[str]] = []
        self._lock = threading.Lock()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.calls.append(list(texts))
            failing = self.fail_first and len(self.calls) == 1
        time.sleep(self.seconds)
        if failing:
            raise RuntimeError("the embedder failed")
        return np.asarray([[len(t), ord(t[0])] for t in texts], dtype=np.float32)

    def embedded(self) -> Counter[str]:
        return Counter(t for call in self.calls for t in call)


def test_each_text_is_embedded_once_and_rows_follow_the_texts_asked() -> None:
    embed = CountingEmbedder()
    labels = LabelVectors(embed)
    first = labels(["6.1 Isolate", "Scope", "6.1 Isolate"])
    assert first.tolist() == [[11, ord("6")], [5, ord("S")], [11, ord("6")]]
    again = labels(["Scope", "7. Notifications"])
    assert again.tolist() == [[5, ord("S")], [16, ord("7")]]
    assert embed.embedded() == {"6.1 Isolate": 1, "Scope": 1, "7. Notifications": 1}
    assert len(labels) == 3


def test_questions_arriving_together_wait_for_one_embedding_instead_of_each_making_their_own() -> None:
    embed = CountingEmbedder(seconds=0.3)
    labels = LabelVectors(embed)
    texts = [f"section {n}" for n in range(40)]
    results: list[np.ndarray] = []
    start = threading.Barrier(8)

    def ask(offset: int) -> None:
        start.wait()
        results.append(labels(texts[offset:] + texts[:offset]))

    threads = [threading.Thread(target=ask, args=(n * 5,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(results) == 8
    assert set(embed.embedded().values()) == {1}, "a text was embedded by more than one thread"
    assert sorted(embed.embedded()) == sorted(texts)
    assert all(sorted(r[:, 0].tolist()) == sorted(len(t) for t in texts) for r in results)


def test_when_the_thread_embedding_a_text_fails_the_one_waiting_for_it_embeds_it_itself() -> None:
    embed = CountingEmbedder(seconds=0.3, fail_first=True)
    labels = LabelVectors(embed)
    failed: list[BaseException] = []

    def first() -> None:
        try:
            labels(["Scope"])
        except RuntimeError as exc:
            failed.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    time.sleep(0.1)  # the first thread is embedding "Scope" now
    assert labels(["Scope"]).tolist() == [[5, ord("S")]]
    thread.join(timeout=10)
    assert [str(e) for e in failed] == ["the embedder failed"]
    assert embed.embedded() == {"Scope": 2}


def test_the_memory_is_bounded_and_forgets_the_least_recently_used_first() -> None:
    embed = CountingEmbedder()
    labels = LabelVectors(embed, max_texts=2)
    labels(["a", "b"])
    labels(["a"])  # "b" is now the least recently used
    labels(["c"])
    assert len(labels) == 2
    labels(["a", "c"])
    assert embed.embedded() == {"a": 1, "b": 1, "c": 1}
    labels(["b"])
    assert embed.embedded()["b"] == 2


def test_no_texts_give_an_empty_array() -> None:
    assert LabelVectors(CountingEmbedder())([]).size == 0


@pytest.mark.parametrize("count", [1, 3])
def test_a_repeated_text_in_one_call_is_embedded_once(count: int) -> None:
    embed = CountingEmbedder()
    LabelVectors(embed)(["Scope"] * count)
    assert embed.calls == [["Scope"]]
