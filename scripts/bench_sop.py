"""What the operator is shown: the SOP's own text (answer.mode = quoted) against the model's answer
(answer.mode = generated, today's design before it), side by side on the same questions in one run.

Sets (scripts/qa/):
  procedures  procedure questions with 2-8 verbatim gold step phrases each (procedures.jsonl; --split
              heldout|tune|all): step recall (share of gold phrases shown), complete answers (>= 90% of
              the phrases shown, in document order), the gold section shown whole or within what is shown
  procedures_llm  the same measures on procedures_llm.jsonl (written by the local model from drawn sections,
              then a hand pass; measurement only)
  procedures_titles  the same measures on procedures_titles.jsonl (written from document titles alone, gold
              chosen afterwards by another hand: scripts/qa/draw_titles.py; measurement only)
  train_titles  the same measures on choice_train_titles.jsonl (57, the same method, other documents; kept out
              of the section ranker's training set)
  train_procedures  the same measures on the 296 procedure questions of choice_train.jsonl: the ranker was
              fitted on them, so they measure only what a change after the choice does (what a section shows)
  heldout, sampled, tune   the runbook golden sets; demo   the docs_corpus golden set; howtos   how-tos about
              equipment no SOP of docs_corpus covers, each beside an in-scope how-to in the same words:
              every key phrase shown, answerable refused, unanswerable declined
  pairs_procedures, pairs_facts   scope_pairs.jsonl (drawn sections, each with an answerable question and an
              out-of-scope twin in nearly the same words): its procedure questions scored as the procedure sets,
              its fact, value and why questions with all 96 twins scored as the key-phrase sets
  mtrag       MTRAG-UN (../shared/data/mtrag-un, IBM's human answerability labels; each collection's pool of
              gold passages indexed on its own, follow-ups asked with their conversation): the share of
              questions refused per label, on first turns and on all turns, and how many of those refusals
              the quoted answer's own rules (a value no line states, a sibling) add to the evidence decision's
Every set: words shown (the answer and every source line under it), the gold document among the
citations (and among the citations or the other sections the answer names to open), answers cut at
generator.max_tokens, first content (the steps, or the first generated token), first token and total time
(medians), on this machine.

"Shown" is what the operator reads as the answer: for a quoted answer its steps; for a generated answer
its text and the sources' lines quoted under it. Phrases match case-insensitively, whitespace collapsed,
Markdown emphasis (* and `) ignored on both sides.

With --perturb (quoted design only), every question is also asked in each operator-style variant of
scripts/lib/perturb.py (one typo, a synonym, the alert pasted from a pager, a wildcard, lower and
upper case, an added p99 or 5xx, a narrative lead-in, in lower case or opening with a capital): a flip is a
variant refused where the question was answered or the reverse; for answers that stand on both, a moved answer
is one that shows another section.
Each variant is also scored as its question is (step recall and complete, or every key phrase shown): a moved
answer may show more of the answer or less.

Usage: python scripts/bench_sop.py [--sets procedures,heldout,sampled,demo] [--split heldout] [--generated]
       [--perturb] [--ids pq-001,...] [--limit N] [--json OUT]
--generated also asks the local model (slow: 20-90 s an answer on 2 cores); without it only the quoted
design runs. Settings: defaults and APPLIANCE_<SECTION>_<FIELD> variables, as for the CLI.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.answerer import Answerer, AnswerResult, ShownSection
from appliance.answer.quoted.answer import Step
from appliance.config import Settings, load_settings
from appliance.ingest.pipeline import ingest
from appliance.models.generation import load_generator

REPO = Path(__file__).resolve().parent.parent
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
QA = REPO / "scripts" / "qa"
# Procedure sets: gold step phrases, scored for step recall and completeness. procedures_llm.jsonl was written
# by the local model from drawn sections, then a hand pass (scripts/qa/README.md): never tuned on.
PROCEDURE_SETS = {
    "procedures": "procedures.jsonl",
    "procedures_llm": "procedures_llm.jsonl",
    "procedures_titles": "procedures_titles.jsonl",
    "train_titles": "choice_train_titles.jsonl",
    "train_procedures": "choice_train.jsonl",
}
KEYPHRASE_SETS = {
    "heldout": "runbooks_heldout.jsonl",
    "sampled": "runbooks_sampled.jsonl",
    "sampled_59": "runbooks_sampled_59.jsonl",
    "tune": "runbooks_tune.jsonl",
    "demo": "demo_corpus.jsonl",
    "howtos": "howtos_scope.jsonl",
}
# scope_pairs.jsonl (scripts/qa/README.md: drawn sections, an answerable question and an out-of-scope twin each)
# read as two sets: its procedure questions, scored like the procedure sets, and its fact, value and why
# questions with every out-of-scope twin, scored like the key-phrase sets. Fitted on by the unknown-words note
# only (scripts/fit_unmatched_note.py), never by the section choice or the evidence decision.
PAIR_SETS = ("pairs_procedures", "pairs_facts")
# Sets in the section-choice training format: each question names its corpus group.
GROUPED_SETS = ("choice_train", "scope_pairs", "train_procedures", *PAIR_SETS)


def flat(text: str) -> str:
    return " ".join(re.sub(r"[*`]", "", text).casefold().split())


def shown_text(result: AnswerResult) -> str:
    """What the operator reads as the answer (see the module docstring)."""
    if result.refused:
        return ""
    if result.steps:
        return "\n".join(step.text for step in result.steps)
    return "\n".join([result.answer, *(quote.text for quote in result.quotes)])


def phrase_positions(shown: str, phrases: list[str]) -> list[int]:
    text = flat(shown)
    return [text.find(flat(phrase)) for phrase in phrases]


def asked(answerer: Answerer, question: str) -> tuple[AnswerResult, AnswerResult | None]:
    """The answer, and where the LLM judge replaced its steps after showing them (answer.llm_judge_timing =
    after), the answer as first shown (its steps; the rest as the final answer's)."""
    shown: list[Step] | None = None
    result: AnswerResult | None = None
    for event in answerer.events(question):
        if event.kind == "steps" and shown is None:
            shown = event.steps
        elif event.kind == "done":
            result = event.result
    assert result is not None
    if result.judge is None or result.judge.first_shown is None or shown is None:
        return result, None
    first = result.judge.first_shown
    sections = [ShownSection(1, first.path, first.title, first.section, [], 0)]
    return result, replace(result, steps=shown, sections=sections, citations=[], judge=None)


def row_for(item: dict[str, Any], result: AnswerResult, seconds: float) -> dict[str, Any]:
    shown = shown_text(result)
    gold_file = item.get("gold_file") or (item.get("gold_files") or [None])[0]
    cited = {c.path for c in result.citations} | {s.path for s in result.steps}
    timings = result.timings_ms
    row: dict[str, Any] = {
        "id": item["id"],
        "answerable": item.get("answerable", True),
        "refused": result.refused,
        "refusal_reason": result.refusal_reason,
        "answer_kind": result.answer_kind,
        "words": len(shown.split()),
        "gold_cited": gold_file in cited if gold_file else None,
        # The gold document among the sections the answer names to open instead ("Also matches", the list beside
        # the steps): one click away where it is not cited.
        "gold_named": gold_file in {a.path for a in result.alternatives} if gold_file else None,
        "truncated": result.truncated,
        "first_content_ms": timings.get("first_content", timings.get("first_token")),
        "first_token_ms": timings.get("first_token"),
        "total_ms": timings.get("total", seconds * 1000),
        "sections": [f"{s.path} § {s.section}" for s in result.sections],
        "judge": asdict(result.judge) if result.judge is not None else None,
        "citations": [f"{c.path} § {c.section}" for c in result.citations],
    }
    if "step_phrases" in item:
        positions = phrase_positions(shown, item["step_phrases"])
        found = [p for p in positions if p >= 0]
        row["step_recall"] = len(found) / len(positions)
        row["complete"] = row["step_recall"] >= 0.9 and found == sorted(found)
        row["gold_section_words"] = item.get("gold_section_words")
        row["missing"] = [p for p, at in zip(item["step_phrases"], positions, strict=True) if at < 0]
    if item.get("answer_keyphrases"):
        positions = phrase_positions(shown, item["answer_keyphrases"])
        row["keyphrases_shown"] = all(p >= 0 for p in positions)
    return row


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.0f}% ({count} of {total})" if total else "n/a"


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    answered = [r for r in answerable if not r["refused"]]
    summary: dict[str, Any] = {
        "questions": len(rows),
        "answerable_refused": _share(sum(r["refused"] for r in answerable), len(answerable)),
        "gold_document_cited": _share(sum(bool(r["gold_cited"]) for r in answerable), len(answerable)),
        "gold_document_cited_or_named": _share(
            sum(bool(r["gold_cited"] or r["gold_named"]) for r in answerable), len(answerable)
        ),
        "cut_at_token_limit": _share(sum(r["truncated"] for r in rows), len(rows)),
        "words_shown_median": _median([r["words"] for r in answered]),
        "first_content_ms_median": _median([r["first_content_ms"] for r in rows if r["first_content_ms"] is not None]),
        "first_token_ms_median": _median([r["first_token_ms"] for r in rows if r["first_token_ms"] is not None]),
        "total_ms_median": _median([r["total_ms"] for r in rows]),
    }
    if unanswerable:
        summary["unanswerable_declined"] = _share(sum(r["refused"] for r in unanswerable), len(unanswerable))
    if any("step_recall" in r for r in rows):
        recalls = [r["step_recall"] for r in answerable]
        summary["step_recall_mean"] = round(sum(recalls) / len(recalls), 3)
        summary["complete"] = _share(sum(r["complete"] for r in answerable), len(answerable))
        ratios = [r["words"] / r["gold_section_words"] for r in answered if r.get("gold_section_words")]
        summary["words_shown_to_gold_section_median"] = round(statistics.median(ratios), 2) if ratios else None
    if any("keyphrases_shown" in r for r in rows):
        summary["every_keyphrase_shown"] = _share(
            sum(bool(r.get("keyphrases_shown")) for r in answerable), len(answerable)
        )
    judged = [r for r in rows if r.get("judge")]
    if judged:
        replaced = [r for r in judged if "first_shown" in r]
        summary["llm_judge"] = {
            "judged": len(judged),
            "replaced_after_shown": len(replaced),
            "ms_median": _median([r["judge"]["ms"] for r in judged]),
        }
        if replaced and any("step_recall" in r for r in replaced):
            better = sum(r["step_recall"] > r["first_shown"]["step_recall"] for r in replaced)
            worse = sum(r["step_recall"] < r["first_shown"]["step_recall"] for r in replaced)
            first = [r["first_shown"]["step_recall"] if r in replaced else r["step_recall"] for r in answerable]
            summary["llm_judge"].update(
                replaced_better=better,
                replaced_worse=worse,
                first_shown_step_recall_mean=round(sum(first) / len(first), 3),
                first_shown_complete=_share(
                    sum((r["first_shown"] if r in replaced else r)["complete"] for r in answerable), len(answerable)
                ),
            )
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["answer_kind"]] = kinds.get(r["answer_kind"], 0) + 1
    summary["answer_kinds"] = kinds
    return summary


