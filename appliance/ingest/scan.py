"""Find the files under a source and give each its display path.

A document's path as shown to users (and used in citations) is the source folder's own name
followed by the path inside it: `docs_corpus/SOP-CL-004.md`. Hidden files and folders (.git,
editor swap files) are not documents.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FoundFile:
    display_path: str
    abs_path: Path
    size: int
    mtime: float
    error: str | None = None  # stat failed (symlink loop, permission): reported as failed
    skip: str | None = None  # deliberately not read (a symlink when links are not followed)


def display_prefix(source: Path) -> str:
    return source.name


def scan_source(source: Path, *, follow_symlinks: bool = False) -> list[FoundFile]:
    """Every candidate file under `source` (or `source` itself when it is a file), sorted."""
    if source.is_file():
        return [_found(source, source.name, follow_symlinks)]
    found: list[FoundFile] = []
    prefix = display_prefix(source)
    for root, dirs, files in os.walk(source, followlinks=follow_symlinks):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(root) / name
            relative = path.relative_to(source).as_posix()
            found.append(_found(path, f"{prefix}/{relative}", follow_symlinks))
    return sorted(found, key=lambda f: f.display_path)


def _found(path: Path, display: str, follow_symlinks: bool) -> FoundFile:
    if path.is_symlink() and not follow_symlinks:
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            return FoundFile(display, path, 0, 0.0, f"broken or looping symbolic link ({_reason(exc)})")
        return FoundFile(
            display, path, 0, 0.0, skip=f"symbolic link to {target} not followed (setting ingest.follow_symlinks)"
        )
    try:
        stat = path.stat()
    except OSError as exc:
        return FoundFile(display, path, 0, 0.0, f"cannot read file metadata ({_reason(exc)})")
    return FoundFile(display, path, stat.st_size, stat.st_mtime)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__
