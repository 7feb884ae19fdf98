"""Dump the section-choice features of question sets: the input of scripts/fit_choice.py.

For every question: the hybrid search's hits (the appliance's own Searcher, default settings), the candidate
sections (answer/quoted/candidates.py), their base features (answer/quoted/features.py), and for each
candidate what showing it would give: the share of the question's gold phrases its text holds (step phrases,
answer phrases or key phrases), its length, whether it is the gold section itself. Also the question's own
vector and today's rule-based chooser's pick (answer/quoted/choice.py), so the fit compares against it on the
same hits, and the evidence decision's probability (for the "none answers" model).

Sets: train (scripts/qa/choice_train.jsonl, the fitting set), procedures (procedures.jsonl), procedures_llm
(procedures_llm.jsonl: measurement only), heldout, sampled, tune, demo (the key-phrase sets); on request also
train_titles (choice_train_titles.jsonl, training questions written from titles alone: scripts/fit_choice_titles.py)
and procedures_titles (measurement only). Indexes:
docs_corpus and the four runbook folders, built under --home (the same folders as scripts/bench_sop.py, so one
ingest serves both).

Usage: python scripts/choice_features.py [--sets train,procedures,heldout,sampled,tune,demo] [--out FILE.pkl]
           [--documents N] [--pointing-hits N] [--referenced-documents N]
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.quoted.candidates import DOCUMENTS, POINTING_HITS, REFERENCED_DOCUMENTS, gather_candidates
from appliance.answer.quoted.features import BASE_FEATURES, base_features
from appliance.answer.quoted.label_vectors import LabelVectors
from appliance.ingest.pipeline import ingest
from appliance.retrieve.search import Searcher
from appliance.text.questions import question_kind
from scripts.bench_sop import KEYPHRASE_SETS, PROCEDURE_SETS, QA, REPO, RUNBOOKS, corpus_roots, flat, settings_for
from scripts.lib.rule_choice import choose_section

SETS = ("train", "procedures", "procedures_llm", "heldout", "sampled", "tune", "demo")
GROUP_OF_FOLDER = {
    "openshift-runbooks": "openshift",
    "gitlab-com-runbooks": "gitlab",
    "incident-response-docs": "ir-prometheus",
    "prometheus-operator-runbooks": "ir-prometheus",
}


def load_set(name: str) -> list[dict[str, Any]]:
    if name == "train":
        path = QA / "choice_train.jsonl"
    elif name == "train_titles":
        path = QA / "choice_train_titles.jsonl"
    elif name in PROCEDURE_SETS:
        path = QA / PROCEDURE_SETS[name]
    else:
        path = QA / KEYPHRASE_SETS[name]
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for item in items:
        item["set"] = name
        gold = item.get("gold_file") or (item.get("gold_files") or [""])[0]
        item["gold_file"] = gold
        item["phrases"] = item.get("step_phrases") or item.get("answer_phrases") or item.get("answer_keyphrases") or []
        item.setdefault("answerable", True)
        if "group" not in item:
            item["group"] = group_of(gold, name)
    return items


def group_of(gold_file: str, set_name: str) -> str:
    if set_name == "demo" or gold_file.startswith("docs_corpus/"):
        return "docs_corpus"
    folder = gold_file.split("/", 1)[0]
    return GROUP_OF_FOLDER.get(folder, "runbooks")


def corpus_of(item: dict[str, Any]) -> str:
    if item["set"] == "demo":
        return "demo"
    if item["set"] in ("heldout", "sampled", "sampled_59", "tune"):
        return "runbooks"
    return "demo" if item["group"] == "docs_corpus" else "runbooks"


class CorpusSearchers:
    """The appliance's search over the corpus of each question (bench_sop's indexes under `home`, brought up to
    date the first time a corpus is asked for)."""

    def __init__(self, home: Path, models_dir: Path) -> None:
        self.home, self.models_dir = home, models_dir
        self._open: dict[str, Searcher] = {}

    def __call__(self, item: dict[str, Any]) -> Searcher:
        corpus = corpus_of(item)
        if corpus not in self._open:
            settings = settings_for(corpus, self.home, self.models_dir)
            ingest(settings, corpus_roots(corpus))
            self._open[corpus] = Searcher(settings)
        return self._open[corpus]


def corpus_command(
    doc: str | None, sets: Sequence[str], results: Path, more: Callable[[argparse.ArgumentParser], Any] | None = None
) -> tuple[argparse.Namespace, CorpusSearchers]:
    """A script that searches bench_sop's indexes set by set: its options (--home, --models-dir, --sets, --json,
    and what `more` adds) parsed, and its searchers."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if more is not None:
        more(parser)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--sets", default=",".join(sets))
    parser.add_argument("--json", type=Path, default=results)
    args = parser.parse_args()
    return args, CorpusSearchers(args.home, args.models_dir)


