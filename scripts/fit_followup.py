"""Fit the follow-up decision (does this question need the conversation?) and measure it on two sets.

1. Index docs_corpus/ and ../shared/data/runbooks into --home (reused when unchanged); each conversation is
   read against the index of its own corpus.
2. For every conversation of scripts/qa/followups_train.jsonl (seeded section pairs, a standalone and an
   elliptical last question each) and scripts/qa/followups_walks.jsonl (conversations written from heading
   outlines only; never fitted on), collect the signals of appliance/answer/followup_model.py and the
   documents each reading lands on.
3. Fit a logistic regression (L2, Newton's method) elliptical ~ signals on the training set, leave one
   corpus group out (docs_corpus, openshift, gitlab, incident-response + prometheus-operator) for the
   reported figures, then on all of it for the shipped coefficients. The threshold is 0.5: reading a
   standalone question with the conversation and reading an elliptical one alone cost the same (each shows
   the operator the wrong section), so the decision follows whichever is more likely. The signals are
   standardised before the fit (the penalty weighs each alike; the shipped weights are in raw units) and
   the penalty is the one of L2_GRID with the fewest leave-one-corpus-out errors.
   Four signals are capped counts (followup_model.Scales: where subject mass, content words, identifiers and
   the share of pointing words reach 1). Every combination of SCALE_FACTORS times the shipped scales is tried
   (the readings are taken once; only the signals are recomputed), each at its own best penalty; the scales the
   shipped model file holds stay unless another's leave-one-corpus-out decisions are right more often by more
   than one paired standard error (per conversation), and among those the fewest errors win, then the fewest
   scales changed. --reach measures how far a reading looks (READ_HITS, COVER_HITS) the same way. The shipped
   model is also measured as it is on today's readings, beside the refit.
4. Do 3 again with each signal left out in turn (what each one is worth). The candidates tried and dropped
   (a third search for the earlier question's own documents, the embedder cosine between the two questions,
   two more rarity signals: no gain leave-one-corpus-out) are in scripts/results/fit_followup_candidates.txt.
5. Report, per set and side by side with the methods it replaces (none: never read with the conversation;
   concat: always; evidence: the former rule, the joined text unless the question alone has at least as
   much evidence): standalone questions rewritten, elliptical ones read with the conversation, and the
   gold document first / in the first three documents of the search that is run.

Writes appliance/answer/fitted/followup.json (coefficients, scales, threshold, embedder, training set hash) and
scripts/results/fit_followup.json (every figure). Usage: python scripts/fit_followup.py [--home DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.followup import Turn, earlier_questions, rule_rewrite
from appliance.answer.followup_model import (
    COVER_HITS,
    DEFAULT_SCALES,
    FITTED,
    READ_HITS,
    FollowupModel,
    Measures,
    Reading,
    Scales,
    SearchReader,
    measures,
    scaled,
)
from appliance.config import Settings, load_settings
from appliance.ingest.pipeline import ingest
from appliance.retrieve.search import Searcher
from scripts.calibrate_evidence import fit_logistic
from scripts.qa.procedure_outlines import SEPARATOR

REPO = Path(__file__).resolve().parent.parent
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
QA = REPO / "scripts" / "qa"
TRAIN = QA / "followups_train.jsonl"
WALKS = QA / "followups_walks.jsonl"
OUTSIDE_SEED = 43
RESULTS = REPO / "scripts" / "results" / "fit_followup.json"
FOLDS = ("docs_corpus", "openshift", "gitlab", "ir-prometheus")
THRESHOLD = 0.5
# The penalty is chosen among these by the leave-one-corpus-out errors on the training set.
L2_GRID = (1.0, 3.0, 10.0)
# The scales tried: half, as shipped, and twice each of the shipped file's four (followup_model.Scales).
SCALE_FACTORS = (0.5, 1.0, 2.0)


@dataclass
class Case:
    """One conversation: its last question, label, gold document, and what the readings found."""

    id: str
    fold: str
    question: str
    history: list[str]
    elliptical: bool
    gold: str
    joined: str
    values: dict[str, float]
    alone_documents: tuple[str, ...]
    joined_documents: tuple[str, ...]
    evidence_joined: bool  # the former rule's choice
    gold_section: str = ""  # the training set's gold heading path ('' for the walks: documents only)
    alone_sections: tuple[str, ...] = ()  # "path › heading path" of the best hits
    joined_sections: tuple[str, ...] = ()
    alone_declined: bool = False  # the evidence decision refuses the question alone
    joined_declined: bool = False  # ... and read with the conversation
    measured: Measures | None = None  # the raw quantities `values` were scaled from


class CachedReader:
    """A SearchReader that remembers each text's reading (the same text is read in several cases) and the
    sections its hits are in."""

    def __init__(self, searcher: Searcher, read_hits: int = READ_HITS, cover_hits: int = COVER_HITS) -> None:
        self.searcher = searcher
        self.inner = SearchReader(searcher, read_hits, cover_hits)
        self.readings: dict[str, Reading] = {}
        self.sections: dict[str, tuple[str, ...]] = {}

    def read(self, text: str) -> Reading:
        if text not in self.readings:
            self.readings[text] = self.inner.read(text)
            hits = self.searcher.search(text, k=3).hits
            self.sections[text] = tuple(f"{hit.path}{SEPARATOR}{hit.section}" for hit in hits)
        return self.readings[text]

    def rarity(self, word: str) -> float | None:
        return self.inner.rarity(word)


def _group_corpus(entry: dict[str, Any]) -> str:
    return "docs_corpus/" if entry.get("group") == "docs_corpus" else "runbooks"


def corpus_of(gold: str) -> str:
    return "demo" if gold.startswith("docs_corpus/") else "runbooks"


def fold_of(gold: str) -> str:
    if gold.startswith("docs_corpus/"):
        return "docs_corpus"
    if gold.startswith("openshift-runbooks/"):
        return "openshift"
    if gold.startswith("gitlab-com-runbooks/"):
        return "gitlab"
    return "ir-prometheus"


def settings_for(corpus: str, home: Path, models_dir: Path) -> Settings:
    environ = {**os.environ, "APPLIANCE_HOME": str(home / corpus), "APPLIANCE_MODELS_DIR": str(models_dir)}
    environ.pop("APPLIANCE_CONFIG", None)
    return load_settings(environ)


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def outside_set(walks: list[dict[str, Any]], seed: int = OUTSIDE_SEED) -> list[dict[str, Any]]:
    """A third set, by a third method: the unanswerable questions other writers wrote for the demo SOPs and the
    runbooks (demo_corpus.jsonl, runbooks_sampled.jsonl: names the documents never mention, details they do
    not give), each asked after the first question of a seeded walk over the same corpus. Each stands alone."""
    rng = random.Random(seed)
    firsts: dict[str, list[tuple[str, str]]] = {"demo": [], "runbooks": []}
    for entry in walks:
        if len(entry["history"]) == 1:
            firsts[corpus_of(entry["previous_gold_file"])].append((entry["history"][0], entry["previous_gold_file"]))
    rows: list[dict[str, Any]] = []
    for corpus, path in (("demo", QA / "demo_corpus.jsonl"), ("runbooks", QA / "runbooks_sampled.jsonl")):
        for item in load(path):
            if item["answerable"]:
                continue
            first, gold = rng.choice(firsts[corpus])
            rows.append({"id": f"fuo-{len(rows) + 1:03d}", "history": [first], "question": item["question"],
                         "label": "standalone", "gold_file": "", "previous_gold_file": gold})  # fmt: skip
    return rows


def collect(
    entries: list[dict[str, Any]],
    readers: dict[str, CachedReader],
    known: dict[str, Callable[[str], bool]],
    scales: Scales = DEFAULT_SCALES,
) -> list[Case]:
    cases = []
    for entry in entries:
        corpus = corpus_of(entry["gold_file"] or entry.get("previous_gold_file", "") or _group_corpus(entry))
        reader = readers[corpus]
        history = [Turn("user", text) for text in entry["history"]]
        joined = rule_rewrite(entry["question"], history, 1, known[corpus])
        previous = earlier_questions(history, 1, known[corpus])[-1]
        measured = measures(entry["question"], previous, joined, reader)
        alone, together = reader.read(entry["question"]), reader.read(joined)
        fold = entry.get("group") or fold_of(entry["gold_file"] or entry["previous_gold_file"])
        evidence_joined = not (
            alone.sufficient and (not together.sufficient or alone.probability >= together.probability)
        )
        cases.append(
            Case(
                entry["id"],
                fold,
                entry["question"],
                entry["history"],
                entry["label"] == "elliptical",
                entry["gold_file"],
                joined,
                scaled(measured, scales),
                alone.documents,
                together.documents,
                evidence_joined,
                entry.get("gold_section", ""),
                reader.sections[entry["question"]],
                reader.sections[joined],
                not alone.sufficient,
                not together.sufficient,
                measured,
            )
        )
    return cases


def rescaled(cases: Sequence[Case], scales: Scales) -> list[Case]:
    """The same cases with their signals recomputed at other scales (the readings are not taken again)."""
    return [replace(case, values=scaled(case.measured, scales)) for case in cases if case.measured is not None]


def scale_grid(shipped: Scales) -> list[Scales]:
    """The shipped scales first, then every combination of half, as shipped and twice each."""
    grid = [
        Scales(shipped.subject_mass * a, shipped.content_words * b, shipped.identifiers * c, shipped.pointing * d)
        for a in SCALE_FACTORS
        for b in SCALE_FACTORS
        for c in SCALE_FACTORS
        for d in SCALE_FACTORS
    ]
    return [shipped, *(scales for scales in grid if scales != shipped)]


def best_penalty(cases: Sequence[Case], features: Sequence[str]) -> tuple[float, dict[float, int], list[bool]]:
    """The penalty of L2_GRID with the fewest leave-one-corpus-out errors (ties to the weaker, as before), the
    errors of each, and whether each case was decided right at it."""
    decided = {l2: loco(cases, features, l2) for l2 in L2_GRID}
    errors = {l2: sum(j != c.elliptical for c, j in zip(cases, decided[l2], strict=True)) for l2 in L2_GRID}
    l2 = min(L2_GRID, key=lambda value: (errors[value], value))
    return l2, errors, [j == c.elliptical for c, j in zip(cases, decided[l2], strict=True)]


def changed(scales: Scales, shipped: Scales) -> int:
    """How many of the four scales differ from the shipped ones."""
    return sum(a != b for a, b in zip(asdict(scales).values(), asdict(shipped).values(), strict=True))


def choose_scales(train: Sequence[Case], shipped: Scales) -> tuple[Scales, list[dict[str, Any]]]:
    """The shipped scales unless others decide the training conversations right more often out of fold by more
    than one paired standard error; among those, the fewest errors, then the fewest scales changed (a scale
    whose value moves no decision stays as shipped), then the grid's order."""
    features = tuple(train[0].values)
    rows: list[dict[str, Any]] = []
    right: dict[Scales, np.ndarray] = {}
    for scales in scale_grid(shipped):
        l2, errors, correct = best_penalty(rescaled(train, scales), features)
        right[scales] = np.array(correct, dtype=float)
        rows.append({"scales": asdict(scales), "l2": l2, "loco_errors": errors[l2]})
    better: list[tuple[int, int, int, Scales]] = []
    for row, scales in zip(rows, right, strict=True):
        difference = right[scales] - right[shipped]
        error = float(np.std(difference, ddof=1) / np.sqrt(len(difference)))
        row["paired_standard_error"] = round(error, 4)
        row["clearly_better"] = bool(difference.mean() > error)
        if row["clearly_better"]:
            better.append((row["loco_errors"], changed(scales, shipped), len(better), scales))
    return (min(better)[3] if better else shipped), rows


