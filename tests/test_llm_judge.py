"""The local LLM as a judge of the section choice: yes/no log-odds read in one prefill (models/generation/
judgement.py, both backends), and answer/quoted/judge.py re-ranking the ranker's best regions with them,
switched by answer.llm_judge and refused for a generator it was not fitted with."""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from appliance.answer.question import read_question
from appliance.answer.quoted.candidates import Candidate
from appliance.answer.quoted.choice import Choice, Ranked
from appliance.answer.quoted.judge import (
    FITTED,
    JudgeModel,
    SectionJudge,
    judge_prompt,
    judged_regions,
    load_judge_model,
    prompt_version,
    rejudge,
    section_judge,
    section_opening,
)
from appliance.answer.quoted.sections import Section, document_sections
from appliance.config import AnswerSettings, GeneratorSettings, Settings
from appliance.errors import GeneratorError
from appliance.index.records import ChunkRow
from appliance.ingest.chunker import chunk_document
from appliance.ingest.loaders import load_document
from appliance.models.generation import ChatMessage, JudgementUnsupported, OpenAICompatibleGenerator, YesNoJudge
from appliance.models.generation.judgement import (
    answer_token_ids,
    log_odds_from_logits,
    log_odds_from_top,
    top_logprobs_of,
)
from appliance.models.generation.local import LlamaCppGenerator
from appliance.models.store import ModelStore

SMOLLM = "smollm2-135m-instruct"
SYSTEM = ChatMessage("system", "Answer with one word: Yes or No.")

SOP = """# SOP-CL-004 Chlorine Ton Container Change

## 1. Purpose

To change an empty one-ton chlorine container on a bank without a release of chlorine.

## 6. Procedure

### 6.1 Prepare

1. Tell the control room (ext. 2100) that a container change on bank A is starting.
2. Put on the SCBA and check the leak detector AIT-452.

### 6.2 Isolate the empty bank

1. Close the bank header isolation valve VLV-4501-A.
2. Close the container valve with the container wrench.

## 7. Notifications

Call the Plant Superintendent (ext. 2001) for any chlorine release.
"""


# -- the log-odds arithmetic ---------------------------------------------------------------------


def test_only_single_token_spellings_of_yes_and_no_are_read() -> None:
    vocabulary = {"Yes": [1], "yes": [2], "YES": [3, 4], " Yes": [5], " yes": [5], "No": [6], "no": [7]}
    yes, no = answer_token_ids(lambda text: vocabulary.get(text, [8, 9]))
    assert (yes, no) == ([1, 2, 5], [6, 7])  # "YES" takes two tokens: its first one is no answer
    with pytest.raises(JudgementUnsupported, match="no single token for yes or for no"):
        answer_token_ids(lambda text: [1, 2])


def test_log_odds_sum_every_spelling_of_each_answer() -> None:
    logits = np.log(np.asarray([0.1, 0.3, 0.1, 0.2, 0.3]))  # ids 1, 2: yes (0.4); ids 3, 4: no (0.5)
    assert log_odds_from_logits(logits, [1, 2], [3, 4]) == pytest.approx(math.log(0.4 / 0.5))


def test_a_servers_top_logprobs_give_the_log_odds_and_a_missing_side_is_bounded_by_the_least_listed() -> None:
    both = [("Yes", math.log(0.6)), (" yes", math.log(0.1)), ("No", math.log(0.2)), ("The", math.log(0.05))]
    assert log_odds_from_top(both) == pytest.approx(math.log(0.7 / 0.2))
    only_yes = [("Yes", math.log(0.9)), ("Sure", math.log(0.05))]
    assert log_odds_from_top(only_yes) == pytest.approx(math.log(0.9 / 0.05))  # no < 0.05: a floor, not a guess
    assert log_odds_from_top([("The", -0.1), ("A", -3.0)]) == 0.0
    with pytest.raises(JudgementUnsupported):
        log_odds_from_top([])


def test_a_completion_without_logprobs_is_unsupported() -> None:
    answer = {"choices": [{"message": {"content": "Yes"}, "logprobs": None}]}
    with pytest.raises(JudgementUnsupported, match="does not support `logprobs`"):
        top_logprobs_of(answer)
    listed = {"choices": [{"logprobs": {"content": [{"token": "No", "logprob": -0.1, "top_logprobs": []}]}}]}
    assert top_logprobs_of(listed) == [("No", -0.1)]  # no alternatives listed: the chosen token itself


