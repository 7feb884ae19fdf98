"""Do the hand-set weights of retrieve/unknown_terms.py hold up against weights fitted on data?

Each word of a question the documents never use is read one way (a name, a tag, a compound of known words, an
English word, a misspelling, …) and weighed by a constant of unknown_terms.py (NAME 1.0, TWO_KNOWN_PIECES 0.5,
PLAIN_WORD 0.1 / 0.25 / 0.5, …). The evidence model (retrieve/evidence.py) reads them through two signals: the
weightiest name-shaped term (`unknown_name`) and the plain terms' summed weight as a share of the question's
words (`unknown_words`). The constants were set by hand; the evidence model's coefficients on top of them were
fitted (scripts/calibrate_evidence.py).

Here the readings get their own weights: one signal per reading (its terms' hand weight, the largest for
name-shaped readings, the sum over the question's words for plain ones), so the fit decides how much each kind of
unknown word says "not covered". Readings met in fewer than MIN_ENTRIES training entries are pooled (one name-shaped
pool, one plain pool). Compared, all logistic on the same other signals (top_dense, coverage, agreement), leave one
corpus group out on the training sets of scripts/fit_evidence.py (choice_train, scope_pairs, tune: each question as
written, in lower and in upper case, and its invented-name controls), the L2 penalty of each by its own
leave-one-group-out log-loss:

* shipped: appliance/config.py's coefficients over the hand weights (fitted on runbooks_tune alone);
* hand weights, refit: the shipped two unknown signals, refitted here;
* readings fitted: one signal per reading.

Printed: log-loss and AUC out of fold per group, answerable refused / unanswerable declined at the shipped
threshold (evidence.threshold), the same on the sets never fitted on (fit_evidence.py's MEASURED and MTRAG-UN's two
collections), and each reading's pull: the logit one typical term of it moves (its median hand weight in the
training entries × its coefficient; for a plain reading, over a question of the median word count), hand against
fitted. A measurement: nothing is written into the appliance.

Signals are fit_evidence.py's, with each entry's terms (its cache, with --fresh after the readings change).
Usage: python scripts/fit_unknown_readings.py [--cache .appliance/evidence_readings.jsonl] [--json FILE]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import appliance  # noqa: E402, F401  (offline environment first)
from appliance.config import DEFAULT_EVIDENCE_COEFFICIENTS, EvidenceSettings  # noqa: E402
from scripts.calibrate_evidence import fit_logistic  # noqa: E402
from scripts.fit_evidence import (  # noqa: E402
    GROUPS,
    MEASURED,
    MTRAG_GROUPS,
    PENALTIES,
    TRAINING_SETS,
    auc,
    collect_all,
    fit,
    labels,
    log_loss,
    logit,
    matrix,
    out_of_fold_by,
    probability,
    rates,
)
from scripts.lib.report import save_report  # noqa: E402
from scripts.lib.resumable import add_cached_run_arguments, start_fresh_if_asked  # noqa: E402

CACHE = REPO / ".appliance" / "evidence_readings.jsonl"
RESULTS = REPO / "scripts" / "results" / "fit_unknown_readings.json"
SHARED = ("top_dense", "coverage", "agreement")
HAND = (*SHARED, "unknown_name", "unknown_words")
MIN_ENTRIES = 20  # training entries holding a reading for it to get its own weight
OTHER_NAME = "other name-shaped"
OTHER_PLAIN = "other plain"


def reading_key(why: str, name_shaped: bool) -> str:
    return f"{'name' if name_shaped else 'plain'}: {why}"


def signal_of(why: str, name_shaped: bool, own: Sequence[str]) -> str:
    """The signal a term counts in: its reading's own, or the pool of its shape."""
    key = reading_key(why, name_shaped)
    return key if key in own else OTHER_NAME if name_shaped else OTHER_PLAIN


def readings_of(train: Sequence[dict[str, Any]]) -> list[str]:
    """The readings common enough in the training entries to get their own weight."""
    counts: Counter[str] = Counter()
    for entry in train:
        counts.update({reading_key(why, shaped) for why, _, shaped in entry["terms"]["unknown"]})
    return sorted(key for key, count in counts.items() if count >= MIN_ENTRIES)