def load_items(name: str, split: str) -> list[dict[str, Any]]:
    if name in PAIR_SETS:
        return pair_items(name)
    if name in PROCEDURE_SETS:
        items = [json.loads(line) for line in (QA / PROCEDURE_SETS[name]).read_text().splitlines() if line.strip()]
        items = [item for item in items if item.get("kind", "procedure") == "procedure" and item.get("step_phrases")]
        return [item for item in items if split == "all" or item.get("split", split) == split]
    return [json.loads(line) for line in (QA / KEYPHRASE_SETS[name]).read_text().splitlines() if line.strip()]


def pair_items(name: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (QA / "scope_pairs.jsonl").read_text().splitlines() if line.strip()]
    if name == "pairs_procedures":
        return [
            {k: r[k] for k in ("id", "question", "gold_file", "gold_section", "step_phrases", "group")}
            for r in rows
            if r["answerable"] and r["kind"] == "procedure"
        ]
    return [
        {
            "id": r["id"],
            "question": r["question"],
            "group": r["group"],
            "answerable": r["answerable"],
            "gold_files": [r["gold_file"]] if r["answerable"] else [],
            "answer_keyphrases": r["answer_phrases"],
        }
        for r in rows
        if not r["answerable"] or r["kind"] != "procedure"
    ]


