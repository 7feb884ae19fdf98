"""The generator backends, as a specification.

Local: the real SmolLM2-135M-Instruct GGUF from a model store, run by llama.cpp in this process.
Remote: a real llama_cpp.server (`python -m appliance.models.generation.llama_server`, which loads the
CPU variant first) on 127.0.0.1 serving the same GGUF, plus a tiny stdlib
fake server for the failure cases (5xx, timeouts, broken streams). Every generation is short
(at most 16 tokens); nothing here leaves 127.0.0.1.
"""

from __future__ import annotations

import gc
import importlib.util
import inspect
import json
import logging
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jinja2
import pytest

from appliance.config import GeneratorSettings, Settings
from appliance.errors import ConfigError, GeneratorBusy, GeneratorError, ModelNotFound
from appliance.models.generation import (
    ChatMessage,
    FairQueue,
    GenerationStats,
    Generator,
    LlamaCppGenerator,
    OpenAICompatibleGenerator,
    load_generator,
)
from appliance.models.packages import init_store_from_packages
from appliance.models.store import ModelStore
from tests.conftest import REPO

SMOLLM = "smollm2-135m-instruct"
SERVER_MODULES = ("sse_starlette", "starlette_context", "pydantic_settings", "yaml", "fastapi", "uvicorn")
QUESTION = [
    ChatMessage("system", "You answer in one short sentence."),
    ChatMessage("user", "What colour is the sky on a clear day?"),
]


# -- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def smollm_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model store holding the real SmolLM2 GGUF (a hard link into site-packages)."""
    root = tmp_path_factory.mktemp("generator_models")
    init_store_from_packages(ModelStore(root), [SMOLLM])
    return root


@pytest.fixture(scope="session")
def smollm_gguf(smollm_store: Path) -> Path:
    store = ModelStore(smollm_store)
    return store.path_of(store.find("generator", SMOLLM))


def smollm_settings(models_dir: Path, **generator: Any) -> Settings:
    # One thread: the test machine may be busy, and llama.cpp's threads spin-wait on a busy CPU.
    values: dict[str, Any] = {"model": SMOLLM, "n_ctx": 2048, "n_threads": 1, "max_tokens": 16, **generator}
    return Settings(home=models_dir.parent / "home", models_dir=models_dir, generator=GeneratorSettings(**values))


@pytest.fixture(scope="module")
def local_gen(smollm_store: Path) -> Iterator[LlamaCppGenerator]:
    """The model loaded once for the module, with room for one waiting request."""
    gen = load_generator(smollm_settings(smollm_store, queue_size=1, queue_timeout_s=30))
    assert isinstance(gen, LlamaCppGenerator)
    yield gen
    gen.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the local backend ---------------------------------------------------------------------------


def test_complete_uses_the_gguf_chat_template_and_llama_cpp_timers(local_gen: LlamaCppGenerator) -> None:
    # The prompt is SmolLM2's own template from the GGUF, rendered independently here with jinja2.
    template = jinja2.Environment().from_string(local_gen.chat_template)
    expected = template.render(messages=[m.as_dict() for m in QUESTION], add_generation_prompt=True)
    assert local_gen.render_prompt(QUESTION) == expected
    assert expected.startswith("<|im_start|>system\nYou answer in one short sentence.<|im_end|>\n")
    assert expected.endswith("<|im_start|>assistant\n")

    text, stats = local_gen.complete(QUESTION, max_tokens=12)

    assert text.strip()
    assert "<|im_" not in text
    # Exact prompt count: our tokenization of the rendered template == what llama.cpp evaluated.
    assert stats.prompt_tokens == local_gen.prompt_tokens(QUESTION) == stats.prompt_eval_tokens
    assert 0 < stats.completion_tokens <= 12
    assert stats.finish_reason in ("stop", "length")
    if stats.finish_reason == "length":
        assert stats.completion_tokens == 12
    assert stats.prefill_ms is not None and stats.prefill_ms > 0  # llama.cpp's t_p_eval_ms
    assert stats.decode_ms is not None and stats.decode_ms > 0  # llama.cpp's t_eval_ms
    assert stats.decode_eval_tokens is not None and stats.decode_eval_tokens >= stats.completion_tokens - 1
    assert 0 < stats.first_token_ms <= stats.total_ms
    assert stats.queue_wait_ms >= 0


