"""Refit the evidence decision (retrieve/evidence.py: answer, or say the documents do not cover it) on the
training sets written for the section choice, each question also typed in lower and in upper case. Measured,
**not adopted** (docs/measurements/generalization.md, "The evidence decision refitted ..."): it declined more
on the team's sets and refused fewer answerable questions, but declined fewer of MTRAG-UN's unanswerable ones.

The shipped model (scripts/calibrate_evidence.py) was fitted on the 90 questions of runbooks_tune as written.
Operators type in one case as often as not, and a product the documents never mention loses its capital with
it: "karpenter isn't launching nodes" is answered where "Karpenter isn't launching nodes" is refused. Here:

Training: scripts/qa/choice_train.jsonl (573; corpus groups docs_corpus, openshift, gitlab, ir-prometheus),
scripts/qa/scope_pairs.jsonl (192: answerable questions and out-of-scope twins of drawn sections) and
scripts/qa/runbooks_tune.jsonl (90, group "tune"): 855 questions, each asked as written, in lower case and in
upper case (a variant shares its question's group), and the invented-name controls of scripts/lib/perturb.py
made from them (never answerable).
Signals: the shipped model's and `unknown_specific`, how specific in everyday English the question's most
specific unknown word read as a subject of its own is (text/english.py; "karpenter", "centrifuge" near 1,
"bigger" near 0; a typo or a piece of the documents' words not counted), computed here.
Model: logistic regression on standardised signals, the L2 penalty (0.1, 1, 10) with the lowest log-loss leave
one group out; and the same without the dense similarity (the scale-free model).
Threshold: the rule shipped when this was measured: refuse where (1 - p) · m > p, m = 2/3, so 0.4 (both models
compared at it; the shipped threshold is 0.45 since scripts/quoted_threshold.py measured m for quoted answers).

Reported side by side with the shipped model (appliance/config.py's coefficients): answerable refused and
unanswerable declined, leave one group out on training and, never fitted on, on runbooks_heldout,
runbooks_sampled, demo_corpus, howtos_scope, procedures and procedures_llm, each as written / lower / upper case.
MTRAG-UN (../shared/data/mtrag-un, never fitted on by the shipped model): each collection's pool of gold passages
indexed as bench_sop.py does, each task searched with the text the default follow-up decision searches; per
collection the shipped model, the team refit and a joint refit (the team's sets and the other collection, this one
left out), refused / declined and the AUC (how well each ranks the two kinds, whatever the threshold).
Searches only (indexes as bench_sop.py, .appliance/bench-sop); signals cached (--cache; --fresh after a change),
each entry with the question's unknown terms as read (what scripts/fit_unknown_readings.py refits).
Usage: python scripts/fit_evidence.py [--json scripts/results/fit_evidence.json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import appliance  # noqa: E402, F401  (offline environment first)
from appliance.config import DEFAULT_EVIDENCE_COEFFICIENTS  # noqa: E402
from appliance.text.english import english_rarity  # noqa: E402
from scripts.bench_sop import MTRAG_TASKS, corpus_roots, mtrag_indexed, settings_for  # noqa: E402
from scripts.calibrate_evidence import cost_threshold, fit_logistic  # noqa: E402
from scripts.fit_unmatched_note import corpus, measured_items, training_items  # noqa: E402
from scripts.lib.perturb import invented_name_controls  # noqa: E402
from scripts.lib.resumable import add_cached_run_arguments, cached_entries, start_fresh_if_asked  # noqa: E402

FEATURES = ("top_dense", "coverage", "unknown_name", "unknown_words", "agreement", "unknown_specific")
SCALE_FREE_FEATURES = tuple(f for f in FEATURES if f != "top_dense")
GROUPS = ("docs_corpus", "openshift", "gitlab", "ir-prometheus", "tune")
TRAINING_SETS = ("choice_train", "scope_pairs", "tune")
# The plain made-up-product template has four wordings: a quarter of the training questions get one, so they do
# not outnumber the questions themselves.
PRODUCT_CONTROL_SHARE = 0.25
MEASURED = ("heldout", "sampled", "demo", "howtos", "procedures", "procedures_llm")
VARIANTS = ("as written", "lower case", "upper case", "control swapped", "control product")
PENALTIES = (0.1, 1.0, 10.0)
ANSWERED_ANYWAY = 2 / 3
CACHE = REPO / ".appliance" / "evidence_signals.jsonl"
RESULTS = REPO / "scripts" / "results" / "fit_evidence.json"
# Readings of retrieve/unknown_terms.py that leave a word a subject of its own; the others find it in the
# documents under another spelling (a compound, their name with words added, a wildcard or compound piece, another
# number or an instance of their names, a misspelling of their word) or read it as a typo of everyday English.
SUBJECT_READINGS = frozenset(
    {
        "name",
        "tag",
        "capitalized first word",
        "name typed in one case (no English word)",
        "English word",
        "English-shaped word",
        "plain word",
    }
)


def variants(item: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    """The question as written, in lower and upper case (each as answerable as it), and for a training question
    its invented-name controls (scripts/lib/perturb.py: its alert name swapped for a made-up one of the same
    shape, one made-up product in a plain template; never answerable). The bench's controls are drawn from the
    measured sets with other keys, so other made-up names."""
    question, answerable = item["question"], bool(item.get("answerable", True))
    typed = {"as written": question, "lower case": question.lower(), "upper case": question.upper()}
    found = {name: (text, answerable) for name, text in typed.items() if name == "as written" or text != question}
    if item["set"] in TRAINING_SETS:
        key = f"training/{item['set']}/{item['id']}"
        for control_key, text in invented_name_controls([(key, question)]):
            kind = control_key.rsplit("/", 1)[1]
            if kind == "swapped" or random.Random(control_key).random() < PRODUCT_CONTROL_SHARE:
                found[f"control {kind}"] = (text, False)
    return found


def collect(items: list[dict[str, Any]], home: Path, models_dir: Path, cache: Path) -> dict[str, dict[str, Any]]:
    """The evidence signals of every question, case variant and control (with unknown_specific)."""
    from appliance.ingest.pipeline import ingest
    from appliance.retrieve.search import Searcher

    done = cached_entries(cache)
    searchers: dict[str, Searcher] = {}
    cache.parent.mkdir(parents=True, exist_ok=True)
    try:
        with cache.open("a", encoding="utf-8") as out:
            for number, item in enumerate(items, start=1):
                for variant, (text, answerable) in variants(item).items():
                    key = f"{item['set']}/{item['id']}/{variant}"
                    if key in done:
                        continue
                    name = corpus(item)
                    if name not in searchers:
                        settings = settings_for(name, home, models_dir)
                        ingest(settings, corpus_roots(name))
                        searchers[name] = Searcher(settings)
                    evidence = searchers[name].search(text).evidence
                    assert evidence.signals is not None
                    entry = {
                        "key": key,
                        "set": item["set"],
                        "group": item.get("group", item["set"]),
                        "variant": variant,
                        "answerable": answerable,
                        "signals": {**evidence.signals.features(), "unknown_specific": unknown_specific(evidence)},
                        "terms": unknown_readings(evidence),
                    }
                    done[key] = entry
                    out.write(json.dumps(entry) + "\n")
                if number % 200 == 0:
                    print(f"{number}/{len(items)} searched", file=sys.stderr)
    finally:
        for searcher in searchers.values():
            searcher.close()
    return done


MTRAG_GROUPS = ("mtrag-ibmcloud", "mtrag-clapnq")


def collect_mtrag(home: Path, models_dir: Path, cache: Path, done: dict[str, dict[str, Any]]) -> None:
    """The evidence signals of MTRAG-UN's tasks (each collection's pool of gold passages indexed as its
    documents, as bench_sop.py does), each searched with the text the default follow-up decision searches (the
    last turn, or the earlier question joined to it). Every human label is kept; only ANSWERABLE and UNANSWERABLE
    are fitted on or scored (a PARTIAL answer and an UNDERSPECIFIED question are neither)."""
    from appliance.answer.followup_model import SearchReader, fitted_model
    from appliance.retrieve.search import Searcher
    from scripts.lib.mtrag import load_tasks, make_rewrites

    with cache.open("a", encoding="utf-8") as out:
        for group in MTRAG_GROUPS:
            collection = group.removeprefix("mtrag-")
            tasks, _ = load_tasks(MTRAG_TASKS, collection)
            if all(f"mtrag/{collection}/{t.task_id}/as written" in done for t in tasks):
                continue
            settings, tasks = mtrag_indexed(collection, home, models_dir)
            searcher = Searcher(settings)
            try:
                rewrites = make_rewrites(
                    tasks,
                    max_turns=settings.followup.max_turns,
                    system="",
                    known=searcher.index.catalog.knows_word,
                    reader=SearchReader(searcher),
                    decision=fitted_model(),
                )
                for task in tasks:
                    key = f"mtrag/{collection}/{task.task_id}/as written"
                    if key in done:
                        continue
                    evidence = searcher.search(rewrites.queries[task.task_id]["rule"]).evidence
                    assert evidence.signals is not None
                    entry = {
                        "key": key,
                        "set": "mtrag",
                        "group": group,
                        "variant": "as written",
                        "label": task.answerability,
                        "answerable": task.answerability != "UNANSWERABLE",
                        "signals": {**evidence.signals.features(), "unknown_specific": unknown_specific(evidence)},
                        "terms": unknown_readings(evidence),
                    }
                    done[key] = entry
                    out.write(json.dumps(entry) + "\n")
            finally:
                searcher.close()


def collect_all(home: Path, models_dir: Path, cache: Path) -> dict[str, dict[str, Any]]:
    """The signals of the training sets, the measured sets and MTRAG-UN, from `cache` or searched."""
    training = training_items()
    measured = [i for i in measured_items() if i["set"] in MEASURED]
    done = collect([*training, *measured], home, models_dir, cache)
    collect_mtrag(home, models_dir, cache, done)
    return done


def unknown_readings(evidence: Any) -> dict[str, Any]:
    """The question's unknown terms as retrieve/unknown_terms.py read them (reading, weight, name-shaped) and the
    count of its words the plain ones are a share of: what scripts/fit_unknown_readings.py refits."""
    signals = evidence.signals
    counted = signals.content_terms if signals.counted_terms is None else signals.counted_terms
    return {
        "counted": counted,
        "unknown": [[term.why, term.weight, term.name_shaped] for term in signals.unknown],
    }


def unknown_specific(evidence: Any) -> float:
    """How specific in everyday English the most specific unknown word read as a subject of its own is."""
    return max(
        (english_rarity(term.typed.lower()) for term in evidence.signals.unknown if term.why in SUBJECT_READINGS),
        default=0.0,
    )


def matrix(entries: Sequence[dict[str, Any]], features: Sequence[str]) -> np.ndarray:
    return np.array([[e["signals"][f] for f in features] for e in entries], dtype=float)


def labels(entries: Sequence[dict[str, Any]]) -> np.ndarray:
    return np.array([1.0 if e["answerable"] else 0.0 for e in entries])


def fit(entries: Sequence[dict[str, Any]], features: Sequence[str], l2: float) -> dict[str, float]:
    """Coefficients in raw units (intercept first), fitted on standardised signals."""
    x = matrix(entries, features)
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread == 0] = 1.0
    w = fit_logistic((x - mean) / spread, labels(entries), l2=l2)
    weights = w[1:] / spread
    return {"intercept": float(w[0] - mean @ weights), **{f: float(v) for f, v in zip(features, weights, strict=True)}}


def logit(coefficients: dict[str, float], entry: dict[str, Any]) -> float:
    return coefficients["intercept"] + sum(
        v * entry["signals"].get(f, 0.0) for f, v in coefficients.items() if f != "intercept"
    )


def probability(coefficients: dict[str, float], entry: dict[str, Any]) -> float:
    z = logit(coefficients, entry)
    return 1.0 / (1.0 + math.exp(-min(max(z, -50.0), 50.0)))  # a separated signal's logit stays finite


def out_of_fold(entries: Sequence[dict[str, Any]], features: Sequence[str], l2: float) -> list[float]:
    return out_of_fold_by(entries, lambda train: fit(train, features, l2))


def out_of_fold_by(
    entries: Sequence[dict[str, Any]], fitter: Callable[[Sequence[dict[str, Any]]], dict[str, float]]
) -> list[float]:
    """Each entry scored by `fitter`'s model fitted on the other groups (leave one group out)."""
    scores = [0.0] * len(entries)
    for group in GROUPS:
        coefficients = fitter([e for e in entries if e["group"] != group])
        for index, entry in enumerate(entries):
            if entry["group"] == group:
                scores[index] = probability(coefficients, entry)
    return scores


