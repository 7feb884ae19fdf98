"""The procedure set procedures_llm.jsonl, written by a sixth method: the local LLM drafts, a hand removes copies.

1. `raw` draws procedure sections with a new seed (draw_sections.py's procedure draw: sections that hold a
   procedure by their layout), 16 per corpus group, never a gold section of procedures.jsonl or
   choice_train.jsonl. For each section the local model (models/generator, Qwen2.5-Coder 1.5B) is shown the
   document title, the heading path and the section text (cut at 700 words) with a seeded style card and asked
   for ONE question an operator on shift would type to get these steps done. The gold is automatic: the file,
   the heading path, and 2-8 verbatim step phrases (the first words of the section's step / command items, in
   order, each verified in the section text as the loaders read it). One line per section, the model's
   question next to its gold.
2. A hand reads each raw question next to its section: keeps it, rewrites copied wording or malformed text
   minimally in operator words, or drops it. The decisions go into an edits file, one line per raw
   line: {"n": <raw line number>, "edit": "kept" | "rewritten" | "dropped", "question": "..."}.
3. `finish` joins the raw file and the edits into procedures_llm.jsonl (ids pl-NNN, split heldout); `check`
   validates it: phrases verbatim and in order, no duplicates, no gold shared with the other two sets, and no
   run of 3 consecutive words (2+ of them content words) shared with the section text or its heading path.

Usage: python scripts/qa/write_procedures_llm.py raw --seed 50 /tmp/llmset/raw.jsonl
       python scripts/qa/write_procedures_llm.py finish RAW.jsonl EDITS.jsonl scripts/qa/procedures_llm.jsonl
       python scripts/qa/write_procedures_llm.py check scripts/qa/procedures_llm.jsonl
The set is measurement only: never tune anything on it.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from appliance.text.layout import layout_items
from appliance.text.stopwords import STOPWORDS
from scripts.qa.check_choice import copied_runs, flat
from scripts.qa.draw_sections import (
    ACTIONABLE,
    GROUPS,
    STYLE_CARDS,
    candidate_sections,
    excluded_pairs,
    group_files,
    read_document,
)
from scripts.qa.procedure_outlines import REPO, SEPARATOR, resolve, section_text

QA = Path(__file__).resolve().parent
MODEL = REPO / "models" / "generator" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# The cards that ask for a procedure (not a value, a why, or a pasted alarm).
CARDS = tuple(card for card in STYLE_CARDS if not any(w in card for w in ("alarm", "'why'", "number", "one specific")))
MAX_WORDS = 700
_MARKER = re.compile(
    r"^\s*(?:\d{1,3}(?:\.\d{1,3})*[.)]|[A-Za-z][.)]|\(?[ivx]{1,4}\)|step\s+\d{1,3}\s*[:.)-]|[-*+•])\s+(?:\[[ xX]\]\s+)?"
)
PROMPT = """Document: {title}
Section: {section}

Section text:
{text}

