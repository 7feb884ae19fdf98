"""Generation benchmark: the appliance's answers against plain llama.cpp greedy streaming, one run.

For each answerable question of the demo and runbook sets that the appliance answers (not refused by
the evidence decision), interleaved question by question on the same GGUF and thread count:

appliance  `Answerer.events` as the service runs it: retrieval (the query's vector not cached),
           prompt, the local generator with its settings (draft-and-verify decoding, flash attention,
           KV cache type, the cached system prefix).
defaults   plain llama.cpp: llama-cpp-python's own `create_chat_completion(stream=True, temperature=0)`
           on the very messages the appliance sent, in a separate Llama with the library's defaults
           (no flash attention, f16 KV cache, repacked weights): what a plain program gets. The speed
           ratios of the issue are against this side.
same       the same plain streaming with the appliance's flash attention, KV cache type and repacking:
           the text must then be the appliance's token for token ("diffs: none"), the check that
           drafting changes nothing.

Both plain Llamas start each prompt as the appliance's generator does, with exactly the prompt's part
before the question in their KV cache (the system prefix a plain program keeps from its previous
prompt) and the rest evaluated in one go: a prompt evaluated in other batches gives slightly other
logits (llama.cpp's repacked kernels take four rows at a time), which would show up as text diffs that
drafting did not make. The sides run in a rotating order per question, so a drift in the machine's load
hits each alike.

Reported per side: time to first token (the appliance's includes its retrieval, reported apart too),
tokens/s after the first token (wall clock from the first streamed piece to the last; tokens counted
by the model's tokenizer on each side's text, the same way for all), and the generated texts (before
the appliance's citation check) compared with each plain side.

Usage: python scripts/bench_generation.py [--sets demo,runbooks] [--limit N]
       [--plain-config both|same|defaults] [--no-drafting] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import llama_cpp

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.answerer import Answerer
from appliance.config import load_settings
from appliance.evaluate.runner import load_qa
from appliance.ingest.pipeline import ingest
from appliance.models.generation import ChatMessage, GenerationStream, load_generator
from appliance.models.generation.local import KV_CACHE_TYPES, LlamaCppGenerator, hold_prefix, model_params

REPO = Path(__file__).resolve().parent.parent
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
SETS = {
    "demo": (lambda: [REPO / "docs_corpus"], REPO / "scripts/qa/demo_corpus.jsonl"),
    "runbooks": (lambda: sorted(p for p in RUNBOOKS.iterdir() if p.is_dir()), REPO / "scripts/qa/runbooks_tune.jsonl"),
}


class Captured(Exception):
    """Raised instead of generating when only the prompt is wanted."""


class Recording:
    """The appliance's generator, remembering the messages of its last call."""

    def __init__(self, inner: LlamaCppGenerator) -> None:
        self.inner = inner
        self.messages: list[ChatMessage] = []
        self.capture_only = False

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        self.messages = list(messages)
        if self.capture_only:
            raise Captured
        return self.inner.stream(messages, max_tokens=max_tokens)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def prompt_of(answerer: Answerer, recording: Recording, question: str) -> list[ChatMessage] | None:
    """The messages the appliance sends for `question` (None: refused before generation)."""
    recording.messages, recording.capture_only = [], True
    try:
        for _ in answerer.events(question):
            pass
    except Captured:
        pass
    finally:
        recording.capture_only = False
    return recording.messages or None


def rate_after_first(times: list[float], count: int) -> float | None:
    """Tokens per second after the first one, wall clock from the first piece to the last."""
    if count < 2 or len(times) < 2 or times[-1] <= times[0]:
        return None
    return (count - 1) / (times[-1] - times[0])


def plain_stream(
    llm: llama_cpp.Llama, inner: LlamaCppGenerator, messages: list[ChatMessage], max_tokens: int
) -> dict[str, Any]:
    """Plain streaming, its KV cache holding what the appliance's generator holds before the prompt."""
    hold_prefix(llm, inner.shared_prefix(messages))
    started = time.perf_counter()
    times: list[float] = []
    pieces: list[str] = []
    finish = None
    # Any, as in the appliance's generator: the declared return type is a union (response | chunk iterator),
    # not narrowed by stream=True
    chunks: Any = llm.create_chat_completion(
        messages=[m.as_dict() for m in messages],  # type: ignore[misc]
        max_tokens=max_tokens,
        temperature=0.0,
        stream=True,
    )
    for chunk in chunks:
        choice = chunk["choices"][0]
        content = choice["delta"].get("content")
        if content:
            times.append(time.perf_counter())
            pieces.append(content)
        finish = choice.get("finish_reason") or finish
    text = "".join(pieces)
    tokens = inner.count_tokens(text)  # pieces merge split characters and held stop prefixes: count tokens
    return {
        "text": text,
        "first_token_ms": (times[0] - started) * 1000 if times else None,
        "tokens": tokens,
        "tokens_per_s": rate_after_first(times, tokens),
        "finish": finish,
    }