# -- the local backend (the real SmolLM2) --------------------------------------------------------


@pytest.fixture(scope="module")
def smollm(models_dir: Path) -> Iterator[LlamaCppGenerator]:
    store = ModelStore(models_dir)
    # One thread: the test machine may be busy, and llama.cpp's threads spin-wait on a busy CPU.
    gen = LlamaCppGenerator(store.path_of(store.find("generator", SMOLLM)), n_ctx=1024, n_threads=1, max_tokens=8)
    yield gen
    gen.close()


YES_NO = [
    [SYSTEM, ChatMessage("user", "Reply with the word Yes.")],
    [SYSTEM, ChatMessage("user", "Reply with the word No.")],
]


def test_the_local_model_scores_yes_above_no_from_one_prefill(smollm: LlamaCppGenerator) -> None:
    assert isinstance(smollm, YesNoJudge)
    yes, no = smollm.yes_no_log_odds(YES_NO)
    assert yes > 0 and yes - no > 1.0
    assert smollm._llm.n_tokens == smollm.prompt_tokens(YES_NO[1])  # the prompt evaluated, not one token decoded


def test_the_same_prompts_give_the_same_figures_whatever_ran_before(smollm: LlamaCppGenerator) -> None:
    first = smollm.yes_no_log_odds(YES_NO)
    smollm.complete([ChatMessage("system", "You are terse."), ChatMessage("user", "Name a colour.")], max_tokens=4)
    smollm.yes_no_log_odds([[SYSTEM, ChatMessage("user", "Is the sun cold?")]])
    assert smollm.yes_no_log_odds(YES_NO) == first
    assert smollm.yes_no_log_odds([]) == []


def test_a_judgement_prompt_longer_than_the_context_is_a_generator_error(smollm: LlamaCppGenerator) -> None:
    with pytest.raises(GeneratorError, match=r"context window holds 1024 \(setting generator.n_ctx\)"):
        smollm.yes_no_log_odds([[SYSTEM, ChatMessage("user", "word " * 1200)]])


CAPITALS = [
    [ChatMessage("user", "What is the capital of France?")],
    [ChatMessage("user", "Name a fruit.")],
]


def test_a_reply_s_likelihood_is_its_tokens_log_probabilities_as_plain_llama_cpp_reads_them(
    smollm: LlamaCppGenerator,
) -> None:
    import llama_cpp

    reply = "The capital of France is Paris."
    scores = smollm.reply_log_likelihoods(CAPITALS, reply)
    plain = llama_cpp.Llama(str(smollm.model_path), n_ctx=256, n_threads=1, logits_all=True, verbose=False)
    try:
        reply_ids = plain.tokenize(reply.encode(), add_bos=False, special=False)
        for messages, score in zip(CAPITALS, scores, strict=True):
            prompt = smollm._prompt_token_ids(messages)
            plain.reset()
            plain.eval(prompt + reply_ids)
            expected = 0.0
            for offset, token in enumerate(reply_ids):
                row = np.asarray(plain.scores[len(prompt) - 1 + offset], dtype=np.float64)
                expected += row[token] - (row.max() + math.log(np.exp(row - row.max()).sum()))
            assert score == pytest.approx(expected, abs=0.3)  # batches split otherwise: float rounding only
    finally:
        plain.close()
    assert scores[0] > scores[1]  # the answer is likelier after its own question


def test_a_reply_s_likelihood_does_not_depend_on_what_ran_before_and_leaves_the_reply_out_of_the_cache(
    smollm: LlamaCppGenerator,
) -> None:
    first = smollm.reply_log_likelihoods(CAPITALS, "Paris.")
    smollm.yes_no_log_odds(YES_NO)
    assert smollm.reply_log_likelihoods(CAPITALS, "Paris.") == first
    assert smollm._llm.n_tokens == smollm.prompt_tokens(CAPITALS[1])
    assert smollm.reply_log_likelihoods([], "Paris.") == []
    with pytest.raises(GeneratorError, match="empty reply"):
        smollm.reply_log_likelihoods(CAPITALS, "")


# -- the remote backend (a scripted OpenAI-compatible server) ------------------------------------


