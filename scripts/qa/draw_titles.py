"""Procedure questions written from document titles alone, gold chosen afterwards by another hand (an eighth method).

Outside writers know the job, not the document: they ask for what a title promises in their own words, and
nobody on their side has read which section holds the steps. This method keeps that:

1. `draw` draws, per corpus group (the leave-one-corpus-out folds of scripts/fit_choice.py), documents that hold
   at least one procedure by their layout (draw_sections.holds_a_procedure) and gives each a seeded style card.
   The writer's packet holds the document's title and its file name only: no outline, no text. The writer writes
   the one procedure question an operator on shift would ask that such a document should answer.
2. `gold` takes those questions and writes, per question, the whole document as the project's loaders read it
   (each section's heading path and own text). A second hand, who did not write the question, picks the section
   whose steps answer it (a whole job: the parent; one part: that part) and copies 2-8 verbatim step phrases in
   document order, or drops the question where the document holds no steps that answer it.

`check_choice.py` then checks the gold (the file holds the section, the phrases occur verbatim in order) and
the copy rule. Documents are drawn whether or not other sets ask about them (docs_corpus has 27, and
procedures.jsonl and procedures_llm.jsonl ask about most of them): the questions are new, written blind.

Usage: python scripts/qa/draw_titles.py draw --seed 58 --per-group 12 --writers 2 OUTDIR
       python scripts/qa/draw_titles.py draw --seed 59 --per-group 24 --writers 4 --prefix tt \
           --exclude scripts/qa/procedures_titles.jsonl OUTDIR
       python scripts/qa/draw_titles.py gold QUESTIONS.jsonl OUTDIR
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Set as AbstractSet
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import appliance  # noqa: F401  (offline environment first)
from scripts.qa.draw_sections import GROUPS, STYLE_CARDS, group_files, holds_a_procedure, read_document
from scripts.qa.procedure_outlines import heading_paths, resolve, section_text

QA = Path(__file__).resolve().parent
# The cards that ask for steps (the why and the value cards ask for something else).
PROCEDURE_CARDS = tuple(card for card in STYLE_CARDS if "'why'" not in card and "number, limit" not in card)
MAX_SECTION_WORDS = 1500


def gold_files(sets: list[Path]) -> set[str]:
    """The gold files of question sets (JSON Lines with `gold_file`): documents a new draw leaves out."""
    rows = (json.loads(line) for path in sets for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {row["gold_file"] for row in rows if row.get("gold_file")}


def draw(
    seed: int, per_group: int, writers: int, excluded: AbstractSet[str] = frozenset(), prefix: str = "pt"
) -> list[dict[str, object]]:
    rng = random.Random(seed)
    drawn: list[dict[str, object]] = []
    for group in GROUPS:
        files = group_files(group)
        rng.shuffle(files)
        taken = 0
        for path in files:
            if taken >= per_group:
                break
            doc = read_document(path)
            if doc is None or doc.path in excluded:
                continue
            if not any(holds_a_procedure(section_text(doc, heading) or "") for _, heading in heading_paths(doc)):
                continue
            taken += 1
            drawn.append({"group": group, "file": doc.path, "title": doc.title, "style": rng.choice(PROCEDURE_CARDS)})
    for position, entry in enumerate(drawn):
        entry["id"] = f"{prefix}-{position + 1:03d}"
        entry["writer"] = position % writers + 1
    return drawn


def writer_packet(entries: list[dict[str, object]]) -> str:
    lines = [
        "# Procedure questions from document titles",
        "",
        "For each entry you see only a document's title and its file name. Write the one question an",
        "operator on shift would ask for the steps of a job such a document should cover, in the style card's",
        "way of typing. You have not read the document: do not open it, and do not guess its headings.",
        "",
    ]
    for entry in entries:
        parts = str(entry["file"]).split("/")
        where = f"{parts[0]} … {'/'.join(parts[-2:])}" if len(parts) > 2 else "/".join(parts)
        lines += [
            f"## {entry['id']}",
            f"- file: {where}",
            f"- title: {entry['title']}",
            f"- style: {entry['style']}",
            "",
        ]
    return "\n".join(lines)


def gold_packet(question: dict[str, object]) -> str:
    doc = read_document(resolve(str(question["file"])))
    if doc is None:
        raise SystemExit(f"{question['file']}: cannot be read")
    parts = [
        f"## {question['id']}",
        f"- question: {question['question']}",
        f"- gold_file: `{doc.path}`",
        "",
        "Every section of the document (heading path, copy it exactly as gold_section; then its own text):",
        "",
    ]
    for _, heading in heading_paths(doc):
        text = section_text(doc, heading) or ""
        words = text.split(" ")
        if len(text.split()) > MAX_SECTION_WORDS:
            text = " ".join(words[:MAX_SECTION_WORDS]) + " […]"
        parts += [f"### `{heading}`", "```text", text, "```", ""]
    return "\n".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    first = commands.add_parser("draw")
    first.add_argument("--seed", type=int, default=58)
    first.add_argument("--per-group", type=int, default=12)
    first.add_argument("--writers", type=int, default=2)
    first.add_argument("--exclude", type=Path, action="append", default=[], help="a set whose gold files are not drawn")
    first.add_argument("--prefix", default="pt", help="id prefix (pt: procedures_titles.jsonl)")
    first.add_argument("out", type=Path)
    second = commands.add_parser("gold")
    second.add_argument("questions", type=Path)
    second.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "draw":
        drawn = draw(args.seed, args.per_group, args.writers, gold_files(args.exclude), args.prefix)
        (args.out / "draw.jsonl").write_text("".join(json.dumps(e) + "\n" for e in drawn), encoding="utf-8")
        for writer in sorted({int(str(e["writer"])) for e in drawn}):
            mine = [e for e in drawn if e["writer"] == writer]
            (args.out / f"titles-writer-{writer}.md").write_text(writer_packet(mine), encoding="utf-8")
        print(f"drew {len(drawn)} documents into {args.out}")
        return 0
    questions = [json.loads(line) for line in args.questions.read_text(encoding="utf-8").splitlines() if line.strip()]
    for question in questions:
        (args.out / f"gold-{question['id']}.md").write_text(gold_packet(question), encoding="utf-8")
    print(f"wrote {len(questions)} gold packets into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