def with_reading_signals(entry: dict[str, Any], own: Sequence[str]) -> dict[str, Any]:
    """The entry with one signal per reading: the largest hand weight of its name-shaped terms, or its plain
    terms' summed hand weight over the question's counted words (as evidence.py's unknown_words)."""
    signals = dict(entry["signals"])
    counted = entry["terms"]["counted"]
    for key in [*own, OTHER_NAME, OTHER_PLAIN]:
        signals[key] = 0.0
    for why, weight, shaped in entry["terms"]["unknown"]:
        key = signal_of(why, shaped, own)
        if shaped:
            signals[key] = max(signals[key], weight)
        elif counted:
            signals[key] = min(1.0, signals[key] + weight / counted)
    return {**entry, "signals": signals}


Fitter = Callable[[Sequence[dict[str, Any]]], dict[str, float]]


def refit(features: Sequence[str], l2: float) -> Fitter:
    """Every coefficient fitted anew (fit_evidence.py's fit)."""
    return lambda entries: fit(entries, features, l2)


def corrected(features: Sequence[str], l2: float) -> Fitter:
    """The shipped model kept whole (its intercept, coefficients and the hand weights inside its two unknown
    signals), with one correction per reading fitted on top of it: no reading's correction, no change. The
    penalty pulls each correction (on standardised signals) toward zero, i.e. toward the hand weight."""
    shipped = dict(DEFAULT_EVIDENCE_COEFFICIENTS)

    def fitter(entries: Sequence[dict[str, Any]]) -> dict[str, float]:
        x = matrix(entries, features)
        spread = x.std(axis=0)
        spread[spread == 0] = 1.0
        x = x / spread
        offset = np.array([logit(shipped, e) for e in entries])
        w = fit_logistic(x, labels(entries), l2=l2, offset=offset, intercept=False)
        return {**shipped, **{f: float(v) for f, v in zip(features, w / spread, strict=True)}}

    return fitter


def best_penalty(entries: Sequence[dict[str, Any]], make: Callable[[float], Fitter]) -> float:
    losses = {l2: log_loss(entries, out_of_fold_by(entries, make(l2))) for l2 in PENALTIES}
    return min(losses, key=lambda k: losses[k])


def figures(entries: Sequence[dict[str, Any]], scores: Sequence[float], threshold: float) -> dict[str, Any]:
    found = rates(entries, scores, threshold)
    return {**found, "auc": round(auc(entries, scores), 4), "log_loss": round(log_loss(entries, scores), 4)}