@pytest.fixture
def server() -> Iterator[tuple[str, list[tuple[int, Any]], list[dict[str, Any]]]]:
    """A stdlib server on 127.0.0.1 answering each POST with the next scripted (status, JSON body)."""
    replies: list[tuple[int, Any]] = []
    requests: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            status, body = replies.pop(0)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", replies, requests
    httpd.shutdown()
    httpd.server_close()


def completion(*top: tuple[str, float]) -> dict[str, Any]:
    listed = [{"token": t, "logprob": lp} for t, lp in top]
    return {
        "choices": [
            {"message": {"content": top[0][0]}, "logprobs": {"content": [{**listed[0], "top_logprobs": listed}]}}
        ]
    }


def test_the_remote_backend_asks_for_one_token_with_its_top_logprobs(server: Any) -> None:
    url, replies, requests = server
    replies += [
        (200, completion(("Yes", math.log(0.8)), ("No", math.log(0.2)))),
        (200, completion(("No", math.log(0.9)), ("Maybe", math.log(0.05)))),
    ]
    gen = OpenAICompatibleGenerator(url, model="served")
    assert isinstance(gen, YesNoJudge)
    odds = gen.yes_no_log_odds(YES_NO)
    assert odds == pytest.approx([math.log(0.8 / 0.2), math.log(0.05 / 0.9)])
    sent = requests[0]
    assert (sent["max_tokens"], sent["logprobs"], sent["temperature"]) == (1, True, 0.0)
    assert sent["top_logprobs"] >= 5 and "stream" not in sent
    assert sent["messages"][1] == {"role": "user", "content": "Reply with the word Yes."}
    gen.close()


def test_a_server_without_logprobs_is_unsupported_and_a_failing_one_an_error(server: Any) -> None:
    url, replies, _ = server
    replies += [
        (200, {"choices": [{"message": {"content": "Yes"}}]}),
        (400, {"error": "logprobs is not supported"}),
        (500, {"error": "out of memory"}),
    ]
    gen = OpenAICompatibleGenerator(url, model="served", retries=0)
    with pytest.raises(JudgementUnsupported, match="does not support `logprobs`"):
        gen.yes_no_log_odds(YES_NO[:1])
    with pytest.raises(JudgementUnsupported, match=r"HTTP 400 .*logprobs is not supported"):
        gen.yes_no_log_odds(YES_NO[:1])
    with pytest.raises(GeneratorError, match="HTTP 500") as failed:
        gen.yes_no_log_odds(YES_NO[:1])
    assert not isinstance(failed.value, JudgementUnsupported)
    gen.close()


# -- the judge ----------------------------------------------------------------------------------


def sections_of(tmp_path: Path) -> dict[str, Section]:
    path = tmp_path / "SOP-CL-004.md"
    path.write_text(SOP)
    chunks = chunk_document(load_document(path, "plant/SOP-CL-004.md"), lambda t: [len(x.split()) for x in t])
    rows = [ChunkRow(**asdict(chunk), rowid=i, type="md") for i, chunk in enumerate(chunks)]
    return document_sections(rows)


def heading(sections: dict[str, Section], name: str) -> Section:
    return next(s for s in sections.values() if s.name == name)


def choice_of(ranked: Sequence[tuple[Section, float]]) -> Choice:
    items = [Ranked(Candidate(s, (), 1, 1.0, 0.0, 0.0), p) for s, p in ranked]
    return Choice(items[0], items, close_ratio=0.5, certain_probability=0.9)


def test_the_prompt_holds_the_question_first_then_the_label_and_the_first_words(tmp_path: Path) -> None:
    sections = sections_of(tmp_path)
    procedure = heading(sections, "6. Procedure")
    messages = judge_prompt("  How do I change a ton container? ", procedure, words=12)
    user = messages[1].content
    assert user.startswith("Question: How do I change a ton container?\n\nSection: SOP-CL-004 Chlorine Ton")
    assert "6.1 Prepare" in user and "Tell the control room" in user and "VLV-4501-A" not in user
    assert len(section_opening(procedure, 12).split()) == 12
    assert len(prompt_version()) == 12