def test_count_tokens_is_the_models_tokenizer_and_the_template_adds_a_fixed_overhead(
    local_gen: LlamaCppGenerator,
) -> None:
    assert local_gen.count_tokens("") == 0
    assert local_gen.count_tokens("pump") < local_gen.count_tokens("Close valve V-101 before starting pump P-7.")

    def overhead(messages: list[ChatMessage]) -> int:
        return local_gen.prompt_tokens(messages) - sum(local_gen.count_tokens(m.content) for m in messages)

    other = [ChatMessage("system", "Be terse."), ChatMessage("user", "Which valve is closed before pump P-7 starts?")]
    assert overhead(QUESTION) == overhead(other) > 0  # role markers + the generation prompt, nothing else


def test_same_prompt_and_seed_give_the_same_answer(local_gen: LlamaCppGenerator) -> None:
    first, _ = local_gen.complete(QUESTION, max_tokens=8)
    second, stats = local_gen.complete(QUESTION, max_tokens=8)
    assert first == second
    # The system prompt's part of the KV cache is kept: only what follows it is evaluated again.
    assert stats.prompt_eval_tokens == stats.prompt_tokens - len(local_gen.shared_prefix(QUESTION))


def test_the_shared_prefix_is_everything_before_the_last_messages_text(local_gen: LlamaCppGenerator) -> None:
    prefix = local_gen.shared_prefix(QUESTION)
    other = [QUESTION[0], ChatMessage("user", "Which valve is closed before pump P-7 starts?")]
    assert prefix == local_gen.shared_prefix(other)
    rendered = local_gen._llm.detokenize(prefix, special=True).decode()
    assert rendered.endswith("You answer in one short sentence.<|im_end|>\n<|im_start|>user\n")


def test_a_cached_system_prefix_changes_neither_the_answer_nor_the_prefill_of_a_cold_start(smollm_gguf: Path) -> None:
    gen = LlamaCppGenerator(smollm_gguf, n_ctx=1024, n_threads=1)
    other = [QUESTION[0], ChatMessage("user", "Which valve is closed before pump P-7 starts?")]
    try:
        cold_text, cold = gen.complete(QUESTION, max_tokens=8)  # prefix evaluated alone, then the rest
        gen.complete(other, max_tokens=8)  # the cache now also holds another question and its answer
        warm_text, warm = gen.complete(QUESTION, max_tokens=8)
        elsewhere = [ChatMessage("system", "Be terse."), *QUESTION[1:]]
        gen.complete(elsewhere, max_tokens=4)  # another system prompt replaces the cached prefix
        again_text, again = gen.complete(QUESTION, max_tokens=8)
        shared = len(gen.shared_prefix(QUESTION))
    finally:
        gen.close()
    assert warm_text == cold_text == again_text
    assert cold.prompt_eval_tokens == cold.prompt_tokens == again.prompt_eval_tokens
    assert warm.prompt_eval_tokens == warm.prompt_tokens - shared


def test_without_the_shared_prefix_every_prompt_is_evaluated_in_full(smollm_gguf: Path) -> None:
    gen = LlamaCppGenerator(smollm_gguf, n_ctx=1024, n_threads=1, reuse_system_prefix=False)
    try:
        gen.complete(QUESTION, max_tokens=4)
        _, stats = gen.complete(QUESTION, max_tokens=4)
    finally:
        gen.close()
    assert stats.prompt_eval_tokens == stats.prompt_tokens


SOURCE_TEXT = (REPO / "docs_corpus" / "SOP-CL-004-chlorine-cylinder-change.md").read_text(encoding="utf-8")[:900]
GROUNDED = [
    [
        ChatMessage("system", "Answer from the source, citing it as [1]. Copy commands and values exactly."),
        ChatMessage("user", f"Source [1]:\n{SOURCE_TEXT}\n\nQuestion: {question}"),
    ]
    for question in ("How do I change a chlorine cylinder?", "What must be checked before the cylinder valve opens?")
]


