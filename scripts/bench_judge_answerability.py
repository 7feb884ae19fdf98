"""Does the LLM judge tell a question the documents do not answer from one they do?

The evidence decision (retrieve/evidence.py) lets some unanswerable questions through (declined 42-72% on the
team's sets against a goal of 85%): "How do I start up the chlorine dioxide generator?" gets the standby
generator's steps. Where the judge runs, it has already read the best sections and said how likely each is to
be where the answer is written (`judge.odds` of the answer). This script asks every question of a training set
and of the measurement sets with the judge on (before the steps), records those log-odds, then fits one
threshold on the training sets: an answer whose best judged section scores below it would be declined.
Both errors cost the same (an answerable question refused, an unanswerable one answered).

Training: scripts/qa/choice_train.jsonl (every unanswerable question and a seeded sample of the answerable
ones; corpus groups docs_corpus, openshift, gitlab, ir-prometheus) and scripts/qa/runbooks_tune.jsonl (group
"tune"). The threshold is reported leave one group out (fitted on the others, applied to the one left out)
and fitted on all. Measured, never fitted on: runbooks_heldout, runbooks_sampled, demo_corpus, howtos_scope.

The log-odds of every question are cached (--cache, one JSON line a question), so a run that stops goes on where
it was. Usage:
  python scripts/bench_judge_answerability.py [--answerable-sample 80] [--json scripts/results/judge_answerability.json]
Settings: as bench_sop.py (indexes under .appliance/bench-sop), the judge forced on, before the steps.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import appliance  # noqa: E402, F401  (offline environment first)
from scripts.bench_sop import QA, corpus_of, corpus_roots, load_items, settings_for  # noqa: E402
from scripts.lib.resumable import cached_entries  # noqa: E402

TRAINING = ("choice_train", "tune")
MEASURED = ("howtos", "demo", "heldout", "sampled")
GROUPS = ("docs_corpus", "openshift", "gitlab", "ir-prometheus", "tune")


def training_items(sample: int, seed: int) -> list[dict[str, Any]]:
    """Every unanswerable question of choice_train and a seeded sample of its answerable ones, then tune."""
    rows = [json.loads(line) for line in (QA / "choice_train.jsonl").read_text().splitlines() if line.strip()]
    answerable = [r for r in rows if r["answerable"]]
    chosen = random.Random(seed).sample(answerable, min(sample, len(answerable)))
    items = [{**r, "set": "choice_train"} for r in [*chosen, *(r for r in rows if not r["answerable"])]]
    items += [{**r, "set": "tune", "group": "tune"} for r in load_items("tune", "all")]
    return items


def measured_items() -> list[dict[str, Any]]:
    return [{**r, "set": name} for name in MEASURED for r in load_items(name, "all")]


def ask_all(items: list[dict[str, Any]], home: Path, models_dir: Path, cache: Path) -> dict[str, dict[str, Any]]:
    from appliance.answer.answerer import Answerer
    from appliance.ingest.pipeline import ingest

    done = cached_entries(cache)
    todo = [item for item in items if f"{item['set']}/{item['id']}" not in done]
    answerers: dict[str, Answerer] = {}
    os.environ["APPLIANCE_ANSWER_LLM_JUDGE"] = "on"
    os.environ["APPLIANCE_ANSWER_LLM_JUDGE_TIMING"] = "before"
    cache.parent.mkdir(parents=True, exist_ok=True)
    try:
        with cache.open("a", encoding="utf-8") as out:
            for number, item in enumerate(todo, start=1):
                name = corpus_of(item, item["set"])
                if name not in answerers:
                    settings = settings_for(name, home, models_dir)
                    ingest(settings, corpus_roots(name))
                    answerers[name] = Answerer(
                        settings.model_copy(update={"answer": settings.answer.model_copy(update={"mode": "quoted"})})
                    )
                started = time.perf_counter()
                result = answerers[name].ask(item["question"])
                entry = {
                    "key": f"{item['set']}/{item['id']}",
                    "set": item["set"],
                    "group": item.get("group", item["set"]),
                    "answerable": bool(item.get("answerable", True)),
                    "refused": result.refused,
                    "odds": result.judge.odds if result.judge is not None else [],
                    "confidence": result.confidence,
                    "evidence": result.evidence_confidence,
                    "unmatched": result.unmatched_terms,
                    "ms": round((time.perf_counter() - started) * 1000.0),
                }
                done[entry["key"]] = entry
                out.write(json.dumps(entry) + "\n")
                out.flush()
                print(
                    f"{number}/{len(todo)} {entry['key']}: refused={entry['refused']} odds={entry['odds']}",
                    file=sys.stderr,
                )
    finally:
        for answerer in answerers.values():
            answerer.close()
    return done


def best_odds(entry: dict[str, Any]) -> float | None:
    return max(entry["odds"]) if entry["odds"] else None


def declined(entry: dict[str, Any], threshold: float | None) -> bool:
    """Declined by the evidence decision, or (with a threshold) by the judge's best log-odds below it."""
    if entry["refused"]:
        return True
    odds = best_odds(entry)
    return threshold is not None and odds is not None and odds < threshold


