"""Errors raised while reading evaluation data (BEIR folders, TREC run files)."""

from __future__ import annotations

from pathlib import Path

from appliance.errors import ApplianceError


class EvaluationError(ApplianceError):
    """Base class for failures of the evaluation package."""


class DataFileError(EvaluationError):
    """A data file is missing or malformed; the message names the file and, when known, the line."""

    def __init__(self, path: str | Path, line: int | None, reason: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = Path(path)
        self.line = line
        self.reason = reason


class SplitNotFound(DataFileError):
    """The requested qrels split has no file; ``available`` lists the splits that do."""

    def __init__(self, path: str | Path, split: str, available: list[str]) -> None:
        present = ", ".join(available) if available else "none"
        super().__init__(path, None, f"no qrels for split {split!r} (splits present: {present})")
        self.split = split
        self.available = available