An operator on shift needs to get the steps above done. Write ONE question that this operator would type \
into the search box. Describe their situation or goal in their own words. Do not repeat the section heading \
and do not copy phrases from the text. Style: {card}. Reply with the question only."""


def gold_pairs() -> set[tuple[str, str]]:
    """(file, heading path) of every gold section of procedures.jsonl and choice_train.jsonl."""
    return excluded_pairs(("procedures.jsonl", "choice_train.jsonl"))


def draw(seed: int, per_group: int, min_words: int = 40) -> list[dict[str, Any]]:
    """Documents uniformly per group, then one procedure section of each, in rounds until per_group are drawn."""
    rng = random.Random(seed)
    excluded = gold_pairs()
    drawn: list[dict[str, Any]] = []
    for group in GROUPS:
        files = group_files(group)
        rng.shuffle(files)
        taken: set[tuple[str, str]] = set()
        for _round in range(8):  # a later round draws another section of a document already drawn
            for path in files:
                doc = read_document(path) if len(taken) < per_group else None
                if doc is None:
                    continue
                sections = [
                    s for _, s in candidate_sections(doc, min_words, excluded, True) if (doc.path, s) not in taken
                ]
                if sections:
                    section = rng.choice(sections)
                    taken.add((doc.path, section))
                    card = rng.choice(CARDS)
                    drawn.append(
                        {"group": group, "file": doc.path, "title": doc.title, "section": section, "card": card}
                    )
    return drawn


def _phrase(item_text: str, kind: str) -> str:
    lines = [line for line in item_text.splitlines() if line.strip() and not line.strip().startswith("```")]
    first = _MARKER.sub("", lines[0]) if lines else ""
    words = re.sub(r"[*`]", "", first).split()[: 9 if kind != "code" else 8]
    while words and (words[-1].casefold() in STOPWORDS or words[-1].count("(") > words[-1].count(")")):
        words.pop()  # no dangling "the" or "(the" at the end
    return " ".join(words).rstrip(",;:")


def step_phrases(text: str, headings: set[str]) -> list[str]:
    """2-8 phrases: the first words of the step / command items (not headings), in order, each once in the section."""
    items = [i for i in layout_items(text) if text[i.start : i.end].strip() not in headings]
    acting = [i for i in items if i.numbered or i.kind in ACTIONABLE]
    if len(acting) < 2:
        acting = [i for i in items if i.kind in ("item", "step", "code")]
    phrases: list[str] = []
    flat_text = flat(text)
    position = -1
    for item in acting:
        phrase = _phrase(text[item.start : item.end], item.kind)
        at = flat_text.find(flat(phrase), position + 1)
        if (len(phrase.split()) < 3 and len(phrase) < 15) or at < 0 or flat_text.count(flat(phrase)) != 1:
            continue
        phrases.append(phrase)
        position = at
    if len(phrases) > 8:  # spread over the whole procedure, first and last kept
        phrases = [phrases[round(k * (len(phrases) - 1) / 7)] for k in range(8)]
    return phrases


def gold_phrases(display: str, section: str) -> list[str]:
    """The step phrases of a section as the loaders read its file."""
    doc = read_document(resolve(display))
    if doc is None:
        return []
    headings = {block.text.strip() for block in doc.blocks if block.kind == "heading"}
    return step_phrases(section_text(doc, section) or "", headings)


def raw(seed: int, per_group: int, out: Path, threads: int = 2) -> int:
    from llama_cpp import Llama

    from appliance.models.generation.cpu_backends import load_cpu_backend

    load_cpu_backend()  # this llama.cpp build loads its CPU variant first
    llm = Llama(model_path=str(MODEL), n_ctx=4096, n_threads=threads, seed=seed, verbose=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with out.open("w", encoding="utf-8") as handle:
        for n, entry in enumerate(draw(seed, per_group), start=1):
            doc = read_document(resolve(entry["file"]))
            text = (section_text(doc, entry["section"]) if doc else None) or ""
            cut = " ".join(text.split(" ")[:MAX_WORDS]) if len(text.split()) > MAX_WORDS else text
            prompt = PROMPT.format(title=entry["title"], section=entry["section"], text=cut, card=entry["card"])
            tick = time.monotonic()
            reply = llm.create_chat_completion(
                messages=[{"role": "user", "content": prompt}], temperature=0.7, max_tokens=60, seed=seed
            )
            question = str(reply["choices"][0]["message"]["content"] or "").strip()  # type: ignore[index]
            entry |= {"n": n, "llm_question": question, "seconds": round(time.monotonic() - tick, 1)}
            entry |= {
                "step_phrases": gold_phrases(entry["file"], entry["section"]),
                "copied": copied_runs(question, text, 3),
            }
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
            handle.flush()
            print(f"{n:3d} {entry['seconds']:5.1f}s {entry['file']} :: {question}", file=sys.stderr, flush=True)
    print(f"done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


def finish(raw_file: Path, edits_file: Path, out: Path) -> int:
    drawn = {e["n"]: e for e in map(json.loads, raw_file.read_text(encoding="utf-8").splitlines())}
    edits = [json.loads(line) for line in edits_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    edits = [edit for edit in edits if edit["edit"] != "dropped"]
    with out.open("w", encoding="utf-8") as handle:
        for number, edit in enumerate(sorted(edits, key=lambda e: e["n"]), start=1):
            entry = drawn[edit["n"]]
            line = {
                "id": f"pl-{number:03d}",
                "question": edit["question"],
                "gold_file": entry["file"],
                "gold_section": entry["section"],
                "step_phrases": gold_phrases(entry["file"], entry["section"]),
                "shape": "procedure",
                "split": "heldout",
                "method": "llm+hand",
                "llm_question": entry["llm_question"],
                "edit": edit["edit"],
                "group": entry["group"],
            }
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    return check(out)


def check(path: Path) -> int:
    errors: list[str] = []
    excluded = gold_pairs()
    seen: set[str] = set()
    sections: set[tuple[str, str]] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        key = (entry["gold_file"], entry["gold_section"])
        doc = read_document(resolve(entry["gold_file"]))
        section = (section_text(doc, entry["gold_section"]) if doc else None) or ""
        text = flat(section)
        heading = entry["gold_section"].replace(SEPARATOR, "\n")
        positions = [text.find(flat(p)) for p in entry["step_phrases"]]
        problems = [
            "section missing" * (not text),
            "gold shared with procedures/choice_train" * (key in excluded),
            "duplicate section" * (key in sections),
            "duplicate question" * (flat(entry["question"]) in seen),
            "not 2-8 phrases" * (not 2 <= len(positions) <= 8),
            "phrase not verbatim" * (-1 in positions),
            "phrases out of order" * (positions != sorted(positions)),
            "copied wording (3+ words)" * bool(copied_runs(entry["question"], f"{section}\n{heading}", 3)),
        ]
        errors += [f"{entry['id']}: {p}" for p in problems if p]
        seen.add(flat(entry["question"]))
        sections.add(key)
    print("\n".join(errors) or f"{len(seen)} questions, no errors")
    return 1 if errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    first = commands.add_parser("raw")
    first.add_argument("out", type=Path)
    first.add_argument("--seed", type=int, default=50)
    first.add_argument("--per-group", type=int, default=16)
    first.add_argument("--threads", type=int, default=2, help="1 while another job holds a core")
    second = commands.add_parser("finish")
    second.add_argument("raw", type=Path)
    second.add_argument("edits", type=Path)
    second.add_argument("out", type=Path)
    third = commands.add_parser("check")
    third.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if args.command == "raw":
        return raw(args.seed, args.per_group, args.out, args.threads)
    if args.command == "finish":
        return finish(args.raw, args.edits, args.out)
    return check(args.file)


if __name__ == "__main__":
    sys.exit(main())