def matrix(cases: Sequence[Case], features: Sequence[str]) -> np.ndarray:
    return np.array([[case.values[f] for f in features] for case in cases], dtype=float)


def labels(cases: Sequence[Case]) -> np.ndarray:
    return np.array([1.0 if case.elliptical else 0.0 for case in cases])


def fit(cases: Sequence[Case], features: Sequence[str], l2: float) -> FollowupModel:
    """Logistic regression on standardised signals (so the penalty weighs each alike), returned in raw units."""
    x = matrix(cases, features)
    mean, spread = x.mean(axis=0), x.std(axis=0)
    spread[spread == 0] = 1.0
    w = fit_logistic((x - mean) / spread, labels(cases), l2=l2)
    weights = w[1:] / spread
    return FollowupModel(tuple(features), tuple(float(x) for x in weights), float(w[0] - mean @ weights), THRESHOLD)


def choices(model: FollowupModel, cases: Sequence[Case]) -> list[bool]:
    return [model.needs_conversation(case.values) for case in cases]


def loco(cases: Sequence[Case], features: Sequence[str], l2: float) -> list[bool]:
    """Each case decided by the model fitted on the other corpus groups."""
    decided: dict[str, bool] = {}
    for fold in FOLDS:
        held = [c for c in cases if c.fold == fold]
        model = fit([c for c in cases if c.fold != fold], features, l2)
        decided.update(zip((c.id for c in held), choices(model, held), strict=True))
    return [decided[c.id] for c in cases]