def test_drafted_decoding_gives_plain_greedy_decodings_text_token_for_token(smollm_gguf: Path) -> None:
    # Real generations over a real SOP, where prompt lookup finds drafts to check.
    exact = {"flash_attn": True, "kv_cache_type": "q8_0"}  # what generator.draft requires
    plain = LlamaCppGenerator(smollm_gguf, n_ctx=2048, n_threads=1, temperature=0.0, draft="none", **exact)
    drafted = LlamaCppGenerator(smollm_gguf, n_ctx=2048, n_threads=1, temperature=0.0, draft="prompt_lookup", **exact)
    try:
        assert drafted.system_info()["draft"] == "prompt_lookup"
        for messages in GROUNDED:
            expected, reference = plain.complete(messages, max_tokens=48)
            with drafted.stream(messages, max_tokens=48) as stream:
                streamed = list(stream)
            stats = stream.stats
            assert stats is not None
            assert "".join(streamed) == expected
            assert (stats.completion_tokens, stats.finish_reason) == (
                reference.completion_tokens,
                reference.finish_reason,
            )
            assert stats.accepted_tokens is not None and stats.accepted_tokens > 0  # drafts were really checked
            assert stats.draft_tokens is not None and stats.draft_tokens >= stats.accepted_tokens
            assert stats.prompt_eval_tokens == reference.prompt_eval_tokens  # the same prefill
    finally:
        plain.close()
        drafted.close()


def test_a_call_of_several_tokens_gives_the_logits_of_single_token_calls(smollm_gguf: Path) -> None:
    # What drafted decoding relies on, in the setting that breaks it: two threads and more than 512
    # cached positions (llama.cpp splits a single token's attention over the threads there). With
    # flash attention and the q8_0 KV cache that drafting requires, both take one code path: the logits
    # are bitwise the same for the calls the generator makes (a token and its draft: draft_max_tokens + 1).
    import llama_cpp
    import numpy as np
    from llama_cpp import _internals

    gen = LlamaCppGenerator(smollm_gguf, n_ctx=1024, n_threads=2, flash_attn=True, kv_cache_type="q8_0")
    llm = gen._llm
    try:
        llm.eval(llm.tokenize(SOURCE_TEXT.encode() * 2)[:600])
        cached = llm.n_tokens
        following = llm.tokenize(b" Close the cylinder valve and check for leaks.", add_bos=False)
        following = following[: gen.draft_max_tokens + 1]
        assert len(following) >= 2
        batch = _internals.LlamaBatch(n_tokens=8, embd=0, n_seq_max=1, verbose=False)

        def logits(index: int) -> np.ndarray:
            row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, index)
            return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).copy()

        singles = []
        for offset, token in enumerate(following):
            batch.set_batch([token], cached + offset, True)
            llm._ctx.decode(batch)
            singles.append(logits(0))
        llm._ctx.kv_cache_seq_rm(-1, cached, -1)
        batch.set_batch(following, cached, True)
        llm._ctx.decode(batch)
        assert all(np.array_equal(logits(i), singles[i]) for i in range(len(following)))
        batch.close()
    finally:
        gen.close()


def test_drafting_is_used_only_for_greedy_decoding(smollm_gguf: Path) -> None:
    sampled = LlamaCppGenerator(smollm_gguf, n_ctx=512, n_threads=1, temperature=0.7, draft="prompt_lookup")
    try:
        assert sampled.system_info()["draft"] == "none"
    finally:
        sampled.close()
    with pytest.raises(GeneratorError, match="unknown draft method 'medusa'"):
        LlamaCppGenerator(smollm_gguf, n_ctx=512, n_threads=1, draft="medusa")


def test_stream_yields_pieces_and_sets_its_own_stats_at_the_end(local_gen: LlamaCppGenerator) -> None:
    stream = local_gen.stream(QUESTION, max_tokens=8)
    assert stream.stats is None
    pieces = list(stream)
    assert pieces and all(pieces)
    assert stream.stats is not None
    assert stream.stats.completion_tokens == len(pieces) <= 8
    # last_stats is per thread: this thread sees its call, another thread sees none.
    assert local_gen.last_stats is stream.stats
    seen: list[GenerationStats | None] = []
    worker = threading.Thread(target=lambda: seen.append(local_gen.last_stats))
    worker.start()
    worker.join()
    assert seen == [None]


def test_prompt_longer_than_the_context_is_refused_before_queueing(local_gen: LlamaCppGenerator) -> None:
    huge = [ChatMessage("user", "valve " * 3000)]
    with pytest.raises(GeneratorError, match=r"context window holds 2048 \(setting generator.n_ctx\)"):
        local_gen.stream(huge)
    assert local_gen.queue_depth() == 0


