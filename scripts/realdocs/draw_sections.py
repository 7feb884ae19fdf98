"""The seeded draw the real-document questions were written from (scripts/realdocs/questions.jsonl).

Pass 1 of the method sees only what this prints for each drawn section: the document's title,
organisation and field, and the section's place in the labelled heading tree (its path, its
siblings and children) - never the body. Pass 2 copies the step phrases from the section's text.

    python scripts/realdocs/draw_sections.py [--seed 41] [--count 40]

A section is drawable when its label lists at least three numbered steps; at most two
sections are drawn from one document.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent


def drawable(labels_dir: Path) -> list[tuple[dict, dict]]:
    found = []
    for path in sorted(labels_dir.glob("*.json")):
        label = json.loads(path.read_text(encoding="utf8"))
        for steps in label["steps"]:
            if steps["section"] and len(steps["first_words"]) >= 3:
                found.append((label, steps))
    return found


def outline_of(label: dict, section: str) -> list[str]:
    """The heading tree around `section`: its ancestors, siblings and children (titles only)."""
    paths = [h["path"] for h in label["headings"]]
    parent = section.rsplit(" › ", 1)[0] if " › " in section else ""
    depth = section.count(" › ")
    lines = []
    for path in paths:
        near = path.count(" › ") == depth and (path.rsplit(" › ", 1)[0] if " › " in path else "") == parent
        child = path.startswith(section + " › ") and path.count(" › ") == depth + 1
        ancestor = section.startswith(path + " › ")
        if near or child or ancestor:
            lines.append(("→ " if path == section else "  ") + path)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--labels", type=Path, default=HERE / "labels")
    args = parser.parse_args(argv)
    pool = drawable(args.labels)
    shuffled = random.Random(args.seed).sample(pool, len(pool))
    per_document: dict[str, int] = {}
    drawn: list[tuple[dict, dict]] = []
    for label, steps in shuffled:  # at most two sections of one document, so that no manual dominates
        if per_document.get(label["id"], 0) < 2 and len(drawn) < args.count:
            per_document[label["id"]] = per_document.get(label["id"], 0) + 1
            drawn.append((label, steps))
    sources = {s["id"]: s for s in json.loads((HERE / "sources.json").read_text(encoding="utf8"))}
    for label, steps in drawn:
        source = sources[label["id"]]
        title = label["document_control"].get("title") or source["path"]
        print(f"## {label['id']} ({source['organisation']}; {source['field']}): {title}")
        print("\n".join(outline_of(label, steps["section"])))
        print()
    print(f"{len(drawn)} of {len(pool)} drawable sections", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
