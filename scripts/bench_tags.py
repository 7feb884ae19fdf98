"""Where does hybrid search rank a tag that few chunks hold? Issue 40: an uploaded SOP's GC-8841, in one
chunk only, was the first lexical hit and the 10th hybrid hit.

Every identifier of an index that reads as a tag (letters first, a hyphen, a digit: AIT-4410,
ALM-CL2-LEAK-01, ocs-worker-1) and that one or two chunks hold is searched alone, as the chunk writes
it. The lexical top-100 (FTS5 bm25, words + identifiers) and the dense top-100 (exact cosine over the
index's stored vectors) are taken once per tag, and each fusion rule of scripts/fusion_candidates.py
ranks the chunks. Reported per rule: the share of tags whose holding chunks are the first hits, and
the median and worst rank of the last holding chunk; over all tags, over those whose lexical list is
shorter than the dense list (the lists the short-list normalization reads differently), over those the
lexical search finds in their holding chunks only (the issue's case: no other chunk shares a word of
the tag), and over those held by a table row. Nothing here is tuned on: the tags are every qualifying
identifier (a seeded sample where there are more than --per-group).

Usage: python scripts/bench_tags.py [--collections demo,runbooks] [--per-group 300] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import appliance  # noqa: F401  (offline environment first)
from appliance.ingest.pipeline import ingest
from appliance.models.registry import load_embedder
from appliance.retrieve.lexical import lexical_search

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fusion import DEPTH, Corpus, open_corpus, settings_at
from fusion_candidates import METHODS, REFERENCE_LENGTH
from retrieval_views import REPO, SHARED

TAG = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")
RULES: tuple[str, ...] = ("lexical", "dense", "zscore_0.5 unpadded (before)", "zscore_0.5 (today)")
RULES += (f"zscore_0.5 padded to {REFERENCE_LENGTH} (not adopted)",)
RULES += ("weighted_0.5", "weighted_0.5 padded (not adopted)", "rrf_60")


@dataclass(frozen=True)
class Tag:
    text: str  # as the chunk writes it
    holders: frozenset[int]  # the corpus positions of the chunks that hold it
    in_table: bool  # a holder has it on a table row


def rare_tags(corpus: Corpus, per_group: int, seed: int) -> dict[int, list[Tag]]:
    """The tags one or two chunks hold, at most `per_group` of each (a seeded sample)."""
    holders: dict[str, set[int]] = defaultdict(set)
    for rowid, identifiers in corpus.catalog.conn.execute("SELECT rowid, identifiers FROM chunks"):
        for identifier in set(identifiers.split()):
            if TAG.fullmatch(identifier) and any(ch.isdigit() for ch in identifier):
                holders[identifier].add(corpus.rowid_to_index[rowid])
    groups: dict[int, list[Tag]] = {}
    for count in (1, 2):
        names = sorted(name for name, held in holders.items() if len(held) == count)
        names = sorted(random.Random(seed).sample(names, min(per_group, len(names))))
        groups[count] = [tag for name in names if (tag := _tag(corpus, name, holders[name])) is not None]
    return groups


def _tag(corpus: Corpus, name: str, held: set[int]) -> Tag | None:
    pattern = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE)
    texts = [corpus.texts[i] for i in sorted(held)]
    written = next((m.group(0) for text in texts if (m := pattern.search(text))), None)
    if written is None:  # the identifier was read from a form the text does not show (e.g. a joined line)
        return None
    in_table = any(
        pattern.search(line) for text in texts for line in text.splitlines() if line.lstrip().startswith("|")
    )
    return Tag(written, frozenset(held), in_table)


def ranks(corpus: Corpus, tags: list[Tag], embedder: Any) -> list[dict[str, Any]]:
    """Per tag: its lexical list length and, per rule, the rank of its last holding chunk."""
    search = corpus.settings.search
    out = []
    for tag in tags:
        hits = lexical_search(
            corpus.catalog.conn,
            tag.text,
            DEPTH,
            header_weight=search.header_weight,
            identifier_weight=search.identifier_weight,
        )
        lexical = [(corpus.rowid_to_index[h.rowid], h.score) for h in hits if h.rowid in corpus.rowid_to_index]
        similarities = corpus.stored @ embedder.embed_query(tag.text)
        dense = [(int(i), float(similarities[i])) for i in np.argsort(-similarities)[:DEPTH]]
        row: dict[str, Any] = {"tag": tag.text, "holders": len(tag.holders), "in_table": tag.in_table}
        row["lexical_hits"], row["short_lexical_list"] = len(lexical), len(lexical) < len(dense)
        for rule in RULES:
            order = {key: rank for rank, (key, _) in enumerate(METHODS[rule](lexical, dense), start=1)}
            row[rule] = max(order.get(h, DEPTH * 2 + 1) for h in tag.holders)
        out.append(row)
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"tags": 0}
    out: dict[str, Any] = {"tags": len(rows)}
    for rule in RULES:
        last = [row[rule] for row in rows]
        first = sum(rank == row["holders"] for rank, row in zip(last, rows, strict=True))
        out[rule] = {
            "holders_first": round(first / len(rows), 3),
            "median_rank": statistics.median(last),
            "worst_rank": max(last),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--collections", default="demo,runbooks")
    parser.add_argument("--per-group", type=int, default=300)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sources = {
        "demo": [REPO / "docs_corpus"],
        "runbooks": sorted(p for p in (SHARED / "runbooks").iterdir() if p.is_dir()),
    }
    report: dict[str, Any] = {"depth": DEPTH, "rules": list(RULES), "collections": {}}
    for name in args.collections.split(","):
        settings = settings_at(args.home / name, args.models_dir)
        ingest(settings, sources[name])
        corpus = open_corpus(name, settings)
        embedder = load_embedder(settings)
        rows: list[dict[str, Any]] = []
        for count, tags in rare_tags(corpus, args.per_group, args.seed).items():
            rows += ranks(corpus, tags, embedder)
            print(f"{name}: {len(tags)} tags held by {count} chunk(s)", file=sys.stderr, flush=True)
        groups: dict[str, list[dict[str, Any]]] = {}
        for n in (1, 2):
            held = [r for r in rows if r["holders"] == n]
            groups[f"held by {n}"] = held
            groups[f"held by {n}, short lexical list"] = [r for r in held if r["short_lexical_list"]]
            groups[f"held by {n}, found in those {n} only"] = [r for r in held if r["lexical_hits"] == n]
        groups["in a table row"] = [r for r in rows if r["in_table"]]
        report["collections"][name] = {
            "summary": {group: summary(members) for group, members in groups.items()},
            "tags": rows,
        }
    text = json.dumps(report, indent=1)
    print(json.dumps({name: c["summary"] for name, c in report["collections"].items()}, indent=1))
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
