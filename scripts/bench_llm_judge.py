"""What the local LLM as a judge of the section choice gains over the fitted ranker alone, and what it costs.

For each question: the ranker's probabilities over its candidate sections (scripts/fit_choice.py's own
functions; for the training set out of fold, leave-one-corpus-out: the question's corpus left out of the fit;
for the procedures' heldout split, fitted on the whole training set), its best `--candidates` regions as the
appliance takes them (answer/quoted/judge.py's judged_regions: the section shown, for a procedure the shortest
holding the shown mass, with the mass inside it; then the best alternatives outside it), and each model's
yes/no log-odds that the region's section answers (one prefill each, models/generation/judgement.py), or with
--score likelihood the question's log-likelihood given the section alone (read as the mean per question
token: query likelihood; measured only, likelihood_prompt below). Then,
where the ranker is not sure (a ✓ choice is not judged, as in the appliance):

    pick = argmax over the first K regions of  log P_ranker + w · score

with w chosen leave-one-corpus-out (on the sampled training questions of the other corpora, the most right +
complete answers; ties to the smaller w) and reported on the corpus left out, pooled; on the heldout procedures
with w fitted on the whole training sample. Figures as fit_choice.py measures them: recall of the gold phrases
by the chosen section, complete, right (as complete as the best candidate and at most 1.5x its length), right
document. Time: wall time per question (all K judgements, one queue turn) and per judgement.

Inputs: the features dump of scripts/choice_features.py (--features) and the indexes it was dumped from
(--home, with demo/ and runbooks/ inside: only their catalogs are read). CPU time is scarce on 2 cores: the
training set is subsampled (--train-sample, seeded); every model's log-odds are cached per question with the
sections judged (--cache), so a run that stops goes on where it was.

Usage: python scripts/bench_llm_judge.py --model NAME=PATH.gguf [--model …] [--train-sample 150]
       [--score yes-no|likelihood] [--section-words 40] [--results FILE.json]  (likelihood: measured only)
       [--write NAME]  (store the combination fitted for NAME in appliance/answer/fitted/llm_judge.json)
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import pickle
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.quoted.judge import FITTED, judge_prompt, prompt_version, section_opening
from appliance.answer.quoted.ranker import SectionRanker, load_ranker
from appliance.answer.quoted.sections import Section, document_sections
from appliance.index.catalog import Catalog
from appliance.models.generation.base import ChatMessage
from scripts.choice_features import corpus_of
from scripts.fit_choice import (
    GROUPS,
    by_fold,
    fit_ranker,
    fit_reading,
    fold_models,
    outcome,
    overlapping,
    prediction,
    summary,
    targets,
)

REPO = Path(__file__).resolve().parent.parent
# Up to 10 since stop 52: 3.0, the largest before, was the best in every fold.
WEIGHTS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 10.0)
SECTION_WORDS = 40


@dataclass(frozen=True)
class Item:
    """One judged question: the regions the appliance would judge, their ranker probabilities (the first: the
    mass inside the section shown), the judge's log-odds for each, and whether the ranker was sure (✓: then the
    appliance does not ask the judge)."""

    q: dict[str, Any]
    regions: list[int]
    probabilities: list[float]
    odds: list[float]
    certain: bool


# --- the ranker's view -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """What the appliance's Choice holds for one question (answer/quoted/choice.py choose_section): every
    candidate's probability, the section shown first (for a question read as a procedure the shortest holding
    the shown mass, else the likeliest) and that section's probability (the mass inside it)."""

    p: np.ndarray
    first: int
    first_probability: float
    region: float  # the probability of the shown section's region (it, its parts, the sections holding it)
    rival: float  # the best probability outside that region

    @classmethod
    def of(cls, prediction: dict[str, Any]) -> View:
        """From fit_choice.prediction, which fit_choice.py calibrates the ✓ on."""
        return cls(prediction["p"], prediction["shown"], prediction["p_shown"], prediction["region"], prediction["alt"])