def log_loss(entries: Sequence[dict[str, Any]], scores: Sequence[float]) -> float:
    eps = 1e-9
    return -sum(
        math.log(max(eps, s)) if e["answerable"] else math.log(max(eps, 1.0 - s))
        for e, s in zip(entries, scores, strict=True)
    ) / len(entries)


def rates(entries: Sequence[dict[str, Any]], scores: Sequence[float], threshold: float) -> dict[str, str]:
    answerable = [s for e, s in zip(entries, scores, strict=True) if e["answerable"]]
    unanswerable = [s for e, s in zip(entries, scores, strict=True) if not e["answerable"]]
    return {
        "answerable_refused": f"{sum(s < threshold for s in answerable)}/{len(answerable)}",
        "unanswerable_declined": f"{sum(s < threshold for s in unanswerable)}/{len(unanswerable)}",
    }


def side_by_side(
    entries: Sequence[dict[str, Any]], refit: Sequence[float], threshold: float, shipped: dict[str, float]
) -> dict[str, dict[str, dict[str, str]]]:
    """Per variant: the shipped model's rates and the refit's."""
    table: dict[str, dict[str, dict[str, str]]] = {}
    for variant in VARIANTS:
        chosen = [(e, s) for e, s in zip(entries, refit, strict=True) if e["variant"] == variant]
        if not chosen:
            continue
        es, ss = [e for e, _ in chosen], [s for _, s in chosen]
        table[variant] = {
            "shipped": rates(es, [probability(shipped, e) for e in es], threshold),
            "refit": rates(es, ss, threshold),
        }
    return table