def test_the_judge_reads_one_section_per_region_and_reranks_them_keeping_their_mass(tmp_path: Path) -> None:
    sections = sections_of(tmp_path)
    prepare, procedure = heading(sections, "6.1 Prepare"), heading(sections, "6. Procedure")
    notify, purpose = heading(sections, "7. Notifications"), heading(sections, "1. Purpose")
    choice = choice_of([(prepare, 0.4), (procedure, 0.3), (notify, 0.2), (purpose, 0.1)])
    judged = judged_regions(choice, 3)
    assert [r.section.name for r in judged] == ["6.1 Prepare", "7. Notifications", "1. Purpose"]  # 6. holds 6.1

    new = rejudge(choice, judged, [-3.0, 2.0, 0.0], weight=1.0)
    assert new.section.name == "7. Notifications"
    assert sum(r.probability for r in new.ranked) == pytest.approx(1.0)
    assert [r.probability for r in new.ranked if r.section.name == "6. Procedure"] == [0.3]  # not judged: kept
    assert new.ranked[0].section.name == "7. Notifications"
    assert rejudge(choice, judged, [-3.0, 2.0, 0.0], weight=0.0).section.name == "6.1 Prepare"


def test_the_judge_never_makes_a_choice_certain_that_the_ranker_was_not_sure_of(tmp_path: Path) -> None:
    """The ✓ was calibrated on the ranker alone: an overturned pick is never badged certain, nor one the ranker
    was unsure of however strongly the judge agrees; a sure pick the judge keeps stays sure."""
    sections = sections_of(tmp_path)
    prepare, notify = heading(sections, "6.1 Prepare"), heading(sections, "7. Notifications")
    sure = choice_of([(prepare, 0.95), (notify, 0.05)])
    assert sure.certain
    assert rejudge(sure, judged_regions(sure, 2), [3.0, -3.0], weight=1.0).certain  # kept: still sure
    overturned = rejudge(sure, judged_regions(sure, 2), [-5.0, 5.0], weight=1.0)
    assert overturned.section.name == "7. Notifications" and not overturned.certain
    unsure = choice_of([(prepare, 0.6), (notify, 0.4)])
    agreed = rejudge(unsure, judged_regions(unsure, 2), [6.0, -6.0], weight=1.0)
    assert agreed.region_probability > 0.9 and not agreed.certain


class ScriptedJudge:
    """A YesNoJudge that answers from a script (the real backends are tested above)."""

    model_id = "scripted"

    def __init__(self, odds: list[float] | Exception) -> None:
        self.odds = odds
        self.calls: list[Sequence[list[ChatMessage]]] = []

    def yes_no_log_odds(self, prompts: Sequence[list[ChatMessage]]) -> list[float]:
        self.calls.append(prompts)
        if isinstance(self.odds, Exception):
            raise self.odds
        return self.odds[: len(prompts)]


def model(**changes: Any) -> JudgeModel:
    values: dict[str, Any] = {"generator": SMOLLM, "weight": 1.0, "candidates": 2, "section_words": 20}
    return JudgeModel(**{**values, "prompt": prompt_version(), **changes})


def test_a_failing_or_unsupported_generator_leaves_the_rankers_choice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sections = sections_of(tmp_path)
    choice = choice_of([(heading(sections, "1. Purpose"), 0.6), (heading(sections, "6.2 Isolate the empty bank"), 0.4)])
    question = read_question(
        "How do I isolate the bank?", "How do I isolate the bank?", "How do I isolate the bank?", np.zeros(4)
    )
    assert (
        SectionJudge(ScriptedJudge([-2.0, 3.0]), model())(question, choice).section.name == "6.2 Isolate the empty bank"
    )

    failing = SectionJudge(ScriptedJudge(GeneratorError("server gone")), model())
    assert failing(question, choice) is choice
    unsupported = ScriptedJudge(JudgementUnsupported("no logprobs"))
    judge = SectionJudge(unsupported, model())
    assert judge(question, choice) is choice and judge(question, choice) is choice
    assert len(unsupported.calls) == 1  # asked once, then off for the process
    assert (
        "(the ranker's choice stands): server gone" in caplog.text and "LLM judge off for this process" in caplog.text
    )