def ranker_views(
    train: Sequence[dict[str, Any]],
    heldout: Sequence[dict[str, Any]],
    l2: tuple[float, float],
    c: float,
    hidden: tuple[int, float],
    mass: float | None,
) -> dict[str, View]:
    """question key → the ranker's view (out of fold for the training set: its corpus left out of the fit)."""
    found: dict[str, View] = {}

    for group, (reading, ranker) in zip(GROUPS, by_fold(fold_models, train, l2, c, hidden), strict=True):
        for q in train:
            if q["group"] == group and q["candidates"]:
                found[key(q)] = View.of(prediction(q, reading, ranker, mass))
    reading = fit_reading(train, c)
    ranker = fit_ranker(train, reading, l2, hidden)
    for q in heldout:
        if q["candidates"]:
            found[key(q)] = View.of(prediction(q, reading, ranker, mass))
    return found


def judged_sets(
    features: Path, fit_results: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, View], dict[str, Any]]:
    """The training questions, the measured ones, the ranker's view of each (out of fold for the training set)
    and the ranker settings fit_choice.py chose, from the features dump and fit_choice.py's results."""
    questions = pickle.loads(features.read_bytes())["questions"]
    for q in questions:
        if q["set"] in ("procedures", "procedures_llm"):
            q["kind"] = "procedure"
    train = [q for q in questions if q["set"] == "train" or (q["set"] == "procedures" and q["split"] == "tune")]
    # Measured, never fitted on: the procedure set's heldout split (burned for feature design, issue 40) and the
    # procedure set the local model drafted (procedures_llm.jsonl), where the features dump holds it.
    heldout = [
        q for q in questions if (q["set"] == "procedures" and q["split"] == "heldout") or q["set"] == "procedures_llm"
    ]
    chosen = json.loads(fit_results.read_text())["chosen"]
    l2 = (chosen["ranker_l2"]["base_features"], chosen["ranker_l2"]["heading_words"])
    layer = chosen.get("hidden_layer", {"units": 0, "l2": 0.0})  # the ranker fit_choice.py chose, hidden layer too
    hidden = (layer["units"], layer["l2"])
    views = ranker_views(train, heldout, l2, chosen["reading_c"], hidden, chosen.get("shown_mass"))
    return train, heldout, views, chosen


def key(q: dict[str, Any]) -> str:
    return q["set"] + ":" + q["id"]


def regions(q: dict[str, Any], view: View, count: int) -> list[int]:
    """The candidates the judge reads, as answer/quoted/judge.py judged_regions takes them: the section shown
    first, then the most probable outside the regions already taken."""
    picked = [view.first]
    for index in np.argsort(-view.p, kind="stable"):
        if len(picked) == count:
            break
        candidate = q["candidates"][int(index)]
        if not any(overlapping(candidate, q["candidates"][i]) for i in picked):
            picked.append(int(index))
    return picked


def section_names(q: dict[str, Any], indexes: Sequence[int]) -> list[list[str]]:
    return [[q["candidates"][i]["path"], q["candidates"][i]["heading"]] for i in indexes]


def ranker_certain(view: View, calibration: SectionRanker) -> bool:
    """The product's ✓ (Choice.certain, with the shipped model's close_ratio and certain_probability): no region
    outside the shown one at least close_ratio as likely, and the shown region holding certain_probability.
    The appliance does not judge such a choice."""
    close = view.rival >= calibration.close_ratio * view.first_probability
    return not close and view.region >= calibration.certain_probability


class Sections:
    """Sections rebuilt from the catalogs the features were dumped from."""

    def __init__(self, home: Path) -> None:
        self.catalogs = {corpus: Catalog(home / corpus / "catalog.sqlite") for corpus in ("demo", "runbooks")}

    def of(self, q: dict[str, Any], indexes: Sequence[int]) -> list[Section]:
        wanted = [(q["candidates"][i]["path"], q["candidates"][i]["heading"]) for i in indexes]
        chunks = self.catalogs[corpus_of(q)].chunks_of_documents(sorted({path for path, _ in wanted}))
        by_path = {path: document_sections(rows) for path, rows in chunks.items()}
        missing = [w for w in wanted if w[1] not in by_path.get(w[0], {})]
        if missing:
            raise SystemExit(
                f"{key(q)}: sections {missing} are not in the catalog under --home: dumped from another index?"
            )
        return [by_path[path][heading] for path, heading in wanted]