def corpus_of(item: dict[str, Any], name: str) -> str:
    if name in GROUPED_SETS:
        return "demo" if item["group"] == "docs_corpus" else "runbooks"
    if name in ("demo", "howtos"):
        return "demo"
    if name in PROCEDURE_SETS:
        return "demo" if item["gold_file"].startswith("docs_corpus/") else "runbooks"
    return "runbooks"


def corpus_roots(corpus: str) -> list[Path]:
    """The folders a corpus indexes: docs_corpus for "demo", the four runbook folders for "runbooks"."""
    return [REPO / "docs_corpus"] if corpus == "demo" else sorted(p for p in RUNBOOKS.iterdir() if p.is_dir())


def settings_for(corpus: str, home: Path, models_dir: Path) -> Settings:
    environ = {**os.environ, "APPLIANCE_HOME": str(home / corpus), "APPLIANCE_MODELS_DIR": str(models_dir)}
    environ.pop("APPLIANCE_CONFIG", None)
    return load_settings(environ)


def gold_section_words(answerer: Answerer, item: dict[str, Any]) -> int | None:
    from appliance.answer.quoted.sections import document_sections

    chunks = answerer.searcher.catalog.chunks_of_documents([item["gold_file"]])[item["gold_file"]]
    section = document_sections(chunks).get(item["gold_section"])
    return section.words if section is not None else None


