"""Perturbation suite: does the evidence decision (answer or refuse, before any LLM call) flip on wording?

For every question of the team's golden sets (runbooks tune, held-out, sampled; demo corpus), each
perturbation of scripts/lib/perturb.py (one typo, a synonym, the pager's `[FIRING:1]` and
labels, a wildcard in an alert or metric name, lower/upper case, an added `p99` or `5xx`, a
narrative lead-in, in lower case or opening the sentence with a capital) is searched, and the decision
compared with the one on the original wording.
Retrieval only, no generation: a few minutes on 2 cores once the indexes exist.

Reported per kind, for answerable and unanswerable questions separately: variants, flips, flip rate
(goal 0 for answerable questions), the cause of each new refusal (the evidence model's threshold, with
the kind of unknown term that weighed most; or the former unknown-word veto, with
APPLIANCE_EVIDENCE_REFUSE_UNKNOWN_TERMS=true), and the invented-name controls (a made-up alert or
product swapped in), which must all stay refused.

Usage: python scripts/bench_perturbations.py [--sets tune,heldout,sampled,demo] [--json OUT]
Settings: defaults and APPLIANCE_<SECTION>_<FIELD> variables, as for the CLI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.config import Settings, load_settings
from appliance.evaluate.runner import load_qa
from appliance.ingest.pipeline import ingest
from appliance.ingest.writer import IngestReport
from appliance.retrieve.search import Searcher, SearchResult
from scripts.lib.flips import (
    FlipRow,
    Question,
    control_refusals,
    decision_flips,
    flip_rows_json,
    summarize_flips,
)

REPO = Path(__file__).resolve().parent.parent
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
SETS = {
    "tune": ("runbooks", REPO / "scripts/qa/runbooks_tune.jsonl"),
    "heldout": ("runbooks", REPO / "scripts/qa/runbooks_heldout.jsonl"),
    "sampled": ("runbooks", REPO / "scripts/qa/runbooks_sampled.jsonl"),
    "demo": ("demo", REPO / "scripts/qa/demo_corpus.jsonl"),
}


def cause(reason: str) -> str:
    """Which part of the decision refused: the former hard rule (evidence.refuse_unknown_terms) refuses with no
    threshold; the evidence model names the unknown term that weighed most, if any."""
    if "never mention" in reason and "<" not in reason:
        return "unknown-word veto"
    if "never mention" in reason:
        return "evidence model below threshold, an unknown name"
    if "do not use" in reason:
        return "evidence model below threshold, unknown plain words"
    if "confidence" in reason:
        return "evidence model below threshold"
    return reason


def indexed_settings(corpus: str, home: Path, models_dir: Path) -> tuple[Settings, IngestReport]:
    """Settings for `corpus` ("runbooks" or "demo") indexed under home/corpus, as for the CLI but without a config
    file; also the other benchmarks' set-up (bench_prompt_fusion.py, support_labels.py)."""
    environ = {**os.environ, "APPLIANCE_HOME": str(home / corpus), "APPLIANCE_MODELS_DIR": str(models_dir)}
    environ.pop("APPLIANCE_CONFIG", None)
    settings = load_settings(environ)
    roots = sorted(p for p in RUNBOOKS.iterdir() if p.is_dir()) if corpus == "runbooks" else [REPO / "docs_corpus"]
    return settings, ingest(settings, roots)


def searcher_for(corpus: str, home: Path, models_dir: Path) -> Searcher:
    settings, report = indexed_settings(corpus, home, models_dir)
    print(f"{corpus} index: {report.chunks_total} chunks ({report.chunks_embedded} embedded now)", file=sys.stderr)
    return Searcher(settings)


def new_refusal_causes(rows: list[FlipRow]) -> dict[str, dict[str, int]]:
    causes: dict[str, Counter[str]] = {}
    for row in rows:
        if row.flipped and row.answerable and row.refused:
            causes.setdefault(row.kind, Counter())[cause(row.reason)] += 1
    return {kind: dict(counter) for kind, counter in causes.items()}


class Decisions:
    """The evidence decision on a text; one search per text."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.results: dict[str, SearchResult] = {}

    def __call__(self, text: str) -> tuple[bool, str]:
        if text not in self.results:
            self.results[text] = self.searcher.search(text, k=10)
        evidence = self.results[text].evidence
        return not evidence.sufficient, evidence.reason


def originals_table(rows: list[FlipRow]) -> dict[str, dict[str, Any]]:
    """Per set, the refusals of the unperturbed questions: answerable refused, unanswerable declined."""
    table: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(r.set_name for r in rows):
        originals = [r for r in rows if r.set_name == name and r.kind == "original"]
        answerable = [r for r in originals if r.answerable]
        unanswerable = [r for r in originals if not r.answerable]
        table[name] = {
            "answerable_refused": f"{sum(r.refused for r in answerable)}/{len(answerable)}",
            "unanswerable_declined": f"{sum(r.refused for r in unanswerable)}/{len(unanswerable)}",
            "answerable_refused_ids": [r.id for r in answerable if r.refused],
            "unanswerable_answered_ids": [r.id for r in unanswerable if not r.refused],
        }
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--sets", default="tune,heldout,sampled,demo")
    parser.add_argument("--limit", type=int, default=0, help="Questions per set (0 = all), for a quick look.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    names = args.sets.split(",")
    unknown = sorted(set(names) - set(SETS))
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(SETS)}")
    rows: list[FlipRow] = []
    controls: dict[str, Any] = {}
    searchers: dict[str, Searcher] = {}
    for name in names:
        corpus, path = SETS[name]
        if corpus not in searchers:
            searchers[corpus] = searcher_for(corpus, args.home, args.models_dir)
        searcher = searchers[corpus]
        decide = Decisions(searcher)

        items = load_qa(path)[: args.limit] if args.limit else load_qa(path)
        questions = [Question(name, item.id, item.question, item.answerable) for item in items]
        set_rows = decision_flips(decide, questions)
        rows += set_rows
        controls[name] = control_refusals(decide, questions)
        summary = summarize_flips(set_rows)
        print(
            f"{name}: answerable flips {summary['answerable']['flips']}/{summary['answerable']['variants']}, "
            f"unanswerable flips {summary['unanswerable']['flips']}/{summary['unanswerable']['variants']}, "
            f"controls answered {controls[name]['answered']}/{controls[name]['controls']}",
            file=sys.stderr,
            flush=True,
        )
    for searcher in searchers.values():
        searcher.close()
    report: dict[str, Any] = {
        "all_sets": summarize_flips(rows),
        "new_refusal_causes": new_refusal_causes(rows),
        "per_set": {name: summarize_flips([r for r in rows if r.set_name == name]) for name in names},
        "invented_name_controls": {
            name: {k: v for k, v in c.items() if k != "answered_controls"} for name, c in controls.items()
        },
    }
    report["originals"] = originals_table(rows)
    print(json.dumps(report, indent=2))
    if args.json:
        full = {
            **report,
            "flipped": flip_rows_json(rows),
            "answered_controls": {name: c["answered_controls"] for name, c in controls.items()},
        }
        args.json.write_text(json.dumps(full, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
