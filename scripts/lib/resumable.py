"""A long benchmark's JSON-lines cache: one entry a line, each with its "key", appended as it goes, so a run
that stops goes on where it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def cached_entries(path: Path) -> dict[str, dict[str, Any]]:
    """The entries already in the cache at `path`, by key (none when it does not exist yet)."""
    if not path.exists():
        return {}
    entries = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {entry["key"]: entry for entry in entries}