# --- judging -----------------------------------------------------------------------------------------------


# Query likelihood (as in UPR), measured in stop 53 and not adopted (docs/measurements/llm-judge.md): the model
# reads the section alone and the score is how likely it finds the operator's question as the one it answers.
LIKELIHOOD_SYSTEM = "You write the questions plant operators ask about their procedures and runbooks."
LIKELIHOOD_USER = (
    "Section: {label}\n{text}\n\nWrite one question an operator on shift would ask that this section answers."
)


def likelihood_prompt(section: Section, words: int) -> list[ChatMessage]:
    user = LIKELIHOOD_USER.format(label=section.label, text=section_opening(section, words))
    return [ChatMessage("system", LIKELIHOOD_SYSTEM), ChatMessage("user", user)]


@dataclass(frozen=True)
class Score:
    """How a model scores a region: its yes/no log-odds ("yes-no", the appliance's judge) or the log-likelihood
    of the question given the section ("likelihood")."""

    name: str

    def version(self) -> str:
        if self.name == "yes-no":
            return prompt_version()
        text = LIKELIHOOD_SYSTEM + "\x00" + LIKELIHOOD_USER
        return "likelihood-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def cache(self, folder: Path, model: str) -> Path:
        return folder / (f"{model}.jsonl" if self.name == "yes-no" else f"{model}.{self.name}.jsonl")

    def of(
        self, generator: Any, q: dict[str, Any], sections: list[Section], words: int
    ) -> tuple[list[float], list[int]]:
        """The scores of the regions and each prompt's token count."""
        if self.name == "yes-no":
            prompts = [judge_prompt(q["searched"], s, words) for s in sections]
            return generator.yes_no_log_odds(prompts), [generator.prompt_tokens(p) for p in prompts]
        prompts = [likelihood_prompt(s, words) for s in sections]
        scores = generator.reply_log_likelihoods(prompts, q["searched"].strip())
        return scores, [generator.prompt_tokens(p) for p in prompts]


def judge_all(
    name: str,
    path: Path,
    questions: Sequence[dict[str, Any]],
    picks: dict[str, list[int]],
    sections: Sections,
    cache: Path,
    threads: int,
    words: int,
    cached_only: bool = False,
    score: Score = Score("yes-no"),
) -> dict[str, dict[str, Any]]:
    """Each question's scores for its regions by model `name`, cached in `cache` (one JSON line a question,
    with the sections judged: an entry for other regions, another prompt or another length is judged anew)."""
    wanted = {key(q): section_names(q, picks[key(q)]) for q in questions}
    done: dict[str, dict[str, Any]] = {}
    if cache.exists():
        for line in cache.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            current = entry.get("prompt") == score.version() and entry.get("words") == words
            if current and entry.get("sections") == wanted.get(entry["key"]):
                done[entry["key"]] = entry
    todo = [q for q in questions if key(q) not in done and len(picks[key(q)]) >= 2]
    if not todo or cached_only:
        return done
    from appliance.models.generation.local import LlamaCppGenerator

    generator = LlamaCppGenerator(path, model_id=name, n_ctx=4096, n_threads=threads)
    try:
        with cache.open("a", encoding="utf-8") as out:
            for number, q in enumerate(todo, start=1):
                started = time.perf_counter()
                odds, tokens = score.of(generator, q, sections.of(q, picks[key(q)]), words)
                ms = (time.perf_counter() - started) * 1000.0
                entry = {
                    "key": key(q),
                    "odds": odds,
                    "ms": ms,
                    "tokens": tokens,
                    "prompt": score.version(),
                    "words": words,
                    "sections": wanted[key(q)],
                }
                done[key(q)] = entry
                out.write(json.dumps(entry) + "\n")
                out.flush()
                print(
                    f"{name} {number}/{len(todo)} {key(q)}: {ms:.0f} ms, odds {[round(o, 2) for o in odds]}",
                    file=sys.stderr,
                )
    finally:
        generator.close()
    return done


