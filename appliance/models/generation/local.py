"""The local backend: a GGUF from the model store, run in this process by llama.cpp (llama-cpp-python).

The prompt is the model's own chat template (`tokenizer.chat_template` in the GGUF) rendered by
llama-cpp-python's Jinja2 formatter; the same rendering is tokenized for `prompt_tokens()`, so the
count is exact. One generation runs at a time (one llama.cpp context), behind a FairQueue.

Timers: before each call the context's perf counters are reset (llama_perf_context_reset), and
after it `llama_perf_context` gives llama.cpp's own prompt-evaluation time (t_p_eval_ms over
n_p_eval tokens) and decode time (t_eval_ms over n_eval tokens).

Shared prefix: the part of every prompt before its last message (the system prompt and the role
markers: about 200 tokens of the answer prompt, 2.5–3 s of prefill on two cores) is evaluated once
and kept in the KV cache; each call drops the rest of the cache and evaluates only what follows that
prefix. Every prompt is split at the same point whether the prefix was cached or not (a cold call
evaluates the prefix alone first), so the same prompt with the same seed gives the same answer
whatever ran before, and prefill numbers stay honest: `prompt_eval_tokens` (n_p_eval) is what was
evaluated, `prompt_tokens` the whole prompt. `reuse_system_prefix=False` evaluates every prompt in full.

Drafting (`draft="prompt_lookup"`, greedy only): after the prompt, `drafting.GreedyVerifier`
decodes instead of llama-cpp-python's sampler loop, checking several prompt-lookup tokens per model
call; the tokens are those of plain greedy decoding. prefill_ms and prompt_eval_tokens are then
llama.cpp's timers at the end of the prompt, and decode_ms the wall time of the decoding after it
(llama.cpp counts a verified batch as prompt evaluation).

Prompt cache: with `reuse_prompt_cache=True`, llama-cpp-python instead keeps the previous call's
tokens and evaluates only the part of a new prompt after the longest common prefix: faster still for
near-identical prompts, but an exactly repeated prompt has its last token re-evaluated singly
(llama.cpp's timers count that as decode, not prefill), and the answer may differ slightly with
history, because a prompt evaluated in different batches gives slightly different logits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Generator as PyGenerator
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import llama_chat_format

from appliance.config import GeneratorSettings
from appliance.errors import GeneratorBusy, GeneratorError, ModelNotFound
from appliance.models.generation.base import (
    ChatMessage,
    GenerationStats,
    GenerationStream,
    GeneratorBase,
    StatsBox,
    check_messages,
)
from appliance.models.generation.cpu_backends import load_cpu_backend, loaded_variant
from appliance.models.generation.drafting import GreedyVerifier, PromptLookup, TextAssembler
from appliance.models.generation.fair_queue import FairQueue, Ticket
from appliance.models.generation.judgement import answer_token_ids, log_odds_from_logits, log_probability
from appliance.models.generation.llama_log import router

logger = logging.getLogger("appliance.generator")

_LOAD_LOCK = threading.Lock()  # loads capture llama.cpp's process-wide log one at a time
# ggml type ids. q8_0 keeps llama.cpp's CPU flash attention on one code path for one token and for
# several (with an f16 cache a single token at 512+ cached positions takes a split-KV path whose sums
# are ordered differently), so drafted decoding keeps plain decoding's tokens exactly.
KV_CACHE_TYPES = {"f16": 1, "q8_0": 8}
# Repacking (llama.cpp's "extra buffer types", on by default there and here) lays Q4_K weights out for
# kernels that take four tokens at a time, and one by one otherwise: a call of 2 tokens sums exactly as
# single tokens do, a call of 4 does not (generator.draft_max_tokens stays at 1 for that reason).
_LAYER_LINE = re.compile(r"layer\s+(\d+) assigned to device (\S+?),")


@contextlib.contextmanager
def model_params(**fields: Any) -> Iterator[None]:
    """Model parameters llama-cpp-python's Llama() takes no argument for (use_extra_bufts), set on the
    defaults it starts from while one model loads (the generator holds _LOAD_LOCK; a benchmark loading
    its own plain Llama() for comparison uses it too)."""
    module = llama_cpp.llama.llama_cpp
    original = module.llama_model_default_params

    def defaults() -> Any:
        params = original()
        for name, value in fields.items():
            setattr(params, name, value)
        return params

    module.llama_model_default_params = defaults
    try:
        yield
    finally:
        module.llama_model_default_params = original


def hold_prefix(llm: llama_cpp.Llama, prefix: list[int]) -> None:
    """Leave exactly `prefix` in the KV cache of `llm`: kept when it is already there, else evaluated
    alone. What follows is then evaluated apart from it, so a prompt's batches do not depend on what
    ran before (scripts/bench_generation.py gives plain llama.cpp the same start)."""
    held = llm.n_tokens >= len(prefix) and llm.input_ids[: len(prefix)].tolist() == prefix
    if held and llm._ctx.kv_cache_seq_rm(-1, len(prefix), -1):
        llm.n_tokens = len(prefix)
        return
    llm.reset()
    if prefix:
        llm.eval(prefix)


def _common_prefix(token_lists: Sequence[list[int]]) -> list[int]:
    """The tokens every list starts with, leaving each at least one token of its own to evaluate."""
    first = token_lists[0]
    length = min(len(ids) for ids in token_lists) - 1
    for ids in token_lists[1:]:
        same = 0
        while same < length and ids[same] == first[same]:
            same += 1
        length = same
    return first[: max(length, 0)]


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _layer_devices(lines: list[tuple[int, str]]) -> dict[int, str]:
    """llama.cpp's own record of where each layer went ("load_tensors: layer 3 assigned to device CUDA0, ...")."""
    devices: dict[int, str] = {}
    for _, line in lines:
        match = _LAYER_LINE.search(line)
        if match:
            devices[int(match.group(1))] = match.group(2)
    return devices