def test_a_choice_the_ranker_is_sure_of_is_not_judged(tmp_path: Path) -> None:
    """On its ✓ the judge changed no pick in the measurements: it is not asked there."""
    sections = sections_of(tmp_path)
    sure = choice_of([(heading(sections, "6.1 Prepare"), 0.95), (heading(sections, "7. Notifications"), 0.05)])
    assert sure.certain
    generator = ScriptedJudge([-9.0, 9.0])
    judge = SectionJudge(generator, model())
    question = read_question("How do I prepare?", "How do I prepare?", "How do I prepare?", np.zeros(4))
    assert judge(question, sure) is sure and not generator.calls


def write_model(path: Path, generator: str, prompt: str | None = None) -> Path:
    path.write_text(
        json.dumps(
            {
                "generator": generator,
                "weight": 0.5,
                "candidates": 3,
                "section_words": 30,
                "prompt": prompt or prompt_version(),
            }
        )
    )
    return path


def settings_with(judge: str, **generator: Any) -> Settings:
    return Settings(answer=AnswerSettings(llm_judge=judge), generator=GeneratorSettings(**generator))


def test_auto_judges_before_the_steps_on_a_gpu_or_a_server_and_not_on_the_cpu(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """On the CPU the judge costs seconds a question and gained nothing end to end at its fitted weight
    (docs/measurements/llm-judge.md): auto leaves it off there, and a log line says how to turn it on."""
    caplog.set_level(logging.INFO, logger="appliance.answer")
    fitted = write_model(tmp_path / "judge.json", "qwen2.5-coder-1.5b-instruct")
    fake = ScriptedJudge([0.0])
    loads: list[str] = []

    def load() -> ScriptedJudge:
        loads.append("generator")
        return fake

    def timing(settings: Settings, gpu: bool) -> str | None:
        judge = section_judge(settings, load, model_path=fitted, gpu_build=lambda: gpu)
        return None if judge is None else judge.timing

    assert timing(settings_with("auto"), gpu=False) is None  # the CPU build: whatever n_gpu_layers says
    assert timing(settings_with("auto", n_gpu_layers=0), gpu=True) is None  # a GPU build, no layer offloaded
    assert not loads  # off on the CPU: no model is loaded for it
    assert "LLM judge off: the generator runs on the CPU" in caplog.text
    assert timing(settings_with("auto", n_gpu_layers=-1), gpu=True) == "before"
    server = settings_with("auto", backend="openai", url="http://127.0.0.1:9/v1", model="qwen2.5-coder-1.5b-instruct")
    assert timing(server, gpu=False) == "before"
    assert timing(settings_with("on"), gpu=False) == "after"  # asked for on the CPU: after the steps are shown
    forced = Settings(answer=AnswerSettings(llm_judge="on", llm_judge_timing="before"))
    assert timing(forced, gpu=False) == "before"
    assert timing(settings_with("off", n_gpu_layers=-1), gpu=True) is None


def test_auto_without_an_installed_generator_leaves_the_ranker_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from appliance.errors import ModelNotFound

    caplog.set_level(logging.INFO, logger="appliance.answer")

    def missing() -> object:
        raise ModelNotFound("generator qwen2.5-coder-1.5b-instruct is not installed")

    fitted = write_model(tmp_path / "judge.json", "qwen2.5-coder-1.5b-instruct")
    on_a_gpu = settings_with("auto", n_gpu_layers=-1)
    assert section_judge(on_a_gpu, missing, model_path=fitted, gpu_build=lambda: True) is None
    assert "LLM judge off: the generator cannot be loaded" in caplog.text


def test_a_weight_fitted_with_another_generator_or_prompt_is_refused_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="appliance.answer")
    loaded: list[bool] = []

    def generator() -> ScriptedJudge:
        loaded.append(True)
        return ScriptedJudge([0.0])

    other = write_model(tmp_path / "other.json", "another-model")
    assert section_judge(settings_with("on"), generator, model_path=other) is None
    assert "fitted with the generator another-model, and generator.model is qwen2.5-coder-1.5b-instruct" in caplog.text
    reworded = write_model(tmp_path / "reworded.json", "qwen2.5-coder-1.5b-instruct", prompt="0123456789ab")
    assert section_judge(settings_with("on"), generator, model_path=reworded) is None
    assert "fitted with another prompt" in caplog.text
    assert not loaded  # a refused judge loads no model
    assert (
        section_judge(
            settings_with("on"),
            lambda: object(),
            model_path=write_model(tmp_path / "j.json", "qwen2.5-coder-1.5b-instruct"),
        )
        is None
    )
    assert "cannot score yes/no answers" in caplog.text