def print_table(title: str, rows: dict[str, dict[str, dict[str, dict[str, str]]]]) -> None:
    print(f"\n{title}\n{'set':16} {'variant':11} {'answerable refused':>24} {'unanswerable declined':>24}")
    for name, by_variant in rows.items():
        for variant, figures in by_variant.items():
            a = f"{figures['shipped']['answerable_refused']} → {figures['refit']['answerable_refused']}"
            u = f"{figures['shipped']['unanswerable_declined']} → {figures['refit']['unanswerable_declined']}"
            print(f"{name:16} {variant:11} {a:>24} {u:>24}")


def auc(entries: Sequence[dict[str, Any]], scores: Sequence[float]) -> float:
    """The chance that an answerable question scores above an unanswerable one (ties count half)."""
    yes = [s for e, s in zip(entries, scores, strict=True) if e["answerable"]]
    no = [s for e, s in zip(entries, scores, strict=True) if not e["answerable"]]
    pairs = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in yes for b in no)
    return pairs / (len(yes) * len(no)) if yes and no else float("nan")


def mtrag_report(
    train: Sequence[dict[str, Any]],
    mtrag: Sequence[dict[str, Any]],
    l2: float,
    threshold: float,
    shipped: dict[str, float],
) -> dict[str, dict[str, str]]:
    """Per MTRAG-UN collection: the shipped model, the refit on the team's sets (never fitted on MTRAG-UN), and a
    joint refit on the team's sets and the other collection (this one left out): refused / declined at the
    threshold, and how well each ranks the two kinds (AUC) whatever the threshold."""
    scored = [e for e in mtrag if e["label"] in ("ANSWERABLE", "UNANSWERABLE")]
    team = fit(train, FEATURES, l2)
    table: dict[str, dict[str, str]] = {}
    for group in MTRAG_GROUPS:
        mine = [e for e in scored if e["group"] == group]
        joint = fit([*train, *(e for e in scored if e["group"] != group)], FEATURES, l2)
        table[group] = {}
        for name, coefficients in (("shipped", shipped), ("team refit", team), ("joint refit", joint)):
            scores = [probability(coefficients, e) for e in mine]
            figures = rates(mine, scores, threshold)
            table[group][name] = (
                f"{figures['answerable_refused']} / {figures['unanswerable_declined']}, AUC {auc(mine, scores):.3f}"
            )
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cached_run_arguments(parser, REPO, CACHE, RESULTS, fresh_when="signals changed")
    args = parser.parse_args()
    start_fresh_if_asked(args)
    done = collect_all(args.home, args.models_dir, args.cache)
    train = [e for e in done.values() if e["set"] in TRAINING_SETS]
    threshold = cost_threshold(ANSWERED_ANYWAY)
    shipped = dict(DEFAULT_EVIDENCE_COEFFICIENTS)

    losses = {l2: log_loss(train, out_of_fold(train, FEATURES, l2)) for l2 in PENALTIES}
    l2 = min(losses, key=lambda k: losses[k])
    oof = out_of_fold(train, FEATURES, l2)
    coefficients = fit(train, FEATURES, l2)
    scale_free = fit(train, SCALE_FREE_FEATURES, l2)
    report: dict[str, Any] = {
        "training": {"questions": len({e["key"].rsplit("/", 1)[0] for e in train}), "with_variants": len(train)},
        "features": list(FEATURES),
        "leave_one_group_out_log_loss": {str(k): round(v, 4) for k, v in losses.items()},
        "l2": l2,
        "threshold": round(threshold, 4),
        "coefficients": {k: round(v, 4) for k, v in coefficients.items()},
        "scale_free_coefficients": {k: round(v, 4) for k, v in scale_free.items()},
        "training_leave_one_group_out": {
            group: side_by_side(
                [e for e in train if e["group"] == group],
                [s for e, s in zip(train, oof, strict=True) if e["group"] == group],
                threshold,
                shipped,
            )
            for group in GROUPS
        },
        "measured": {},
    }
    for name in MEASURED:
        entries = [e for e in done.values() if e["set"] == name]
        refit = [probability(coefficients, e) for e in entries]
        report["measured"][name] = side_by_side(entries, refit, threshold, shipped)
    report["mtrag"] = mtrag_report(train, [e for e in done.values() if e["set"] == "mtrag"], l2, threshold, shipped)

    print(f"L2 {l2} (leave one group out log-loss {report['leave_one_group_out_log_loss']}), threshold {threshold:.2f}")
    print("coefficients:", json.dumps(report["coefficients"]))
    print("scale-free:", json.dumps(report["scale_free_coefficients"]))
    print_table(
        "Training, leave one group out (shipped → refit; the shipped model was fitted on tune):",
        report["training_leave_one_group_out"],
    )
    print_table("Measured, never fitted on (shipped → refit):", report["measured"])
    print("\nMTRAG-UN (ANSWERABLE and UNANSWERABLE tasks): refused / declined, and AUC")
    for group, row in report["mtrag"].items():
        print(f"{group:16} " + "   ".join(f"{name}: {cell}" for name, cell in row.items()))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