def appliance_stream(answerer: Answerer, inner: LlamaCppGenerator, question: str) -> dict[str, Any]:
    answerer.searcher.embedder._queries.clear()  # prompt_of embedded this question: no cache hit timed
    started = time.perf_counter()
    times: list[float] = []
    pieces: list[str] = []
    result = None
    for event in answerer.events(question):
        if event.kind == "token" and event.text:
            times.append(time.perf_counter())
            pieces.append(event.text)
        elif event.kind == "done":
            result = event.result
    assert result is not None
    generation = result.generation or {}
    text = "".join(pieces)
    tokens = inner.count_tokens(text)  # as for plain (completion_tokens, the generator's own count, beside it)
    return {
        "refused_before_generation": not times and result.refused,
        "text": text,
        "first_token_ms": (times[0] - started) * 1000 if times else None,
        "tokens": tokens,
        "tokens_per_s": rate_after_first(times, tokens),
        "completion_tokens": generation.get("completion_tokens"),
        "finish": generation.get("finish_reason"),
        "draft_tokens": generation.get("draft_tokens"),
        "accepted_tokens": generation.get("accepted_tokens"),
        "prefill_ms": generation.get("prefill_ms"),
        "prompt_tokens": generation.get("prompt_tokens"),
        "retrieve_ms": result.timings_ms.get("retrieve"),  # part of first_token_ms; plain has no retrieval
    }


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 2) if present else None


def plain_llama(inner: LlamaCppGenerator, config: str) -> llama_cpp.Llama:
    """The same GGUF, context and threads; "same": also the appliance's flash attention, KV cache type and
    repacking (the text must then be identical), "defaults": llama-cpp-python's own defaults for those."""
    same = config == "same"
    kv = KV_CACHE_TYPES[inner.kv_cache_type if same else "f16"]
    with model_params(use_extra_bufts=inner.repack if same else True):
        return llama_cpp.Llama(
            model_path=str(inner.model_path),
            n_ctx=inner.n_ctx,
            n_threads=inner.n_threads,
            n_threads_batch=inner.n_threads,
            n_batch=inner.n_batch,
            flash_attn=inner.flash_attn if same else False,
            type_k=kv,
            type_v=kv,
            seed=inner.seed,
            verbose=False,
        )


# The settings drafting needs to keep plain decoding's tokens (docs/measurements/speed.md).
EXACT_DRAFTING = {"APPLIANCE_GENERATOR_FLASH_ATTN": "true", "APPLIANCE_GENERATOR_KV_CACHE_TYPE": "q8_0"}


def recorded_answerer(
    name: str, home: Path, models_dir: Path, environment: dict[str, str]
) -> tuple[LlamaCppGenerator, Recording, Answerer]:
    """Set `name` indexed under home/name and an Answerer whose local generator records its prompts;
    `environment`: settings (APPLIANCE_*) on top of the defaults."""
    environ = {**os.environ, "APPLIANCE_HOME": str(home / name), "APPLIANCE_MODELS_DIR": str(models_dir)}
    environ.pop("APPLIANCE_CONFIG", None)
    settings = load_settings({**environ, **environment})
    ingest(settings, SETS[name][0]())
    inner = load_generator(settings)
    assert isinstance(inner, LlamaCppGenerator), "the benchmark compares the local llama_cpp generator"
    recording = Recording(inner)
    return inner, recording, Answerer(settings, generator=recording)  # type: ignore[arg-type]


def run_set(name: str, args: argparse.Namespace) -> dict[str, Any]:
    qa = SETS[name][1]
    # --drafting: the opt-in drafting and the two settings it requires.
    drafting = {"APPLIANCE_GENERATOR_DRAFT": "prompt_lookup", **EXACT_DRAFTING} if args.drafting else {}
    inner, recording, answerer = recorded_answerer(name, args.home, args.models_dir, drafting)
    settings = answerer.settings
    configs = ["defaults", "same"] if args.plain_config == "both" else [args.plain_config]
    plains = {config: plain_llama(inner, config) for config in configs}
    items = [item for item in load_qa(qa) if item.answerable]
    rows: list[dict[str, Any]] = []
    for item in items:
        if args.limit and len(rows) >= args.limit:
            break
        messages = prompt_of(answerer, recording, item.question)
        if messages is None:
            continue
        max_tokens = settings.generator.max_tokens
        sides = ["appliance", *configs]
        turn = len(rows) % len(sides)  # rotate who runs first, so a drift in machine load hits each alike
        results: dict[str, dict[str, Any]] = {}
        for side in sides[turn:] + sides[:turn]:
            if side == "appliance":
                results[side] = appliance_stream(answerer, inner, item.question)
            else:
                results[side] = plain_stream(plains[side], inner, messages, max_tokens)
        if recording.messages != messages:  # retrieval is deterministic: the same prompt both times
            raise RuntimeError(f"{item.id}: the appliance's prompt changed between two identical asks")
        ours = results["appliance"]
        rows.append(
            {
                "id": item.id,
                "appliance": ours,
                "plain": {config: results[config] for config in configs},
                "same_text": {config: ours["text"] == results[config]["text"] for config in configs},
                "messages": [m.as_dict() for m in messages],
            }
        )
        line = ", ".join(
            f"{config}: ttft {results[config]['first_token_ms'] or 0:.0f} ms, tok/s "
            f"{results[config]['tokens_per_s'] or 0:.1f}, same={rows[-1]['same_text'][config]}"
            for config in configs
        )
        print(
            f"{name} {item.id}: appliance ttft {ours['first_token_ms'] or 0:.0f} ms, tok/s "
            f"{ours['tokens_per_s'] or 0:.1f}, accepted {ours['accepted_tokens']}/{ours['draft_tokens']}; {line}",
            file=sys.stderr,
            flush=True,
        )
    answerer.close()
    for plain in plains.values():
        plain.close()
    return summarize(name, rows, inner, configs)