def per_token(judged: dict[str, dict[str, Any]], questions: Sequence[dict[str, Any]], path: Path) -> dict[str, Any]:
    """Log-likelihoods as the mean over the question's tokens (as UPR reads them): one weight then means the
    same for a short question and a long one."""
    import llama_cpp

    vocabulary = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    out = dict(judged)
    for q in questions:
        if key(q) in out:
            count = len(vocabulary.tokenize(q["searched"].strip().encode("utf-8"), add_bos=False, special=False))
            out[key(q)] = {**out[key(q)], "odds": [o / count for o in out[key(q)]["odds"]]}
    return out


# --- measuring ---------------------------------------------------------------------------------------------


def pick(item: Item, weight: float, k: int, *, asked: bool = False) -> int:
    """The section the appliance shows after the judge: the ranker's where it was sure (the judge is not asked,
    unless `asked`), else the best of the first k regions by log P + weight · log-odds."""
    if item.certain and not asked:
        return item.regions[0]
    adjusted = [np.log(max(p, 1e-12)) + weight * o for p, o in zip(item.probabilities[:k], item.odds[:k], strict=False)]
    return item.regions[int(np.argmax(adjusted))]


def score(rows: Sequence[dict[str, Any]]) -> float:
    return sum(r["right"] for r in rows) + sum(r["complete"] for r in rows)


def best_weight(items: Sequence[Item], k: int) -> float:
    results = {w: score([outcome(it.q, pick(it, w, k)) for it in items]) for w in WEIGHTS}
    top = max(results.values())
    return min(w for w, s in results.items() if s == top)


def by_certainty(chosen: Sequence[Item], k: int, weight: float) -> dict[str, Any]:
    """The judge's effect, were it asked, where the ranker was sure (✓: the appliance does not ask) and where it
    was not: is judging a ✓ worth its time?"""
    out: dict[str, Any] = {}
    for label, sure in (("ranker_certain", True), ("ranker_not_certain", False)):
        part = [item for item in chosen if item.certain == sure]
        ranker = [outcome(it.q, it.regions[0]) for it in part]
        judged = [outcome(it.q, pick(it, weight, k, asked=True)) for it in part]
        out[label] = {
            "questions": len(part),
            "changed": sum(a["section"] != b["section"] for a, b in zip(ranker, judged, strict=True)),
            "ranker": summary(ranker) if part else None,
            "ranker+judge": summary(judged) if part else None,
        }
    return out


def evaluate(train_items: list[Item], heldout_items: list[Item], k: int) -> dict[str, Any]:
    ranker_rows, judged_rows, folds = [], [], {}
    for group in GROUPS:
        held = [item for item in train_items if item.q["group"] == group]
        if not held:
            continue
        weight = best_weight([item for item in train_items if item.q["group"] != group], k)
        folds[group] = weight
        for item in held:
            ranker_rows.append(outcome(item.q, item.regions[0]))
            judged_rows.append(outcome(item.q, pick(item, weight, k)))
    weight = best_weight(train_items, k)
    judge_alone = [outcome(it.q, pick(it, 1e6, k, asked=True)) for it in train_items]
    report: dict[str, Any] = {
        "candidates": k,
        "train_leave_one_corpus_out": {
            "ranker": summary(ranker_rows),
            "ranker+judge": summary(judged_rows),
            "weight_per_fold": folds,
        },
        "train_judge_alone_among_k": summary(judge_alone),
        "weight_fitted_on_all": weight,
    }
    for name, set_name in (("procedures_heldout", "procedures"), ("procedures_llm", "procedures_llm")):
        chosen = [item for item in heldout_items if item.q["set"] == set_name]
        ranker = [outcome(it.q, it.regions[0]) for it in chosen]
        judged = [outcome(it.q, pick(it, weight, k)) for it in chosen]
        report[name] = {"ranker": summary(ranker), "ranker+judge": summary(judged)}
        report[f"changed_picks_{name}"] = sum(a["section"] != b["section"] for a, b in zip(ranker, judged, strict=True))
        report[f"judged_{name}"] = sum(not it.certain for it in chosen)
        report[f"by_certainty_{name}"] = by_certainty(chosen, k, weight)
    report["by_certainty_train_in_sample"] = by_certainty(train_items, k, weight)
    return report