def test_load_and_generation_print_nothing_and_log_that_gpu_offload_is_inactive(
    smollm_store: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="appliance.generator")
    gen = load_generator(smollm_settings(smollm_store))
    try:
        text, _ = gen.complete(QUESTION, max_tokens=4)
        info = gen.system_info()
    finally:
        gen.close()
    captured = capfd.readouterr()
    assert captured.err == ""
    assert captured.out == ""
    assert text

    # This llama-cpp-python is a CPU build: no offload, all layers on the CPU, and it says so.
    assert info["backend"] == "llama_cpp"
    assert info["model_id"] == SMOLLM
    assert info["n_ctx"] == 2048
    assert info["supports_gpu_offload"] is False
    assert info["gpu_offload"] is False
    assert info["offloaded_layers"] == 0
    assert info["layer_devices"] == ["CPU"]
    assert "CPU" in info["llama_system_info"]
    offload_logs = [r.getMessage() for r in caplog.records if r.name == "appliance.generator"]
    assert any("GPU offload inactive" in m and "runs on the CPU" in m for m in offload_logs)


def test_a_build_with_every_cpu_variant_runs_the_best_one_without_amx(smollm_gguf: Path) -> None:
    from appliance.models.generation.cpu_backends import AMX_VARIANTS, variants

    gen = LlamaCppGenerator(smollm_gguf, n_ctx=512, n_threads=1)
    try:
        info = gen.system_info()
    finally:
        gen.close()
    shipped = variants()
    if not shipped:  # CPU code linked in (GGML_NATIVE=OFF alone): nothing to choose
        assert info["cpu_variant"] is None
        return
    # GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS: a variant was loaded, the best one this CPU runs but AMX.
    assert info["cpu_variant"] in shipped and info["cpu_variant"] not in AMX_VARIANTS
    assert "AVX2 = 1" in info["llama_system_info"] or info["cpu_variant"] in ("x64", "sse42", "sandybridge")


