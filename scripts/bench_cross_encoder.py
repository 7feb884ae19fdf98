"""What a cross-encoder fine-tuned here, from the shipped MiniLM weights, gains over the fitted ranker alone.

No registry ships a cross-encoder the appliance may install (issue 40), so one is trained at development time
from the embedder's own weights (all-MiniLM-L6-v2 with a new one-output head): it reads the operator's question
and a section's heading and opening together, where the ranker reads features of each apart.

Leave one corpus out, as fit_choice.py: for each group (docs_corpus, openshift, gitlab, ir-prometheus) a
cross-encoder is trained on the other groups' training questions, each question one softmax over its target
sections (fit_choice.targets) and up to --negatives candidates that do not overlap them, the ranker's likeliest
first (listwise); it then scores the regions the appliance's LLM judge would read (bench_llm_judge.regions) for
the questions of the group left out. The heldout procedures and the procedures the local model drafted are
scored by one trained on every training question. The score is combined as the judge's is
(bench_llm_judge.pick, evaluate): where the ranker is not sure, the best of the first K regions by
log P_ranker + w · score, w chosen leave one corpus out; figures as fit_choice.py measures them.

Every training setting (Training below) was fixed before any figure was read. Scores are cached per fold with
the settings they came from (--cache), so a rerun with the same settings trains nothing.

Usage: python scripts/bench_cross_encoder.py [--candidates 5] [--threads 2] [--results FILE.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.quoted.judge import section_opening
from appliance.answer.quoted.ranker import load_ranker
from appliance.answer.quoted.sections import Section
from scripts.bench_llm_judge import (
    Sections,
    View,
    ceiling,
    evaluate,
    items,
    judged_sets,
    key,
    regions,
    separation,
)
from scripts.fit_choice import GROUPS, overlapping, targets
from scripts.lib.report import save_report

REPO = Path(__file__).resolve().parent.parent
BASE_MODEL = REPO / "models" / "embedder" / "all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Training:
    """Fixed before any figure was read: a common fine-tuning recipe for a MiniLM cross-encoder, sized for two
    CPU cores (a first try, 2 epochs of 8 passages of up to 256 tokens, ran at 2 s a question: 2 hours for the
    five models; cut before it had scored anything)."""

    epochs: int = 1
    learning_rate: float = 5e-5
    warmup_share: float = 0.1
    weight_decay: float = 0.01
    negatives: int = 5
    section_words: int = 60
    max_tokens: int = 160
    seed: int = 0

    def version(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


def passage(section: Section, words: int) -> str:
    return f"{section.label}\n{section_opening(section, words)}"


@dataclass(frozen=True)
class Group:
    """One training question: its text, the passages of its targets and negatives, which are targets."""

    question: str
    passages: list[str]
    target: list[bool]


def training_group(q: dict[str, Any], view: View, sections: Sections, settings: Training) -> Group | None:
    target = targets(q)
    if target is None:
        return None
    positives = [int(i) for i in np.flatnonzero(target)]
    negatives: list[int] = []
    for index in np.argsort(-view.p, kind="stable"):
        i = int(index)
        if len(negatives) == settings.negatives:
            break
        if target[i] == 0 and not any(overlapping(q["candidates"][i], q["candidates"][j]) for j in positives):
            negatives.append(i)
    if not negatives:
        return None
    chosen = positives + negatives
    texts = [passage(s, settings.section_words) for s in sections.of(q, chosen)]
    return Group(q["searched"], texts, [i in positives for i in chosen])


class CrossEncoder:
    """MiniLM with a one-output head over (question, passage), fine-tuned listwise."""

    def __init__(self, settings: Training, threads: int) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer, logging

        logging.set_verbosity_error()  # the new head's "newly initialized" notice is expected
        torch.set_num_threads(threads)
        torch.manual_seed(settings.seed)
        self.torch = torch
        self.settings = settings
        self.tokenizer = AutoTokenizer.from_pretrained(BASE_MODEL)
        self.model = AutoModelForSequenceClassification.from_pretrained(BASE_MODEL, num_labels=1)

    def _logits(self, question: str, passages: Sequence[str]) -> Any:
        encoded = self.tokenizer(
            [question] * len(passages),
            list(passages),
            truncation="only_second",
            max_length=self.settings.max_tokens,
            padding=True,
            return_tensors="pt",
        )
        return self.model(**encoded).logits.squeeze(-1)

    def train(self, groups: Sequence[Group], label: str) -> float:
        torch, settings = self.torch, self.settings
        optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
        )
        steps = settings.epochs * len(groups)
        warmup = max(1, int(settings.warmup_share * steps))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
        )
        order = list(range(len(groups)))
        shuffle = random.Random(settings.seed)
        started = time.perf_counter()
        self.model.train()
        for epoch in range(settings.epochs):
            shuffle.shuffle(order)
            total = 0.0
            for step, index in enumerate(order, start=1):
                group = groups[index]
                logits = self._logits(group.question, group.passages)
                target = torch.tensor(group.target)
                # -log of the softmax mass on the targets: the ranker's own objective, within one question
                loss = torch.logsumexp(logits, 0) - torch.logsumexp(logits[target], 0)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad()
                total += float(loss.detach())
                if step % 100 == 0:
                    mean = total / step
                    print(f"{label} epoch {epoch + 1} step {step}/{len(order)} loss {mean:.3f}", file=sys.stderr)
        self.model.eval()
        return time.perf_counter() - started

    def scores(self, question: str, passages: Sequence[str]) -> list[float]:
        with self.torch.no_grad():
            return [float(x) for x in self._logits(question, passages)]


def score_fold(
    label: str,
    train: Sequence[dict[str, Any]],
    scored: Sequence[dict[str, Any]],
    views: dict[str, View],
    picks: dict[str, list[int]],
    sections: Sections,
    settings: Training,
    threads: int,
    cache: Path,
) -> dict[str, dict[str, Any]]:
    """Train on `train`, score each of `scored`'s picked regions; cached under `cache` with the settings."""
    path = cache / f"{label}.json"
    if path.exists():
        stored = json.loads(path.read_text())
        if stored["settings"] == settings.version() and set(stored["scores"]) >= {key(q) for q in scored}:
            return dict(stored["scores"])
    groups = [g for q in train if (g := training_group(q, views[key(q)], sections, settings)) is not None]
    encoder = CrossEncoder(settings, threads)
    seconds = encoder.train(groups, label)
    found: dict[str, dict[str, Any]] = {}
    for q in scored:
        texts = [passage(s, settings.section_words) for s in sections.of(q, picks[key(q)])]
        started = time.perf_counter()
        odds = encoder.scores(q["searched"], texts)
        found[key(q)] = {"odds": odds, "ms": (time.perf_counter() - started) * 1000.0}
    cache.mkdir(parents=True, exist_ok=True)
    record = {"settings": settings.version(), "training_groups": len(groups), "train_s": seconds, "scores": found}
    path.write_text(json.dumps(record) + "\n")
    print(f"{label}: trained on {len(groups)} questions in {seconds:.0f} s", file=sys.stderr)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=Path, default=REPO / ".appliance" / "choice_features.pkl")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--candidates", type=int, default=5, help="Regions scored per question (K = 2..this).")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=REPO / ".appliance" / "cross_encoder")
    parser.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "bench_cross_encoder.json")
    parser.add_argument("--fit-results", type=Path, default=REPO / "scripts" / "results" / "fit_choice.json")
    args = parser.parse_args()
    settings = Training()

    train, heldout, views, chosen = judged_sets(args.features, args.fit_results)  # as bench_llm_judge.py
    calibration = load_ranker()
    usable = [q for q in train if q["answerable"] and key(q) in views and targets(q) is not None]
    evaluated = [q for q in heldout if key(q) in views and targets(q) is not None]
    picks = {key(q): regions(q, views[key(q)], args.candidates) for q in [*usable, *evaluated]}
    sections = Sections(args.home)

    scored: dict[str, dict[str, Any]] = {}
    for group in GROUPS:
        fitted_on = [q for q in usable if q["group"] != group]
        left_out = [q for q in usable if q["group"] == group]
        scored |= score_fold(group, fitted_on, left_out, views, picks, sections, settings, args.threads, args.cache)
    scored |= score_fold("all", usable, evaluated, views, picks, sections, settings, args.threads, args.cache)

    train_items = items(usable, views, picks, scored, calibration)
    heldout_items = items(evaluated, views, picks, scored, calibration)
    folds = {
        label: {k: v for k, v in json.loads((args.cache / f"{label}.json").read_text()).items() if k != "scores"}
        for label in (*GROUPS, "all")
    }
    ms = [scored[key(q)]["ms"] for q in [*usable, *evaluated]]
    report: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at the start; "
        f"torch {args.threads} thread(s)",
        "base_model": BASE_MODEL.name,
        "training": {**asdict(Training()), "version": settings.version()},
        "folds": folds,
        "training_questions": len(usable),
        "heldout_procedures": sum(q["set"] == "procedures" for q in evaluated),
        "procedures_llm": sum(q["set"] == "procedures_llm" for q in evaluated),
        "ranker": chosen,
        "time": {
            "regions_per_question": args.candidates,
            "ms_per_question_median": round(statistics.median(ms)),
            "ms_per_question_p90": round(float(np.percentile(ms, 90))),
        },
        "ceiling_right_within_k": {k: ceiling(train_items, k) for k in range(1, args.candidates + 1)},
        "right_beats_wrong": separation(train_items, args.candidates),
        "by_k": [evaluate(train_items, heldout_items, k) for k in range(2, args.candidates + 1)],
    }
    save_report(report, args.results)
    print_table(report)
    return 0


def print_table(report: dict[str, Any]) -> None:
    print(
        f"{'':<20} {'K':>2} {'w':>5} | {'LOCO right':>10} {'complete':>8} | {'heldout right':>13} {'complete':>8} | "
        f"{'llm-set right':>13} {'complete':>8}"
    )
    for row in report["by_k"]:
        for label in ("ranker", "ranker+judge"):
            t = row["train_leave_one_corpus_out"][label]
            h, n = row["procedures_heldout"][label], row["procedures_llm"][label]
            name = "ranker" if label == "ranker" else "  + cross-encoder"
            w = row["weight_fitted_on_all"] if label != "ranker" else 0
            print(
                f"{name:<20} {row['candidates']:>2} {w:>5} | {t['right']:>10} {t['complete']:>8} | "
                f"{h['right']:>13} {h['complete']:>8} | {n['right']:>13} {n['complete']:>8}"
            )


if __name__ == "__main__":
    sys.exit(main())