def report(cases: Sequence[Case], joined: Sequence[bool]) -> dict[str, Any]:
    """Standalone questions read with the conversation, elliptical ones read with it, the gold document's rank."""
    standalone = [j for c, j in zip(cases, joined, strict=True) if not c.elliptical]
    elliptical = [j for c, j in zip(cases, joined, strict=True) if c.elliptical]
    first = top3 = section = 0
    answerable = [(c, j) for c, j in zip(cases, joined, strict=True) if c.gold]
    outside = [(c, j) for c, j in zip(cases, joined, strict=True) if not c.gold]
    declined = sum(c.joined_declined if j else c.alone_declined for c, j in outside)
    for case, j in answerable:
        documents = case.joined_documents if j else case.alone_documents
        first += bool(documents) and documents[0] == case.gold
        top3 += case.gold in documents[:3]
        wanted = f"{case.gold}{SEPARATOR}{case.gold_section}"
        section += bool(case.gold_section) and any(
            s.startswith(wanted) or wanted.startswith(s) for s in (case.joined_sections if j else case.alone_sections)
        )
    sectioned = [c for c in cases if c.gold_section]
    return {
        "standalone_rewritten": f"{sum(standalone)}/{len(standalone)}",
        "standalone_rewritten_share": round(sum(standalone) / len(standalone), 4) if standalone else None,
        "elliptical_with_conversation": f"{sum(elliptical)}/{len(elliptical)}",
        "elliptical_with_conversation_share": round(sum(elliptical) / len(elliptical), 4) if elliptical else None,
        "accuracy": round(sum(j == c.elliptical for c, j in zip(cases, joined, strict=True)) / len(cases), 4),
        "gold_document_first": round(first / len(answerable), 4) if answerable else None,
        "gold_document_top3": round(top3 / len(answerable), 4) if answerable else None,
        "unanswerable_declined": f"{declined}/{len(outside)}",
        "gold_section_in_top3_hits": round(section / len(sectioned), 4) if sectioned else None,
    }


