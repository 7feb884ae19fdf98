"""How often is the support check right? Precision and recall of "unsupported" against hand labels.

The labels (scripts/qa/support_labels.jsonl) say, for answer sentences of stored generations
(scripts/results/*.json rows with the model's `generated` text), whether the sentence is right or
wrong against the sources the model was given, with the labeller's reason. The sources are rebuilt
here exactly as the answerer built them (search → prompt with the generator's tokenizer), and the
answer is re-checked with today's code, the answerer's own decision (verdict.judge_answer: citations,
attribution and correction, support, rewordings):

  precision = of the sentences the check flags unsupported, the share that are wrong
  recall    = of the wrong sentences, the share the check flags

`worksheet` writes, for the labeller, each answer with its numbered sources and the check's verdict
per sentence, into a file outside the repository (it copies the runbooks' text). A label records the
sha256 of its answer's sources; `measure` refuses a label whose sources have changed since.

Usage:
  python scripts/support_labels.py worksheet --set NAME [--results FILE:KEY] [--out /tmp/ws.md]
  python scripts/support_labels.py measure [--labels scripts/qa/support_labels.jsonl] [--json OUT] [--strict]
  (--fusion weighted by default: the labelled answers were written under it; with z-scores 27 of the 101
  held-out sentences' sources change and `measure` refuses them as stale)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.generated.prompt import Prompt, build_prompt
from appliance.answer.generated.support import REWORD_FLOOR
from appliance.answer.generated.verdict import Verdict, judge_answer
from appliance.config import Settings
from appliance.models.generation import Generator, load_generator
from appliance.retrieve.search import Searcher
from scripts.lib.report import finish

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_perturbations import indexed_settings

REPO = Path(__file__).resolve().parent.parent
LABELS = REPO / "scripts" / "qa" / "support_labels.jsonl"
# Where each labelled set's generations are stored, and the corpus they answer from.
RESULTS = {
    "heldout": (REPO / "scripts/results/bench_answers.json", "runbooks_heldout_all75_final", "runbooks"),
    "sampled": (REPO / "scripts/results/bench_answers_sampled.json", "runbooks", "runbooks"),
    "demo": (REPO / "scripts/results/bench_answers.json", "demo_corpus_all34_final", "demo"),
}


class Checker:
    """Rebuilds an answer's prompt and re-runs the answerer's checks on the stored generation."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.searcher = Searcher(settings)
        self.generator: Generator = load_generator(settings)

    def prompt(self, question: str) -> Prompt:
        max_sources = self.settings.answer.max_sources
        found = self.searcher.search(question, k=max(max_sources, 3))
        rows = self.searcher.index.catalog.chunks_by_ids([hit.chunk_id for hit in found.hits])
        budget = min(self.settings.answer.max_prompt_tokens, self.generator.n_ctx - self.settings.generator.max_tokens)
        return build_prompt(
            question,
            [rows[hit.chunk_id] for hit in found.hits],
            count_tokens=self.generator.count_tokens,
            budget_tokens=budget,
            max_sources=max_sources,
            following=self.searcher.index.catalog.following_chunks,
            window_chunks=self.settings.answer.window_chunks,
        )

    def verdicts(self, question: str, generated: str, *, strict: bool = False) -> tuple[Prompt, Verdict]:
        """The product's own decision after generation (verdict.judge_answer) on the stored text; with
        `strict`, without rewordings (support.REWORD_FLOOR off), to see what that tier alone changes."""
        prompt = self.prompt(question)
        verdict = judge_answer(
            question,
            generated,
            prompt.sources,
            embed=self.searcher.embedder.embed,
            semantic_threshold=self.settings.support.semantic_threshold,
            reword_floor=None if strict else REWORD_FLOOR,
        )
        return prompt, verdict

    def close(self) -> None:
        self.searcher.close()
        self.generator.close()


def sources_sha(prompt: Prompt) -> str:
    return hashlib.sha256("\n\0".join(s.block() for s in prompt.sources).encode()).hexdigest()


def checker_for(corpus: str, home: Path, models_dir: Path, fusion: str) -> Checker:
    settings, _ = indexed_settings(corpus, home, models_dir)
    # The labels hold the sha256 of the sources their answers were written from: rebuild them with that fusion.
    return Checker(settings.model_copy(update={"search": settings.search.model_copy(update={"fusion": fusion})}))


def stored_rows(path: Path, key: str) -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text())
    return {row["id"]: row for row in data[key]["rows"] if row.get("generated")}


