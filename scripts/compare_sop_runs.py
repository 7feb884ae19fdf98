"""Two runs of `scripts/bench_sop.py` (their --json files) side by side, row by row.

Prints, for each set both runs hold (procedures, heldout, mtrag/quoted/clapnq, …): the summary measures
that differ, and every answer whose outcome changed (kind, refused, sections, words, key phrases or steps
shown, right document), marked gained, lost or moved by the set's gold. Times are not compared.

Usage: python scripts/compare_sop_runs.py BEFORE.json AFTER.json [--json OUT]
Example: python scripts/compare_sop_runs.py scripts/results/bench_sop_hidden_after.json \
             scripts/results/bench_sop_embedder_onnx.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: make `scripts.lib` importable

from scripts.lib.report import save_report
from scripts.lib.sop_runs import compare_runs, report_lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--json", type=Path, default=None, help="Also write the comparison to this file.")
    args = parser.parse_args()
    comparisons = compare_runs(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    if not comparisons:
        print(f"no set is in both {args.before} and {args.after}", file=sys.stderr)
        return 1
    print("\n".join(report_lines(comparisons)))
    save_report([asdict(comparison) for comparison in comparisons], args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