def methods(cases: Sequence[Case], fitted: Sequence[bool]) -> dict[str, Any]:
    return {
        "none": report(cases, [False] * len(cases)),
        "concat": report(cases, [True] * len(cases)),
        "evidence (before)": report(cases, [c.evidence_joined for c in cases]),
        "fitted (after)": report(cases, fitted),
    }


def print_table(title: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}")
    print(f"  {'method':26s} {'standalone rewritten':>22s} {'elliptical w/ conv.':>20s} {'accuracy':>9s} "
          f"{'gold doc 1st':>13s} {'gold doc top3':>14s} {'section top3':>13s} {'outside declined':>17s}")  # fmt: skip
    for name, r in rows.items():
        print(f"  {name:26s} {r['standalone_rewritten']:>22s} {r['elliptical_with_conversation']:>20s} "
              f"{r['accuracy']:9.3f} {_cell(r['gold_document_first']):>13s} {_cell(r['gold_document_top3']):>14s} "
              f"{_cell(r['gold_section_in_top3_hits']):>13s} {r['unanswerable_declined']:>17s}")  # fmt: skip


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def measure_reach(
    pairs: Sequence[tuple[int, int]],
    readers: dict[str, CachedReader],
    known: dict[str, Callable[[str], bool]],
    scales: Scales,
    train: Sequence[Case],
) -> dict[str, Any]:
    """How many hits a reading looks at (READ_HITS) and whose text it reads (COVER_HITS), measured: each pair's
    readings taken afresh, the model refitted at `scales` and its best penalty, compared conversation by
    conversation with the shipped pair's (`train`) out of fold. A measurement: the shipped pair is the code's."""
    features = tuple(train[0].values)
    l2, errors, right = best_penalty(train, features)
    rows = []
    for read_hits, cover_hits in pairs:
        other = {corpus: CachedReader(r.searcher, read_hits, cover_hits) for corpus, r in readers.items()}
        cases = collect(load(TRAIN), other, known, scales)
        walks = collect(load(WALKS), other, known, scales)
        other_l2, other_errors, other_right = best_penalty(cases, features)
        difference = np.array(other_right, dtype=float) - np.array(right, dtype=float)
        error = float(np.std(difference, ddof=1) / np.sqrt(len(difference)))
        rows.append(
            {
                "read_hits": read_hits,
                "cover_hits": cover_hits,
                "l2": other_l2,
                "loco_errors": other_errors[other_l2],
                "paired_standard_error": round(error, 4),
                "clearly_better": bool(difference.mean() > error),
                "walks": report(walks, choices(fit(cases, features, other_l2), walks)),
            }
        )
        print(f"reach {read_hits} hits, {cover_hits} read: {rows[-1]['loco_errors']} errors", file=sys.stderr)
    return {"shipped": {"read_hits": READ_HITS, "cover_hits": COVER_HITS, "l2": l2, "loco_errors": errors[l2]},
            "others": rows}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "followup")
    parser.add_argument(
        "--models-dir", type=Path, default=Path(os.environ.get("APPLIANCE_MODELS_DIR", REPO / "models"))
    )
    parser.add_argument("--out", type=Path, default=FITTED, help=f"The fitted model [{FITTED}]")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"Every figure [{RESULTS}]")
    parser.add_argument(
        "--reach",
        default="",
        help="Also measure other READ_HITS:COVER_HITS pairs, e.g. 5:3,20:3,10:1,10:5 (a measurement; the model is "
        "fitted at the shipped pair)",
    )
    args = parser.parse_args()

    readers: dict[str, CachedReader] = {}
    known: dict[str, Callable[[str], bool]] = {}
    embedder = ""
    for corpus, roots in (
        ("demo", [REPO / "docs_corpus"]),
        ("runbooks", sorted(p for p in RUNBOOKS.iterdir() if p.is_dir())),
    ):
        settings = settings_for(corpus, args.home, args.models_dir)
        done = ingest(settings, roots)
        print(f"{corpus}: {done.chunks_total} chunks", file=sys.stderr)
        searcher = Searcher(settings)
        readers[corpus] = CachedReader(searcher)
        known[corpus] = searcher.catalog.knows_word
        embedder = settings.embedder.model
    shipped = FollowupModel.read(args.out) if args.out.exists() else None
    shipped_scales = shipped.scales if shipped is not None else DEFAULT_SCALES
    train = collect(load(TRAIN), readers, known, shipped_scales)
    walks = collect(load(WALKS), readers, known, shipped_scales)
    outside = collect(outside_set(load(WALKS)), readers, known, shipped_scales)
    print(f"signals: {len(train)} training conversations, {len(walks)} walk turns, {len(outside)} outside",
          file=sys.stderr)  # fmt: skip
    # The model as shipped, on today's readings (its weights were fitted on the readings of its day).
    as_shipped = (
        {
            "train_in_sample": methods(train, choices(shipped, train))["fitted (after)"],
            "walks": methods(walks, choices(shipped, walks))["fitted (after)"],
            "outside": methods(outside, choices(shipped, outside))["fitted (after)"],
        }
        if shipped is not None
        else None
    )

    pairs = [(int(a), int(b)) for a, b in (pair.split(":") for pair in args.reach.split(",") if pair)]
    reach = measure_reach(pairs, readers, known, shipped_scales, train) if pairs else None

    scales, scale_rows = choose_scales(train, shipped_scales)
    print(f"scales: {scales} (shipped {shipped_scales})", file=sys.stderr)
    train, walks, outside = rescaled(train, scales), rescaled(walks, scales), rescaled(outside, scales)
    features = tuple(train[0].values)
    l2, errors, _ = best_penalty(train, features)
    print(f"L2 penalty: {l2} (leave-one-corpus-out errors {errors})", file=sys.stderr)
    model = replace(fit(train, features, l2), scales=scales)
    results: dict[str, Any] = {
        "training_set": {"path": str(TRAIN.relative_to(REPO)), "sha256": sha256(TRAIN), "conversations": len(train)},
        "walks_set": {"path": str(WALKS.relative_to(REPO)), "sha256": sha256(WALKS), "turns": len(walks)},
        "outside_set": {"method": outside_set.__doc__, "seed": OUTSIDE_SEED, "conversations": len(outside)},
        "embedder": embedder,
        "threshold": THRESHOLD,
        "l2": {"chosen": l2, "loco_errors_by_l2": {str(k): v for k, v in errors.items()}},
        "scales": {"chosen": asdict(scales), "shipped": asdict(shipped_scales), "grid": scale_rows},
        "shipped_model_on_todays_readings": as_shipped,
        "reach": reach,
        "train_leave_one_corpus_out": methods(train, loco(train, features, l2)),
        "walks_fitted_on_all_train": methods(walks, choices(model, walks)),
        "outside_fitted_on_all_train": methods(outside, choices(model, outside)),
        "ablation_leave_one_corpus_out": {},
    }
    print_table("training set, leave one corpus group out", results["train_leave_one_corpus_out"])
    print_table("walks (outline-written conversations), model fitted on all of the training set",
                results["walks_fitted_on_all_train"])  # fmt: skip
    print_table("outside (other writers' unanswerable questions after a walk's first question)",
                results["outside_fitted_on_all_train"])  # fmt: skip
    for left_out in features:
        kept = tuple(f for f in features if f != left_out)
        results["ablation_leave_one_corpus_out"][left_out] = {
            "train": report(train, loco(train, kept, l2)),
            "walks": report(walks, choices(fit(train, kept, l2), walks)),
            "outside": report(outside, choices(fit(train, kept, l2), outside)),
        }
    print_table("without one signal (training set, LOCO)",
                {f"-{k}": v["train"] for k, v in results["ablation_leave_one_corpus_out"].items()})  # fmt: skip
    print_table("without one signal (walks)",
                {f"-{k}": v["walks"] for k, v in results["ablation_leave_one_corpus_out"].items()})  # fmt: skip
    results["misses"] = {
        "train_loco": [c.id for c, j in zip(train, loco(train, features, l2), strict=True) if j != c.elliptical],
        "walks": [c.id for c, j in zip(walks, choices(model, walks), strict=True) if j != c.elliptical],
        "outside": [c.id for c, j in zip(outside, choices(model, outside), strict=True) if j != c.elliptical],
    }
    fitted = {
        "method": f"logistic regression on standardised signals, L2 {l2}, Newton's method (scripts/fit_followup.py)",
        "training_set": results["training_set"],
        # The evidence probabilities of the signals were those of this embedder's evidence model.
        "embedder": embedder,
        "model": {
            "weights": dict(zip(model.features, model.weights, strict=True)),
            "intercept": model.intercept,
            "threshold": THRESHOLD,
            "scales": asdict(scales),
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fitted, indent=1) + "\n", encoding="utf-8")
    args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print("\ncoefficients:", json.dumps(fitted["model"]["weights"], indent=None), f"intercept {model.intercept:.3f}")
    print(f"written: {args.out}, {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