MTRAG_TASKS = REPO.parent / "shared" / "data" / "mtrag-un" / "tasks.jsonl"


def mtrag_indexed(collection: str, home: Path, models_dir: Path) -> tuple[Settings, list[Any]]:
    """An MTRAG-UN collection's tasks, and the settings of its index under `home`: the pool of the collection's
    gold passages, written as files and ingested (reused when unchanged)."""
    from scripts.lib.mtrag import load_tasks, write_passages

    tasks, passages = load_tasks(MTRAG_TASKS, collection)
    settings = settings_for(f"mtrag-{collection}", home, models_dir)
    folder = home / f"mtrag-{collection}-passages" / collection
    write_passages(passages, folder)
    ingest(settings, [folder])
    return settings, tasks


def run_mtrag(home: Path, models_dir: Path) -> dict[str, Any]:
    """The quoted decision on MTRAG-UN: refusals per answerability label (see the module docstring)."""
    report: dict[str, Any] = {}
    for collection in ("ibmcloud", "clapnq"):
        settings, tasks = mtrag_indexed(collection, home, models_dir)
        answerer = Answerer(settings)
        rows = []
        for task in tasks:
            result = answerer.ask(task.question, history=task.history)
            rows.append(
                {
                    "id": task.task_id,
                    "label": task.answerability,
                    "first_turn": not task.multi_turn,
                    "refused": result.refused,
                    # A refusal after the section was chosen: the quoted answer's own rules, not the evidence decision.
                    "by_quoted_rule": result.refused and "sections" in result.timings_ms,
                    "answer_kind": result.answer_kind,
                }
            )
        answerer.close()
        summary: dict[str, Any] = {}
        for scope, chosen in (("first_turn", [r for r in rows if r["first_turn"]]), ("all_turns", rows)):
            by_label: dict[str, Any] = {}
            for label in sorted({r["label"] for r in chosen}):
                group = [r for r in chosen if r["label"] == label]
                refused = sum(r["refused"] for r in group)
                by_label[label] = {
                    "refused": _share(refused, len(group)),
                    "by_quoted_rules": sum(r["by_quoted_rule"] for r in group),
                }
            summary[scope] = by_label
        report[collection] = {"summary": summary, "rows": rows}
        print(f"mtrag {collection}: {json.dumps(summary)}", file=sys.stderr)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-sop")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--sets", default="procedures,heldout,sampled,demo")
    parser.add_argument("--split", choices=["heldout", "tune", "all"], default="heldout")
    parser.add_argument("--generated", action="store_true", help="Also ask the model (today's design).")
    parser.add_argument("--perturb", action="store_true", help="Also ask every operator-style variant (quoted).")
    parser.add_argument("--ids", default="")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    wanted_ids = set(filter(None, args.ids.split(",")))
    answerers: dict[str, tuple[Answerer, Answerer | None]] = {}

    def answerers_for(corpus: str) -> tuple[Answerer, Answerer | None]:
        if corpus not in answerers:
            settings = settings_for(corpus, args.home, args.models_dir)
            ingest(settings, corpus_roots(corpus))
            quoted_settings = settings.model_copy(update={"answer": replace_mode(settings, "quoted")})
            quoted = Answerer(quoted_settings)
            generated = None
            if args.generated:
                generated_settings = settings.model_copy(update={"answer": replace_mode(settings, "generated")})
                generated = Answerer(generated_settings, searcher=quoted.searcher, generator=load_generator(settings))
            answerers[corpus] = (quoted, generated)
        return answerers[corpus]

    report: dict[str, Any] = {}
    variants: list[dict[str, Any]] = []
    for name in args.sets.split(","):
        if name == "mtrag":
            report[name] = {"quoted": run_mtrag(args.home, args.models_dir)}
            if args.json:
                args.json.write_text(json.dumps(report, indent=1))
            continue
        items = load_items(name, args.split)
        if wanted_ids:
            items = [item for item in items if item["id"] in wanted_ids]
        if args.limit:
            items = items[: args.limit]
        rows: dict[str, list[dict[str, Any]]] = {"quoted": [], "generated": []}
        for item in items:
            quoted, generated = answerers_for(corpus_of(item, name))
            if name in PROCEDURE_SETS:
                item = {**item, "gold_section_words": gold_section_words(quoted, item)}
            for design, answerer in (("quoted", quoted), ("generated", generated)):
                if answerer is None:
                    continue
                started = time.perf_counter()
                result, first = asked(answerer, item["question"])
                row = row_for(item, result, time.perf_counter() - started)
                if first is not None:  # the judge replaced the steps shown first: what the operator saw first
                    row["first_shown"] = row_for(item, first, 0.0)
                rows[design].append(row)
            print(f"{name} {item['id']}: " + "  ".join(_brief(rows[d][-1]) for d in rows if rows[d]), file=sys.stderr)
            if args.perturb:
                variants.extend(_variants(item, quoted, rows["quoted"][-1]))
            if args.json:  # after every question: a long run that is stopped keeps what it measured
                partial = {design: {"summary": summarize(r), "rows": r} for design, r in rows.items() if r}
                args.json.write_text(json.dumps({**report, name: partial}, indent=1))
        report[name] = {design: {"summary": summarize(r), "rows": r} for design, r in rows.items() if r}
        if args.perturb:
            report[name]["perturbations"] = {"summary": _flips(variants), "rows": variants}
            variants = []
        if args.json:
            args.json.write_text(json.dumps(report, indent=1))
    print(json.dumps(_summaries(report), indent=2))
    return 0


