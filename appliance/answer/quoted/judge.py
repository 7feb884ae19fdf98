"""The local LLM as a judge of the section choice: asked, for the ranker's best few sections, whether each
answers the question, and its yes/no log-odds combined with the ranker's probability.

For the top `candidates` regions of a Choice (its chosen section, then the best alternatives outside it, one
per region: a parent and its part are one answer, not two rivals), the model reads the question, the
section's label (document title › heading path) and the first `section_words` words of its text, and its
log-odds of answering "Yes" rather than "No" (models/generation/judgement.py: one prefill, no decoding) adjust
the ranker's score:

    adjusted = log P_ranker(section) + weight · log-odds(yes : no)

The judged sections are re-ranked by `adjusted`; together they keep the probability the ranker gave them,
shared out in proportion to exp(adjusted); every other candidate keeps its own. The ✓ (certain) was calibrated
on the ranker alone: after the judge it stands only where the ranker was certain and the judge kept its pick.
Whether the whole job or one part was asked stays the ranker's choice within a region.

`weight`, `candidates` and `section_words` are data (appliance/answer/fitted/llm_judge.json, written by
scripts/bench_llm_judge.py --write, leave-one-corpus-out on the choice training set) and belong to the
generator they were fitted with: with another generator, or another prompt, the judge is refused and the
ranker decides alone (a log line says why). A choice the ranker is sure of (its ✓) is not judged: the judge
would change 1 of 66, for the worse (bench_llm_judge.py, by_certainty). The setting `answer.llm_judge` turns it
on, off, or "auto": on where the generator runs on a GPU or a server and can judge; off on the CPU, where it
costs seconds a question and gained nothing end to end at its fitted weight (docs/measurements/llm-judge.md).
`answer.llm_judge_timing` says whether the answer waits for it (auto: on a GPU, tens of milliseconds), or shows
the ranker's pick first and lets the judge replace it (auto: on the CPU, with llm_judge = on:
answer/quoted/checked_after.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from appliance.answer.question import Question
from appliance.answer.quoted.choice import Choice, Ranked
from appliance.answer.quoted.sections import Section
from appliance.config import Settings
from appliance.errors import ApplianceError
from appliance.models.generation.base import ChatMessage
from appliance.models.generation.judgement import JudgementUnsupported, YesNoJudge

logger = logging.getLogger("appliance.answer")

FITTED = Path(__file__).resolve().parent.parent / "fitted" / "llm_judge.json"
SYSTEM = (
    "You check search results for plant operators. You are given an operator's question and one section of a "
    "procedure or runbook (its title and its first lines). Answer Yes if this section is where the answer to "
    "the question is written (the steps or the fact asked for), No otherwise. Answer with one word: Yes or No."
)
USER = "Question: {question}\n\nSection: {label}\n{text}\n\nIs this section the answer to the question? Yes or No."


def prompt_version() -> str:
    """A fingerprint of the prompt: a weight fitted with other wording is refused."""
    return hashlib.sha256((SYSTEM + "\x00" + USER).encode("utf-8")).hexdigest()[:12]


def section_opening(section: Section, words: int) -> str:
    """The section's first `words` words, its subsection headings included, one item a line."""
    lines: list[str] = []
    left = words
    for item in section.items[1:] if section.heading else section.items:
        if left <= 0:
            break
        taken = item.text.split()[:left]
        left -= len(taken)
        lines.append(" ".join(taken))
    return "\n".join(lines)


def judge_prompt(question: str, section: Section, words: int) -> list[ChatMessage]:
    """The question comes first: the prompts of one question share it, and it is evaluated once."""
    user = USER.format(question=question.strip(), label=section.label, text=section_opening(section, words))
    return [ChatMessage("system", SYSTEM), ChatMessage("user", user)]


@dataclass(frozen=True)
class JudgeModel:
    """The fitted combination (llm_judge.json)."""

    generator: str  # the generator's model name the weight was fitted with
    weight: float
    candidates: int
    section_words: int
    prompt: str  # prompt_version() at fitting time
    source: str = ""


