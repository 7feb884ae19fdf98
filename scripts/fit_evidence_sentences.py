"""Fit how answer/evidence_sentences.py marks the sentences of a passage that best answer a question: how much
a question's identifiers and numbers count against its words, and what share of the score the embedder's cosine
between question and sentence takes.

Every passage the operator is shown beside an answer (the sources panel, a refusal's closest passages) has its
`answer.evidence_sentences` (2) best sentences marked; a mark should fall on the sentence that holds the answer.
Measured per (question, passage): for the fact, why and value questions of a set, the passages among the best
`PASSAGES` hits of the appliance's own search that hold a gold phrase inside one sentence; a passage is "marked"
when one of its 2 marked sentences holds a gold phrase (bench_sop's `flat` match).

A sentence scores (1 - blend) × the share of the question's distinct terms it holds (a word counting 1, an
identifier IDENTIFIER_WEIGHT, a number NUMBER_WEIGHT) + blend × its cosine with the question. Before this script
the appliance marked with the words alone (blend 0, weights 2.0 and 1.5 set by hand). Rule (written before any
run of the blend; the weights alone were run first and moved nothing): on the training set
(scripts/qa/choice_train.jsonl's fact, why and value questions), the triple with the most passages marked,
preferring the current one's values on ties; the current triple stays unless the best marks more than 1% of
the passages more. The same rule is applied leaving each corpus group out (fit on the others, counted on the one
left out). The measured sets are reported beside it, never used to choose.

Usage: python scripts/fit_evidence_sentences.py [--sets train,heldout,...] [--json FILE]
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.evidence_sentences import (
    EMBED_BLEND,
    IDENTIFIER_WEIGHT,
    NUMBER_WEIGHT,
    term_matches,
    weighted_share,
)
from appliance.retrieve.search import Searcher
from appliance.text.sentences import split_sentences
from scripts.bench_sop import REPO, flat
from scripts.choice_features import corpus_command, load_set
from scripts.lib.report import save_report

Triple = tuple[float, float, float]  # identifier weight, number weight, blend

SETS = ("train", "heldout", "sampled", "sampled_59", "tune", "demo")
FITTING_SET = "train"
KINDS = ("fact", "why", "value")  # the training set's kinds with answer phrases (procedures quote whole sections)
PASSAGES = 5
MARKED = 2  # answer.evidence_sentences' default
IDENTIFIER_WEIGHTS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
NUMBER_WEIGHTS = (0.5, 1.0, 1.5, 2.0, 3.0)
BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)
BEFORE: Triple = (2.0, 1.5, 0.0)  # how the appliance marked before this script (hand weights, words alone)
SHIPPED: Triple = (IDENTIFIER_WEIGHT, NUMBER_WEIGHT, EMBED_BLEND)  # evidence_sentences.py's, for a rerun to compare
MARGIN = 0.01  # of the passages: what the best triple must gain over the current one to replace it
RESULTS = REPO / "scripts" / "results" / "fit_evidence_sentences.json"


def passages_of(searcher: Searcher, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The best hits' passages that hold a gold phrase inside one sentence: each sentence's counts and label."""
    found = searcher.search(item["question"])
    rows = searcher.catalog.chunks_by_ids([hit.chunk_id for hit in found.hits[:PASSAGES]])
    phrases = [flat(phrase) for phrase in item["phrases"]]
    measured = []
    for hit in found.hits[:PASSAGES]:
        row = rows.get(hit.chunk_id)
        if row is None:
            continue
        sentences = [row.text[s.start : s.end] for s in split_sentences(row.text) if s.kind != "heading"]
        gold = [any(phrase in flat(sentence) for phrase in phrases) for sentence in sentences]
        if not any(gold):
            continue
        asked, matched = term_matches(item["question"], sentences)
        vectors = searcher.embedder.embed([item["question"], *sentences])
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        cosines = [max(float(c), 0.0) for c in vectors[1:] @ vectors[0]]
        measured.append({"asked": asked, "matched": matched, "gold": gold, "cosines": cosines})
    return measured