def section_text(section: Any) -> str:
    return "\n".join(item.text for item in section.items)


def searched(searcher: Searcher, question: str, hits_wanted: int) -> tuple[Any, list[tuple[Any, float]], Any]:
    """The appliance's search for `question`: what it found, its hits as (chunk, fused score), and a reader of whole
    documents that reads each once (inside `searcher.index.reading()`)."""
    catalog = searcher.catalog
    found = searcher.search(question, k=hits_wanted)
    rows = catalog.chunks_by_ids([hit.chunk_id for hit in found.hits])
    ranked = [(rows[hit.chunk_id], hit.score) for hit in found.hits if hit.chunk_id in rows]
    read: dict[str, Any] = {}

    def chunks_of(paths: Any) -> dict[str, Any]:
        missing = [p for p in paths if p not in read]
        if missing:
            read.update(catalog.chunks_of_documents(missing))
        return {p: read.get(p, []) for p in paths}

    return found, ranked, chunks_of


def dump_question(
    searcher: Searcher,
    labels: LabelVectors,
    item: dict[str, Any],
    hits_wanted: int,
    whole_words: int,
    documents: int = DOCUMENTS,
    pointing_hits: int = POINTING_HITS,
    referenced_documents: int = REFERENCED_DOCUMENTS,
) -> dict[str, Any]:
    started = time.perf_counter()
    catalog = searcher.catalog
    with searcher.index.reading():
        found, ranked, chunks_of = searched(searcher, item["question"], hits_wanted)
        candidates = gather_candidates(
            ranked,
            chunks_of,
            catalog.documents_named,
            question=found.searched,
            documents=documents,
            referenced_documents=referenced_documents,
            pointing_hits=pointing_hits,
        )
        ids = [c.chunk_id for cand in candidates for c in cand.section.chunks]
        vectors = dict(catalog.embeddings(dict.fromkeys(ids)))
    embedder = searcher.embedder
    q = embedder.embed_query(found.searched)
    features = base_features(found.searched, q, candidates, labels, vectors)
    today = (
        choose_section(
            found.searched,
            ranked,
            chunks_of,
            labels,
            q,
            procedure=question_kind(found.searched) == "procedure",
            whole_words=whole_words,
        )
        if ranked
        else None
    )
    phrases = [flat(p) for p in item["phrases"]]
    rows_out: list[dict[str, Any]] = []
    for candidate in candidates:
        section = candidate.section
        text = flat(section_text(section))
        held = [p in text for p in phrases]
        inside = [vectors[c.chunk_id] for c in section.chunks if c.chunk_id in vectors]
        rows_out.append(
            {
                "path": section.path,
                "heading": section.heading,
                "words": section.words,
                "recall": sum(held) / len(held) if held else 0.0,
                "in_order": _in_order(text, phrases),
                "gold": section.path == item["gold_file"] and section.heading == item.get("gold_section"),
                "gold_document": section.path == item["gold_file"],
                # the best cosine of a chunk inside, not standardized: the "none answers" model reads levels
                "raw_cos": float(max(np.stack(inside) @ q)) if inside else 0.0,
                "lex_body": float(features[len(rows_out), BASE_FEATURES.index("lex_body")]),
            }
        )
    return {
        "id": item["id"],
        "set": item["set"],
        "group": item["group"],
        "question": item["question"],
        "searched": found.searched,
        "kind": item.get("kind"),
        "scope": item.get("scope"),
        "split": item.get("split"),
        "answerable": item["answerable"],
        "gold_file": item["gold_file"],
        "gold_section": item.get("gold_section"),
        "vector": q.astype(np.float32),
        "features": features,
        "candidates": rows_out,
        "today": None if today is None else (today.section.path, today.section.heading),
        "regex_kind": question_kind(found.searched),
        "evidence_probability": float(found.evidence.probability),
        "evidence_sufficient": bool(found.evidence.sufficient),
        "top_hit_score": float(found.hits[0].score) if found.hits else 0.0,
        "seconds": time.perf_counter() - started,
    }


