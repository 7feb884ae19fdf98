"""The two inputs of the procedure set's writing method (procedures.jsonl): outlines, then section texts.

The procedure set is written in two hands that never see each other's input:

1. `outlines` prints only the heading outline of each document (title and numbered heading paths, no
   body text): every document of docs_corpus/ and a seeded draw of runbooks with at least --min-headings
   headings. The question writer reads only this and writes the question an operator on shift would ask
   for a section that looks like something an operator does, naming the file and the heading path.
2. `sections` takes those (file, heading path) pairs, without the questions, and writes each section's
   own text (its heading, its body and its subsections, as the project's loaders read the file) to one
   file per entry. The gold writer reads only these and copies 4-8 verbatim step phrases from each.

Usage: python scripts/qa/procedure_outlines.py outlines [--seed 35] [--runbooks-count 70] > outlines.txt
       python scripts/qa/procedure_outlines.py sections PAIRS.jsonl OUTDIR
PAIRS.jsonl lines: {"id": ..., "gold_file": "docs_corpus/…" or "<runbooks folder>/…", "gold_section": "A › B"}.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import appliance  # noqa: F401  (offline environment first)
from appliance.ingest.document import LoadedDocument
from appliance.ingest.loaders import load_document

REPO = Path(__file__).resolve().parent.parent.parent
DOCS_CORPUS = REPO / "docs_corpus"
RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
SEPARATOR = " › "


def _heading_text(text: str) -> str:
    return " ".join(text.lstrip("#").split())


def heading_paths(doc: LoadedDocument) -> list[tuple[int, str]]:
    """(level, heading path) of every heading, in document order."""
    stack: list[tuple[int, str]] = []
    paths: list[tuple[int, str]] = []
    for block in doc.blocks:
        if block.kind != "heading":
            continue
        while stack and stack[-1][0] >= block.level:
            stack.pop()
        stack.append((block.level, _heading_text(block.text)))
        paths.append((block.level, SEPARATOR.join(text for _, text in stack)))
    return paths


def section_text(doc: LoadedDocument, section: str) -> str | None:
    """The text of the section whose heading path is `section`: its heading, body and subsections."""
    stack: list[tuple[int, str]] = []
    start_level: int | None = None
    parts: list[str] = []
    for block in doc.blocks:
        if block.kind == "heading":
            if start_level is not None and block.level <= start_level:
                break
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, _heading_text(block.text)))
            if start_level is None and SEPARATOR.join(text for _, text in stack) == section:
                start_level = block.level
        if start_level is not None:
            parts.append(block.text)
    return "\n\n".join(parts) if parts else None


def display_path(path: Path) -> str:
    if path.is_relative_to(DOCS_CORPUS):
        return f"docs_corpus/{path.relative_to(DOCS_CORPUS).as_posix()}"
    return path.relative_to(RUNBOOKS).as_posix()


def resolve(display: str) -> Path:
    if display.startswith("docs_corpus/"):
        return DOCS_CORPUS / display.removeprefix("docs_corpus/")
    return RUNBOOKS / display


def outlines(seed: int, runbooks_count: int, min_headings: int) -> None:
    chosen = sorted(p for p in DOCS_CORPUS.iterdir() if p.is_file())
    pool = []
    for path in sorted(RUNBOOKS.rglob("*.md")):
        try:
            doc = load_document(path, display_path(path))
        except Exception:
            continue
        if len(heading_paths(doc)) >= min_headings:
            pool.append(path)
    chosen += random.Random(seed).sample(pool, min(runbooks_count, len(pool)))
    for path in chosen:
        doc = load_document(path, display_path(path))
        print(f"== {display_path(path)}")
        print(f"   title: {doc.title}")
        for level, heading in heading_paths(doc):
            print(f"   {'  ' * (level - 1)}{heading}")
        print()


def sections(pairs: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    missing = 0
    for line in pairs.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        doc = load_document(resolve(entry["gold_file"]), entry["gold_file"])
        text = section_text(doc, entry["gold_section"])
        if text is None:
            print(f"{entry['id']}: no section {entry['gold_section']!r} in {entry['gold_file']}", file=sys.stderr)
            missing += 1
            continue
        header = f"file: {entry['gold_file']}\nsection: {entry['gold_section']}\n\n"
        (out / f"{entry['id']}.txt").write_text(header + text + "\n", encoding="utf-8")
    return 1 if missing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    first = commands.add_parser("outlines")
    first.add_argument("--seed", type=int, default=35)
    first.add_argument("--runbooks-count", type=int, default=70)
    first.add_argument("--min-headings", type=int, default=3)
    second = commands.add_parser("sections")
    second.add_argument("pairs", type=Path)
    second.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.command == "outlines":
        outlines(args.seed, args.runbooks_count, args.min_headings)
        return 0
    return sections(args.pairs, args.out)


if __name__ == "__main__":
    sys.exit(main())
