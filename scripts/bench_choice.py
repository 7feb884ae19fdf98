"""Today's section choice against another version's, side by side in one run, on the same questions, indexes
and machine: scripts/bench_sop.py run twice, once on this checkout and once on a git ref checked out into a
temporary worktree (by default the last commit before the fitted choice), each in its own process with this
checkout's virtual environment; then every figure of both, and their ratios.

Usage: python scripts/bench_choice.py [--baseline REF] [--sets procedures,heldout,sampled,demo] [--split all]
       [--perturb] [--json scripts/results/bench_choice.json]
A set the baseline's bench_sop.py does not know (procedures_llm, howtos) is asked of it as its own set scored
the same way ("procedures", "demo"), the file put in place in its throwaway checkout: the same questions and
scoring for both.
Each version indexes the corpora under its own folder of --home (versions may chunk differently); a second run
reuses them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
BASELINE = "4231392"  # main before issue 40: the rule-based chooser with its word lists
FIGURES = (
    "step_recall_mean",
    "complete",
    "gold_document_cited",
    "every_keyphrase_shown",
    "answerable_refused",
    "unanswerable_declined",
    "words_shown_median",
    "first_content_ms_median",
    "total_ms_median",
)


def run(tree: Path, args: argparse.Namespace, out: Path, home: Path) -> dict[str, Any]:
    environ = {**os.environ, "PYTHONPATH": str(tree)}
    if "llm_judge:" in (tree / "appliance" / "config.py").read_text(encoding="utf-8"):
        # The choosers side by side: the LLM judge (on by default since) only where asked for.
        environ.setdefault("APPLIANCE_ANSWER_LLM_JUDGE", "off")
    command = [
        sys.executable,
        str(tree / "scripts" / "bench_sop.py"),
        "--sets",
        args.sets,
        "--split",
        args.split,
        "--home",
        str(home),
        "--models-dir",
        str(args.models_dir),
        "--json",
        str(out),
        *(["--perturb"] if args.perturb else []),
    ]
    subprocess.run(command, cwd=tree, env=environ, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def run_baseline(tree: Path, args: argparse.Namespace, out: Path, home: Path) -> dict[str, Any]:
    """The baseline's own bench_sop.py; a set it does not know is asked as the one of its sets scored the same way
    and on the same index ("procedures" for a procedure set, "demo" for a docs_corpus key-phrase set), the file
    put in place in its throwaway checkout."""
    from scripts.bench_sop import KEYPHRASE_SETS, PROCEDURE_SETS  # this checkout's sets

    stands_in = {name: "procedures" for name in PROCEDURE_SETS} | {"howtos": "demo"}
    files = {**PROCEDURE_SETS, **KEYPHRASE_SETS}
    wanted = args.sets.split(",")
    # A checkout without the set's file predates the set: its bench_sop.py cannot know it.
    extra = [
        name
        for name in wanted
        if name in stands_in and name != stands_in[name] and not (tree / "scripts" / "qa" / files[name]).exists()
    ]
    plain = [name for name in wanted if name not in extra]
    report = run(tree, argparse.Namespace(**{**vars(args), "sets": ",".join(plain)}), out, home) if plain else {}
    for name in extra:
        target = tree / "scripts" / "qa" / files[stands_in[name]]
        target.write_text((REPO / "scripts" / "qa" / files[name]).read_text(encoding="utf-8"))
        asked = argparse.Namespace(**{**vars(args), "sets": stands_in[name]})
        report[name] = run(tree, asked, out.with_suffix(f".{name}.json"), home)[stands_in[name]]
        subprocess.run(["git", "checkout", "--", str(target)], cwd=tree, check=True)
    return report


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and "(" in value:  # "62% (31 of 50)"
        return float(value.split("%")[0]) / 100
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--sets", default="procedures,heldout,sampled,demo")
    parser.add_argument("--split", default="all")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance" / "bench-choice")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
    parser.add_argument("--json", type=Path, default=REPO / "scripts" / "results" / "bench_choice.json")
    parser.add_argument("--perturb", action="store_true", help="Also ask every operator-style variant (both).")
    parser.add_argument(
        "--same-home",
        action="store_true",
        help="Both versions read the indexes under --home (same chunker and schema).",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        # The baseline's checkout stays at one path under --home: its index registers the checkout's
        # docs_corpus/ by path, so a second run in another folder could not reuse it.
        baseline_tree = args.home / "baseline-tree"
        args.home.mkdir(parents=True, exist_ok=True)
        shared = args.home / "shared"  # the checkout reads the shared data at ../shared, as this one does
        if not shared.exists():
            shared.symlink_to(REPO.parent / "shared")
        subprocess.run(["git", "worktree", "remove", "--force", str(baseline_tree)], cwd=REPO, check=False)
        subprocess.run(["git", "worktree", "add", "--detach", str(baseline_tree), args.baseline], cwd=REPO, check=True)
        try:
            homes = (args.home, args.home) if args.same_home else (args.home / "before", args.home / "after")
            before = run_baseline(baseline_tree, args, Path(scratch) / "before.json", homes[0])
            after = run(REPO, args, Path(scratch) / "after.json", homes[1])
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline_tree)], cwd=REPO, check=False)
    table: dict[str, Any] = {}
    for name in args.sets.split(","):
        old = before.get(name, {}).get("quoted", {}).get("summary", {})
        new = after.get(name, {}).get("quoted", {}).get("summary", {})
        rows = {}
        for figure in FIGURES:
            if figure in old or figure in new:
                a, b = _number(old.get(figure)), _number(new.get(figure))
                ratio = round(b / a, 2) if a and b is not None else None
                rows[figure] = {"before": old.get(figure), "after": new.get(figure), "ratio": ratio}
        flips = {
            version: report.get(name, {}).get("perturbations", {}).get("summary")
            for version, report in (("before", before), ("after", after))
        }
        if any(flips.values()):
            rows["perturbations"] = flips
        table[name] = rows
        print(f"\n== {name}")
        for figure, row in rows.items():
            if figure == "perturbations":
                print(f"  perturbations  before {row['before']}\n                 after  {row['after']}")
                continue
            print(f"  {figure:28} {row['before']!s:>22} → {row['after']!s:>22}   ×{row['ratio']}")
    args.json.write_text(
        json.dumps({"baseline": args.baseline, "table": table, "before": before, "after": after}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