def errors(entries: list[dict[str, Any]], threshold: float | None) -> int:
    return sum(declined(e, threshold) == e["answerable"] for e in entries)


def fit(entries: list[dict[str, Any]]) -> float | None:
    """The threshold with the fewest errors (None: no threshold beats the evidence decision alone); ties go to
    the lowest (fewest answerable questions declined)."""
    candidates = sorted({o for e in entries if (o := best_odds(e)) is not None and not e["refused"]})
    thresholds = [(a + b) / 2 for a, b in itertools.pairwise(candidates)] or candidates
    best, best_errors = None, errors(entries, None)
    for t in thresholds:
        n = errors(entries, t)
        if n < best_errors:
            best, best_errors = t, n
    return best


def figures(entries: list[dict[str, Any]], threshold: float | None) -> dict[str, Any]:
    answerable = [e for e in entries if e["answerable"]]
    unanswerable = [e for e in entries if not e["answerable"]]

    def share(n: int, total: int) -> str:
        return f"{100 * n / total:.0f}% ({n} of {total})" if total else "n/a"

    return {
        "answerable_refused": share(sum(declined(e, threshold) for e in answerable), len(answerable)),
        "unanswerable_declined": share(sum(declined(e, threshold) for e in unanswerable), len(unanswerable)),
    }


def separation(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Among the questions the evidence decision let through and the judge read: how often an answerable one's
    best log-odds beat an unanswerable one's (AUC; 0.5 is chance)."""
    answered = [e for e in entries if not e["refused"] and e["odds"]]
    yes = [max(e["odds"]) for e in answered if e["answerable"]]
    no = [max(e["odds"]) for e in answered if not e["answerable"]]
    pairs = len(yes) * len(no)
    wins = sum((a > b) + 0.5 * (a == b) for a in yes for b in no)
    return {
        "answerable_judged": len(yes),
        "unanswerable_judged": len(no),
        "auc": round(wins / pairs, 3) if pairs else None,
    }


def report(
    done: dict[str, dict[str, Any]], training: list[dict[str, Any]], measured: list[dict[str, Any]]
) -> dict[str, Any]:
    train = [done[f"{i['set']}/{i['id']}"] for i in training if f"{i['set']}/{i['id']}" in done]
    out: dict[str, Any] = {"training_questions": len(train)}
    loco: dict[str, Any] = {}
    for group in GROUPS:
        held = [e for e in train if e["group"] == group]
        if not held:
            continue
        t = fit([e for e in train if e["group"] != group])
        loco[group] = {"threshold": t, "evidence alone": figures(held, None), "with the judge": figures(held, t)}
    out["leave_one_group_out"] = loco
    threshold = fit(train)
    out["threshold_fitted_on_all"] = threshold
    out["training, evidence alone"] = figures(train, None)
    out["training, with the judge (in sample)"] = figures(train, threshold)
    out["training, separation"] = separation(train)
    for name in MEASURED:
        entries = [
            done[f"{i['set']}/{i['id']}"] for i in measured if i["set"] == name and f"{i['set']}/{i['id']}" in done
        ]
        total = sum(i["set"] == name for i in measured)
        if entries and len(entries) < total:
            out[name] = {"not asked": f"{total - len(entries)} of {total} questions (a run cut short)"}
        elif entries:
            out[name] = {
                "evidence alone": figures(entries, None),
                "with the judge": figures(entries, threshold),
                "separation": separation(entries),
            }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--cache", type=Path, default=REPO / ".appliance" / "judge_answerability.jsonl")
    parser.add_argument("--answerable-sample", type=int, default=80)
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--only", choices=["training", "measured", "both"], default="both")
    parser.add_argument("--cached-only", action="store_true", help="Ask nothing: report the cached questions.")
    parser.add_argument("--limit", type=int, default=0, help="Ask at most this many questions (a smoke run).")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    training = training_items(args.answerable_sample, args.seed)
    measured = measured_items()
    wanted = {"training": training, "measured": measured, "both": [*training, *measured]}[args.only]
    if args.limit:
        wanted = wanted[: args.limit]
    if args.cached_only:
        done = {json.loads(line)["key"]: json.loads(line) for line in args.cache.read_text().splitlines()}
    else:
        done = ask_all(wanted, args.home, args.models_dir, args.cache)
    result = report(done, training, measured)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
