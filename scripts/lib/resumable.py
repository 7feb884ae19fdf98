"""A long benchmark's JSON-lines cache: one entry a line, each with its "key", appended as it goes, so a run
that stops goes on where it was."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any


def cached_entries(path: Path) -> dict[str, dict[str, Any]]:
    """The entries already in the cache at `path`, by key (none when it does not exist yet)."""
    if not path.exists():
        return {}
    entries = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {entry["key"]: entry for entry in entries}


def add_cached_run_arguments(
    parser: argparse.ArgumentParser, repo: Path, cache: Path, results: Path, fresh_when: str
) -> None:
    """The options every cached benchmark takes: the bench home, the model store, its cache (--fresh: start it
    again, when `fresh_when`) and the results file."""
    parser.add_argument("--home", type=Path, default=repo / ".appliance" / "bench-sop")
    parser.add_argument(
        "--models-dir", type=Path, default=Path(os.environ.get("APPLIANCE_MODELS_DIR", repo / "models"))
    )
    parser.add_argument("--cache", type=Path, default=cache)
    parser.add_argument("--fresh", action="store_true", help=f"search every question again ({fresh_when})")
    parser.add_argument("--json", type=Path, default=results, help=f"every figure [{results}]")


def start_fresh_if_asked(args: argparse.Namespace) -> None:
    """With --fresh, the cache goes: every entry is computed again."""
    if args.fresh and args.cache.exists():
        args.cache.unlink()