def worksheet(args: argparse.Namespace) -> int:
    path, key, corpus = RESULTS[args.set]
    if args.results:
        file, _, key = args.results.partition(":")
        path = Path(file)
    checker = checker_for(corpus, args.home, args.models_dir, args.fusion)
    lines: list[str] = []
    try:
        for qid, row in stored_rows(path, key).items():
            if args.ids and qid not in args.ids.split(","):
                continue
            prompt, verdict = checker.verdicts(row["question"], row["generated"])
            details = verdict.support.details
            lines += [
                f"## {args.set} {qid} (answerable={row['answerable']}, refused={row['refused']})",
                f"sources_sha256: {sources_sha(prompt)}",
                f"Q: {row['question']}",
                "",
            ]
            lines += [f"### source {s.block()}\n" for s in prompt.sources]
            lines += ["### generated", row["generated"], "", "### verdicts"]
            for d in details:
                if d.checked:
                    mark = "ok  " if d.supported else "FLAG"
                    lines.append(f"- {mark} {list(d.cited)} {d.sentence!r} :: {d.reason}")
            lines.append("")
    finally:
        checker.close()
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"worksheet: {args.out}", file=sys.stderr)
    return 0


def reason_kind(reason: str) -> str:
    """The check's reason without its figures: 'only 43% of its words...' → 'too few of its words in the sources'."""
    if reason.startswith("reworded"):
        return "reworded"
    if reason.startswith("cites nothing"):
        return "cites nothing"
    if "% of its words" in reason:
        return "too few of its words in the cited sources"
    if "not in the cited sources" in reason:
        return "an identifier, number, quantity or command not in the cited sources"
    if "contradicts a negation" in reason:
        return "negation flipped"
    if "not among the sources given" in reason:
        return "cites a source not given"
    return reason


def measure(args: argparse.Namespace) -> int:
    labels = [json.loads(line) for line in args.labels.read_text().splitlines() if line.strip()]
    by_answer: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for label in labels:
        by_answer.setdefault((label["set"], label["id"]), []).append(label)
    checkers: dict[str, Checker] = {}
    outcome: list[dict[str, Any]] = []
    stale: list[str] = []
    unmatched: list[str] = []
    try:
        for (set_name, qid), answer_labels in by_answer.items():
            path, key, corpus = RESULTS[set_name]
            row = stored_rows(path, key)[qid]
            if corpus not in checkers:
                checkers[corpus] = checker_for(corpus, args.home, args.models_dir, args.fusion)
            prompt, answer = checkers[corpus].verdicts(row["question"], row["generated"], strict=args.strict)
            details = answer.support.details
            if sources_sha(prompt) != answer_labels[0]["sources_sha256"]:
                stale.append(f"{set_name}/{qid}")
                continue
            verdict = {d.sentence: d for d in details if d.checked}
            for label in answer_labels:
                judged = verdict.get(label["sentence"])
                if judged is None:
                    unmatched.append(f"{set_name}/{qid}: {label['sentence'][:60]}")
                    continue
                outcome.append(
                    {
                        "set": set_name,
                        "id": qid,
                        "wrong": label["label"] == "wrong",
                        "flagged": not judged.supported,
                        # The warning names it: a tag, number or command of it in no source, or a contradiction.
                        "named": not judged.supported
                        and (
                            judged.sentence in answer.contradicting
                            or any(item in judged.sentence for item in answer.invented)
                        ),
                        "reason": judged.reason,
                        "sentence": label["sentence"],
                    }
                )
    finally:
        for checker in checkers.values():
            checker.close()
    report: dict[str, Any] = {"per_set": {}, "stale_answers": stale, "unmatched_labels": unmatched}
    for set_name in [*sorted({o["set"] for o in outcome}), "all"]:
        mine = [o for o in outcome if set_name in ("all", o["set"])]
        flagged = [o for o in mine if o["flagged"]]
        wrong = [o for o in mine if o["wrong"]]
        report["per_set"][set_name] = {
            "sentences": len(mine),
            "wrong": len(wrong),
            "flagged": len(flagged),
            "flagged_and_wrong": sum(1 for o in flagged if o["wrong"]),
            "precision": round(sum(1 for o in flagged if o["wrong"]) / len(flagged), 3) if flagged else None,
            "recall": round(sum(1 for o in wrong if o["flagged"]) / len(wrong), 3) if wrong else None,
            "flag_reasons_of_right_sentences": dict(
                Counter(reason_kind(o["reason"]) for o in flagged if not o["wrong"]).most_common()
            ),
            "missed_wrong": [o["sentence"] for o in wrong if not o["flagged"]],
            "wrong_named": sum(1 for o in wrong if o["named"]),
            "right_named": sum(1 for o in mine if o["named"] and not o["wrong"]),
            "wrong_flagged_not_named": [o["sentence"] for o in wrong if o["flagged"] and not o["named"]],
        }
    return finish(report, args.json)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["worksheet", "measure"])
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--set", choices=sorted(RESULTS), default="heldout")
    parser.add_argument("--results", default="", help="FILE:KEY of stored generations (default: the set's own).")
    parser.add_argument("--ids", default="", help="Only these question ids (comma-separated).")
    parser.add_argument("--out", default="/tmp/support_worksheet.md")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--fusion",
        choices=["rrf", "weighted", "zscore"],
        default="weighted",
        help="search.fusion of the labelled answers' runs (all written before z-scores became the default)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="measure: the product's check without rewordings (support.REWORD_FLOOR)"
    )
    args = parser.parse_args()
    return worksheet(args) if args.command == "worksheet" else measure(args)


if __name__ == "__main__":
    sys.exit(main())