def test_the_committed_judge_model_belongs_to_the_shipped_generator_and_this_prompt() -> None:
    fitted = load_judge_model(FITTED)
    assert fitted.generator == GeneratorSettings().model
    assert fitted.prompt == prompt_version()
    assert fitted.candidates >= 2 and fitted.section_words > 0 and fitted.weight >= 0


# -- the shipped generator (the real Qwen2.5-Coder-1.5B, assembled from its packages) ------------


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppGenerator]:
    from appliance.models.packages import init_store_from_packages

    store = ModelStore(tmp_path_factory.mktemp("qwen_models"))
    name = GeneratorSettings().model
    init_store_from_packages(store, [name])
    gen = LlamaCppGenerator(store.path_of(store.find("generator", name)), n_ctx=2048, n_threads=1)
    yield gen
    gen.close()


@pytest.mark.slow
def test_the_shipped_generator_judges_the_steps_above_the_purpose_and_another_document(
    qwen: LlamaCppGenerator, tmp_path: Path
) -> None:
    sections = sections_of(tmp_path)
    steps, purpose = heading(sections, "6.2 Isolate the empty bank"), heading(sections, "7. Notifications")
    path = tmp_path / "bread.md"
    path.write_text("# Baking bread\n\n## Dough\n\nMix flour, water, salt and yeast; knead it for ten minutes.\n")
    chunks = chunk_document(load_document(path, "kitchen/bread.md"), lambda t: [len(x.split()) for x in t])
    bread = heading(
        document_sections([ChunkRow(**asdict(c), rowid=i, type="md") for i, c in enumerate(chunks)]), "Dough"
    )
    question = "How do I isolate the empty bank before changing the chlorine container?"
    odds = qwen.yes_no_log_odds([judge_prompt(question, s, 40) for s in (steps, purpose, bread)])
    assert odds[0] > odds[1] and odds[0] > odds[2] + 2.0


def test_the_fit_judges_the_regions_the_appliance_judges_and_picks_as_it_does(tmp_path: Path) -> None:
    """scripts/bench_llm_judge.py fits the weight on its own copy of the choice (features dump, not Sections): its
    regions and its pick must be the appliance's, or the weight is fitted for another decision than the one made."""
    from scripts.bench_llm_judge import Item, View, pick, regions

    sections = sections_of(tmp_path)
    names = ["6.1 Prepare", "6. Procedure", "7. Notifications", "1. Purpose"]
    order = [heading(sections, name) for name in names]
    question = {"candidates": [{"path": s.path, "heading": s.heading} for s in order]}
    p = np.array([0.4, 0.3, 0.2, 0.1])

    # The likeliest shown (a fact), then a procedure shown by its mass: "6. Procedure" holding 0.7 with 6.1 inside.
    likeliest = choice_of(list(zip(order, p, strict=True)))
    by_mass = Choice(Ranked(likeliest.ranked[1].candidate, 0.7), likeliest.ranked, 0.5, 0.9)
    # Either way the shown region (6. and 6.1) holds 0.7, and the best rival outside it is 7. Notifications (0.2).
    for choice, view in ((likeliest, View(p, 0, 0.4, 0.7, 0.2)), (by_mass, View(p, 1, 0.7, 0.7, 0.2))):
        judged = judged_regions(choice, 3)
        indexes = regions(question, view, 3)
        assert [names[i] for i in indexes] == [r.section.name for r in judged]
        chances = [view.first_probability, *(float(p[i]) for i in indexes[1:])]
        for odds in ([-3.0, 2.0, 0.0], [1.0, -1.0, 0.5], [0.0, 0.0, 3.0]):
            for weight in (0.0, 1.0, 4.0):
                fitted = names[pick(Item(question, indexes, chances, odds, certain=False), weight, 3)]
                assert fitted == rejudge(choice, judged, odds, weight).section.name

    # A ✓ choice is not judged by the appliance (SectionJudge), so the fit keeps the ranker's pick there too.
    sure = Item(question, [0, 2], [0.95, 0.05], [-5.0, 5.0], certain=True)
    assert pick(sure, 4.0, 2) == 0
    assert pick(sure, 4.0, 2, asked=True) == 2  # what the judge would have done, reported by by_certainty