def ceiling(items: Sequence[Item], k: int) -> float:
    """The share of questions with a right answer among the first k regions (what any judge could reach)."""
    hits = sum(any(outcome(it.q, i)["right"] for i in it.regions[:k]) for it in items)
    return round(hits / max(len(items), 1), 3)


def separation(items: Sequence[Item], k: int) -> float | None:
    """How often a right region's log-odds beat a wrong one's within a question (0.5: no better than chance)."""
    wins = pairs = 0
    for it in items:
        right = [outcome(it.q, i)["right"] for i in it.regions[:k]]
        for a in range(len(right)):
            for b in range(len(right)):
                if right[a] and not right[b]:
                    pairs += 1
                    wins += 1 if it.odds[a] > it.odds[b] else 0
    return round(wins / pairs, 3) if pairs else None


def timing(entries: Sequence[dict[str, Any]], k: int) -> dict[str, Any]:
    ms = [e["ms"] for e in entries]
    judgements = [e["ms"] / len(e["odds"]) for e in entries]
    return {
        "questions": len(ms),
        "judged_per_question": k,
        "ms_per_question_median": round(statistics.median(ms)),
        "ms_per_question_p90": round(float(np.percentile(ms, 90))),
        "ms_per_judgement_median": round(statistics.median(judgements)),
        "prompt_tokens_per_judgement_median": round(statistics.median(t for e in entries for t in e["tokens"])),
    }


def items(
    questions: Sequence[dict[str, Any]],
    views: dict[str, View],
    picks: dict[str, list[int]],
    judged: dict[str, dict[str, Any]],
    calibration: SectionRanker,
) -> list[Item]:
    found = []
    for q in questions:
        if key(q) not in judged:
            continue
        view, ix = views[key(q)], picks[key(q)]
        chances = [view.first_probability, *(float(view.p[i]) for i in ix[1:])]
        found.append(Item(q, ix, chances, judged[key(q)]["odds"], ranker_certain(view, calibration)))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--features", type=Path, default=REPO / ".appliance" / "choice_features.pkl")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--model", action="append", default=[], help="NAME=PATH of a GGUF chat model (repeatable).")
    parser.add_argument("--train-sample", type=int, default=150)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--candidates", type=int, default=3, help="Regions judged per question (K = 2..this).")
    parser.add_argument("--section-words", type=int, default=SECTION_WORDS)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (1: the machine is shared).")
    parser.add_argument("--cache", type=Path, default=REPO / ".appliance" / "llm_judge")
    parser.add_argument("--results", type=Path, default=REPO / "scripts" / "results" / "bench_llm_judge.json")
    parser.add_argument("--fit-results", type=Path, default=REPO / "scripts" / "results" / "fit_choice.json")
    parser.add_argument("--judge-only", action="store_true", help="Fill the caches, write no results.")
    parser.add_argument(
        "--cached-only", action="store_true", help="Measure on the questions already judged (a run stopped early)."
    )
    parser.add_argument(
        "--score",
        choices=("yes-no", "likelihood"),
        default="yes-no",
        help="yes-no: the judge's yes/no log-odds (what the appliance runs); likelihood: the question's mean "
        "log-probability per token given the section (query likelihood), measured only.",
    )
    parser.add_argument("--write", metavar="NAME", help="Store the combination fitted for model NAME as the default.")
    args = parser.parse_args()
    if args.write and args.score != "yes-no":
        parser.error("--write stores the yes/no judge the appliance runs; --score likelihood is measured only")

    train, heldout, views, chosen = judged_sets(args.features, args.fit_results)
    calibration = load_ranker()  # the shipped ✓: close_ratio and certain_probability

    usable = [q for q in train if q["answerable"] and key(q) in views and targets(q) is not None]
    order = sorted(usable, key=key)
    random.Random(args.seed).shuffle(order)  # a smaller sample is the start of a larger one: caches carry over
    sample = order[: args.train_sample]
    evaluated = [q for q in heldout if key(q) in views and targets(q) is not None]
    picks = {key(q): regions(q, views[key(q)], args.candidates) for q in [*evaluated, *sample]}
    sections = Sections(args.home)
    args.cache.mkdir(parents=True, exist_ok=True)

    report: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at the start; "
        f"llama.cpp CPU build, {args.threads} thread(s) per model",
        "training_sample": {"questions": len(sample), "of": len(usable), "seed": args.seed},
        "heldout_procedures": sum(q["set"] == "procedures" for q in evaluated),
        "procedures_llm": sum(q["set"] == "procedures_llm" for q in evaluated),
        "section_words": args.section_words,
        "score": args.score,
        "prompt": Score(args.score).version(),
        "ranker": chosen,
        "certain": {"close_ratio": calibration.close_ratio, "certain_probability": calibration.certain_probability},
        "models": {},
    }
    for spec in args.model:
        name, _, path = spec.partition("=")
        score = Score(args.score)
        cache = score.cache(args.cache, name)
        # Heldout and training questions in turns: a run cut short still has some of each.
        turns = [q for pair in itertools.zip_longest(evaluated, sample) for q in pair if q is not None]
        judged = judge_all(
            name, Path(path), turns, picks, sections, cache, args.threads, args.section_words, args.cached_only, score
        )
        if args.judge_only:
            continue
        if score.name == "likelihood":
            judged = per_token(judged, [*evaluated, *sample], Path(path))

        train_items = items(sample, views, picks, judged, calibration)
        heldout_items = items(evaluated, views, picks, judged, calibration)
        entries = [judged[key(q)] for q in [*evaluated, *sample] if key(q) in judged]
        report["models"][name] = {
            "file": Path(path).name,
            "time": timing(entries, args.candidates),
            "ceiling_right_within_k": {k: ceiling(train_items, k) for k in range(1, args.candidates + 1)},
            "right_beats_wrong": separation(train_items, args.candidates),
            "by_k": [evaluate(train_items, heldout_items, k) for k in range(2, args.candidates + 1)],
        }
    if args.judge_only:
        return 0
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=1) + "\n")
    print_table(report)
    if args.write:
        write_model(report, args.write)
    return 0