def pulls(
    train: Sequence[dict[str, Any]], own: Sequence[str], models: dict[str, dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """Each reading's logit for one typical term of it (its median hand weight; a plain one over a question of the
    median word count), by model; and the weight the shipped model with its correction gives that term (the hand
    weight scaled by how much the correction adds to the shipped coefficient on its signal)."""
    words = float(np.median([e["terms"]["counted"] for e in train if e["terms"]["counted"]]))
    weights: dict[str, list[float]] = {}
    for entry in train:
        for why, weight, shaped in entry["terms"]["unknown"]:
            weights.setdefault(signal_of(why, shaped, own), []).append(weight)
    table: dict[str, dict[str, float]] = {}
    for key in [*own, OTHER_NAME, OTHER_PLAIN]:
        if key not in weights:
            continue
        shaped = key.startswith("name") or key == OTHER_NAME
        typical = float(np.median(weights[key]))
        per_unit = typical if shaped else typical / words
        signal = "unknown_name" if shaped else "unknown_words"
        row = {"terms": len(weights[key]), "hand_weight": round(typical, 3)}
        for name, model in models.items():
            coefficients = model["coefficients"]
            on_signal = coefficients.get(signal, 0.0) + coefficients.get(key, 0.0)
            row[name] = round(on_signal * per_unit, 3)
        shipped = models["shipped"]["coefficients"][signal]
        correction = models["shipped + reading corrections"]["coefficients"][key]
        row["corrected_weight"] = round(typical * (1.0 + correction / shipped), 3)
        table[key] = row
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_cached_run_arguments(parser, REPO, CACHE, RESULTS, fresh_when="the readings or signals changed")
    args = parser.parse_args()
    start_fresh_if_asked(args)
    done = collect_all(args.home, args.models_dir, args.cache)
    if any("terms" not in e for e in done.values()):
        raise SystemExit(f"{args.cache} holds entries without their terms (made before them): run with --fresh")
    threshold = float(EvidenceSettings.model_fields["threshold"].default)
    raw_train = [e for e in done.values() if e["set"] in TRAINING_SETS]
    own = readings_of(raw_train)
    features = (*SHARED, *own, OTHER_NAME, OTHER_PLAIN)
    train = [with_reading_signals(e, own) for e in raw_train]
    shipped = dict(DEFAULT_EVIDENCE_COEFFICIENTS)
    models: dict[str, dict[str, Any]] = {"shipped": {"coefficients": shipped}}
    own_signals = (*own, OTHER_NAME, OTHER_PLAIN)
    makers: dict[str, tuple[Sequence[str], Callable[[float], Fitter]]] = {
        "hand weights, refit": (HAND, lambda l2: refit(HAND, l2)),
        "readings fitted": (features, lambda l2: refit(features, l2)),
        "shipped + reading corrections": (own_signals, lambda l2: corrected(own_signals, l2)),
    }
    for name, (chosen, make) in makers.items():
        l2 = best_penalty(train, make)
        models[name] = {
            "features": list(chosen),
            "l2": l2,
            "oof": out_of_fold_by(train, make(l2)),
            "coefficients": make(l2)(train),
        }
    models["shipped"]["oof"] = [probability(shipped, e) for e in train]

    report: dict[str, Any] = {
        "threshold": threshold,
        "training_entries": len(train),
        "readings": own,
        "models": {name: {k: v for k, v in model.items() if k != "oof"} for name, model in models.items()},
        "leave_one_group_out": {},
        "measured": {},
        "mtrag": {},
        "pulls": pulls(train, own, models),
    }
    for group in (*GROUPS, "all"):
        index = [i for i, e in enumerate(train) if group in ("all", e["group"])]
        report["leave_one_group_out"][group] = {
            name: figures([train[i] for i in index], [model["oof"][i] for i in index], threshold)
            for name, model in models.items()
        }
    for set_name in (*MEASURED, *MTRAG_GROUPS):
        entries = [
            with_reading_signals(e, own)
            for e in done.values()
            if (e["set"] == set_name or (e["group"] == set_name and e["set"] == "mtrag"))
            and e.get("label", "ANSWERABLE") in ("ANSWERABLE", "UNANSWERABLE")
        ]
        target = report["mtrag" if set_name in MTRAG_GROUPS else "measured"]
        target[set_name] = {
            name: figures(entries, [probability(model["coefficients"], e) for e in entries], threshold)
            for name, model in models.items()
        }

    print(f"{len(train)} training entries; threshold {threshold}; readings with their own weight: {len(own)}")
    for name, model in models.items():
        if name != "shipped":
            print(f"{name}: L2 {model['l2']}")
    header = f"{'':22} " + " ".join(f"{name:>33}" for name in models)
    for title, table in (
        ("Training, leave one group out (refused / declined, AUC, log-loss)", report["leave_one_group_out"]),
        ("Never fitted on", report["measured"]),
        ("MTRAG-UN (ANSWERABLE and UNANSWERABLE tasks)", report["mtrag"]),
    ):
        print(f"\n{title}\n{header}")
        for row, cells in table.items():
            print(
                f"{row:22} "
                + " ".join(
                    f"{c['answerable_refused'] + ' / ' + c['unanswerable_declined']:>17} "
                    f"{c['auc']:>7.3f} {c['log_loss']:>7.3f} "
                    for c in cells.values()
                )
            )
    print("\nEach reading's pull on the logit, one typical term, by model; its weight in the corrected shipped model")
    print(f"{'':58} {'terms':>6} {'hand w':>7} " + " ".join(f"{name[:16]:>16}" for name in models) + "  weight")
    for key, row in report["pulls"].items():
        print(
            f"{key:58} {row['terms']:>6} {row['hand_weight']:>7} "
            + " ".join(f"{row[name]:>16.2f}" for name in models)
            + f"  {row['hand_weight']} → {row['corrected_weight']}"
        )
    save_report(report, args.json)
    print(f"\n→ {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
