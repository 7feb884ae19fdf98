"""MANIFEST.json: every file of a bundle with its size and sha256, plus the recipe and versions.

Standard library only (it runs inside the bootstrap installer). The manifest is canonical JSON
(sorted keys, fixed indentation) and holds no time stamp or host name, so the same inputs give the
same bytes; its own sha256 is the bundle's identity (`appliance bundle` prints it, `appliance install
--manifest-sha256` checks it), which a flipped byte anywhere in the archive cannot survive.
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance.errors import ApplianceError

MANIFEST_NAME = "MANIFEST.json"
FORMAT = 1


class BundleError(ApplianceError):
    """A bundle is malformed, tampered with, or cannot be installed here (the message names the member)."""


@dataclass(frozen=True)
class FileEntry:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    data: dict[str, Any]
    raw: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    @property
    def files(self) -> dict[str, FileEntry]:
        return {f["path"]: FileEntry(f["path"], f["size"], f["sha256"]) for f in self.data["files"]}

    @property
    def version(self) -> str:
        return str(self.data["appliance_version"])


def _sha256(path: Path, chunk_size: int = 1 << 20) -> hashlib._Hash:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest


def sha256_of(path: Path) -> str:
    return _sha256(path).hexdigest()


def record_digest(path: Path) -> str:
    """The sha256 as a wheel's RECORD writes it (urlsafe base64, no padding)."""
    return base64.urlsafe_b64encode(_sha256(path).digest()).rstrip(b"=").decode()


def safe_member_name(name: str) -> str:
    """The member's path if it is a plain relative path inside the bundle; BundleError otherwise."""
    if not name or "\\" in name or "\x00" in name or any(ord(c) < 32 for c in name):
        raise BundleError(f"unsafe archive member {name!r}: control characters or backslashes")
    if name.startswith("/") or posixpath.isabs(name):
        raise BundleError(f"unsafe archive member {name!r}: absolute path")
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise BundleError(f"unsafe archive member {name!r}: '..', '.' or empty path component")
    return name


def tree_files(root: Path) -> list[str]:
    """Every regular file under root as a sorted relative POSIX path (links are refused, not followed)."""
    found: list[str] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_symlink():
            raise BundleError(f"{relative}: symbolic links are not allowed in a bundle")
        if path.is_file() and relative != MANIFEST_NAME:
            found.append(relative)
    return found


def build_manifest(root: Path, meta: dict[str, Any]) -> Manifest:
    files = [
        {"path": relative, "size": (root / relative).stat().st_size, "sha256": sha256_of(root / relative)}
        for relative in tree_files(root)
    ]
    data = {"format": FORMAT, **meta, "files": files}
    return Manifest(data=data, raw=canonical_json(data))


def canonical_json(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def parse_manifest(raw: bytes) -> Manifest:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{MANIFEST_NAME} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleError(f"{MANIFEST_NAME}: unknown format {data.get('format') if isinstance(data, dict) else data!r}")
    files = data.get("files")
    if not isinstance(files, list) or not files:
        raise BundleError(f"{MANIFEST_NAME}: no file list")
    seen: set[str] = set()
    for entry in files:
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("path"), str)
            and isinstance(entry.get("size"), int)
            and isinstance(entry.get("sha256"), str)
            and len(entry["sha256"]) == 64
        ):
            raise BundleError(f"{MANIFEST_NAME}: malformed file entry {entry!r}")
        name = safe_member_name(entry["path"])
        if name in seen or name == MANIFEST_NAME:
            raise BundleError(f"{MANIFEST_NAME}: {name} listed twice")
        seen.add(name)
    return Manifest(data=data, raw=raw)


def verify_tree(root: Path, manifest: Manifest, only: str | None = None) -> list[str]:
    """Problems of the files under root (or under `only`, a path prefix) against the manifest."""
    problems: list[str] = []
    for entry in manifest.files.values():
        if only is not None and not entry.path.startswith(only):
            continue
        path = root / entry.path
        if not path.is_file():
            problems.append(f"{entry.path}: missing")
        elif path.stat().st_size != entry.size:
            problems.append(f"{entry.path}: size {path.stat().st_size}, expected {entry.size}")
        elif sha256_of(path) != entry.sha256:
            problems.append(f"{entry.path}: sha256 does not match the manifest")
    return problems