def print_table(report: dict[str, Any]) -> None:
    header = f"{'model':<24} {'K':>2} {'w':>5} | {'LOCO right':>10} {'complete':>8} {'recall':>6} | "
    print(header + f"{'heldout right':>13} {'complete':>8} | {'llm-set right':>13} {'complete':>8} | {'ms/q':>6}")
    for name, model in report["models"].items():
        for row in model["by_k"]:
            train = row["train_leave_one_corpus_out"]
            for label in ("ranker", "ranker+judge"):
                t, h, n = train[label], row["procedures_heldout"][label], row["procedures_llm"][label]
                shown = name[:24] if label == "ranker" else "  + judge"
                ms = model["time"]["ms_per_question_median"] if label != "ranker" else 0
                w = row["weight_fitted_on_all"] if label != "ranker" else 0
                print(
                    f"{shown:<24} {row['candidates']:>2} {w:>5} | {t['right']:>10} {t['complete']:>8} "
                    f"{t['recall']:>6} | {h['right']:>13} {h['complete']:>8} | {n.get('right', '-')!s:>13} "
                    f"{n.get('complete', '-')!s:>8} | {ms:>6}"
                )


def write_model(report: dict[str, Any], name: str) -> None:
    model = report["models"][name]
    best = max(
        model["by_k"],
        key=lambda row: (
            row["train_leave_one_corpus_out"]["ranker+judge"]["right"]
            + row["train_leave_one_corpus_out"]["ranker+judge"]["complete"],
            -row["candidates"],
        ),
    )
    data = {
        "generator": name,
        "weight": best["weight_fitted_on_all"],
        "candidates": best["candidates"],
        "section_words": report["section_words"],
        "prompt": report["prompt"],
        "fitted_by": "scripts/bench_llm_judge.py",
        "training_set": "scripts/qa/choice_train.jsonl (sampled: see scripts/results/bench_llm_judge.json)",
        "training_questions": report["training_sample"]["questions"],
        "leave_one_corpus_out": best["train_leave_one_corpus_out"],
    }
    FITTED.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {FITTED}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