@functools.lru_cache(maxsize=8)
def load_judge_model(path: Path = FITTED) -> JudgeModel:
    """Read once per process: the server builds a judge for every request."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return JudgeModel(
            generator=str(data["generator"]),
            weight=float(data["weight"]),
            candidates=int(data["candidates"]),
            section_words=int(data["section_words"]),
            prompt=str(data["prompt"]),
            source=str(path),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ApplianceError(f"LLM judge model {path}: cannot be read ({exc})") from exc


def judged_regions(choice: Choice, count: int) -> list[Ranked]:
    """The chosen section and the best alternatives outside it, one per region: what the judge reads."""
    return [choice.chosen, *choice.alternatives(count - 1)] if count > 0 else []


def rejudge(choice: Choice, judged: Sequence[Ranked], odds: Sequence[float], weight: float) -> Choice:
    """The choice with `judged` re-ranked by log P + weight · odds; their probability mass shared out anew."""
    if len(judged) < 2:
        return choice
    adjusted = [math.log(max(r.probability, 1e-12)) + weight * o for r, o in zip(judged, odds, strict=True)]
    top = max(adjusted)
    shares = [math.exp(a - top) for a in adjusted]
    mass = sum(r.probability for r in judged)
    new = {id(r): replace(r, probability=mass * s / sum(shares)) for r, s in zip(judged, shares, strict=True)}
    ranked = sorted((new.get(id(r), r) for r in choice.ranked), key=lambda r: -r.probability)
    chosen = new[id(judged[max(range(len(judged)), key=lambda i: adjusted[i])])]
    judged_choice = replace(choice, chosen=chosen, ranked=ranked)
    # The ✓ was calibrated on the ranker's probabilities alone: it stands only where the ranker was sure and the
    # judge kept its pick; an overturned pick, or one the judge made sure, is never badged certain.
    if not (choice.certain and chosen.section is choice.chosen.section):
        judged_choice = replace(judged_choice, certain_probability=math.inf)
    return judged_choice


Timing = Literal["before", "after"]


class SectionJudge:
    """Judges a Choice with a generator; never fails an answer: a failing model leaves the ranker's choice.
    `timing`: whether the answer waits for it ("before") or shows the ranker's pick first ("after")."""

    def __init__(self, generator: YesNoJudge, model: JudgeModel, timing: Timing = "before") -> None:
        self.generator = generator
        self.model = model
        self.timing = timing
        self.last_ms = 0.0
        self.last_odds: list[float] = []  # the last judgement's log-odds, in judged_regions order
        self._unsupported = False

    def __call__(self, question: Question, choice: Choice) -> Choice:
        self.last_ms = 0.0
        self.last_odds = []
        judged = judged_regions(choice, self.model.candidates)
        if self._unsupported or len(judged) < 2:
            return choice
        if choice.certain:
            # Where the ranker was sure (its ✓), the judge would change 1 pick of 66 on three sets
            # (scripts/bench_llm_judge.py, by_certainty): judging it costs seconds for nothing.
            return choice
        if self.timing == "after" and self._model_busy():
            # The steps are already shown: a check queued behind another answer's generation (a minute on the
            # CPU) would change them long after the operator started reading. It is skipped.
            logger.info("LLM judge skipped for one question: the model is busy (the ranker's choice stands)")
            return choice
        started = time.perf_counter()
        prompts = [judge_prompt(question.searched, r.section, self.model.section_words) for r in judged]
        try:
            odds = self.generator.yes_no_log_odds(prompts)
        except JudgementUnsupported as exc:
            self._unsupported = True
            logger.warning("LLM judge off for this process: %s", exc)
            return choice
        except ApplianceError as exc:  # busy, failing, or not loadable: never fails the answer
            logger.warning("LLM judge skipped for one question (the ranker's choice stands): %s", exc)
            return choice
        finally:
            self.last_ms = (time.perf_counter() - started) * 1000.0
        self.last_odds = [round(float(o), 3) for o in odds]
        return rejudge(choice, judged, odds, self.model.weight)

    def _model_busy(self) -> bool:
        depth = getattr(self.generator, "queue_depth", None)
        try:
            return callable(depth) and int(depth()) > 0
        except Exception:  # a gauge that fails says nothing about the model: judge
            return False


