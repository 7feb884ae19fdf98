"""The end every benchmark shares: its figures as JSON on stdout and, with --json FILE, in that file.

A benchmark prints its side-by-side lines while it runs; the JSON is the whole record, the same on the
terminal and in the file (scripts/results/ keeps the ones the docs quote).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def save_report(report: Any, path: Path | None, *, indent: int = 1) -> None:
    """Write the figures to `path` (nothing without one); a long run calls it after each stage, so a
    stopped run keeps what it measured."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=indent) + "\n")


def finish(report: Any, path: Path | None, *, indent: int = 1) -> int:
    """Print the figures, save them to `path` when given; the exit status for `sys.exit(main())`."""
    print(json.dumps(report, indent=indent))
    save_report(report, path, indent=indent)
    return 0
