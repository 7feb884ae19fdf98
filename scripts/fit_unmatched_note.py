"""Fit which words the documents never use are named under an answer (appliance/answer/unmatched_note.py).

Before: every unknown word of an answered question was named ("◐ The documents never use: bigger") and took
the ✓ away; that fired on 131 of 506 answerable training questions. Here each unknown word gets the graded
readings of `term_features` (its name weight, shape, everyday-English rarity, typo of English, known
neighbours, the evidence probability of the question), labelled by whether the documents answer the question
it came from, and a logistic model on standardised readings says how likely the question is one they do not
answer. A question's note names its words at or above a threshold.

Training: the questions of scripts/qa/choice_train.jsonl and scripts/qa/scope_pairs.jsonl (corpus groups
docs_corpus, openshift, gitlab, ir-prometheus) and scripts/qa/runbooks_tune.jsonl (group "tune") with at least
one unknown word: either all of them or only those the evidence decision answers (where the note is shown).
That choice, the penalty (1, 3, 10) and the threshold are chosen leave one group out by the cost, over the
answered questions

    cost = notes on answerable questions + MISS_COST · unanswerable questions without a note

MISS_COST = 3, set before any fit: an answer about another machine without a word of warning is a confident
wrong procedure, which the project ranks worse than a refusal; a needless note costs less than a refusal (the
answer is still shown, without a ✓). The figures for MISS_COST 1 and 2 are printed beside it.
Measured, never fitted on: howtos_scope, demo_corpus, runbooks_heldout, runbooks_sampled, procedures_llm,
procedures (the answered questions of each: what the note says under answers operators are shown).

Reported beside it, never written to the model: whether the same reading, at a higher threshold chosen out of
fold (an answerable question refused costs as much as an unanswerable one answered), should refuse the answer
outright. It did not pay (stop 58): see docs/measurements/unmatched-note.md.

Searches only (no model): indexes as bench_sop.py (.appliance/bench-sop). The readings are cached per question
(--cache; --fresh to recollect after the readings change). Usage:
  python scripts/fit_unmatched_note.py [--write] [--json scripts/results/fit_unmatched_note.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import appliance  # noqa: E402, F401  (offline environment first)
from appliance.answer.unmatched_note import FEATURES, FITTED, NoteModel, term_features  # noqa: E402
from appliance.models.store import sha256_file  # noqa: E402
from scripts.bench_sop import QA, corpus_of, corpus_roots, load_items, settings_for  # noqa: E402
from scripts.calibrate_evidence import fit_logistic  # noqa: E402
from scripts.lib.perturb import perturb  # noqa: E402
from scripts.lib.resumable import add_cached_run_arguments, cached_entries, start_fresh_if_asked  # noqa: E402

TRAINING_FILES = ("choice_train.jsonl", "scope_pairs.jsonl", "runbooks_tune.jsonl")
POPULATIONS = ("all", "answered")
MEASURED = ("howtos", "demo", "heldout", "sampled", "procedures_llm", "procedures")
GROUPS = ("docs_corpus", "openshift", "gitlab", "ir-prometheus", "tune")
PENALTIES = (1.0, 3.0, 10.0)
MISS_COST = 3.0
OTHER_COSTS = (1.0, 2.0)
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(1, 20))
# A refusal, tried and reported, not shipped (docs/measurements/unmatched-note.md): where the model reads a word as
# a subject the documents do not cover so surely that the answer would become a refusal. REFUSAL_MISS_COST was set
# before any fit: a refusal of an answerable question is as
# dangerous as an invented command, and an out-of-scope question answered with another machine's steps (under a
# check badge and the note) is the wrong procedure: equal costs. 1.0 is "never" (the former design).
REFUSAL_MISS_COST = 1.0
REFUSAL_OTHER_COSTS = (0.5, 2.0)
NEVER = 1.0
REFUSAL_THRESHOLDS = (*(round(0.05 * i, 2) for i in range(8, 20)), NEVER)
# Operator-style variants of these sets' questions: does the note come or go with the wording alone?
PERTURBED = ("howtos", "demo", "procedures_llm")
VARIANT = "~"
RESULTS = REPO / "scripts" / "results" / "fit_unmatched_note.json"
CACHE = REPO / ".appliance" / "unmatched_note.jsonl"


def training_items() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (QA / "choice_train.jsonl").read_text().splitlines() if line.strip()]
    items = [{**r, "set": "choice_train"} for r in rows]
    pairs = QA / "scope_pairs.jsonl"
    if pairs.exists():
        items += [{**json.loads(line), "set": "scope_pairs"} for line in pairs.read_text().splitlines() if line.strip()]
    items += [{**r, "set": "tune", "group": "tune"} for r in load_items("tune", "all")]
    return items


def measured_items() -> list[dict[str, Any]]:
    return [{**r, "set": name} for name in MEASURED for r in load_items(name, "all")]


def corpus(item: dict[str, Any]) -> str:
    return corpus_of(item, item["set"].split(VARIANT)[0])


def variant_items(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every operator-style variant (scripts/lib/perturb.py) of the perturbed sets' questions."""
    return [
        {**item, "set": f"{item['set']}{VARIANT}{variant.kind}", "question": variant.text}
        for item in items
        if item["set"] in PERTURBED
        for variant in perturb(item["question"], f"{item['set']}/{item['id']}")
    ]


