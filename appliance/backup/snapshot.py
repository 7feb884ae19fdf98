"""`appliance backup DEST`: a consistent snapshot of a home while the appliance keeps answering.

What goes in, and how each part is kept consistent:
  * the catalog and the tokens database: SQLite's online backup API, one step each (a reader's snapshot:
    writers and readers go on meanwhile);
  * the vectors: written into the backup from the catalog snapshot's own embeddings (the catalog is the
    source of truth and holds every embedding), so they are the vectors of exactly the catalog's committed
    state (appliance.index.snapshot says why the live Chroma folder is not copied);
  * the upload folder's files: uploads and reindexes take the index writer lock, and so does the backup
    for its catalog and files, so no file lands without its index entries (answers never take that lock);
  * the audit log and CHAIN, copied under the log's shared lock (appends wait a moment), and its chain head;
  * the settings file, as it is.
The backup is written into a hidden sibling folder and renamed to DEST when its manifest (written last)
is in place: an interrupted backup never looks like a complete one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from appliance import __version__
from appliance.audit import copy_audit_log, verify_audit
from appliance.backup.manifest import write_manifest
from appliance.config import Settings, config_file_path
from appliance.errors import BackupError
from appliance.index.index import Index
from appliance.index.lock import writer_lock
from appliance.index.snapshot import copy_database

# Names inside a backup (and, for the first four, inside a home).
CATALOG = "catalog.sqlite"
TOKENS = "tokens.sqlite"
VECTORS = "chroma"
AUDIT = "audit"
UPLOADS = "uploads"
SETTINGS = "settings/appliance.toml"


@dataclass(frozen=True)
class BackupReport:
    path: Path
    manifest: dict[str, Any]
    seconds: float
    lock_wait_s: float

    @property
    def size(self) -> int:
        return sum(int(entry["size"]) for entry in self.manifest["files"])

    def as_json(self) -> dict[str, Any]:
        about = {key: value for key, value in self.manifest.items() if key not in ("files", "digest")}
        return {
            "path": str(self.path),
            "files": len(self.manifest["files"]),
            "bytes": self.size,
            "seconds": round(self.seconds, 3),
            "lock_wait_s": round(self.lock_wait_s, 3),
            **about,
        }


def create_backup(settings: Settings, dest: Path, *, wait_s: float | None = None) -> BackupReport:
    """Snapshot the home of `settings` into the new folder `dest` (it must not exist, or be empty), waiting up
    to `wait_s` (default index.lock_timeout_s) for a reindex or upload that holds the writer lock."""
    started = time.monotonic()
    dest = dest.resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty folder: choose a new backup folder")
    if not settings.catalog_path.exists():
        raise BackupError(f"{settings.catalog_path}: no catalog to back up (is APPLIANCE_HOME set right?)")
    home = settings.home.resolve()
    if dest == home or home in dest.parents:
        raise BackupError(f"{dest} is inside the home {home}: put backups elsewhere")
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = dest.parent / f".{dest.name}.partial-{int(time.time())}"
    work.mkdir(mode=0o700)
    try:
        about, lock_wait_s = _snapshot(settings, work, settings.index.lock_timeout_s if wait_s is None else wait_s)
        manifest = write_manifest(work, about)
        if dest.exists():
            dest.rmdir()  # empty, checked above
        work.rename(dest)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return BackupReport(dest, manifest, time.monotonic() - started, lock_wait_s)


def _snapshot(settings: Settings, work: Path, wait_s: float) -> tuple[dict[str, Any], float]:
    waiting = time.monotonic()
    with writer_lock(settings.lock_path, wait_s):
        lock_wait_s = time.monotonic() - waiting
        index = Index(settings)
        try:
            catalog_copy = index.snapshot(work / CATALOG)
        finally:
            index.close()
        upload_dir = settings.upload_dir.resolve()
        uploads = _copy_uploads(upload_dir, work / UPLOADS)
    catalog = catalog_copy.seal()
    vectors = None
    if not settings.vectors.url:
        count = catalog_copy.export_vectors(settings.vectors, work / VECTORS)
        vectors = {"kind": "local", "count": count, "collection": settings.vectors.collection}
    tokens = None
    if settings.tokens_path.exists():
        copy_database(settings.tokens_path, work / TOKENS)
        tokens = _count(work / TOKENS, "SELECT COUNT(*) FROM tokens")
    copy_audit_log(settings.audit_dir, work / AUDIT)
    audit = verify_audit(work / AUDIT)
    config = config_file_path()
    if config is not None and config.exists():
        (work / SETTINGS).parent.mkdir(mode=0o700)
        shutil.copyfile(config, work / SETTINGS)
    about = {
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "appliance_version": __version__,
        "home": str(settings.home.resolve()),
        "catalog": catalog,
        "vectors": vectors
        if vectors is not None
        else {"kind": "server", "url": settings.vectors.url, "note": "rebuilt from the catalog by reindex"},
        "tokens": tokens,
        "uploads": {"folder": str(upload_dir), "files": uploads},
        "audit": {"records": audit.records, "last_seq": audit.last_seq, "last_hash": audit.last_hash, "ok": audit.ok},
        "settings": {"file": str(config) if config is not None and config.exists() else None},
    }
    return about, lock_wait_s


def _copy_uploads(folder: Path, target: Path) -> int:
    """The upload folder's documents (hidden temporary files left out, as the scanner leaves them out)."""
    if not folder.is_dir():
        return 0
    copied = 0
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or path.is_symlink() or not path.is_file():
            continue
        destination = target / relative
        destination.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        copied += 1
    return copied


def _count(path: Path, sql: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute(sql).fetchone()[0])