def test_a_damaged_gguf_is_a_generator_error_naming_the_file(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(GeneratorError, match=r"cannot load the GGUF model .*broken\.gguf: .*failed"):
        LlamaCppGenerator(bad, n_ctx=512)
    assert capfd.readouterr().err == ""  # llama.cpp's error lines go into the message, not to stderr


def test_a_model_missing_from_the_store_says_how_to_install_it(tmp_path: Path, smollm_store: Path) -> None:
    with pytest.raises(ModelNotFound, match=r"appliance models init"):
        load_generator(smollm_settings(tmp_path / "empty-store"))
    with pytest.raises(ModelNotFound, match=r"generator 'no-such-model'"):
        load_generator(smollm_settings(smollm_store, model="no-such-model"))
    with pytest.raises(ModelNotFound, match=r"never downloaded"):
        LlamaCppGenerator(tmp_path / "absent.gguf")


def test_load_generator_picks_the_backend_from_settings(smollm_store: Path) -> None:
    remote = load_generator(smollm_settings(smollm_store, backend="openai", url="http://127.0.0.1:9/v1/"))
    assert isinstance(remote, OpenAICompatibleGenerator)
    assert isinstance(remote, Generator)
    assert remote.endpoint == "http://127.0.0.1:9/v1/chat/completions"
    assert remote.model_id == SMOLLM
    remote.close()
    with pytest.raises(ConfigError, match=r"generator\.url is empty"):
        load_generator(smollm_settings(smollm_store, backend="openai"))


def test_the_openai_backend_runs_where_llama_cpp_python_cannot_be_imported() -> None:
    """A host that sends every generation to a model server needs no llama-cpp-python."""
    script = (
        "import sys\n"
        "sys.modules['llama_cpp'] = None  # any import of llama_cpp now fails\n"
        "import appliance.cli.main, appliance.server.app, appliance.models.generation\n"
        "from appliance.config import Settings\n"
        "from appliance.models.generation import load_generator\n"
        "settings = Settings()\n"
        "settings.generator.backend, settings.generator.url = 'openai', 'http://127.0.0.1:9/v1'\n"
        "print(type(load_generator(settings)).__name__)\n"
        "from appliance.models.generation import LlamaCppGenerator\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "OpenAICompatibleGenerator", result.stderr
    assert "import of llama_cpp halted" in result.stderr  # only the local backend needs it


@pytest.mark.parametrize("backend", [LlamaCppGenerator, OpenAICompatibleGenerator])
def test_a_generator_built_without_settings_samples_as_the_settings_default_does(backend: type) -> None:
    """Every constructor default that is also a setting equals the setting's default (temperature 0.0: greedy)."""
    defaults = GeneratorSettings()
    parameters = inspect.signature(backend.__init__).parameters
    shared = [
        name
        for name, parameter in parameters.items()
        if name in GeneratorSettings.model_fields and parameter.default is not inspect.Parameter.empty
    ]
    assert "temperature" in shared
    assert {name: parameters[name].default for name in shared} == {name: getattr(defaults, name) for name in shared}


# -- the queue in front of the local model -------------------------------------------------------


def test_one_runs_one_waits_and_the_third_caller_is_refused_at_once(local_gen: LlamaCppGenerator) -> None:
    running = local_gen.stream(QUESTION, max_tokens=4)
    first_piece = next(running)  # holds the model while paused mid-answer
    waiting = local_gen.stream(QUESTION, max_tokens=4)  # admitted: waits for its turn
    assert local_gen.queue_depth() == 2

    # Refused, not queued: had it waited for its turn, it would wait forever, since only this thread can
    # finish the paused answer ahead of it.
    with pytest.raises(GeneratorBusy, match=r"1 requests are waiting \(setting generator.queue_size\)"):
        local_gen.stream(QUESTION)
    assert local_gen.queue_depth() == 2

    # The waiter is consumed in another thread: it runs as soon as the first answer is finished.
    result: list[str] = []
    worker = threading.Thread(target=lambda: result.append(waiting.text()))
    worker.start()
    rest = running.text()
    worker.join(timeout=60)
    assert first_piece + rest and result and result[0]
    assert waiting.stats is not None and running.stats is not None
    assert waiting.stats.queue_wait_ms > 0
    assert waiting.stats is not running.stats
    assert local_gen.queue_depth() == 0


def test_an_abandoned_stream_gives_its_slot_back(local_gen: LlamaCppGenerator) -> None:
    stream = local_gen.stream(QUESTION, max_tokens=16)
    for _ in stream:
        break  # the consumer stops after the first piece
    assert local_gen.queue_depth() == 1
    del stream  # dropped without close(): garbage collection ends the generation
    gc.collect()
    assert local_gen.queue_depth() == 0

    never_started = local_gen.stream(QUESTION)
    assert local_gen.queue_depth() == 1
    never_started.close()
    assert local_gen.queue_depth() == 0

    with local_gen.stream(QUESTION, max_tokens=16) as pieces:
        next(pieces)
    assert local_gen.queue_depth() == 0
    assert pieces.stats is not None and pieces.stats.finish_reason == "cancelled"


def test_closing_a_stream_whose_consumer_is_still_waiting_cancels_only_that_request(
    local_gen: LlamaCppGenerator,
) -> None:
    running = local_gen.stream(QUESTION, max_tokens=4)
    next(running)
    waiting = local_gen.stream(QUESTION, max_tokens=4)
    outcome: list[object] = []

    def consume() -> None:
        try:
            outcome.append(waiting.text())
        except GeneratorError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=consume)
    worker.start()
    deadline = time.monotonic() + 10  # wait until the worker is blocked inside next(), in the queue
    while inspect.getgeneratorstate(waiting._pieces) != "GEN_RUNNING" and time.monotonic() < deadline:
        time.sleep(0.001)
    waiting.close()  # from another thread: the queued request is taken out, the running one untouched
    worker.join(timeout=10)
    assert len(outcome) == 1
    assert isinstance(outcome[0], GeneratorError) and "cancelled while it waited" in str(outcome[0])
    assert local_gen.queue_depth() == 1
    running.close()
    assert local_gen.queue_depth() == 0


def test_a_cancelled_ticket_never_runs() -> None:
    queue = FairQueue(queue_size=2, timeout_s=5)
    holder = queue.enter()
    cancelled, next_in_line = queue.enter(), queue.enter()
    queue.cancel(cancelled)
    queue.cancel(holder)  # a running request is not cancelled: only its own leave() frees the slot
    assert queue.depth() == 2
    with pytest.raises(GeneratorError, match="cancelled while it waited"):
        queue.wait(cancelled)
    queue.leave(holder)
    assert queue.wait(next_in_line) >= 0
    queue.leave(next_in_line)
    assert queue.depth() == 0


def test_queue_refuses_beyond_its_size_without_blocking() -> None:
    queue = FairQueue(queue_size=1, timeout_s=5)
    running = queue.enter()
    waiting = queue.enter()
    with pytest.raises(GeneratorBusy, match=r"1 requests are waiting"):
        queue.enter()
    assert queue.depth() == 2 and queue.waiting() == 1
    queue.leave(running)
    assert queue.wait(waiting) >= 0  # the slot was handed to the waiter
    queue.leave(waiting)
    queue.leave(waiting)  # leaving twice is harmless
    assert queue.depth() == 0


def test_queue_size_zero_allows_only_the_running_request() -> None:
    queue = FairQueue(queue_size=0, timeout_s=5)
    running = queue.enter()
    with pytest.raises(GeneratorBusy, match=r"0 requests are waiting"):
        queue.enter()
    queue.leave(running)
    queue.leave(queue.enter())


def test_waiters_run_in_arrival_order_even_when_their_threads_start_in_reverse() -> None:
    queue = FairQueue(queue_size=5, timeout_s=30)
    order: list[int] = []

    def fake_backend(request: int) -> None:  # a "slow model" that records who it served
        order.append(request)

    holder = queue.enter()
    tickets = [queue.enter() for _ in range(5)]  # arrival order 0..4

    def serve(request: int) -> None:
        queue.wait(tickets[request])
        try:
            fake_backend(request)
        finally:
            queue.leave(tickets[request])

    threads = [threading.Thread(target=serve, args=(i,)) for i in range(5)]
    for thread in reversed(threads):  # the last to arrive is the first to be scheduled by the OS
        thread.start()
    assert order == []  # nobody runs while the holder has the slot
    queue.leave(holder)
    for thread in threads:
        thread.join(timeout=10)
    assert order == [0, 1, 2, 3, 4]
    assert queue.depth() == 0


def test_a_newcomer_cannot_overtake_a_waiter() -> None:
    queue = FairQueue(queue_size=2, timeout_s=5)
    holder = queue.enter()
    waiter = queue.enter()
    queue.leave(holder)  # the slot goes straight to the waiter...
    newcomer = queue.enter()  # ...so the newcomer, arriving in between, waits behind it
    assert queue.wait(waiter) >= 0
    assert queue.waiting() == 1
    queue.leave(waiter)
    queue.wait(newcomer)
    queue.leave(newcomer)


def test_a_waiter_that_waits_too_long_is_refused_as_busy() -> None:
    queue = FairQueue(queue_size=1, timeout_s=0.05)
    holder = queue.enter()
    waiter = queue.enter()
    with pytest.raises(GeneratorBusy, match=r"waited 0.05 s .*generator.queue_timeout_s"):
        queue.wait(waiter)
    assert queue.depth() == 1  # the refused waiter left the line
    queue.leave(holder)


def test_run_serves_one_function_at_a_time_and_frees_the_slot_on_error() -> None:
    queue = FairQueue(queue_size=3, timeout_s=10)
    release = threading.Event()
    inside = threading.Event()
    active: list[int] = []
    overlap: list[int] = []

    def slow_backend(request: int) -> int:
        active.append(request)
        overlap.append(len(active))
        inside.set()
        release.wait(10)
        active.remove(request)
        return request * 10

    results: dict[int, int] = {}
    first = threading.Thread(target=lambda: results.__setitem__(0, queue.run(lambda: slow_backend(0))))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=lambda: results.__setitem__(1, queue.run(lambda: slow_backend(1))))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert results == {0: 0, 1: 10}
    assert max(overlap) == 1

    def failing() -> None:
        raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError):
        queue.run(failing)
    assert queue.depth() == 0