def marked(passage: dict[str, Any], triple: Triple) -> bool:
    """Whether best_sentences, scoring with this triple, marks a sentence that holds a gold phrase."""
    identifier_weight, number_weight, blend = triple
    scores = [weighted_share(m, passage["asked"], identifier_weight, number_weight) for m in passage["matched"]]
    if blend:
        scores = [(1 - blend) * score + blend * cos for score, cos in zip(scores, passage["cosines"], strict=True)]
    ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:MARKED]
    return any(passage["gold"][i] and scores[i] > 0 for i in ranked)


def counts(passages: Sequence[dict[str, Any]], triples: Sequence[Triple]) -> dict[Triple, int]:
    return {triple: sum(marked(p, triple) for p in passages) for triple in triples}


def choose(passages: Sequence[dict[str, Any]], triples: Sequence[Triple]) -> Triple:
    """The rule of the module docstring."""
    table = counts(passages, triples)

    def kept(triple: Triple) -> int:
        return sum(a == b for a, b in zip(triple, BEFORE, strict=True))

    best = max(triples, key=lambda triple: (table[triple], kept(triple)))
    return best if table[best] - table[BEFORE] > MARGIN * len(passages) else BEFORE


def main() -> int:
    args, searcher_for = corpus_command(__doc__, SETS, RESULTS)
    by_set: dict[str, list[dict[str, Any]]] = {}
    for name in args.sets.split(","):
        for item in load_set(name):
            if not item["answerable"] or not item["phrases"] or (name == FITTING_SET and item["kind"] not in KINDS):
                continue
            for passage in passages_of(searcher_for(item), item):
                by_set.setdefault(name, []).append({**passage, "group": item["group"], "id": item["id"]})
        print(f"{name}: {len(by_set.get(name, []))} passages", file=sys.stderr)

    triples: list[Triple] = list(itertools.product(IDENTIFIER_WEIGHTS, NUMBER_WEIGHTS, BLENDS))
    tables = {name: counts(passages, triples) for name, passages in by_set.items()}
    training = by_set.get(FITTING_SET, [])
    chosen = choose(training, triples) if training else BEFORE
    left_out: dict[str, dict[str, Any]] = {}
    for group in sorted({p["group"] for p in training}):
        outside = [p for p in training if p["group"] == group]
        triple = choose([p for p in training if p["group"] != group], triples)
        left_out[group] = {
            "chosen": triple,
            "passages": len(outside),
            "marked_chosen": sum(marked(p, triple) for p in outside),
            "marked_before": sum(marked(p, BEFORE) for p in outside),
        }
    words_alone = [t for t in triples if t[2] == 0.0]
    at_weights = [t for t in triples if t[:2] == chosen[:2]]

    print(
        f"identifier weight, number weight, blend; before {BEFORE}; shipped {SHIPPED}; "
        f"rule's choice on {FITTING_SET}: {chosen}"
    )
    print(f"{'set':>11} {'passages':>9} {'before':>7} {'chosen':>7} {'best, words alone':>18} {'best, any':>10}")
    for name, table in tables.items():
        print(
            f"{name:>11} {len(by_set[name]):>9} {table[BEFORE]:>7} {table[chosen]:>7} "
            f"{max(table[t] for t in words_alone):>18} {max(table.values()):>10}"
        )
    print(f"\nat the chosen weights {chosen[:2]}, by blend: marked per set")
    for name, table in tables.items():
        print(f"{name:>11}: " + ", ".join(f"{t[2]} → {table[t]}" for t in at_weights))
    print("\nleave one corpus group out (the rule fitted on the other groups)")
    for group, row in left_out.items():
        print(
            f"{group:>20}: chosen {row['chosen']}, marked {row['marked_chosen']} of {row['passages']} "
            f"(before {row['marked_before']})"
        )
    report = {
        "before": BEFORE,
        "shipped": SHIPPED,
        "chosen": chosen,
        "passages": {name: len(passages) for name, passages in by_set.items()},
        "marked": {name: {"/".join(map(str, t)): n for t, n in table.items()} for name, table in tables.items()},
        "leave_one_group_out": left_out,
    }
    save_report(report, args.json)
    print(f"\n→ {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
