"""Seeded section draws: the starting points of the section-choice training set (choice_train.jsonl).

A fourth writing method (scripts/qa/README.md): nobody picks the subject. Documents are drawn uniformly
within each corpus group, then one section of each drawn document (a heading with at least --min-words
words under it); every drawn section gets a seeded *style card* (how the operator types) and is written up
in a packet: the document's whole outline with the target marked, the target section's own text, and for a
part of a larger section its parent's text. The writer reads the packet and writes, in the style asked, the
questions an operator would ask that this section answers (the procedure, one part, a fact, why), without
copying the section's wording; `check_choice.py` then flags copied wording and verifies every gold phrase.

The groups are the leave-one-corpus-out folds of scripts/fit_choice.py: docs_corpus, openshift,
gitlab, and incident-response + prometheus-operator. Sections that are gold answers of procedures.jsonl
are never drawn (that set stays an evaluation set).

A second draw (--procedures) takes only sections that hold a procedure by their layout (at least three
numbered steps, or at least half of their items steps, commands, warnings or hold points: text/layout.py), so
that the set holds as many procedure questions, whole jobs and single parts, as an SOP appliance is asked.

Usage: python scripts/qa/draw_sections.py --seed 40 --writers 3 --per-group 14 OUTDIR
       python scripts/qa/draw_sections.py --procedures --seed 41 --writers 2 --per-group 10 --first-writer 4 OUTDIR
Writes OUTDIR/writer-N.md (one packet per drawn section) and OUTDIR/draw.jsonl (what was drawn).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.ingest.document import LoadedDocument
from appliance.ingest.loaders import load_document
from appliance.text.layout import layout_items
from scripts.qa.procedure_outlines import DOCS_CORPUS, RUNBOOKS, SEPARATOR, display_path, heading_paths, section_text

QA = Path(__file__).resolve().parent
GROUPS: dict[str, tuple[str, ...]] = {
    "docs_corpus": ("docs_corpus",),
    "openshift": ("openshift-runbooks",),
    "gitlab": ("gitlab-com-runbooks",),
    "ir-prometheus": ("incident-response-docs", "prometheus-operator-runbooks"),
}
# How the operator types: one card per drawn section, drawn with it.
STYLE_CARDS = (
    "terse, lower case, no question mark, one typo",
    "a narrative lead-in (one or two sentences of what is happening on shift), then the question",
    "the alarm / alert / error text as it would be pasted from a screen or pager, plus a few words",
    "a full, formal sentence",
    "asks for the whole job from the start ('walk me through…', 'the full process…', 'everything I need to do to…')",
    "shop-floor or slang words for the equipment or the action, not the document's terms",
    "an abbreviation or acronym for the thing (as operators say it), and a synonym for the action",
    "asks about one specific condition, step or case, not the whole job",
    "a 'why' or 'what happens if' question about a rule, a warning or a setting",
    "asks for a number, limit, setpoint, time or name that the section states",
)
MAX_TARGET_WORDS = 1600
MAX_PARENT_WORDS = 1600


def group_files(group: str) -> list[Path]:
    files: list[Path] = []
    for folder in GROUPS[group]:
        if folder == "docs_corpus":
            files += sorted(p for p in DOCS_CORPUS.iterdir() if p.is_file())
        else:
            files += sorted((RUNBOOKS / folder).rglob("*.md"))
    return files


def excluded_pairs(sets: Sequence[str] = ("procedures.jsonl",)) -> set[tuple[str, str]]:
    """(file, heading path) of every gold section of the given question sets of scripts/qa/."""
    pairs = set()
    for name in sets:
        for line in (QA / name).read_text(encoding="utf-8").splitlines():
            entry = json.loads(line) if line.strip() else {}
            if entry.get("gold_file"):
                pairs.add((entry["gold_file"], entry["gold_section"]))
    return pairs


ACTIONABLE = ("step", "code", "warning", "caution", "hold")


def holds_a_procedure(text: str) -> bool:
    """At least three numbered steps, or at least half of its items an operator acts on (text/layout.py)."""
    items = layout_items(text)
    numbered = sum(1 for item in items if item.numbered)
    acting = sum(1 for item in items if item.kind in ACTIONABLE)
    return numbered >= 3 or (len(items) >= 3 and acting >= 0.5 * len(items))


def candidate_sections(
    doc: LoadedDocument, min_words: int, excluded: set[tuple[str, str]], procedures: bool = False
) -> list[tuple[int, str]]:
    found = []
    for level, heading in heading_paths(doc):
        if (doc.path, heading) in excluded:
            continue
        text = section_text(doc, heading) or ""
        if len(text.split()) >= min_words and (not procedures or holds_a_procedure(text)):
            found.append((level, heading))
    return found


def read_document(path: Path) -> LoadedDocument | None:
    try:
        return load_document(path, display_path(path))
    except Exception:  # an unreadable runbook is simply never drawn
        return None


def draw(
    seed: int, writers: int, per_group: int, min_words: int, procedures: bool = False, first_writer: int = 1
) -> list[dict[str, object]]:
    rng = random.Random(seed)
    excluded = excluded_pairs()
    drawn: list[dict[str, object]] = []
    for group in GROUPS:
        files = group_files(group)
        rng.shuffle(files)
        wanted = writers * per_group
        taken: set[tuple[str, str]] = set()
        # docs_corpus has 27 documents for writers × per_group draws: later rounds draw another section of a
        # document already drawn; the runbook groups have hundreds of documents and take one round.
        for _round in range(8 if group == "docs_corpus" else 1):
            for path in files:
                if len(taken) >= wanted:
                    break
                doc = read_document(path)
                if doc is None:
                    continue
                sections = [
                    s for s in candidate_sections(doc, min_words, excluded, procedures) if (doc.path, s[1]) not in taken
                ]
                if not sections:
                    continue
                level, heading = rng.choice(sections)
                taken.add((doc.path, heading))
                drawn.append(
                    {
                        "group": group,
                        "file": doc.path,
                        "title": doc.title,
                        "section": heading,
                        "level": level,
                        "style": rng.choice(STYLE_CARDS),
                    }
                )
    for position, entry in enumerate(drawn):
        entry["writer"] = position % writers + first_writer
    return drawn


def outline(doc: LoadedDocument, target: str) -> str:
    lines = []
    for level, heading in heading_paths(doc):
        words = len((section_text(doc, heading) or "").split())
        mark = "   <== TARGET" if heading == target else ""
        name = heading.split(SEPARATOR)[-1]
        lines.append(f"{'  ' * (level - 1)}- {name}  ({words} words){mark}")
    return "\n".join(lines)


def _capped(text: str, limit: int) -> str:
    words = text.split(" ")
    if len(text.split()) <= limit:
        return text
    return " ".join(words[:limit]) + f"\n[… cut here: the section goes on for {len(text.split()) - limit} more words]"


def packet(number: str, entry: dict[str, object]) -> str:
    path = DOCS_CORPUS.parent / str(entry["file"]) if str(entry["file"]).startswith("docs_corpus/") else None
    doc = load_document(path or RUNBOOKS / str(entry["file"]), str(entry["file"]))
    target = str(entry["section"])
    parts = [
        f"## Packet {number}",
        f"- file: `{entry['file']}`",
        f"- document title: {doc.title}",
        f"- target section (gold_section, copy exactly): `{target}`",
        f"- style card: **{entry['style']}**",
        "",
        "### Outline of the whole document",
        outline(doc, target),
        "",
        "### The target section's text (as the appliance's loaders read it)",
        "```text",
        _capped(section_text(doc, target) or "", MAX_TARGET_WORDS),
        "```",
    ]
    heading_parts = target.split(SEPARATOR)
    if len(heading_parts) > 1:
        parent = SEPARATOR.join(heading_parts[:-1])
        parts += [
            "",
            f"### Its parent section `{parent}` (for a whole-job question; do not write about other parts)",
            "```text",
            _capped(section_text(doc, parent) or "", MAX_PARENT_WORDS),
            "```",
        ]
    return "\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--per-group", type=int, default=14)
    parser.add_argument("--min-words", type=int, default=40)
    parser.add_argument("--procedures", action="store_true", help="Only sections that hold a procedure.")
    parser.add_argument("--first-writer", type=int, default=1, help="The number of the first writer's packets.")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    drawn = draw(args.seed, args.writers, args.per_group, args.min_words, args.procedures, args.first_writer)
    name = "draw-procedures.jsonl" if args.procedures else "draw.jsonl"
    with (args.out / name).open("w", encoding="utf-8") as handle:
        for entry in drawn:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    for writer in range(args.first_writer, args.first_writer + args.writers):
        mine = [entry for entry in drawn if entry["writer"] == writer]
        text = "\n".join(packet(f"w{writer}-{n:03d}", entry) for n, entry in enumerate(mine, start=1))
        (args.out / f"writer-{writer}.md").write_text(text, encoding="utf-8")
        print(f"writer {writer}: {len(mine)} packets", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
