"""How far the candidate sections reach: the two counts of answer/quoted/candidates.py that follow a hit's pointer
to another document, measured over the hits the appliance's own search returns.

`POINTING_HITS`: how many of the best hits are read for document names ("see SOP-CL-004 section 6",
KubePodNotReady); `REFERENCED_DOCUMENTS`: how many named documents, beyond the hits' best `DOCUMENTS`, give their
sections. A larger reach can only add candidates (the gold section found more often), at the cost of more sections
for the ranker to read (time, and rivals for the right one). Measured per answerable question, for each pair of
counts:

* gold section: the question's gold section is a candidate (sets that name one);
* every phrase: some candidate short enough to show whole (`answer.max_procedure_words`) holds every gold phrase
  (step, answer or key phrases): what showing it could give at best (a whole document always holds them);
* gold document: a candidate lies in a gold file (sets that name one or several);
* candidates: how many sections the ranker reads (median and 90th percentile), and documents joined by a pointer.

Rule (written before any run; "every phrase" then counted any candidate, and the first run showed that a whole
document always holds every phrase, so it was restricted to showable sections before anything was chosen): on the
fitting set (scripts/qa/choice_train.jsonl, the section ranker's), the smallest reach (fewest candidates at the
90th percentile) whose "every phrase" count is within one question of the best. The measured sets are reported
beside it, never used to choose. What the rule chooses only widens the ceiling: whether the ranker then chooses
better is measured end to end (choice_features.py --pointing-hits / --referenced-documents, fit_choice.py
--features; docs/measurements/section-choice.md, "How far a hit's pointers reach"). The search runs once per
question (default settings, `answer.section_hits` hits); only the gathering is repeated.

With --limits, the same counts for the two limits on the names read (at the shipped reach): `MAX_NAMES`, how many
names of the best hits are looked up, and `SHARED_NAME_DOCUMENTS`, how many documents may hold a name before it
counts as no name. Rule (written before that run): the shipped pair stays unless another makes "every phrase"
more than one training question higher.

Usage: python scripts/measure_gathering.py [--sets train,procedures,...] [--limits] [--json FILE]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.quoted.candidates import (
    MAX_NAMES,
    POINTING_HITS,
    REFERENCED_DOCUMENTS,
    SHARED_NAME_DOCUMENTS,
    Candidate,
    gather_candidates,
)
from appliance.retrieve.search import Searcher
from scripts.bench_sop import REPO, flat
from scripts.choice_features import corpus_command, load_set, searched, section_text
from scripts.lib.report import save_report

SETS = ("train", "procedures", "procedures_llm", "heldout", "sampled", "sampled_59", "tune", "demo")
POINTING = (5, 10, 20)
REFERENCED = (0, 1, 2, 4)
NAMES = (8, 24, 64)
SHARED = (1, 2, 4)
REACHES = {f"{p}/{r}": {"pointing_hits": p, "referenced_documents": r} for p in POINTING for r in REFERENCED}
LIMITS = {f"{n}/{s}": {"max_names": n, "shared_name_documents": s} for n in NAMES for s in SHARED}
FITTING_SET = "train"
RESULTS = REPO / "scripts" / "results" / "measure_gathering.json"


def reach_of(
    candidates: Sequence[Candidate], item: dict[str, Any], phrases: Sequence[str], showable_words: int
) -> dict[str, Any]:
    """What one gathering offers the ranker for one question."""
    gold = item.get("gold_section")
    gold_files = set(item.get("gold_files") or [item["gold_file"]])
    holds_all = False
    if phrases:
        for candidate in candidates:
            if candidate.section.words > showable_words:
                continue
            text = flat(section_text(candidate.section))
            if all(phrase in text for phrase in phrases):
                holds_all = True
                break
    return {
        "gold_section": None
        if not gold
        else any(c.section.path == item["gold_file"] and c.section.heading == gold for c in candidates),
        "every_phrase": holds_all if phrases else None,
        "gold_document": any(c.section.path in gold_files for c in candidates),
        "candidates": len(candidates),
        "referenced_documents": len({c.section.path for c in candidates if c.document_rank == 0}),
    }


def measure_question(searcher: Searcher, item: dict[str, Any], grid: dict[str, dict[str, int]]) -> dict[str, Any]:
    """What each gathering of the grid (a key → gather_candidates' counts) offers for one question."""
    answer = searcher.settings.answer
    hits_wanted = answer.section_hits
    catalog = searcher.catalog
    with searcher.index.reading():
        found, ranked, chunks_of = searched(searcher, item["question"], hits_wanted)
        phrases = [flat(p) for p in item["phrases"]]
        reaches = {}
        for key, counts in grid.items():
            candidates = gather_candidates(
                ranked, chunks_of, catalog.documents_named, question=found.searched, **counts
            )
            reaches[key] = reach_of(candidates, item, phrases, answer.max_procedure_words)
    return {"set": item["set"], "id": item["id"], "answerable": item["answerable"], "reaches": reaches}


def summarize(measured: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for key in measured[0]["reaches"] if measured else ():
        reaches = [m["reaches"][key] for m in measured]
        counts = np.array([r["candidates"] for r in reaches])
        golds = [r["gold_section"] for r in reaches if r["gold_section"] is not None]
        phrases = [r["every_phrase"] for r in reaches if r["every_phrase"] is not None]
        table[key] = {
            "questions": len(reaches),
            "gold_section": sum(golds),
            "with_gold_section": len(golds),
            "every_phrase": sum(phrases),
            "gold_document": sum(r["gold_document"] for r in reaches),
            "with_phrases": len(phrases),
            "candidates_median": float(np.median(counts)),
            "candidates_p90": float(np.percentile(counts, 90)),
            "questions_with_referenced": sum(r["referenced_documents"] > 0 for r in reaches),
        }
    return table


def moved(by_set: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, dict[str, list[Any]]]]:
    """The questions whose gold is reached by some reaches and not others: per reach, what it reaches."""
    found: dict[str, dict[str, dict[str, list[Any]]]] = {}
    for name, measured in by_set.items():
        for question in measured:
            reached = {
                key: [reach["gold_section"], reach["every_phrase"], reach["gold_document"]]
                for key, reach in question["reaches"].items()
            }
            if len({tuple(v) for v in reached.values()}) > 1:
                found.setdefault(name, {})[question["id"]] = reached
    return found


def choose(table: dict[str, dict[str, Any]]) -> str:
    """The rule of the module docstring: the smallest reach within one question of the best "every phrase"."""
    best = max(row["every_phrase"] for row in table.values())
    near = [key for key, row in table.items() if row["every_phrase"] >= best - 1]
    return min(near, key=lambda key: (table[key]["candidates_p90"], table[key]["candidates_median"], key))


def keep_unless_better(table: dict[str, dict[str, Any]], shipped: str) -> str:
    """The --limits rule of the module docstring."""
    best = max(table, key=lambda key: (table[key]["every_phrase"], key == shipped))
    return best if table[best]["every_phrase"] > table[shipped]["every_phrase"] + 1 else shipped


def main() -> int:
    args, searcher_for = corpus_command(
        __doc__, SETS, RESULTS, lambda parser: parser.add_argument("--limits", action="store_true")
    )
    grid = LIMITS if args.limits else REACHES
    by_set: dict[str, list[dict[str, Any]]] = {}
    for name in args.sets.split(","):
        for item in load_set(name):
            if not item["answerable"]:
                continue  # no gold to reach
            by_set.setdefault(name, []).append(measure_question(searcher_for(item), item, grid))
        print(f"{name}: {len(by_set.get(name, []))} answerable questions measured", file=sys.stderr)
    tables = {name: summarize(measured) for name, measured in by_set.items()}
    if args.limits:
        shipped = f"{MAX_NAMES}/{SHARED_NAME_DOCUMENTS}"
        chosen = keep_unless_better(tables[FITTING_SET], shipped) if FITTING_SET in tables else None
        print(f"names read / documents a name may hold; shipped {shipped}; rule's choice on {FITTING_SET}: {chosen}")
    else:
        shipped = f"{POINTING_HITS}/{REFERENCED_DOCUMENTS}"
        chosen = choose(tables[FITTING_SET]) if FITTING_SET in tables else None
        print(f"pointing hits / referenced documents; shipped {shipped}; rule's choice on {FITTING_SET}: {chosen}")
    for name, table in tables.items():
        print(f"\n{name}")
        print(
            f"{'reach':>6} {'gold section':>14} {'every phrase':>14} {'gold doc':>9} {'cands med/p90':>14} "
            f"{'with pointer':>13}"
        )
        for key, row in table.items():
            mark = " shipped" if key == shipped else ""
            print(
                f"{key:>6} {row['gold_section']:>6}/{row['with_gold_section']:<7} {row['every_phrase']:>6}/"
                f"{row['with_phrases']:<7} {row['gold_document']:>9} "
                f"{row['candidates_median']:>6.0f}/{row['candidates_p90']:<7.0f} "
                f"{row['questions_with_referenced']:>13}{mark}"
            )
    save_report({"shipped": shipped, "chosen": chosen, "tables": tables, "moved": moved(by_set)}, args.json)
    print(f"\n→ {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