def ratio(ours: float | None, theirs: float | None) -> float | None:
    return round(ours / theirs, 2) if ours and theirs else None


def summarize(
    name: str, rows: list[dict[str, Any]], generator: LlamaCppGenerator, configs: list[str]
) -> dict[str, Any]:
    def ours(field: str) -> float | None:
        return median([r["appliance"][field] for r in rows])

    def theirs(config: str, field: str) -> float | None:
        return median([r["plain"][config][field] for r in rows])

    drafted = sum(r["appliance"]["draft_tokens"] or 0 for r in rows)
    accepted = sum(r["appliance"]["accepted_tokens"] or 0 for r in rows)
    plain = {}
    for config in configs:
        rate_ratios = [ratio(r["appliance"]["tokens_per_s"], r["plain"][config]["tokens_per_s"]) for r in rows]
        plain[config] = {
            "tokens_per_s_median": theirs(config, "tokens_per_s"),
            "first_token_ms_median": theirs(config, "first_token_ms"),
            "tokens_per_s_ratio": ratio(ours("tokens_per_s"), theirs(config, "tokens_per_s")),
            "tokens_per_s_ratio_per_answer_median": median(list(rate_ratios)),
            "first_token_ratio": ratio(ours("first_token_ms"), theirs(config, "first_token_ms")),
            "diffs": [r["id"] for r in rows if not r["same_text"][config]],
        }
    info = generator.system_info()
    return {
        "set": name,
        "answers": len(rows),
        "appliance_tokens_per_s_median": ours("tokens_per_s"),
        "appliance_first_token_ms_median": ours("first_token_ms"),
        "appliance_retrieval_ms_median": ours("retrieve_ms"),
        "draft_acceptance": round(accepted / drafted, 3) if drafted else None,
        "plain": plain,
        "generator": {
            k: info[k]
            for k in (
                "model_id",
                "n_threads",
                "draft",
                "draft_max_tokens",
                "flash_attn",
                "kv_cache_type",
                "repack",
                "cpu_variant",
            )
        },
        "llama_system_info": info["llama_system_info"],
        "load_average": os.getloadavg(),
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-generation")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--sets", default="demo,runbooks")
    parser.add_argument("--limit", type=int, default=8, help="Answers per set (0 = every answerable question).")
    parser.add_argument(
        "--plain-config",
        choices=["both", "same", "defaults"],
        default="both",
        help="defaults: plain llama.cpp with llama-cpp-python's defaults (what a plain program gets; the "
        "speed ratios); same: with the appliance's flash attention, KV cache type and repacking (the texts "
        "must be equal); both (default): each question on all three sides.",
    )
    parser.add_argument(
        "--drafting",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="The appliance side with generator.draft = prompt_lookup, flash attention and a q8_0 KV cache "
        "(off by default in the product); --no-drafting: its default settings, llama.cpp's defaults.",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = {}
    for name in args.sets.split(","):
        results[name] = run_set(name, args)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    for name, r in results.items():
        for config, p in r["plain"].items():
            print(
                f"{name}: {r['answers']} answers; tokens/s after the first token {r['appliance_tokens_per_s_median']} "
                f"(plain llama.cpp, {config}: {p['tokens_per_s_median']}) = {p['tokens_per_s_ratio']}x "
                f"(per answer, median {p['tokens_per_s_ratio_per_answer_median']}x); first token "
                f"{r['appliance_first_token_ms_median']} ms, retrieval included "
                f"(plain {p['first_token_ms_median']} ms) "
                f"= {p['first_token_ratio']}x; drafts accepted {r['draft_acceptance']}; text diffs: "
                f"{', '.join(p['diffs']) or 'none'}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
