"""Seeded draws of pointers for the section-choice training set: table rows and lines of docs_corpus documents
that send the operator to another SOP ("… | SOP-FLT-002 |", "see SOP-OPS-001"), each written up with the SOP
it names, so that a writer can ask what the row's alarm or situation asks and name, as gold, the section of the
named SOP that holds the steps. The alarm guide points; the SOP holds the procedure; the choice must learn to
take the SOP (issue 40: "the SOP that holds the steps wins over the guide that points to it").

Alarm and tag names that any evaluation set's question names are never drawn, so those sets stay unseen.

Usage: python scripts/qa/draw_pointers.py --seed 42 --count 30 --writer 6 OUTDIR
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import appliance  # noqa: F401  (offline environment first)
from appliance.ingest.loaders import load_document
from scripts.qa.draw_sections import outline
from scripts.qa.procedure_outlines import DOCS_CORPUS

QA = Path(__file__).resolve().parent
_SOP = re.compile(r"\bSOP-[A-Z]+-\d{3}\b")
_TAG = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+){1,}\b")
EVALUATION_SETS = ("procedures.jsonl", "demo_corpus.jsonl", "runbooks_heldout.jsonl", "runbooks_sampled.jsonl")


def evaluation_tags() -> set[str]:
    tags: set[str] = set()
    for name in EVALUATION_SETS:
        for line in (QA / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                tags.update(_TAG.findall(json.loads(line)["question"]))
    return tags


def pointers() -> list[tuple[str, str, str]]:
    """(document, line, named SOP) for every line of docs_corpus that names another SOP."""
    found = []
    for path in sorted(DOCS_CORPUS.iterdir()):
        doc = load_document(path, f"docs_corpus/{path.name}")
        own = set(_SOP.findall(doc.title))
        for block in doc.blocks:
            for line in block.text.splitlines():
                for named in sorted(set(_SOP.findall(line)) - own):
                    found.append((doc.path, line.strip(), named))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--writer", type=int, default=6)
    args = parser.parse_args()
    unseen = evaluation_tags()
    candidates = [p for p in pointers() if not (set(_TAG.findall(p[1])) & unseen)]
    drawn = random.Random(args.seed).sample(candidates, min(args.count, len(candidates)))
    files = {
        p.name.split("-", 3)[0] + "-" + p.name.split("-")[1] + "-" + p.name.split("-")[2]: p
        for p in DOCS_CORPUS.iterdir()
    }
    packets = []
    for number, (source, line, named) in enumerate(drawn, start=1):
        target = files.get(named)
        if target is None:
            continue
        doc = load_document(target, f"docs_corpus/{target.name}")
        text = "\n\n".join(block.text for block in doc.blocks)
        packets.append(
            "\n".join(
                [
                    f"## Packet w{args.writer}-{number:03d}",
                    f"- the pointer's document: `{source}`",
                    f"- the pointer's line: `{line}`",
                    f"- the SOP it names: `{doc.path}` ({doc.title})",
                    "",
                    "### Outline of the named SOP (gold_section paths: title › … as printed)",
                    outline(doc, ""),
                    "",
                    "### The named SOP's text",
                    "```text",
                    text,
                    "```",
                    "",
                ]
            )
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"writer-{args.writer}.md").write_text("\n".join(packets), encoding="utf-8")
    print(f"{len(packets)} packets of {len(candidates)} pointers", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