def answered_pairs(
    done: dict[str, dict[str, Any]], originals: Sequence[dict[str, Any]], variants: Sequence[dict[str, Any]]
) -> Iterator[tuple[dict[str, Any], str, str, dict[str, Any], dict[str, Any]]]:
    """Each variant the evidence decision answers like its original: (variant item, kind, label, original's
    readings, variant's readings)."""
    by_key = {f"{i['set']}/{i['id']}": i for i in originals}
    for item in variants:
        base, kind = item["set"].split(VARIANT)
        original, variant = done[f"{base}/{item['id']}"], done[f"{item['set']}/{item['id']}"]
        if original["answered"] and variant["answered"]:
            label = "answerable" if by_key[f"{base}/{item['id']}"].get("answerable", True) else "unanswerable"
            yield item, kind, label, original, variant


def shipped_note(model: NoteModel, entry: dict[str, Any]) -> bool:
    """Whether the answer carries the note as shipped: a fitted word, or any word under a certain choice."""
    score = question_scores(model, [entry])[0]
    return bool(entry["terms"]) and (score >= model.threshold or entry.get("confidence") == "certain")


def note_flips(
    model: NoteModel,
    done: dict[str, dict[str, Any]],
    originals: Sequence[dict[str, Any]],
    variants: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """Of the variants answered like their original: how often the note comes or goes, by kind and label."""
    flips: dict[str, dict[str, int]] = {}
    examples = []
    for item, kind, label, original, variant in answered_pairs(done, originals, variants):
        was, now = shipped_note(model, original), shipped_note(model, variant)
        row = flips.setdefault(
            f"{label}/{kind}",
            {"variants": 0, "note_came": 0, "note_went": 0, "former_note_came": 0, "former_note_went": 0},
        )
        row["variants"] += 1
        row["former_note_came"] += int(bool(variant["terms"]) and not original["terms"])
        row["former_note_went"] += int(bool(original["terms"]) and not variant["terms"])
        row["note_came"] += int(now and not was)
        row["note_went"] += int(was and not now)
        if now != was:
            examples.append({"key": f"{item['set']}/{item['id']}", "question": item["question"], "noted": now})
    return {"by_kind": flips, "examples": examples}


def collect(items: list[dict[str, Any]], home: Path, models_dir: Path, cache: Path) -> dict[str, dict[str, Any]]:
    """Every question searched once: its evidence verdict and the readings of each unknown word."""
    from appliance.answer.answerer import Answerer
    from appliance.ingest.pipeline import ingest
    from appliance.retrieve.search import Searcher

    done = cached_entries(cache)
    todo = [item for item in items if f"{item['set']}/{item['id']}" not in done]
    searchers: dict[str, Searcher] = {}
    answerers: dict[str, Answerer] = {}
    cache.parent.mkdir(parents=True, exist_ok=True)
    try:
        with cache.open("a", encoding="utf-8") as out:
            for number, item in enumerate(todo, start=1):
                name = corpus(item)
                if name not in searchers:
                    settings = settings_for(name, home, models_dir)
                    ingest(settings, corpus_roots(name))
                    searchers[name] = Searcher(settings)
                    # The quoted answer's badge, the judge off: the ✓ a note would take away.
                    answer = settings.answer.model_copy(update={"mode": "quoted", "llm_judge": "off"})
                    answerers[name] = Answerer(settings.model_copy(update={"answer": answer}), searchers[name])
                searcher = searchers[name]
                found = searcher.search(item["question"])
                evidence = found.evidence
                unknown = evidence.signals.unknown if evidence.signals is not None else ()
                entry = {
                    "key": f"{item['set']}/{item['id']}",
                    "set": item["set"],
                    "group": item.get("group", item["set"]),
                    "answerable": bool(item.get("answerable", True)),
                    "answered": bool(evidence.sufficient),
                    "probability": round(float(evidence.probability), 4),
                    "confidence": (
                        answerers[name].ask(item["question"]).confidence if evidence.sufficient and unknown else None
                    ),
                    "terms": [
                        {
                            "typed": term.typed,
                            "read_as": term.why,
                            "features": term_features(term, found.searched, searcher.vocabulary, evidence.probability),
                        }
                        for term in unknown
                    ],
                }
                done[entry["key"]] = entry
                out.write(json.dumps(entry) + "\n")
                out.flush()
                if number % 100 == 0:
                    print(f"{number}/{len(todo)} searched", file=sys.stderr)
    finally:
        for searcher in searchers.values():
            searcher.close()
    return done


def term_rows(entries: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per unknown word: its readings, its question's label (1: not answerable), its question's index."""
    x, y, owner = [], [], []
    for index, entry in enumerate(entries):
        for term in entry["terms"]:
            x.append([term["features"][name] for name in FEATURES])
            y.append(0.0 if entry["answerable"] else 1.0)
            owner.append(index)
    return np.array(x, dtype=float).reshape(-1, len(FEATURES)), np.array(y), np.array(owner, dtype=int)


def fit(entries: Sequence[dict[str, Any]], l2: float, threshold: float = 0.5) -> NoteModel:
    """Logistic regression on standardised readings, returned in raw units."""
    x, y, _ = term_rows(entries)
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread == 0] = 1.0
    w = fit_logistic((x - mean) / spread, y, l2=l2)
    weights = w[1:] / spread
    return NoteModel(FEATURES, tuple(float(v) for v in weights), float(w[0] - mean @ weights), threshold)


def question_scores(model: NoteModel, entries: Sequence[dict[str, Any]]) -> list[float]:
    """Each question's highest word probability (0 for a question without unknown words)."""
    return [max((model.probability(term["features"]) for term in entry["terms"]), default=0.0) for entry in entries]


def cost(entries: Sequence[dict[str, Any]], scores: Sequence[float], threshold: float, miss_cost: float) -> float:
    """Over the answered questions (where a note is shown): needless notes + miss_cost · missing ones."""
    total = 0.0
    for entry, score in zip(entries, scores, strict=True):
        if not entry["answered"]:
            continue
        noted = bool(entry["terms"]) and score >= threshold
        if noted and entry["answerable"]:
            total += 1.0
        elif not noted and not entry["answerable"]:
            total += miss_cost
    return total


def refused(entry: dict[str, Any], score: float, threshold: float) -> bool:
    """Whether the answer becomes a refusal: answered by the evidence decision, a word read surely enough."""
    return entry["answered"] and bool(entry["terms"]) and threshold < NEVER and score >= threshold


def refusal_cost(
    entries: Sequence[dict[str, Any]], scores: Sequence[float], threshold: float, miss_cost: float
) -> float:
    """Over the answered questions: answerable ones refused + miss_cost · unanswerable ones still answered."""
    total = 0.0
    for entry, score in zip(entries, scores, strict=True):
        if not entry["answered"]:
            continue
        if entry["answerable"] and refused(entry, score, threshold):
            total += 1.0
        elif not entry["answerable"] and not refused(entry, score, threshold):
            total += miss_cost
    return total


def choose_refusal(entries: Sequence[dict[str, Any]], scores: Sequence[float], miss_cost: float) -> tuple[float, float]:
    """The refusal threshold with the lowest out-of-fold cost (ties: the higher, fewer refusals), and that cost."""
    best = min((refusal_cost(entries, scores, t, miss_cost), -t) for t in REFUSAL_THRESHOLDS)
    return -best[1], best[0]


def refusal_figures(entries: Sequence[dict[str, Any]], scores: Sequence[float], threshold: float) -> dict[str, Any]:
    """Of the questions the evidence decision answers: how many the word reading would refuse, by label."""
    answered = [(e, s) for e, s in zip(entries, scores, strict=True) if e["answered"]]
    return {
        "answered_answerable": sum(1 for e, _ in answered if e["answerable"]),
        "refused_answerable": sum(1 for e, s in answered if e["answerable"] and refused(e, s, threshold)),
        "answered_unanswerable": sum(1 for e, _ in answered if not e["answerable"]),
        "refused_unanswerable": sum(1 for e, s in answered if not e["answerable"] and refused(e, s, threshold)),
        # A certain choice refused: the chooser was sure of its section (a documented alert name read as unknown).
        "refused_certain_answerable": sum(
            1 for e, s in answered if e["answerable"] and e.get("confidence") == "certain" and refused(e, s, threshold)
        ),
        "refused_keys": [e["key"] for e, s in answered if refused(e, s, threshold)],
    }


def refusal_flips(
    model: NoteModel,
    threshold: float,
    done: dict[str, dict[str, Any]],
    originals: Sequence[dict[str, Any]],
    variants: Sequence[dict[str, Any]],
) -> dict[str, dict[str, int]]:
    """Of the variants answered by the evidence decision like their original: how often the refusal comes or goes."""
    flips: dict[str, dict[str, int]] = {}
    for _, kind, label, original, variant in answered_pairs(done, originals, variants):
        was = refused(original, question_scores(model, [original])[0], threshold)
        now = refused(variant, question_scores(model, [variant])[0], threshold)
        row = flips.setdefault(f"{label}/{kind}", {"variants": 0, "refusal_came": 0, "refusal_went": 0})
        row["variants"] += 1
        row["refusal_came"] += int(now and not was)
        row["refusal_went"] += int(was and not now)
    return flips


def fitted_on(entries: Sequence[dict[str, Any]], population: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["terms"] and (population == "all" or e["answered"])]


def out_of_fold_scores(entries: Sequence[dict[str, Any]], l2: float, population: str) -> list[float]:
    scores = [0.0] * len(entries)
    for group in GROUPS:
        model = fit(fitted_on([e for e in entries if e["group"] != group], population), l2)
        for index, entry in enumerate(entries):
            if entry["group"] == group:
                scores[index] = question_scores(model, [entry])[0]
    return scores


def choose(entries: Sequence[dict[str, Any]], miss_cost: float) -> tuple[str, float, float, float]:
    """The population, penalty and threshold with the lowest out-of-fold cost, and that cost."""
    best: tuple[str, float, float, float] | None = None
    for population in POPULATIONS:
        for l2 in PENALTIES:
            scores = out_of_fold_scores(entries, l2, population)
            for threshold in THRESHOLDS:
                c = cost(entries, scores, threshold, miss_cost)
                if best is None or c < best[3]:
                    best = (population, l2, threshold, c)
    assert best is not None
    return best


def note_figures(entries: Sequence[dict[str, Any]], noted: Sequence[bool]) -> dict[str, Any]:
    """Of the answered questions: how many carry a note, answerable and not."""
    answered = [(e, n) for e, n in zip(entries, noted, strict=True) if e["answered"]]
    answerable = [n for e, n in answered if e["answerable"]]
    unanswerable = [n for e, n in answered if not e["answerable"]]
    # Named because the chooser is sure (the ✓ stays withheld on a question with words the documents never use).
    certain = [e for e, n in answered if n and e.get("confidence") == "certain"]
    return {
        "answered_answerable": len(answerable),
        "noted_answerable": sum(answerable),
        "answered_unanswerable": len(unanswerable),
        "noted_unanswerable": sum(unanswerable),
        "noted_as_certain_answerable": sum(1 for e in certain if e["answerable"]),
        "noted_as_certain_unanswerable": sum(1 for e in certain if not e["answerable"]),
    }


def figures_for(entries: Sequence[dict[str, Any]], scores: Sequence[float] | None, threshold: float) -> dict[str, Any]:
    before = [bool(e["terms"]) for e in entries]
    # As shipped: the fitted words, or every word where the answer would otherwise carry the ✓ (a certain choice).
    after = (
        [
            bool(e["terms"]) and (s >= threshold or e.get("confidence") == "certain")
            for e, s in zip(entries, scores, strict=True)
        ]
        if scores is not None
        else before
    )
    return {"every unknown word": note_figures(entries, before), "fitted": note_figures(entries, after)}


def words_named(model: NoteModel, entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the note names on each answered question with unknown words (for reading, not fitting)."""
    rows = []
    for entry in entries:
        if not entry["answered"] or not entry["terms"]:
            continue
        named = [t["typed"] for t in entry["terms"] if model.probability(t["features"]) >= model.threshold]
        rows.append(
            {
                "key": entry["key"],
                "answerable": entry["answerable"],
                "unknown": [t["typed"] for t in entry["terms"]],
                "named": named,
            }
        )
    return rows


def print_table(rows: dict[str, dict[str, Any]]) -> None:
    print(f"{'set':16} {'answered: answerable noted':>28} {'unanswerable noted':>20} {'of them certain: A / U':>24}")
    for name, figures in rows.items():
        b, a = figures["every unknown word"], figures["fitted"]
        answerable = f"{b['noted_answerable']} → {a['noted_answerable']} of {a['answered_answerable']}"
        unanswerable = f"{b['noted_unanswerable']} → {a['noted_unanswerable']} of {a['answered_unanswerable']}"
        certain = f"{a['noted_as_certain_answerable']} / {a['noted_as_certain_unanswerable']}"
        print(f"{name:16} {answerable:>28} {unanswerable:>20} {certain:>24}")


def by_group(
    entries: Sequence[dict[str, Any]],
    scores: Sequence[float],
    figures: Callable[[Sequence[dict[str, Any]], Sequence[float], float], dict[str, Any]],
    threshold: float,
) -> dict[str, dict[str, Any]]:
    """`figures` of each corpus group's questions, from their out-of-fold scores."""
    return {
        group: figures(
            [e for e in entries if e["group"] == group],
            [s for e, s in zip(entries, scores, strict=True) if e["group"] == group],
            threshold,
        )
        for group in GROUPS
    }


def print_refusal(refusal: dict[str, Any]) -> None:
    print(
        f"\nRefusal: threshold {refusal['threshold']} (out-of-fold cost {refusal['out_of_fold_cost']}, "
        f"miss cost {refusal['miss_cost']}; {NEVER} = never); other costs: {refusal['other_miss_costs']}"
    )
    print(
        "  out-of-fold cost by threshold: "
        + ", ".join(f"{t} {c:g}" for t, c in refusal["out_of_fold_cost_by_threshold"].items())
    )
    print(f"  {'set':20} {'answerable refused':>20} {'of them certain':>16} {'unanswerable refused':>22}")
    for name, row in {**refusal["training_leave_one_group_out"], **refusal["measured"]}.items():
        answerable = f"{row['refused_answerable']} of {row['answered_answerable']}"
        unanswerable = f"{row['refused_unanswerable']} of {row['answered_unanswerable']}"
        print(f"  {name:20} {answerable:>20} {row['refused_certain_answerable']:>16} {unanswerable:>22}")
    for key, row in sorted(refusal["perturbations"].items()):
        came, went = row["refusal_came"], row["refusal_went"]
        print(f"  variants {key:28} refusal came {came:3} / went {went:3} of {row['variants']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cached_run_arguments(parser, REPO, CACHE, RESULTS, fresh_when="readings changed")
    parser.add_argument("--write", action="store_true", help=f"write the fitted model to {FITTED}")
    args = parser.parse_args()
    start_fresh_if_asked(args)
    training, measured = training_items(), measured_items()
    variants = variant_items(measured)
    done = collect([*training, *measured, *variants], args.home, args.models_dir, args.cache)
    train = [done[f"{i['set']}/{i['id']}"] for i in training]
    with_words = [e for e in train if e["terms"]]

    population, l2, threshold, best_cost = choose(train, MISS_COST)
    oof = out_of_fold_scores(train, l2, population)
    refusal_threshold, refusal_best = choose_refusal(train, oof, REFUSAL_MISS_COST)
    model = fit(fitted_on(train, population), l2, threshold)
    report: dict[str, Any] = {
        "features": list(FEATURES),
        "training": {
            "questions": len(train),
            "with_unknown_words": len(with_words),
            "unanswerable_with_unknown_words": sum(1 for e in with_words if not e["answerable"]),
            "unknown_words": int(sum(len(e["terms"]) for e in with_words)),
        },
        "chosen": {
            "population": population,
            "l2": l2,
            "threshold": threshold,
            "miss_cost": MISS_COST,
            "out_of_fold_cost": best_cost,
        },
        "other_miss_costs": {
            str(c): dict(zip(("population", "l2", "threshold", "cost"), choose(train, c), strict=True))
            for c in OTHER_COSTS
        },
        "refusal": {
            "threshold": refusal_threshold,
            "miss_cost": REFUSAL_MISS_COST,
            "out_of_fold_cost": refusal_best,
            "other_miss_costs": {
                str(c): dict(zip(("threshold", "cost"), choose_refusal(train, oof, c), strict=True))
                for c in REFUSAL_OTHER_COSTS
            },
            "out_of_fold_cost_by_threshold": {
                str(t): refusal_cost(train, oof, t, REFUSAL_MISS_COST) for t in REFUSAL_THRESHOLDS
            },
            "training_leave_one_group_out": by_group(train, oof, refusal_figures, refusal_threshold),
            "measured": {},
        },
        "model": {"weights": dict(zip(model.features, model.weights, strict=True)), "intercept": model.intercept},
        "training_leave_one_group_out": by_group(train, oof, figures_for, threshold),
        "training_leave_one_group_out_all": figures_for(train, oof, threshold),
        "measured": {},
        "named_on_measured": {},
    }
    for name in MEASURED:
        entries = [done[f"{i['set']}/{i['id']}"] for i in measured if i["set"] == name]
        report["measured"][name] = figures_for(entries, question_scores(model, entries), threshold)
        report["named_on_measured"][name] = words_named(model, entries)
        report["refusal"]["measured"][name] = refusal_figures(
            entries, question_scores(model, entries), refusal_threshold
        )

    report["perturbations"] = note_flips(model, done, measured, variants)
    report["refusal"]["perturbations"] = refusal_flips(model, refusal_threshold, done, measured, variants)
    print(
        f"chosen: fitted on {population}, L2 {l2}, threshold {threshold} "
        f"(out-of-fold cost {best_cost}, miss cost {MISS_COST}); other costs: {report['other_miss_costs']}"
    )
    print(f"weights: {json.dumps(report['model'], indent=1)}")
    print("\nTraining, leave one group out:")
    print_table({**report["training_leave_one_group_out"], "all": report["training_leave_one_group_out_all"]})
    print("\nMeasured, never fitted on:")
    print_table(report["measured"])
    print("\nOperator-style variants answered like their original: the note came / went, every word → fitted")
    for key, row in sorted(report["perturbations"]["by_kind"].items()):
        print(
            f"  {key:28} {row['former_note_came']:3} / {row['former_note_went']:3} → "
            f"{row['note_came']:3} / {row['note_went']:3} of {row['variants']}"
        )
    print_refusal(report["refusal"])
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.write:
        fitted = {
            "method": (
                f"logistic regression on standardised word readings ({population} questions with unknown words), "
                f"L2 {l2}, Newton's method; threshold by the "
                f"out-of-fold cost, a missed note {MISS_COST}× a needless one (scripts/fit_unmatched_note.py)"
            ),
            "training_sets": {
                name: {"path": f"scripts/qa/{name}", "sha256": sha256_file(QA / name)} for name in TRAINING_FILES
            },
            "model": {**report["model"], "threshold": threshold},
        }
        FITTED.write_text(json.dumps(fitted, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {FITTED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
