"""The bundle archive: one deterministic tar (zstd or gzip), verified before anything is written.

Standard library only, plus the `zstandard` module when present (the bootstrap installer falls back
to the `zstd` command). Writing: members in a fixed order (MANIFEST.json first, then install.pyz and
INSTALL.txt, then the rest sorted), owner 0:0, mode 0644, one fixed time stamp, no directory
entries, so the same files give the same archive bytes.

Reading is streamed and happens twice: `verify_archive` checks every member against the manifest
without writing a byte (type, name, size, sha256, nothing missing, nothing extra);
`extract_archive` then writes regular files only, at validated relative paths, hashing again as it
goes (the archive could change between the passes). Members also pass tarfile's `data_filter`
(PEP 706) as a second opinion on absolute paths, `..`, links and devices.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from appliance.offline.manifest import MANIFEST_NAME, BundleError, Manifest, parse_manifest, safe_member_name

COMPRESSIONS = ("zstd", "gzip")
FIRST_MEMBERS = (MANIFEST_NAME, "install.pyz", "INSTALL.txt")
MAX_MANIFEST_BYTES = 64 << 20
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
# A fixed time stamp for every member (GNU tar warns about 1970): SOURCE_DATE_EPOCH overrides it.
DEFAULT_EPOCH = 1_704_067_200  # 2024-01-01T00:00:00Z

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def member_order(files: list[str]) -> list[str]:
    first = [name for name in FIRST_MEMBERS[1:] if name in files]
    return first + sorted(name for name in files if name not in first)


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = int(os.environ.get("SOURCE_DATE_EPOCH", DEFAULT_EPOCH))
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


@contextlib.contextmanager
def _compressed_writer(output: Path, compression: str) -> Iterator[IO[bytes]]:
    with output.open("wb") as raw:
        if compression == "gzip":
            # mtime=0 and no file name in the header: the same tar gives the same .gz bytes.
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as gz:
                yield gz  # type: ignore[misc]
        elif compression == "zstd":
            import zstandard

            # A fixed worker count: zstd's multi-threaded output does not depend on timing.
            compressor = zstandard.ZstdCompressor(level=3, threads=2)
            with compressor.stream_writer(raw, closefd=False) as writer:
                yield writer  # type: ignore[misc]
        else:
            raise BundleError(f"unknown compression {compression!r} (expected one of {', '.join(COMPRESSIONS)})")


def write_archive(
    root: Path, manifest: Manifest, output: Path, compression: str = "zstd", progress: Progress = _quiet
) -> None:
    """Pack root's files (exactly those in the manifest) into one archive at output."""
    partial = output.with_name(output.name + ".partial")
    with (
        _compressed_writer(partial, compression) as stream,
        tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        tar.addfile(_tarinfo(MANIFEST_NAME, len(manifest.raw)), io.BytesIO(manifest.raw))
        for name in member_order(list(manifest.files)):
            path = root / name
            progress(f"pack {name}")
            with path.open("rb") as handle:
                tar.addfile(_tarinfo(name, path.stat().st_size), handle)
    partial.replace(output)


def detect_compression(path: Path) -> str:
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic.startswith(ZSTD_MAGIC):
        return "zstd"
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    return "none"


@contextlib.contextmanager
def _decompressed(path: Path) -> Iterator[IO[bytes]]:
    compression = detect_compression(path)
    if compression != "zstd":
        with path.open("rb") as raw:
            yield gzip.GzipFile(fileobj=raw, mode="rb") if compression == "gzip" else raw  # type: ignore[misc]
        return
    try:
        import zstandard
    except ImportError:
        zstandard = None  # type: ignore[assignment]
    if zstandard is not None:
        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            yield reader  # type: ignore[misc]
        return
    if shutil.which("zstd") is None:
        raise BundleError(
            f"{path} is zstd-compressed and neither the zstandard module nor the zstd command is here: "
            "install zstd, or rebuild the bundle with --compression gzip"
        )
    with subprocess.Popen(["zstd", "-dcq", str(path)], stdout=subprocess.PIPE) as process:
        assert process.stdout is not None
        yield process.stdout
        # A reader that took what it needed (the manifest, for a dry run) stops before the end: closing the pipe
        # then stops zstd mid-write, which is no fault of the archive. Only a stream read to its end must have
        # decompressed cleanly.
        stopped_early = process.stdout.read(1) != b""
        process.stdout.close()
        if process.wait() != 0 and not stopped_early:
            raise BundleError(f"{path}: zstd could not decompress it (truncated or corrupt archive)")


@contextlib.contextmanager
def open_members(path: Path) -> Iterator[Iterator[tuple[tarfile.TarInfo, IO[bytes] | None]]]:
    """Stream (member, reader) pairs; any read error becomes 'truncated or corrupt' naming the archive."""
    if not path.is_file():
        raise BundleError(f"{path}: no such bundle file")

    def members(tar: tarfile.TarFile) -> Iterator[tuple[tarfile.TarInfo, IO[bytes] | None]]:
        for member in tar:
            yield member, tar.extractfile(member) if member.isreg() else None

    try:
        with _decompressed(path) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            yield members(tar)
    except BundleError:
        raise
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise BundleError(f"{path}: truncated or corrupt archive ({exc.__class__.__name__}: {exc})") from None
    except Exception as exc:  # zstandard.ZstdError and friends
        if exc.__class__.__name__ == "ZstdError":
            raise BundleError(f"{path}: truncated or corrupt archive (zstd: {exc})") from None
        raise


def _check_member(member: tarfile.TarInfo, destination: str) -> str:
    name = safe_member_name(member.name)
    if not member.isreg():
        kind = (
            "symbolic link"
            if member.issym()
            else "hard link"
            if member.islnk()
            else "device"
            if member.isdev()
            else "directory"
            if member.isdir()
            else "special file"
        )
        raise BundleError(f"unsafe archive member {name!r}: a {kind} (bundles hold regular files only)")
    try:
        tarfile.data_filter(member, destination)
    except tarfile.FilterError as exc:
        raise BundleError(f"unsafe archive member {name!r}: {exc}") from None
    return name


def _hash_stream(reader: IO[bytes], sink: IO[bytes] | None = None) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    while block := reader.read(1 << 20):
        digest.update(block)
        size += len(block)
        if sink is not None:
            sink.write(block)
    return size, digest.hexdigest()


def verify_archive(path: Path, expected_manifest_sha256: str | None = None, progress: Progress = _quiet) -> Manifest:
    """Check every member against the manifest; writes nothing. Returns the manifest."""
    manifest: Manifest | None = None
    seen: set[str] = set()
    with open_members(path) as members:
        for member, reader in members:
            name = _check_member(member, "/nonexistent-bundle-root")
            if manifest is None:
                if name != MANIFEST_NAME or reader is None or member.size > MAX_MANIFEST_BYTES:
                    raise BundleError(f"{path}: the first member must be {MANIFEST_NAME}, found {name!r}")
                manifest = parse_manifest(reader.read())
                if expected_manifest_sha256 and manifest.sha256 != expected_manifest_sha256.lower():
                    raise BundleError(
                        f"{MANIFEST_NAME} has sha256 {manifest.sha256}, expected {expected_manifest_sha256}: "
                        "this is not the bundle you were given"
                    )
                continue
            entry = manifest.files.get(name)
            if entry is None:
                raise BundleError(f"archive member {name!r} is not in {MANIFEST_NAME} (an extra file)")
            if name in seen:
                raise BundleError(f"archive member {name!r} appears twice")
            seen.add(name)
            assert reader is not None
            progress(f"verify {name}")
            size, digest = _hash_stream(reader)
            if size != entry.size or digest != entry.sha256:
                raise BundleError(f"archive member {name!r} does not match {MANIFEST_NAME} (size or sha256 differs)")
    if manifest is None:
        raise BundleError(f"{path}: empty archive")
    missing = sorted(set(manifest.files) - seen)
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise BundleError(f"{path}: missing member(s) {', '.join(missing[:3])}{more} listed in {MANIFEST_NAME}")
    return manifest


def extract_archive(path: Path, manifest: Manifest, destination: Path, progress: Progress = _quiet) -> None:
    """Write the verified members under destination (which must be new and private)."""
    destination.mkdir(mode=0o700, parents=True)
    root = str(destination.resolve())
    with open_members(path) as members:
        for member, reader in members:
            name = _check_member(member, root)
            entry = manifest.files.get(name)
            if name == MANIFEST_NAME:
                continue
            if entry is None or reader is None:
                raise BundleError(f"archive member {name!r} changed since it was verified")
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            progress(f"extract {name}")
            with target.open("xb") as sink:
                size, digest = _hash_stream(reader, sink)
            if size != entry.size or digest != entry.sha256:
                raise BundleError(f"archive member {name!r} changed since it was verified")
    (destination / MANIFEST_NAME).write_bytes(manifest.raw)