def _load_error_reason(lines: list[tuple[int, str]]) -> str:
    errors = [line.strip() for level, line in lines if level >= logging.ERROR and line.strip()]
    return "; ".join(errors[:3])


class LlamaCppGenerator(GeneratorBase):
    """A GGUF chat model in this process. See the module docstring for timers and the prompt cache."""

    backend = "llama_cpp"

    def __init__(
        self,
        model_path: Path,
        *,
        model_id: str | None = None,
        n_ctx: int = 4096,
        n_threads: int = 0,
        n_batch: int = 512,
        n_gpu_layers: int = -1,
        max_tokens: int = 384,
        temperature: float = 0.0,
        seed: int = 42,
        queue_size: int = 8,
        queue_timeout_s: float = 300.0,
        reuse_prompt_cache: bool = False,
        reuse_system_prefix: bool = True,
        draft: str = "none",
        draft_max_tokens: int = 1,
        flash_attn: bool = False,
        cpu_variant: str = "auto",
        kv_cache_type: str = "f16",
        repack: bool = True,
    ) -> None:
        super().__init__()
        self.model_path = Path(model_path)
        self.model_id = model_id or self.model_path.stem
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.n_batch = min(n_batch, n_ctx)
        self.n_gpu_layers = n_gpu_layers
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.reuse_prompt_cache = reuse_prompt_cache
        self.reuse_system_prefix = reuse_system_prefix
        if draft not in ("none", "prompt_lookup"):
            raise GeneratorError(f"unknown draft method '{draft}' (expected none or prompt_lookup)")
        self.draft = draft
        self.draft_max_tokens = draft_max_tokens
        self.flash_attn = flash_attn
        self.cpu_variant = cpu_variant
        if kv_cache_type not in KV_CACHE_TYPES:
            raise GeneratorError(f"unknown KV cache type '{kv_cache_type}' (expected {' or '.join(KV_CACHE_TYPES)})")
        self.kv_cache_type = kv_cache_type
        self.repack = repack
        self._queue = FairQueue(queue_size, queue_timeout_s)
        self._llm, self._layer_devices = self._load()
        self._formatter = self._gguf_chat_formatter()
        self._llm.chat_handler = self._formatter.to_chat_handler()
        self._log_offload()

    @classmethod
    def from_settings(cls, settings: GeneratorSettings, model_path: Path, model_id: str) -> LlamaCppGenerator:
        return cls(
            model_path,
            model_id=model_id,
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            n_batch=settings.n_batch,
            n_gpu_layers=settings.n_gpu_layers,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            seed=settings.seed,
            queue_size=settings.queue_size,
            queue_timeout_s=settings.queue_timeout_s,
            reuse_system_prefix=settings.reuse_system_prefix,
            draft=settings.draft,
            draft_max_tokens=settings.draft_max_tokens,
            flash_attn=settings.flash_attn,
            cpu_variant=settings.cpu_variant,
            kv_cache_type=settings.kv_cache_type,
            repack=settings.repack,
        )

    # -- loading -----------------------------------------------------------------------------

    def _load(self) -> tuple[llama_cpp.Llama, dict[int, str]]:
        if not self.model_path.is_file():
            raise ModelNotFound(
                f"generator GGUF {self.model_path} does not exist. Build the model store with "
                "`appliance models init` (development) or install a bundle; models are never downloaded."
            )
        router.install()
        with _LOAD_LOCK, router.capture() as lines, model_params(use_extra_bufts=self.repack):
            load_cpu_backend(self.cpu_variant)  # a build with every CPU variant: load the one for this CPU
            try:
                llm = llama_cpp.Llama(
                    model_path=str(self.model_path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    n_batch=self.n_batch,
                    n_gpu_layers=self.n_gpu_layers,
                    flash_attn=self.flash_attn,
                    type_k=KV_CACHE_TYPES[self.kv_cache_type],
                    type_v=KV_CACHE_TYPES[self.kv_cache_type],
                    seed=self.seed,
                    verbose=False,
                )
            except Exception as exc:  # llama-cpp-python raises ValueError/RuntimeError/OSError here
                reason = _load_error_reason(lines) or str(exc)
                raise GeneratorError(f"cannot load the GGUF model {self.model_path}: {reason}") from exc
        return llm, _layer_devices(lines)

    def _gguf_chat_formatter(self) -> llama_chat_format.Jinja2ChatFormatter:
        template = self._llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise GeneratorError(
                f"the GGUF model {self.model_path} has no chat template (tokenizer.chat_template); "
                "the appliance needs an instruct model that carries its own template"
            )
        llm = self._llm
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        return llama_chat_format.Jinja2ChatFormatter(
            template=template,
            eos_token=llm._model.token_get_text(eos_id) if eos_id != -1 else "",
            bos_token=llm._model.token_get_text(bos_id) if bos_id != -1 else "",
            stop_token_ids=[eos_id],
        )

    def _offloaded_layers(self) -> int:
        if self._layer_devices:
            return sum(1 for device in self._layer_devices.values() if not device.upper().startswith("CPU"))
        # No per-layer log lines (another llama.cpp version): fall back to what was asked for.
        return max(self.n_gpu_layers, 0) if llama_cpp.llama_supports_gpu_offload() else 0

    def _log_offload(self) -> None:
        info = self.system_info()
        if info["gpu_offload"]:
            logger.info(
                "llama.cpp GPU offload active: %d of %d layers on the GPU (%s); system info: %s",
                info["offloaded_layers"],
                info["total_layers"],
                self.model_id,
                info["llama_system_info"],
            )
            return
        why = (
            "this llama.cpp build has no GPU backend"
            if not info["supports_gpu_offload"]
            else "no layer was placed on a GPU (setting generator.n_gpu_layers)"
        )
        logger.info(
            "llama.cpp GPU offload inactive: %s; %s runs on the CPU with %d threads; system info: %s",
            why,
            self.model_id,
            self.n_threads,
            info["llama_system_info"],
        )

    # -- tokens ------------------------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Tokens of plain text by the model's own tokenizer (no BOS, special tokens as text)."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    @property
    def chat_template(self) -> str:
        """The Jinja2 chat template stored in the GGUF (`tokenizer.chat_template`)."""
        return self._formatter.template

    def render_prompt(self, messages: list[ChatMessage]) -> str:
        """The exact prompt text the model sees: the GGUF's chat template with the generation prompt."""
        return self._formatter(messages=[m.as_dict() for m in messages]).prompt  # type: ignore[misc]

    def _prompt_token_ids(self, messages: list[ChatMessage]) -> list[int]:
        response = self._formatter(messages=[m.as_dict() for m in messages])  # type: ignore[misc]
        # The same call llama-cpp-python's chat handler makes, so the count matches what is evaluated.
        return self._llm.tokenize(response.prompt.encode("utf-8"), add_bos=not response.added_special, special=True)

    def prompt_tokens(self, messages: list[ChatMessage]) -> int:
        return len(self._prompt_token_ids(messages))

    def shared_prefix(self, messages: list[ChatMessage], prompt: list[int] | None = None) -> list[int]:
        """The prompt's tokens before the text of its last message: what consecutive questions share.

        `prompt` is the messages' token ids when the caller already has them."""
        prompt = self._prompt_token_ids(messages) if prompt is None else prompt
        probe = self._prompt_token_ids([*messages[:-1], ChatMessage(messages[-1].role, "")])
        length = 0
        for ours, theirs in zip(prompt, probe, strict=False):
            if ours != theirs:
                break
            length += 1
        return prompt[: min(length, len(prompt) - 1)]  # at least one token is left to evaluate

    # -- generation --------------------------------------------------------------------------

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        """Admit the request now (GeneratorBusy at once when the queue is full); wait and generate lazily.

        The returned stream waits for the model on its first `next()`; closing it early frees the slot.
        """
        start = time.perf_counter()
        check_messages(messages)
        prompt_ids = self._prompt_token_ids(messages)
        n_prompt = len(prompt_ids)
        keep_prefix = self.reuse_system_prefix and not self.reuse_prompt_cache
        prefix = self.shared_prefix(messages, prompt_ids) if keep_prefix else None
        room = self.n_ctx - n_prompt
        if room <= 0:
            raise GeneratorError(
                f"the prompt has {n_prompt} tokens but the context window holds {self.n_ctx} (setting generator.n_ctx)"
            )
        limit = min(max_tokens or self.max_tokens, room)
        ticket = self._queue.enter()
        box = StatsBox()
        if self._drafting:
            body = self._generate_drafted(ticket, prompt_ids, prefix, limit, start, box)
        else:
            body = self._generate(ticket, messages, prefix, n_prompt, limit, start, box)
        return GenerationStream(
            body, box, release=lambda: self._queue.leave(ticket), cancel=lambda: self._queue.cancel(ticket)
        )

    def _generate(
        self,
        ticket: Ticket,
        messages: list[ChatMessage],
        prefix: list[int] | None,
        n_prompt: int,
        max_tokens: int,
        start: float,
        box: StatsBox,
    ) -> PyGenerator[str, None, None]:
        started = False
        finish = "cancelled"
        first_ms: float | None = None
        pieces = 0
        try:
            wait_ms = self._queue.wait(ticket)
            started = True
            llama_cpp.llama_perf_context_reset(self._llm._ctx.ctx)  # a cold prefix counts as prefill too
            if prefix is not None:
                hold_prefix(self._llm, prefix)
            elif not self.reuse_prompt_cache:
                self._llm.reset()
            chunks: Any = self._llm.create_chat_completion(
                messages=[m.as_dict() for m in messages],  # type: ignore[misc]
                max_tokens=max_tokens,
                temperature=self.temperature,
                seed=self.seed,
                stream=True,
            )
            try:
                for chunk in chunks:
                    choice = chunk["choices"][0]
                    content = choice["delta"].get("content")
                    if content is not None:
                        pieces += 1  # llama-cpp-python streams one chunk per generated token
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                    if content:
                        if first_ms is None:
                            first_ms = _ms_since(start)
                        yield content
            finally:
                chunks.close()
        except (GeneratorBusy, GeneratorError):
            raise
        except Exception as exc:
            finish = "error"
            raise GeneratorError(f"generation with {self.model_id} failed: {exc}") from exc
        finally:
            if started:
                box.stats = self._stats(n_prompt, pieces, first_ms, start, wait_ms, finish)
                if finish not in ("cancelled", "error"):
                    self._remember(box.stats)
            self._queue.leave(ticket)

    @property
    def _drafting(self) -> bool:
        """Draft-and-verify keeps plain decoding's tokens only when decoding is greedy."""
        return self.draft != "none" and self.temperature == 0.0 and not self.reuse_prompt_cache

    def _generate_drafted(
        self,
        ticket: Ticket,
        prompt_ids: list[int],
        prefix: list[int] | None,
        max_tokens: int,
        start: float,
        box: StatsBox,
    ) -> PyGenerator[str, None, None]:
        """Greedy decoding with prompt-lookup drafts (see drafting.py); the same text as `_generate`."""
        started = False
        finish = "cancelled"
        first_ms: float | None = None
        pieces = 0
        verifier: GreedyVerifier | None = None
        prefill: tuple[float, int] = (0.0, 0)
        decode_start = start
        try:
            wait_ms = self._queue.wait(ticket)
            started = True
            llm = self._llm
            llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
            if prefix is not None:
                hold_prefix(self._llm, prefix)
            else:
                llm.reset()
            llm.eval(prompt_ids[llm.n_tokens :])
            llama_cpp.llama_synchronize(llm._ctx.ctx)  # llama.cpp adds a batch to its timers when it syncs
            perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
            prefill = (float(perf.t_p_eval_ms), int(perf.n_p_eval))
            decode_start = time.perf_counter()
            verifier = GreedyVerifier(llm, PromptLookup(max_draft=self.draft_max_tokens), max_tokens)
            text = TextAssembler(llm.detokenize, [self._formatter.eos_token])
            for token in verifier.tokens():
                pieces += 1
                piece = text.add(token)
                if piece:
                    if first_ms is None:
                        first_ms = _ms_since(start)
                    yield piece
                if text.stopped:
                    break
            finish = "stop" if text.stopped else verifier.finish
            tail = text.finish()
            if tail:
                first_ms = _ms_since(start) if first_ms is None else first_ms
                yield tail
        except (GeneratorBusy, GeneratorError):
            raise
        except Exception as exc:
            finish = "error"
            raise GeneratorError(f"generation with {self.model_id} failed: {exc}") from exc
        finally:
            if started:
                total = _ms_since(start)
                draft = verifier.stats if verifier is not None else None
                box.stats = GenerationStats(
                    prompt_tokens=len(prompt_ids),
                    completion_tokens=pieces,
                    prefill_ms=prefill[0],
                    decode_ms=(time.perf_counter() - decode_start) * 1000.0,
                    first_token_ms=first_ms if first_ms is not None else total,
                    total_ms=total,
                    queue_wait_ms=wait_ms,
                    finish_reason=finish,
                    prompt_eval_tokens=prefill[1],
                    decode_eval_tokens=draft.evaluated if draft is not None else 0,
                    draft_tokens=draft.drafted if draft is not None else 0,
                    accepted_tokens=draft.accepted if draft is not None else 0,
                )
                if finish not in ("cancelled", "error"):
                    self._remember(box.stats)
            if verifier is not None:
                verifier.close()
            self._queue.leave(ticket)

    def _stats(
        self, n_prompt: int, pieces: int, first_ms: float | None, start: float, wait_ms: float, finish: str
    ) -> GenerationStats:
        perf = llama_cpp.llama_perf_context(self._llm._ctx.ctx)
        total = _ms_since(start)
        return GenerationStats(
            prompt_tokens=n_prompt,
            completion_tokens=pieces,
            prefill_ms=float(perf.t_p_eval_ms),
            decode_ms=float(perf.t_eval_ms),
            first_token_ms=first_ms if first_ms is not None else total,
            total_ms=total,
            queue_wait_ms=wait_ms,
            finish_reason=finish,
            prompt_eval_tokens=int(perf.n_p_eval),
            decode_eval_tokens=int(perf.n_eval),
        )

    # -- yes/no judgements (judgement.py) -----------------------------------------------------

    @cached_property
    def _answer_tokens(self) -> tuple[list[int], list[int]]:
        return answer_token_ids(lambda text: self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def yes_no_log_odds(self, prompts: Sequence[list[ChatMessage]]) -> list[float]:
        """For each prompt, log P("yes") − log P("no") as the first token of the answer: one prefill, no decoding.

        The prompts run in one turn of the queue. What they share is evaluated once: the system prefix (kept in
        the KV cache as for answers, `reuse_system_prefix`), then the rest of their common beginning (the
        question, when it comes before the part that differs); then each prompt's own rest. The split points
        depend only on the prompts given, never on what ran before, so the same prompts give the same figures.
        The cache then holds the last prompt: the next answer re-evaluates its own system prefix once."""
        if not prompts:
            return []
        for messages in prompts:
            check_messages(messages)
        token_lists = [self._prompt_token_ids(messages) for messages in prompts]
        longest = max(len(ids) for ids in token_lists)
        if longest >= self.n_ctx:
            raise GeneratorError(
                f"a judgement prompt has {longest} tokens but the context window holds {self.n_ctx} "
                "(setting generator.n_ctx)"
            )
        keep_prefix = self.reuse_system_prefix and not self.reuse_prompt_cache
        system = self.shared_prefix(prompts[0], token_lists[0]) if keep_prefix else []
        common = _common_prefix(token_lists)
        if len(common) < len(system) or common[: len(system)] != system:
            system = []
        yes, no = self._answer_tokens
        llm = self._llm
        odds: list[float] = []
        try:
            with self._queue.slot():
                hold_prefix(llm, system)
                llm.eval(common[len(system) :])
                for ids in token_lists:
                    if llm.n_tokens > len(common):
                        llm._ctx.kv_cache_seq_rm(-1, len(common), -1)
                        llm.n_tokens = len(common)
                    llm.eval(ids[len(common) :])
                    row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
                    logits = np.ctypeslib.as_array(row, shape=(llm.n_vocab(),))
                    odds.append(log_odds_from_logits(logits, yes, no))
        except (GeneratorBusy, GeneratorError):
            raise
        except Exception as exc:
            raise GeneratorError(f"judging with {self.model_id} failed: {exc}") from exc
        return odds

    def reply_log_likelihoods(
        self, prompts: Sequence[list[ChatMessage]], reply: str, *, per_token: bool = False
    ) -> list[float]:
        """For each prompt, log P(`reply` | prompt): the summed log-probability of the reply's tokens as the start
        of the model's answer (`per_token`: their mean). One prefill of each prompt and one of the reply, no
        sampling.

        Used to score sections by how likely the question is given them (the question as the reply to "write
        the question this section answers"). The reply's tokens are taken back out of the cache afterwards."""
        if not prompts:
            return []
        for messages in prompts:
            check_messages(messages)
        llm = self._llm
        reply_ids = llm.tokenize(reply.encode("utf-8"), add_bos=False, special=False)
        if not reply_ids:
            raise GeneratorError("an empty reply has no likelihood")
        if len(reply_ids) > self.n_batch:
            raise GeneratorError(f"a reply of {len(reply_ids)} tokens exceeds generator.n_batch ({self.n_batch})")
        token_lists = [self._prompt_token_ids(messages) for messages in prompts]
        longest = max(len(ids) for ids in token_lists) + len(reply_ids)
        if longest >= self.n_ctx:
            raise GeneratorError(
                f"a likelihood prompt has {longest} tokens but the context window holds {self.n_ctx} "
                "(setting generator.n_ctx)"
            )
        common = _common_prefix(token_lists)
        scores: list[float] = []
        try:
            with self._queue.slot():
                # The common part evaluated alone, whatever ran before: the same prompts give the same figures.
                llm.reset()
                llm.eval(common)
                for ids in token_lists:
                    llm._ctx.kv_cache_seq_rm(-1, len(common), -1)
                    llm.n_tokens = len(common)
                    llm.eval(ids[len(common) :])
                    last = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
                    total = log_probability(np.ctypeslib.as_array(last, shape=(llm.n_vocab(),)), reply_ids[0])
                    # The reply in one batch with logits at every position (eval keeps only the last row).
                    llm._batch.set_batch(batch=reply_ids, n_past=llm.n_tokens, logits_all=True)
                    llm._ctx.decode(llm._batch)
                    for position, token in enumerate(reply_ids[1:]):
                        row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, position)
                        total += log_probability(np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)), token)
                    llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)  # the reply's tokens: not in input_ids
                    scores.append(total / len(reply_ids) if per_token else total)
        except (GeneratorBusy, GeneratorError):
            raise
        except Exception as exc:
            raise GeneratorError(f"scoring with {self.model_id} failed: {exc}") from exc
        return scores

    # -- the rest ----------------------------------------------------------------------------

    def queue_depth(self) -> int:
        return self._queue.depth()

    def system_info(self) -> dict[str, Any]:
        offloaded = self._offloaded_layers()
        return {
            "backend": self.backend,
            "model_id": self.model_id,
            "model_path": str(self.model_path),
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "n_batch": self.n_batch,
            "n_gpu_layers": self.n_gpu_layers,
            "flash_attn": self.flash_attn,
            "kv_cache_type": self.kv_cache_type,
            "repack": self.repack,
            "cpu_variant": loaded_variant(),
            "supports_gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
            "gpu_offload": offloaded > 0,
            "offloaded_layers": offloaded,
            "total_layers": len(self._layer_devices) or None,
            "layer_devices": sorted(set(self._layer_devices.values())),
            "llama_cpp_version": getattr(llama_cpp, "__version__", "unknown"),
            "llama_system_info": llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip(),
            "chat_template": "gguf tokenizer.chat_template",
            "reuse_prompt_cache": self.reuse_prompt_cache,
            "reuse_system_prefix": self.reuse_system_prefix,
            "draft": self.draft if self._drafting else "none",
            "draft_max_tokens": self.draft_max_tokens,
            "queue_size": self._queue.queue_size,
            "queue_depth": self._queue.depth(),
        }

    def close(self) -> None:
        """Free the model's memory; the generator is unusable afterwards."""
        self._llm.close()
