"""`appliance restore SRC`: put a backup back into a home, onto a stopped appliance.

Refused, before anything in the home changes:
  * a backup whose manifest is missing (partial), damaged or edited, or any of whose files is missing,
    changed or added (appliance.backup.manifest names the file), or whose audit log does not end at the
    chain head its manifest recorded;
  * a running appliance: the index writer lock (a reindex, an upload, a backup) or the vector store's owner
    lock (`appliance serve`) is held. Both are held by the restore itself until it is done, so nothing
    starts meanwhile;
  * a home that already holds state, unless `force`: then that state is moved aside into
    HOME/replaced-by-restore-STAMP/, never deleted.
The files are copied into a hidden staging folder of the home and checked against their sha256 there, then
renamed into place. An upload folder restored somewhere else than where it was backed up from (another
home) has its catalog entries moved with it, so its documents keep their paths and citations.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.audit import verify_audit
from appliance.backup.manifest import file_sha256, read_manifest
from appliance.backup.snapshot import AUDIT, CATALOG, SETTINGS, TOKENS, UPLOADS, VECTORS
from appliance.config import Settings
from appliance.errors import BackupError, IndexBusy
from appliance.index.index import Index
from appliance.index.lock import writer_lock
from appliance.index.ownership import local_store

# Entries of a home that are not state: the locks the restore holds, earlier restores' set-aside state.
_NOT_STATE = ("index.lock", "chroma.owner", "appliance.toml")
ASIDE_PREFIX = "replaced-by-restore-"


@dataclass
class RestoreReport:
    home: Path
    source: Path
    files: int
    bytes: int
    documents: int
    chunks: int
    audit_last_seq: int
    seconds: float = 0.0
    moved_aside: Path | None = None
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "home": str(self.home),
            "source": str(self.source),
            "files": self.files,
            "bytes": self.bytes,
            "documents": self.documents,
            "chunks": self.chunks,
            "audit_last_seq": self.audit_last_seq,
            "seconds": round(self.seconds, 3),
            "moved_aside": str(self.moved_aside) if self.moved_aside else None,
            "notes": self.notes,
        }


def verify_backup(source: Path) -> dict[str, Any]:
    """The manifest of a complete, untouched backup; BackupError naming the first file that fails."""
    manifest = read_manifest(source)
    head = manifest["audit"]
    audit = verify_audit(source / AUDIT)
    if head["ok"] and not audit.ok:
        problem = audit.problems[0]
        raise BackupError(
            f"{source / AUDIT / problem.file} line {problem.line}: {problem.problem} (the log verified when it was "
            "backed up): refusing the backup"
        )
    if (audit.last_seq, audit.last_hash) != (head["last_seq"], head["last_hash"]):
        raise BackupError(
            f"{source / AUDIT}: the audit log ends at seq {audit.last_seq}, the manifest recorded seq "
            f"{head['last_seq']} ({head['last_hash'][:12]}…): refusing the backup"
        )
    return manifest


def restore_backup(settings: Settings, source: Path, *, force: bool = False) -> RestoreReport:
    started = time.monotonic()
    source = source.resolve()
    manifest = verify_backup(source)
    home = settings.home.resolve()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    upload_dir = settings.upload_dir.resolve()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    with _appliance_stopped(settings):
        present = _state_entries(home, upload_dir)
        if present and not force:
            shown = ", ".join(str(path.relative_to(home)) if home in path.parents else str(path) for path in present)
            raise BackupError(
                f"{home} already holds an appliance ({shown}): restore into an empty home, or pass --force to move "
                f"what is there aside into {home / (ASIDE_PREFIX + stamp)}"
            )
        staging = home / f".restore-{stamp}"
        staging.mkdir(mode=0o700)
        try:
            _copy_checked(source, staging, manifest["files"])
            aside = _move_aside(home, present, stamp) if present else None
            _put_in_place(staging, home, upload_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        report = RestoreReport(
            home=home,
            source=source,
            files=len(manifest["files"]),
            bytes=sum(int(entry["size"]) for entry in manifest["files"]),
            documents=int(manifest["catalog"]["documents"]),
            chunks=int(manifest["catalog"]["chunks"]),
            audit_last_seq=int(manifest["audit"]["last_seq"]),
            moved_aside=aside,
        )
        report.notes += _restore_settings(source, home)
        report.notes += _relocate_uploads(settings, Path(manifest["uploads"]["folder"]), upload_dir)
        if manifest["vectors"].get("kind") != "local":
            report.notes.append(
                f"the vectors lived on the Chroma server {manifest['vectors'].get('url')}: run `appliance reindex` "
                "to rebuild them there from the restored catalog"
            )
    report.seconds = time.monotonic() - started
    return report


@contextlib.contextmanager
def _appliance_stopped(settings: Settings) -> Iterator[None]:
    """Hold the writer lock and the vector store's owner lock, or refuse: the appliance is running."""
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(writer_lock(settings.lock_path, 0.0))
        except IndexBusy as exc:
            raise BackupError(
                f"a reindex, an upload or a backup is running ({exc}); restore onto a stopped appliance"
            ) from None
        fd = os.open(local_store(settings.chroma_path).lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        stack.callback(os.close, fd)  # closing releases the lock
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            raise BackupError(
                f"the appliance is running: {holder} holds its vector store {settings.chroma_path}; stop it "
                "(systemctl stop appliance) and restore again"
            ) from None
        yield


def _state_entries(home: Path, upload_dir: Path) -> list[Path]:
    """What in the home (and the upload folder, wherever it is) a restore would replace."""
    entries = [
        path
        for path in sorted(home.iterdir())
        if path.name not in _NOT_STATE and not path.name.startswith((ASIDE_PREFIX, ".restore-"))
    ]
    if home not in upload_dir.parents and upload_dir.is_dir() and any(upload_dir.iterdir()):
        entries.append(upload_dir)
    return entries


def _copy_checked(source: Path, staging: Path, files: list[dict[str, Any]]) -> None:
    """Copy every file the manifest lists, and check each copy against its sha256 (what lands is what was
    verified, even if the backup changes meanwhile)."""
    for entry in files:
        target = staging / entry["path"]
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(source / entry["path"], target)
        if file_sha256(target) != entry["sha256"]:
            raise BackupError(f"{source / entry['path']} changed while it was restored: refusing the backup")


def _move_aside(home: Path, present: list[Path], stamp: str) -> Path:
    aside = home / (ASIDE_PREFIX + stamp)
    aside.mkdir(mode=0o700)
    for path in present:
        name = path.name if home in path.parents else f"{UPLOADS}-{path.name}"
        shutil.move(str(path), str(aside / name))
    return aside


def _put_in_place(staging: Path, home: Path, upload_dir: Path) -> None:
    for name in (CATALOG, TOKENS, VECTORS, AUDIT):
        if (staging / name).exists():
            os.replace(staging / name, home / name)
    if (staging / UPLOADS).exists():
        upload_dir.parent.mkdir(parents=True, exist_ok=True)
        if upload_dir.exists():
            upload_dir.rmdir()  # empty: a folder with files is state, moved aside or refused above
        shutil.move(str(staging / UPLOADS), str(upload_dir))


def _restore_settings(source: Path, home: Path) -> list[str]:
    if not (source / SETTINGS).exists():
        return []
    target = home / "appliance.toml"
    if target.exists():
        kept = home / "appliance.toml.from-backup"
        shutil.copyfile(source / SETTINGS, kept)
        return [f"{target} was kept; the backup's settings are in {kept}"]
    shutil.copyfile(source / SETTINGS, target)
    return [f"settings restored to {target}"]


def _relocate_uploads(settings: Settings, old: Path, new: Path) -> list[str]:
    """The upload folder's source and documents, moved in the catalog from where they were backed up."""
    if old == new or not settings.catalog_path.exists():
        return []
    if old.name != new.name:
        return [
            f"the upload folder was {old} and is now {new}: its documents keep their old paths until "
            "`appliance reindex` indexes them again under the new folder's name"
        ]
    index = Index(settings)
    try:
        moved = index.relocate_source(str(old), str(new))
    finally:
        index.close()
    return [f"{moved} uploaded document(s) moved from {old} to {new} in the catalog"] if moved else []