def runs_fast(settings: Settings, gpu_build: Callable[[], bool]) -> bool:
    """Whether the generator runs on a GPU: a local model with layers offloaded by a llama.cpp built with a GPU
    backend; the remote backend is the scale-out server, counted as one."""
    generator = settings.generator
    if generator.backend == "openai":
        return bool(generator.url)
    return generator.n_gpu_layers != 0 and gpu_build()


def judge_wanted(settings: Settings, gpu_build: Callable[[], bool]) -> bool:
    """answer.llm_judge: on, off, or auto. auto: where the generator runs on a GPU or a server (it judges before
    the steps are shown, tens of milliseconds); not on the CPU, where it costs seconds of both cores a question and,
    at its fitted weight, gained nothing end to end (docs/measurements/llm-judge.md, stop 52). on: everywhere
    (on the CPU after the steps: judge_timing)."""
    wanted = settings.answer.llm_judge
    if wanted == "auto":
        return runs_fast(settings, gpu_build)
    return wanted == "on"


def judge_timing(settings: Settings, gpu_build: Callable[[], bool]) -> Timing:
    """answer.llm_judge_timing: before, after, or auto (before on a GPU, after on the CPU: docs/measurements/
    llm-judge.md, seconds a question there, against a first content goal of 2 s)."""
    timing = settings.answer.llm_judge_timing
    if timing != "auto":
        return timing
    return "before" if runs_fast(settings, gpu_build) else "after"


def llama_gpu_build() -> bool:
    """Whether the installed llama.cpp can offload to a GPU (False when llama-cpp-python is absent)."""
    try:
        import llama_cpp
    except ImportError:
        return False
    return bool(llama_cpp.llama_supports_gpu_offload())


def section_judge(
    settings: Settings,
    generator: Callable[[], object],
    *,
    model_path: Path | None = None,
    gpu_build: Callable[[], bool] = llama_gpu_build,
) -> SectionJudge | None:
    """The judge the settings ask for, or None (off, refused: the reason is logged). `generator` loads the
    generator; it is called only when the judge is on."""
    if not judge_wanted(settings, gpu_build):
        if settings.answer.llm_judge == "auto":
            logger.info(
                "LLM judge off: the generator runs on the CPU, where the judge costs seconds a question for no "
                "measured gain (answer.llm_judge = on judges after the steps are shown)"
            )
        return None
    model_path = model_path or FITTED
    model = load_judge_model(model_path)
    level = logging.WARNING if settings.answer.llm_judge == "on" else logging.INFO
    if model.prompt != prompt_version():
        logger.log(
            level,
            "LLM judge off: %s was fitted with another prompt; run scripts/bench_llm_judge.py --write",
            model_path,
        )
        return None
    if settings.generator.model != model.generator:
        logger.log(
            level,
            "LLM judge off: its weight (%s) was fitted with the generator %s, and generator.model is %s; "
            "the ranker decides alone (refit with scripts/bench_llm_judge.py --write)",
            model_path,
            model.generator,
            settings.generator.model,
        )
        return None
    try:
        loaded = generator()
        # isinstance reads its model_id: a lazily loaded generator (the server's) loads here.
        if not isinstance(loaded, YesNoJudge):
            logger.log(level, "LLM judge off: the generator %s cannot score yes/no answers", settings.generator.model)
            return None
    except (ApplianceError, ImportError, OSError) as exc:  # auto: no generator installed here, so no judge
        logger.log(level, "LLM judge off: the generator cannot be loaded (%s); the ranker decides alone", exc)
        return None
    timing = judge_timing(settings, gpu_build)
    logger.info(
        "LLM judge on: %s judges the best %d sections (weight %.3g), %s the steps are shown",
        model.generator,
        model.candidates,
        model.weight,
        timing,
    )
    return SectionJudge(loaded, model, timing)
