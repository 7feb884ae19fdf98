"""Ask, through the whole pipeline, unanswerable variants that the evidence decision lets through.

Reads a `scripts/bench_perturbations.py --json` output, draws --count variants of unanswerable questions
that were newly let through (seeded), asks each with the real Answerer and the default models, and records
whether the pipeline declined it after all (the model or the checks after generation), with its answer.

Usage: python scripts/ask_variants.py [--perturbations JSON] [--count 12] [--seed 16] --out JSON
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

import appliance  # noqa: F401  (offline environment first)
from appliance.answer.answerer import Answerer
from appliance.config import load_settings
from appliance.models.generation import load_generator

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--perturbations", type=Path, default=REPO / "scripts/results/perturbations_graded.json")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-answers" / "runbooks")
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    flipped = json.loads(args.perturbations.read_text())["flipped"]
    let_through = [r for r in flipped if not r["answerable"] and not r["refused"] and r["set_name"] != "demo"]
    random.Random(args.seed).shuffle(let_through)
    environ = {**os.environ, "APPLIANCE_HOME": str(args.home)}
    environ.pop("APPLIANCE_CONFIG", None)
    settings = load_settings(environ)
    answerer = Answerer(settings, generator=load_generator(settings))
    rows = []
    for row in let_through[: args.count]:
        result = answerer.ask(row["text"])
        rows.append(
            {
                "set": row["set_name"],
                "id": row["id"],
                "kind": row["kind"],
                "text": row["text"],
                "declined": result.refused,
                "reason": result.refusal_reason,
                "answer": result.answer[:300],
            }
        )
        print(f"{row['kind']}: declined={result.refused} {row['text'][:70]}", file=sys.stderr, flush=True)
    answerer.close()
    report = {"asked": len(rows), "declined": sum(r["declined"] for r in rows), "rows": rows}
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
