"""Draw seeded random passages from the runbooks: the starting points of runbooks_sampled.jsonl.

The sampled set is written from passages drawn here, not from runbooks a writer chose: every
Markdown paragraph of at least --min-chars characters (outside code fences) is equally likely, so
the questions land where the corpus has text, not where a writer knows an alert. For each passage
the writer states the operator's symptom in other words than the passage's (or pastes the pager
line), and checks that the passage's runbook answers it; a passage that answers nothing an
operator would ask is skipped, and the next one is taken.

Usage: python scripts/qa/sample_passages.py [--seed 16] [--count 140] [--runbooks DIR] > passages.txt
Stdlib only; prints each passage with its path and heading.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_RUNBOOKS = REPO.parent / "shared" / "data" / "runbooks"
_HEADING = re.compile(r"^(#{1,6})\s+(.*)")


def passages(path: Path, min_chars: int) -> list[tuple[str, str]]:
    """(heading, paragraph) pairs of one Markdown file, code fences left out."""
    found: list[tuple[str, str]] = []
    block: list[str]
    heading, block, fenced = "", [], False
    for line in [*path.read_text(encoding="utf-8", errors="replace").splitlines(), ""]:
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        match = _HEADING.match(line)
        if match or not line.strip():
            text = " ".join(block).strip()
            if len(text) >= min_chars:
                found.append((heading, text))
            block = []
            if match:
                heading = match.group(2).strip()
            continue
        block.append(line.strip())
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runbooks", type=Path, default=DEFAULT_RUNBOOKS)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--count", type=int, default=140)
    parser.add_argument("--min-chars", type=int, default=160)
    args = parser.parse_args()
    pool: list[tuple[str, str, str]] = []
    for path in sorted(args.runbooks.rglob("*.md")):
        relative = path.relative_to(args.runbooks).as_posix()
        pool += [(relative, heading, text) for heading, text in passages(path, args.min_chars)]
    drawn = random.Random(args.seed).sample(pool, min(args.count, len(pool)))
    print(f"# {len(pool)} passages; seed {args.seed}; {len(drawn)} drawn", file=sys.stderr)
    for number, (relative, heading, text) in enumerate(drawn, start=1):
        print(f"=== {number:03d} {relative} § {heading}\n{text[:900]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