# -- the remote backend against a real llama.cpp server ------------------------------------------


@pytest.fixture(scope="module")
def llama_server(smollm_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's server serving SmolLM2 on 127.0.0.1, as docs/scaling.md starts it (the plain
    `python -m llama_cpp.server` loads no CPU code from a build with every variant); yields …/v1."""
    missing = [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"llama_cpp.server needs {', '.join(missing)}: install the project's dev extras")
    port = free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    command = [
        sys.executable, "-m", "appliance.models.generation.llama_server", "--model", str(smollm_gguf),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer within 60 s: {log.read_text()[-2000:]}")
            time.sleep(0.1)  # polling a starting subprocess: there is nothing to wait on but time
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_remote_streams_pieces_from_a_real_llama_cpp_server(llama_server: str) -> None:
    gen = OpenAICompatibleGenerator(llama_server, model=SMOLLM, max_tokens=12, retries=0)
    try:
        stream = gen.stream(QUESTION)
        first = next(stream)
        assert gen.queue_depth() == 1  # in flight
        pieces = [first, *stream]
        assert len(pieces) > 1 and "".join(pieces).strip()
        stats = stream.stats
        assert stats is not None
        assert stats.completion_tokens == len(pieces) <= 12  # one event per token (no usage in the stream)
        assert stats.prompt_tokens == gen.prompt_tokens(QUESTION) > 0  # the documented estimate
        assert stats.prefill_ms is None and stats.decode_ms is None
        assert stats.finish_reason in ("stop", "length")
        assert 0 < stats.first_token_ms <= stats.total_ms
        assert gen.queue_depth() == 0

        text, complete_stats = gen.complete(QUESTION, max_tokens=4)
        assert text and complete_stats.completion_tokens <= 4
    finally:
        gen.close()


def test_remote_yes_no_log_odds_from_a_real_llama_cpp_server_agree_with_the_local_model(
    llama_server: str, local_gen: LlamaCppGenerator
) -> None:
    system = ChatMessage("system", "Answer with one word: Yes or No.")
    prompts = [[system, ChatMessage("user", f"Reply with the word {word}.")] for word in ("Yes", "No")]
    gen = OpenAICompatibleGenerator(llama_server, model=SMOLLM, retries=0)
    try:
        remote = gen.yes_no_log_odds(prompts)
    finally:
        gen.close()
    local = local_gen.yes_no_log_odds(prompts)
    assert remote[0] > remote[1]
    # The server evaluates each prompt in one batch, the local backend in three: the same figures, near enough.
    assert remote == pytest.approx(local, abs=0.3)


def test_remote_without_a_server_is_an_error_naming_the_url_after_the_retries(caplog: pytest.LogCaptureFixture) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    gen = OpenAICompatibleGenerator(url, model="m", retries=2, backoff_s=0.01, api_key="s3cret-key")
    expected = re.escape(f"{url}/chat/completions failed after 3 attempts: cannot connect")
    with pytest.raises(GeneratorError, match=expected):
        gen.complete(QUESTION)
    assert len([r for r in caplog.records if "retrying" in r.getMessage()]) == 2
    assert "s3cret-key" not in caplog.text and "s3cret-key" not in repr(gen)
    gen.close()


# -- the remote backend against a scripted fake server -------------------------------------------


def sse(*pieces: str, finish: str = "stop", usage: dict[str, int] | None = None, done: bool = True) -> bytes:
    events: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
    events += [{"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage:
        events.append({"choices": [], "usage": usage})
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)
    return b": ping\r\n\r\n" + body + (b"data: [DONE]\r\n\r\n" if done else b"")


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    hang: bool = False  # send headers, then nothing until the test ends
    cut_after: int | None = None  # close the connection after this many body bytes, mid-stream


@dataclass
class FakeServer:
    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeServer]]:
    """A stdlib HTTP server on 127.0.0.1 answering each POST with the next scripted Reply."""
    servers: list[tuple[ThreadingHTTPServer, FakeServer]] = []

    def start(*replies: Reply) -> FakeServer:
        fake = FakeServer(list(replies))

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "json": json.loads(self.rfile.read(length))}
                )
                reply = fake.replies.pop(0) if fake.replies else Reply(500, b"script exhausted")
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream" if reply.status == 200 else "text/plain")
                if reply.cut_after is None and not reply.hang:
                    self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.flush()
                if reply.hang:
                    fake.release.wait(10)
                    return
                self.wfile.write(reply.body if reply.cut_after is None else reply.body[: reply.cut_after])
                self.wfile.flush()

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        servers.append((server, fake))
        return fake

    yield start
    for server, fake in servers:
        fake.release.set()
        server.shutdown()
        server.server_close()


def test_remote_pieces_concatenate_to_the_answer_and_usage_is_used(fake_server: Callable[..., FakeServer]) -> None:
    fake = fake_server(Reply(body=sse("The sky", " is", " blue.", usage={"prompt_tokens": 27, "completion_tokens": 3})))
    gen = OpenAICompatibleGenerator(fake.url, model="served-model", api_key="s3cret-key", max_tokens=16)
    stream = gen.stream(QUESTION)
    assert list(stream) == ["The sky", " is", " blue."]
    assert stream.stats is not None
    assert (stream.stats.prompt_tokens, stream.stats.completion_tokens) == (27, 3)
    assert stream.stats.finish_reason == "stop"

    sent = fake.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer s3cret-key"
    assert sent["json"]["stream"] is True
    assert sent["json"]["model"] == "served-model"
    assert sent["json"]["max_tokens"] == 16
    assert sent["json"]["messages"][1] == {"role": "user", "content": QUESTION[1].content}
    gen.close()


def test_remote_5xx_before_the_first_token_is_retried(fake_server: Callable[..., FakeServer]) -> None:
    fake = fake_server(Reply(503, b"loading model"), Reply(502, b"bad gateway"), Reply(body=sse("ok")))
    gen = OpenAICompatibleGenerator(fake.url, model="m", retries=2, backoff_s=0.01)
    text, stats = gen.complete(QUESTION)
    assert text == "ok"
    assert len(fake.requests) == 3
    assert stats.completion_tokens == 1
    gen.close()


def test_remote_5xx_after_all_retries_names_url_status_and_body(fake_server: Callable[..., FakeServer]) -> None:
    fake = fake_server(*[Reply(503, b"the server is overloaded, try later")] * 2)
    gen = OpenAICompatibleGenerator(fake.url, model="m", retries=1, backoff_s=0.01)
    expected = r"failed after 2 attempts: HTTP 503 from .*/v1/chat/completions: the server is overloaded"
    with pytest.raises(GeneratorError, match=expected):
        gen.complete(QUESTION)
    assert len(fake.requests) == 2
    gen.close()


def test_remote_4xx_is_not_retried(fake_server: Callable[..., FakeServer]) -> None:
    fake = fake_server(Reply(401, b'{"error": "invalid api key"}'))
    gen = OpenAICompatibleGenerator(fake.url, model="m", retries=3, backoff_s=0.01, api_key="wrong-key")
    with pytest.raises(GeneratorError, match=r"refused the request: HTTP 401 from .*: .*invalid api key") as info:
        gen.complete(QUESTION)
    assert "wrong-key" not in str(info.value)
    assert len(fake.requests) == 1
    gen.close()


def test_remote_read_timeout_is_a_generator_error_and_not_retried(fake_server: Callable[..., FakeServer]) -> None:
    fake = fake_server(Reply(hang=True), Reply(body=sse("late")))
    gen = OpenAICompatibleGenerator(fake.url, model="m", timeout_s=0.3, retries=2, backoff_s=0.01)
    # The server never answers the first request: only the read timeout ends the call, and the reply
    # queued for a retry is never asked for.
    with pytest.raises(GeneratorError, match=r"sent nothing for 0.3 s \(setting generator.timeout_s\)"):
        gen.complete(QUESTION)
    assert len(fake.requests) == 1
    gen.close()


def test_remote_stream_broken_after_the_first_token_is_not_restarted(fake_server: Callable[..., FakeServer]) -> None:
    body = sse("Step one", " then step two", done=False)
    cut = body.index(b"then step two") - 20  # inside the second piece's event
    fake = fake_server(Reply(body=body, cut_after=cut), Reply(body=sse("a duplicate answer")))
    gen = OpenAICompatibleGenerator(fake.url, model="m", retries=2, backoff_s=0.01)
    stream = gen.stream(QUESTION)
    assert next(stream) == "Step one"
    with pytest.raises(GeneratorError, match=r"ended before its last event|broke after 1 pieces"):
        list(stream)
    assert len(fake.requests) == 1
    assert gen.queue_depth() == 0
    gen.close()


def test_remote_server_error_event_is_reported(fake_server: Callable[..., FakeServer]) -> None:
    body = b'data: {"error": {"message": "context length exceeded"}}\r\n\r\n'
    fake = fake_server(Reply(body=body))
    gen = OpenAICompatibleGenerator(fake.url, model="m", retries=0)
    with pytest.raises(GeneratorError, match=r"reported: .*context length exceeded"):
        gen.complete(QUESTION)
    gen.close()
