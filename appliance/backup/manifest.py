"""The manifest of a backup: what it holds (every file with its size and sha256), what it was taken from,
and a digest of the manifest itself, so that an edited manifest, an edited or missing file, or a file added
afterwards is each refused by name before a restore touches anything.

A backup is complete exactly when its manifest exists: the manifest is the last file written. The digest is
not a signature (whoever can rewrite the files can rewrite the manifest too); it catches a manifest edited
by hand or damaged, and the sha256 of each file catches everything else.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance.durable import write_atomically
from appliance.errors import BackupError

MANIFEST_NAME = "manifest.json"
FORMAT = "appliance-backup"
VERSION = 1
_BLOCK = 1 << 20


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative to the backup's root, '/'-separated
    size: int
    sha256: str


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def list_files(root: Path) -> list[FileEntry]:
    """Every regular file under `root` except the manifest, sorted, with its size and sha256."""
    entries = []
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            raise BackupError(f"{path}: a symbolic link in a backup: refusing it")
        if path.is_file() and path.relative_to(root).as_posix() != MANIFEST_NAME:
            entries.append(FileEntry(path.relative_to(root).as_posix(), path.stat().st_size, file_sha256(path)))
    return entries


def _digest(body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def write_manifest(root: Path, about: dict[str, Any]) -> dict[str, Any]:
    """Hash every file under `root` and write the manifest last (atomically: temp file + rename)."""
    files = [entry.__dict__ for entry in list_files(root)]
    body = {"format": FORMAT, "version": VERSION, **about, "files": files}
    manifest = {**body, "digest": _digest(body)}
    write_atomically(root / MANIFEST_NAME, json.dumps(manifest, indent=1) + "\n", mode=0o600)
    return manifest


def read_manifest(root: Path) -> dict[str, Any]:
    """The manifest of the backup at `root`, checked against every file; BackupError naming what fails."""
    if not root.is_dir():
        raise BackupError(f"{root}: no such backup folder")
    path = root / MANIFEST_NAME
    if not path.is_file():
        raise BackupError(
            f"{path} is missing: {root} is not a complete backup (one that was interrupted, or not a backup at all)"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BackupError(f"{path} is damaged (not JSON: {exc}): refusing the backup") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{path} is not the manifest of an appliance backup")
    if manifest.get("version") != VERSION:
        raise BackupError(f"{path}: backup format version {manifest.get('version')!r}; this appliance reads {VERSION}")
    body = {key: value for key, value in manifest.items() if key != "digest"}
    if manifest.get("digest") != _digest(body):
        raise BackupError(f"{path} was modified after the backup was written (its digest does not match)")
    _check_files(root, manifest["files"])
    return manifest


def _check_files(root: Path, files: list[dict[str, Any]]) -> None:
    listed = set()
    for entry in files:
        relative = str(entry["path"])
        listed.add(relative)
        path = root / relative
        if relative.startswith("/") or ".." in relative.split("/") or not path.is_file():
            raise BackupError(f"{path} is missing: the backup is partial (listed in {MANIFEST_NAME})")
        if path.stat().st_size != entry["size"]:
            raise BackupError(
                f"{path} has {path.stat().st_size} bytes, the manifest says {entry['size']}: the file was changed"
            )
        if file_sha256(path) != entry["sha256"]:
            raise BackupError(f"{path} does not match its sha256 in {MANIFEST_NAME}: the file was changed")
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if (path.is_file() or path.is_symlink()) and relative != MANIFEST_NAME and relative not in listed:
            raise BackupError(f"{path} is not in {MANIFEST_NAME}: something was added to the backup")