def _variants(item: dict[str, Any], answerer: Answerer, original: dict[str, Any]) -> list[dict[str, Any]]:
    from scripts.lib.perturb import perturb

    found: list[dict[str, Any]] = []
    for variant in perturb(item["question"], item["id"]):
        result = answerer.ask(variant.text)
        row = row_for(item, result, 0.0)
        found.append(
            {
                "id": item["id"],
                "kind": variant.kind,
                "answerable": row["answerable"],
                "flipped": row["refused"] != original["refused"],
                "moved": not row["refused"] and not original["refused"] and row["sections"] != original["sections"],
                "refusal_reason": row["refusal_reason"],
                # what the operator reads in the variant, scored as the question is (a moved answer may show more)
                **{k: row[k] for k in ("step_recall", "complete", "keyphrases_shown") if k in row},
            }
        )
    return found


def _flips(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for answerable in (True, False):
        group = [r for r in rows if r["answerable"] is answerable]
        by_kind: dict[str, list[int]] = {}
        for r in group:
            counts = by_kind.setdefault(r["kind"], [0, 0, 0])
            counts[0] += 1
            counts[1] += r["flipped"]
            counts[2] += r["moved"]
        # What the variants show, scored as their questions are (procedure sets: steps; key-phrase sets: phrases).
        scored: dict[str, Any] = {}
        stepped = [r for r in group if "step_recall" in r]
        if stepped:
            scored["step_recall_mean"] = round(sum(r["step_recall"] for r in stepped) / len(stepped), 3)
            scored["complete"] = _share(sum(r["complete"] for r in stepped), len(stepped))
        phrased = [r["keyphrases_shown"] for r in group if "keyphrases_shown" in r]
        if phrased and answerable:
            scored["every_keyphrase_shown"] = _share(sum(phrased), len(phrased))
        summary["answerable" if answerable else "unanswerable"] = {
            "variants": len(group),
            "flips": sum(r["flipped"] for r in group),
            "shown_section_moved": sum(r["moved"] for r in group),
            **scored,
            "by_kind": {kind: {"variants": c[0], "flips": c[1], "moved": c[2]} for kind, c in sorted(by_kind.items())},
        }
    return summary


def _summaries(report: dict[str, Any]) -> dict[str, Any]:
    """Every figure of the report without its rows."""
    if isinstance(report, dict):
        return {key: _summaries(value) for key, value in report.items() if key != "rows"}
    return report


def replace_mode(settings: Settings, mode: str) -> Any:
    return settings.answer.model_copy(update={"mode": mode})


def _brief(row: dict[str, Any]) -> str:
    parts = [row["answer_kind"][:4], f"{row['words']}w", f"{row['total_ms'] / 1000:.1f}s"]
    if "step_recall" in row:
        parts.append(f"recall {row['step_recall']:.2f}")
    if "keyphrases_shown" in row:
        parts.append("kp" if row["keyphrases_shown"] else "no-kp")
    return "/".join(parts)


if __name__ == "__main__":
    sys.exit(main())
