"""Draft-and-verify greedy decoding: the same tokens as plain greedy decoding, several per model call.

A grounded answer copies runs of its sources (commands, values, step text). Prompt lookup drafts the
tokens that followed the last few generated tokens where they occur earlier in the context (no extra
weights); the model then evaluates the current token and the draft in one batch, and every drafted
token that equals the model's own greedy choice at its position is kept. The first disagreement is
replaced by the model's choice, its KV cache entries after it are dropped, and drafting starts again.
Greedy verification keeps exactly the tokens plain decoding would choose, as long as the model's
logits do not depend on the batch they are computed in (tests/test_generator.py and
scripts/bench_generation.py compare the texts of both on real generations).

A call of k+1 tokens costs less than k+1 single-token calls on a CPU (the weights are read once),
so an accepted token is cheap; a rejected draft costs that call's extra tokens.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import llama_cpp
import numpy as np
from llama_cpp import _internals


class PromptLookup:
    """Drafts what followed the context's longest final n-gram (at least `min_ngram` tokens) at its
    latest earlier occurrence.

    Tuned by replaying stored greedy answers against their prompts (scripts/bench_generation.py
    records how it goes live): on two CPU cores a call of 2 tokens costs 1.5x a call of one, of 4
    about 1.7-2x (llama.cpp's repacked Q4_K kernels take rows four at a time), so drafts only after a
    match of 3 or more tokens, where 70-80% of drafted tokens are kept; weaker matches lose. Drafts
    of 3 were fastest but calls of 4 tokens are not computed like single tokens: the generator drafts
    1 (generator.draft_max_tokens).
    """

    def __init__(self, max_ngram: int = 8, min_ngram: int = 3, max_draft: int = 1) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.max_draft = max_draft

    def __call__(self, tokens: np.ndarray, limit: int) -> list[int]:
        limit = min(limit, self.max_draft)
        length = len(tokens)
        if limit <= 0:
            return []
        for size in range(min(self.max_ngram, length - 1), self.min_ngram - 1, -1):
            # Windows that end before the last token: each has at least one token after it.
            windows = np.lib.stride_tricks.sliding_window_view(tokens[:-1], size)
            hits = np.flatnonzero((windows == tokens[length - size :]).all(axis=1))
            if len(hits):
                start = int(hits[-1]) + size
                return [int(t) for t in tokens[start : start + limit]]
        return []


@dataclass
class DraftStats:
    drafted: int = 0  # tokens proposed
    accepted: int = 0  # proposed tokens the model agreed with
    batches: int = 0  # model calls after the prompt
    evaluated: int = 0  # tokens evaluated by those calls (accepted, rejected and the current ones)


class GreedyVerifier:
    """Greedy decoding of a llama-cpp-python Llama whose context holds the evaluated prompt.

    `tokens()` yields token ids after the prompt until an end-of-generation token (not yielded) or
    `max_tokens`; `finish` is then "stop" or "length". The Llama's own token bookkeeping (input_ids,
    n_tokens) is kept in step with the KV cache, so the shared-prefix cache keeps working.
    """

    def __init__(self, llm: llama_cpp.Llama, drafter: PromptLookup, max_tokens: int) -> None:
        self.llm = llm
        self.drafter = drafter
        self.max_tokens = max_tokens
        self.finish = "length"
        self.stats = DraftStats()
        self._vocab = llm._model.vocab
        self._n_vocab = llm.n_vocab()
        self._batch = _internals.LlamaBatch(n_tokens=drafter.max_draft + 1, embd=0, n_seq_max=1, verbose=False)

    def _choice(self, index: int) -> int:
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, index), shape=(self._n_vocab,))
        return int(np.argmax(logits))  # the first maximum, as llama.cpp's greedy sampler picks

    def tokens(self) -> Iterator[int]:
        llm = self.llm
        token = self._choice(-1)
        produced = 0
        while True:
            if produced >= self.max_tokens:  # like llama-cpp-python: "length" before looking at the next token
                return
            if llama_cpp.llama_vocab_is_eog(self._vocab, token):
                self.finish = "stop"
                return
            yield token
            produced += 1
            past = llm.n_tokens
            room = min(self.max_tokens - produced, llm.n_ctx() - past - 1)
            history = np.append(llm.input_ids[:past], np.intc(token))
            draft = self.drafter(history, room)
            step = [token, *draft]
            self._batch.set_batch(step, past, True)
            llm._ctx.decode(self._batch)
            llm.input_ids[past : past + len(step)] = step
            llm.n_tokens = past + len(step)
            self.stats.batches += 1
            self.stats.evaluated += len(step)
            self.stats.drafted += len(draft)
            for index in range(len(step)):
                choice = self._choice(index)
                agreed = index < len(draft) and choice == draft[index]
                if agreed and not llama_cpp.llama_vocab_is_eog(self._vocab, choice):
                    self.stats.accepted += 1
                    yield choice
                    produced += 1
                    continue
                kept = past + index + 1  # the current token and the accepted draft
                if kept < llm.n_tokens:
                    llm._ctx.kv_cache_seq_rm(-1, kept, -1)
                    llm.n_tokens = kept
                token = choice
                break

    def close(self) -> None:
        self._batch.close()


class TextAssembler:
    """Token ids → text pieces as llama-cpp-python's completion streams them: whole UTF-8 characters
    only, cut before the first stop string, never showing the start of a stop string too early."""

    def __init__(self, detokenize: Callable[[list[int]], bytes], stops: list[str]) -> None:
        self._detokenize = detokenize
        self._stops = [s for s in stops if s]
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="ignore")
        self.text = ""
        self._shown = 0
        self.stopped = False

    def add(self, token: int) -> str:
        """The new text that may be shown after `token` ("" while it may still be part of a stop string)."""
        self.text += self._decoder.decode(self._detokenize([token]))
        cut = min((self.text.find(s) for s in self._stops if s in self.text), default=-1)
        if cut >= 0:
            self.text, self.stopped = self.text[:cut], True
            return self._show(len(self.text))
        held = max((i for s in self._stops for i in range(len(s), 0, -1) if self.text.endswith(s[:i])), default=0)
        return self._show(len(self.text) - held)

    def finish(self) -> str:
        if not self.stopped:
            self.text += self._decoder.decode(b"", final=True)
        return self._show(len(self.text))

    def _show(self, end: int) -> str:
        piece = self.text[self._shown : end] if end > self._shown else ""
        self._shown = max(self._shown, end)
        return piece
