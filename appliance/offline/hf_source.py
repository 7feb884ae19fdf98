"""The `hf:` model source of `appliance bundle`: a pinned Hugging Face Hub snapshot, verified.

Runs on the connected build host only. The appliance forces HF_HUB_OFFLINE=1 for the whole process
(appliance/offline_env.py); `fetch_hf` lifts huggingface_hub's own offline switch for its hub calls
only, under a lock, and puts it back afterwards (see `hub_online`).

What a fetch does:
1. refuses a revision that is not a 40-hex commit sha (unless `allow_unpinned=True`);
2. asks the hub for the file list and its metadata at that commit (`model_info(files_metadata=True)`);
3. downloads with `snapshot_download(local_dir=…, cache_dir=…)` into a staging folder next to
   `destination` (its cache also lives there: the user's ~/.cache/huggingface is never used);
4. checks every file: size, the hub's LFS sha256 (LFS files) or git blob id (other files), and the
   recipe's `expected` sha256 pins;
5. only then moves the files into `destination` (replacing what was there). On any error the staging
   folder is removed and `destination` is left as it was.

When the snapshot holds safetensors weights, the default file selection leaves out the pickle and
other-framework copies of the same weights (`default_allow_patterns`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from appliance.errors import ApplianceError

COMMIT_SHA = re.compile(r"[0-9a-f]{40}")

# Pickled torch weights (and their shard indexes): left out of a folder that holds *.safetensors.
PICKLE_WEIGHT_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".bin.index.json")
# Weights for other frameworks or runtimes: left out of the whole snapshot once it has any *.safetensors.
OTHER_FRAMEWORK_SUFFIXES = (".h5", ".msgpack", ".onnx", ".onnx_data", ".ot", ".tflite", ".keras")
OTHER_RUNTIME_FOLDERS = ("onnx", "openvino")

# snapshot_download(local_dir=…) keeps its own bookkeeping here; it is not part of the model.
_HF_LOCAL_METADATA = PurePosixPath(".cache/huggingface")

_online_lock = threading.Lock()


class HfSourceError(ApplianceError):
    """A `hf:` model could not be fetched: names the repo, the revision and, where it applies, the file."""


class HfUnpinnedRevision(HfSourceError):
    """The revision is a branch or tag name, not a commit sha."""


class HfChecksumMismatch(HfSourceError):
    """A downloaded file differs from what the hub or the recipe says it is."""

    def __init__(self, message: str, mismatches: list[tuple[str, str, str]]) -> None:
        super().__init__(message)
        self.mismatches = mismatches  # (path, expected sha256, actual sha256)


@dataclass(frozen=True)
class HubFile:
    path: str  # relative to the snapshot root, with "/"
    size: int
    sha256: str


@dataclass(frozen=True)
class _RemoteFile:
    size: int | None
    lfs_sha256: str | None
    blob_id: str | None  # git blob sha1; for an LFS file it is the pointer's, not the content's


def is_pinned(revision: str) -> bool:
    return COMMIT_SHA.fullmatch(revision) is not None


def default_allow_patterns(listing: Iterable[str]) -> list[str] | None:
    """The files to fetch by default: everything, except duplicate weights when safetensors exist.

    A folder that holds a *.safetensors file loses its pickle weights (pytorch_model.bin, *.pt, …);
    a snapshot that holds any *.safetensors loses its TensorFlow/Flax/ONNX/Rust weights and its
    onnx/ and openvino/ folders. A folder with only pickle weights keeps them (a sentence-transformers
    module such as 2_Dense/ may ship nothing else). Returns None (fetch everything) when nothing is
    left out, else the kept paths as fnmatch patterns that match exactly those paths.
    """
    paths = sorted(set(listing))
    safetensors_folders = {str(PurePosixPath(p).parent) for p in paths if p.endswith(".safetensors")}
    if not safetensors_folders:
        return None
    kept = [p for p in paths if not _duplicate_weight(p, safetensors_folders)]
    if len(kept) == len(paths):
        return None
    return [_escape_pattern(p) for p in kept]


def _duplicate_weight(path: str, safetensors_folders: set[str]) -> bool:
    pure = PurePosixPath(path)
    if pure.parts and pure.parts[0] in OTHER_RUNTIME_FOLDERS and len(pure.parts) > 1:
        return True
    name = pure.name.lower()
    if name.endswith(OTHER_FRAMEWORK_SUFFIXES):
        return True
    return name.endswith(PICKLE_WEIGHT_SUFFIXES) and str(pure.parent) in safetensors_folders


def _escape_pattern(path: str) -> str:
    """An fnmatch pattern matching exactly `path` (huggingface_hub filters with fnmatchcase)."""
    return re.sub(r"([*?\[])", r"[\1]", path)


@contextmanager
def hub_online() -> Iterator[None]:
    """Let huggingface_hub reach the network inside the block; offline again afterwards.

    huggingface_hub reads HF_HUB_OFFLINE once, at import, into `huggingface_hub.constants.HF_HUB_OFFLINE`,
    and every HTTP request checks `constants.is_offline_mode()` (which returns that attribute). The block
    sets the attribute to False and restores it on the way out, even on errors; os.environ is not touched,
    so child processes and later imports stay offline. Inside the block:
    - telemetry is forced off (`constants.HF_HUB_DISABLE_TELEMETRY`): with it on, building the user agent
      fetches {HF_ENDPOINT}/api/agent-harnesses (huggingface.co, whatever `endpoint=` says) and caches it
      in HF_HOME;
    - Xet is forced off (`constants.HF_HUB_DISABLE_XET`): files the hub stores with Xet then come by plain
      HTTP through the hub's redirect, as the tests exercise, instead of through hf_xet, whose chunk cache
      and logs live under HF_HOME (~/.cache/huggingface/xet);
    - progress bars are disabled.
    The switch is process-wide: the lock keeps two fetches from overlapping, but another thread using
    huggingface_hub during the block would be online too.
    """
    from huggingface_hub import constants
    from huggingface_hub.utils import disable_progress_bars

    with _online_lock:
        saved = (constants.HF_HUB_OFFLINE, constants.HF_HUB_DISABLE_TELEMETRY, constants.HF_HUB_DISABLE_XET)
        constants.HF_HUB_OFFLINE = False
        constants.HF_HUB_DISABLE_TELEMETRY = True
        constants.HF_HUB_DISABLE_XET = True
        try:
            with disable_progress_bars():
                yield
        finally:
            constants.HF_HUB_OFFLINE, constants.HF_HUB_DISABLE_TELEMETRY, constants.HF_HUB_DISABLE_XET = saved


def fetch_hf(
    repo: str,
    revision: str,
    destination: Path,
    *,
    allow_patterns: list[str] | None = None,
    endpoint: str | None = None,
    token: str | None = None,
    expected: dict[str, str] | None = None,
    progress: Callable[[str], None] = lambda _: None,
    allow_unpinned: bool = False,
) -> list[HubFile]:
    """Download `repo` at commit `revision` into `destination`; every file with its size and sha256.

    `allow_patterns` None means `default_allow_patterns` of the snapshot's listing. `expected` maps
    paths to sha256 pins (from the recipe): each must be among the fetched files and match. `endpoint`
    defaults to huggingface_hub's (HF_ENDPOINT or https://huggingface.co); `token` None sends no token
    (never the one saved in ~/.cache/huggingface). `allow_unpinned=True` accepts a branch or tag name
    (experiments only: a bundle must pin a commit); the commit it resolves to is told to `progress`.
    """
    where = f"hf:{repo}@{revision}"
    if not is_pinned(revision):
        if COMMIT_SHA.fullmatch(revision.lower()):
            revision = revision.lower()
        elif not allow_unpinned:
            raise HfUnpinnedRevision(
                f"{where}: revision '{revision}' is not pinned; give the full 40-hex commit sha "
                "(a branch or tag can move; allow_unpinned=True is for experiments only)"
            )
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.hf-", dir=destination.parent))
    try:
        snapshot = staging / "snapshot"
        with hub_online():
            commit, remote, selected = _download(
                repo, revision, snapshot, staging / "cache", allow_patterns, endpoint, token, progress
            )
        where = f"hf:{repo}@{commit}"
        files = _verify(where, snapshot, remote, selected, expected or {})
        shutil.rmtree(snapshot / _HF_LOCAL_METADATA, ignore_errors=True)
        _remove_empty_folders(snapshot)
        _replace(snapshot, destination, staging)
        progress(f"{where}: {len(files)} files verified in {destination}")
        return files
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _download(
    repo: str,
    revision: str,
    snapshot: Path,
    cache: Path,
    allow_patterns: list[str] | None,
    endpoint: str | None,
    token: str | None,
    progress: Callable[[str], None],
) -> tuple[str, dict[str, _RemoteFile], list[str]]:
    """Resolve, list and download (inside `hub_online`); returns (commit, hub metadata, selected paths)."""
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.utils import filter_repo_objects

    hub = endpoint or _default_endpoint()
    where = f"hf:{repo}@{revision}"
    credential: str | bool = token or False
    try:
        info = HfApi(endpoint=endpoint, token=credential).model_info(repo, revision=revision, files_metadata=True)
    except Exception as exc:
        raise HfSourceError(f"{where}: cannot read the repository from {hub}: {_describe(exc)}") from exc
    commit = info.sha or ""
    if not is_pinned(commit):
        raise HfSourceError(f"{where}: {hub} did not report a commit sha for this revision")
    if is_pinned(revision) and commit != revision:
        raise HfSourceError(f"{where}: {hub} answered with commit {commit} instead of the pinned one")
    if commit != revision:
        progress(f"{where}: unpinned revision resolves to commit {commit}")
    where = f"hf:{repo}@{commit}"
    remote = {
        s.rfilename: _RemoteFile(
            size=s.lfs.size if s.lfs is not None else s.size,
            lfs_sha256=s.lfs.sha256 if s.lfs is not None else None,
            blob_id=s.blob_id,
        )
        for s in info.siblings or []
    }
    patterns = allow_patterns if allow_patterns is not None else default_allow_patterns(remote)
    selected = sorted(filter_repo_objects(items=list(remote), allow_patterns=patterns))
    if not selected:
        raise HfSourceError(f"{where}: no file matches the allow patterns {patterns}")
    left_out = len(remote) - len(selected)
    progress(f"{where}: downloading {len(selected)} files" + (f" ({left_out} left out)" if left_out else ""))
    try:
        snapshot_download(
            repo_id=repo,
            revision=commit,
            allow_patterns=patterns,
            endpoint=endpoint,
            token=credential,
            local_dir=snapshot,
            cache_dir=cache,
            max_workers=4,
        )
    except Exception as exc:
        raise HfSourceError(f"{where}: download from {hub} failed: {_describe(exc)}") from exc
    return commit, remote, selected


def _verify(
    where: str, snapshot: Path, remote: dict[str, _RemoteFile], selected: list[str], expected: dict[str, str]
) -> list[HubFile]:
    present = {
        str(path.relative_to(snapshot).as_posix())
        for path in snapshot.rglob("*")
        if path.is_file() and not path.relative_to(snapshot).as_posix().startswith(f"{_HF_LOCAL_METADATA}/")
    }
    missing = sorted(set(selected) - present)
    if missing:
        raise HfSourceError(f"{where}: the download lacks {', '.join(missing)}")
    unknown = sorted(present - set(selected))
    if unknown:
        raise HfSourceError(f"{where}: the download holds files the hub did not list: {', '.join(unknown)}")
    unpinned = sorted(set(expected) - present)
    if unpinned:
        raise HfSourceError(
            f"{where}: the recipe pins {', '.join(unpinned)}, which the snapshot (with these allow patterns) lacks"
        )

    files: list[HubFile] = []
    problems: list[str] = []
    mismatches: list[tuple[str, str, str]] = []
    for path in selected:
        size, sha256, git_oid = _digest(snapshot / path)
        meta = remote[path]
        files.append(HubFile(path=path, size=size, sha256=sha256))
        if meta.size is not None and size != meta.size:
            problems.append(f"{path}: {size} bytes, the hub says {meta.size}")
        if meta.lfs_sha256 is not None and sha256 != meta.lfs_sha256:
            problems.append(f"{path}: sha256 {sha256} does not match the hub's LFS sha256 {meta.lfs_sha256}")
            mismatches.append((path, meta.lfs_sha256, sha256))
        elif meta.lfs_sha256 is None and meta.blob_id is not None and git_oid != meta.blob_id:
            problems.append(f"{path}: git blob id {git_oid} does not match the hub's {meta.blob_id} (sha256 {sha256})")
        if path in expected and sha256 != expected[path].lower():
            problems.append(f"{path}: sha256 {sha256} does not match the recipe's pinned sha256 {expected[path]}")
            mismatches.append((path, expected[path], sha256))
    if problems:
        raise HfChecksumMismatch(
            f"{where}: {len(problems)} check(s) failed, nothing was installed:\n  " + "\n  ".join(problems),
            mismatches,
        )
    return files


def _digest(path: Path) -> tuple[int, str, str]:
    """(size, sha256, git blob sha1) of a file, in one read."""
    size = path.stat().st_size
    sha256 = hashlib.sha256()
    git = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            sha256.update(block)
            git.update(block)
    return size, sha256.hexdigest(), git.hexdigest()


def _remove_empty_folders(root: Path) -> None:
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def _replace(snapshot: Path, destination: Path, staging: Path) -> None:
    """Put the verified snapshot at `destination` (a rename on the same file system)."""
    if destination.is_dir() and not destination.is_symlink():
        previous = staging / "previous"
        os.replace(destination, previous)
        try:
            os.replace(snapshot, destination)
        except OSError:
            os.replace(previous, destination)
            raise
        return
    if destination.exists() or destination.is_symlink():
        destination.unlink()
    os.replace(snapshot, destination)


def _default_endpoint() -> str:
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