def _in_order(text: str, phrases: list[str]) -> bool:
    positions = [text.find(p) for p in phrases]
    found = [p for p in positions if p >= 0]
    return found == sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--out", type=Path, default=REPO / ".appliance" / "choice_features.pkl")
    parser.add_argument("--corpora", default="demo,runbooks", help="Only the questions over these indexes.")
    parser.add_argument("--reuse", action="store_true", help="Keep the questions --out already holds; dump the rest.")
    parser.add_argument(
        "--documents",
        type=int,
        default=DOCUMENTS,
        help=f"The best documents of the hits whose sections are candidates (the appliance's {DOCUMENTS}; another "
        "count measures that choice: fit_choice.py --features on the dump, without --write).",
    )
    parser.add_argument(
        "--pointing-hits",
        type=int,
        default=POINTING_HITS,
        help=f"The best hits read for other documents' names (the appliance's {POINTING_HITS}; "
        "scripts/measure_gathering.py).",
    )
    parser.add_argument(
        "--referenced-documents",
        type=int,
        default=REFERENCED_DOCUMENTS,
        help=f"Named documents that join the candidates (the appliance's {REFERENCED_DOCUMENTS}).",
    )
    args = parser.parse_args()
    reach = {
        "documents": args.documents,
        "pointing_hits": args.pointing_hits,
        "referenced_documents": args.referenced_documents,
    }
    searchers: dict[str, tuple[Searcher, LabelVectors]] = {}
    dumped: list[dict[str, Any]] = []
    if args.reuse and args.out.exists():
        earlier = pickle.loads(args.out.read_bytes())
        # Dumps made before an option hold the appliance's count for it.
        held = {
            "documents": earlier.get("documents", DOCUMENTS),
            "pointing_hits": earlier.get("pointing_hits", POINTING_HITS),
            "referenced_documents": earlier.get("referenced_documents", REFERENCED_DOCUMENTS),
        }
        if held != reach:
            raise SystemExit(f"--reuse: {args.out} holds the candidates of {held}, not {reach}: dump to another --out")
        dumped = earlier["questions"]
    done = {(q["set"], q["id"]) for q in dumped}
    for name in args.sets.split(","):
        for item in load_set(name):
            corpus = corpus_of(item)
            if corpus not in args.corpora.split(",") or (name, item["id"]) in done:
                continue
            if corpus not in searchers:
                settings = settings_for(corpus, args.home, args.models_dir)
                roots = (
                    [REPO / "docs_corpus"] if corpus == "demo" else sorted(p for p in RUNBOOKS.iterdir() if p.is_dir())
                )
                ingest(settings, roots)
                searcher = Searcher(settings)
                searchers[corpus] = (searcher, LabelVectors(searcher.embedder.embed))
            searcher, labels = searchers[corpus]
            settings = searcher.settings
            answer = settings.answer
            entry = dump_question(
                searcher,
                labels,
                item,
                answer.section_hits,
                answer.max_procedure_words,
                args.documents,
                args.pointing_hits,
                args.referenced_documents,
            )
            dumped.append(entry)
            best = max((c["recall"] for c in entry["candidates"]), default=0.0)
            print(
                f"{name} {item['id']}: {len(entry['candidates'])} candidates, best recall {best:.2f}, "
                f"gold among them {any(c['gold'] for c in entry['candidates'])}, {entry['seconds']:.1f}s",
                file=sys.stderr,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("wb") as handle:
        pickle.dump({"features": BASE_FEATURES, "questions": dumped, **reach}, handle)
    print(f"{len(dumped)} questions → {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
