"""The bundle archive: deterministic, and refused — before anything is written — when tampered with."""

from __future__ import annotations

import hashlib
import io
import json
import random
import sys
import tarfile
from pathlib import Path

import pytest

from appliance.offline.archive import extract_archive, open_members, verify_archive, write_archive
from appliance.offline.installer import InstallOptions, install
from appliance.offline.manifest import MANIFEST_NAME, BundleError, Manifest, build_manifest, safe_member_name

META = {"appliance_version": "0.0.test", "profile": {"name": "test"}, "build": {}}


@pytest.fixture
def staging(tmp_path: Path) -> Path:
    root = tmp_path / "staging"
    (root / "models" / "embedder").mkdir(parents=True)
    (root / "models" / "embedder" / "weights.bin").write_bytes(bytes(range(256)) * 40)
    (root / "wheels").mkdir()
    (root / "wheels" / "demo-1.0-py3-none-any.whl").write_bytes(b"PK not really a wheel")
    (root / "install.pyz").write_bytes(b"bootstrap")
    (root / "INSTALL.txt").write_text("read me\n")
    return root


def _bundle(staging: Path, output: Path, compression: str = "gzip") -> Manifest:
    manifest = build_manifest(staging, META)
    write_archive(staging, manifest, output, compression)
    return manifest


def _raw_tar(output: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> None:
    """A hand-made (uncompressed) tar, for archives our writer would never produce."""
    with tarfile.open(output, "w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)


def _members_of(staging: Path, manifest: Manifest) -> list[tuple[tarfile.TarInfo, bytes | None]]:
    members: list[tuple[tarfile.TarInfo, bytes | None]] = [(tarfile.TarInfo(MANIFEST_NAME), manifest.raw)]
    for name in sorted(manifest.files):
        members.append((tarfile.TarInfo(name), (staging / name).read_bytes()))
    return members


@pytest.mark.parametrize("compression", ["zstd", "gzip"])
def test_round_trip_verifies_and_extracts_every_file(staging: Path, tmp_path: Path, compression: str) -> None:
    archive = tmp_path / f"b.{compression}"
    manifest = _bundle(staging, archive, compression)

    assert verify_archive(archive).sha256 == manifest.sha256
    extract_archive(archive, manifest, tmp_path / "out")

    for name, entry in manifest.files.items():
        assert hashlib.sha256((tmp_path / "out" / name).read_bytes()).hexdigest() == entry.sha256
    assert (tmp_path / "out" / MANIFEST_NAME).read_bytes() == manifest.raw


@pytest.mark.parametrize("compression", ["zstd", "gzip"])
def test_same_inputs_give_the_same_manifest_and_the_same_archive_bytes(
    staging: Path, tmp_path: Path, compression: str
) -> None:
    first, second = tmp_path / "1", tmp_path / "2"
    m1 = _bundle(staging, first, compression)
    (staging / "INSTALL.txt").touch()  # a newer mtime must not matter
    m2 = _bundle(staging, second, compression)

    assert m1.raw == m2.raw
    assert first.read_bytes() == second.read_bytes()


def test_manifest_is_first_then_the_bootstrap_installer(staging: Path, tmp_path: Path) -> None:
    archive = tmp_path / "b.tgz"
    _bundle(staging, archive)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert names[:3] == [MANIFEST_NAME, "install.pyz", "INSTALL.txt"]
        assert all(m.uid == 0 and m.gid == 0 and m.mode == 0o644 and m.isreg() for m in tar.getmembers())


def test_a_flipped_byte_is_refused_naming_the_member(staging: Path, tmp_path: Path) -> None:
    manifest = build_manifest(staging, META)
    members = _members_of(staging, manifest)
    for info, data in members:
        if info.name == "models/embedder/weights.bin":
            assert data is not None
            members[members.index((info, data))] = (info, data[:100] + bytes([data[100] ^ 1]) + data[101:])
    archive = tmp_path / "flipped.tar"
    _raw_tar(archive, members)

    with pytest.raises(BundleError, match=r"models/embedder/weights\.bin.*does not match"):
        verify_archive(archive)


def test_a_missing_member_is_refused(staging: Path, tmp_path: Path) -> None:
    manifest = build_manifest(staging, META)
    members = [m for m in _members_of(staging, manifest) if m[0].name != "INSTALL.txt"]
    archive = tmp_path / "missing.tar"
    _raw_tar(archive, members)

    with pytest.raises(BundleError, match=r"missing member\(s\) INSTALL\.txt"):
        verify_archive(archive)


def test_an_extra_member_is_refused(staging: Path, tmp_path: Path) -> None:
    manifest = build_manifest(staging, META)
    archive = tmp_path / "extra.tar"
    _raw_tar(archive, [*_members_of(staging, manifest), (tarfile.TarInfo("wheels/evil-1.0.whl"), b"x")])

    with pytest.raises(BundleError, match=r"'wheels/evil-1\.0\.whl' is not in MANIFEST\.json"):
        verify_archive(archive)


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("../escape.txt", tarfile.REGTYPE, "'..'"),
        ("models/../../escape.txt", tarfile.REGTYPE, "'..'"),
        ("/etc/cron.d/evil", tarfile.REGTYPE, "absolute path"),
        ("models/link", tarfile.SYMTYPE, "symbolic link"),
        ("models/hard", tarfile.LNKTYPE, "hard link"),
        ("models/dev", tarfile.CHRTYPE, "device"),
        ("models/sub", tarfile.DIRTYPE, "directory"),
    ],
)
def test_unsafe_members_are_refused(staging: Path, tmp_path: Path, name: str, kind: bytes, message: str) -> None:
    manifest = build_manifest(staging, META)
    info = tarfile.TarInfo(name)
    info.type = kind
    if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        info.linkname = "/etc/shadow"
    archive = tmp_path / "unsafe.tar"
    _raw_tar(archive, [*_members_of(staging, manifest)[:2], (info, b"x" if kind == tarfile.REGTYPE else None)])

    with pytest.raises(BundleError, match=message):
        verify_archive(archive)


@pytest.mark.parametrize("compression", ["zstd", "gzip"])
def test_a_truncated_archive_is_refused(staging: Path, tmp_path: Path, compression: str) -> None:
    archive = tmp_path / "b"
    _bundle(staging, archive, compression)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) * 2 // 3])

    with pytest.raises(BundleError, match=r"truncated or corrupt|missing member"):
        verify_archive(archive)


@pytest.mark.parametrize("without_module", [False, True], ids=["zstandard module", "zstd command"])
def test_reading_only_the_first_member_of_a_large_bundle_is_no_error(
    staging: Path, tmp_path: Path, without_module: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dry run reads the manifest and stops; the rest of the stream is still being decompressed (here 8 MiB of
    incompressible weights, far more than a pipe holds). That is no sign of a corrupt archive."""
    (staging / "models" / "embedder" / "weights.bin").write_bytes(random.Random(48).randbytes(8 << 20))
    archive = tmp_path / "b.zstd"
    manifest = _bundle(staging, archive, "zstd")
    if without_module:  # as the standard-library bootstrap installer reads it: the zstd command decompresses
        monkeypatch.setitem(sys.modules, "zstandard", None)

    with open_members(archive) as members:
        member, reader = next(members)
        assert member.name == MANIFEST_NAME and reader is not None and reader.read() == manifest.raw


def test_the_manifest_must_come_first(staging: Path, tmp_path: Path) -> None:
    manifest = build_manifest(staging, META)
    members = _members_of(staging, manifest)
    archive = tmp_path / "late-manifest.tar"
    _raw_tar(archive, members[1:] + members[:1])

    with pytest.raises(BundleError, match=r"first member must be MANIFEST\.json"):
        verify_archive(archive)


def test_a_manifest_listing_an_unsafe_path_is_refused(tmp_path: Path) -> None:
    data = {"format": 1, **META, "files": [{"path": "../x", "size": 1, "sha256": "0" * 64}]}
    archive = tmp_path / "m.tar"
    _raw_tar(archive, [(tarfile.TarInfo(MANIFEST_NAME), json.dumps(data).encode())])

    with pytest.raises(BundleError, match=r"unsafe archive member '\.\./x'"):
        verify_archive(archive)


def test_an_expected_manifest_sha256_must_match(staging: Path, tmp_path: Path) -> None:
    archive = tmp_path / "b.tgz"
    manifest = _bundle(staging, archive)

    assert verify_archive(archive, manifest.sha256).sha256 == manifest.sha256
    with pytest.raises(BundleError, match="not the bundle you were given"):
        verify_archive(archive, "f" * 64)


def test_not_an_archive_at_all(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.zst"
    junk.write_bytes(b"\x28\xb5\x2f\xfd" + b"garbage" * 100)
    with pytest.raises(BundleError, match="truncated or corrupt"):
        verify_archive(junk)
    with pytest.raises(BundleError, match="no such bundle"):
        verify_archive(tmp_path / "absent.tar.zst")


def test_install_writes_nothing_when_verification_fails(staging: Path, tmp_path: Path) -> None:
    manifest = build_manifest(staging, META)
    archive = tmp_path / "extra.tar"
    _raw_tar(archive, [*_members_of(staging, manifest), (tarfile.TarInfo("extra"), b"x")])
    prefix, home = tmp_path / "prefix", tmp_path / "home"

    with pytest.raises(BundleError, match=r"'extra' is not in MANIFEST\.json"):
        install(InstallOptions(archive=archive, prefix=prefix, home=home, systemd=False))

    assert not prefix.exists()
    assert not home.exists()


def test_member_names_are_plain_relative_paths() -> None:
    assert safe_member_name("models/embedder/config.json") == "models/embedder/config.json"
    for bad in ["", "a//b", "./a", "a/./b", "a\\b", "a\nb", "/abs"]:
        with pytest.raises(BundleError):
            safe_member_name(bad)


def test_bad_unit_settings_are_refused_before_anything_is_written(staging: Path, tmp_path: Path) -> None:
    archive = tmp_path / "b.tgz"
    _bundle(staging, archive)
    prefix = tmp_path / "prefix"

    with pytest.raises(BundleError, match="operator_subnet"):
        install(InstallOptions(archive=archive, prefix=prefix, home=tmp_path / "home", operator_subnet="10.0.0.1/8"))

    assert not prefix.exists()


def test_a_dry_run_verifies_reports_the_manifest_and_writes_nothing(staging: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from appliance.cli.main import cli

    archive = tmp_path / "b.tar.zst"
    manifest = _bundle(staging, archive, "zstd")
    target = tmp_path / "target"
    target.mkdir()

    result = CliRunner().invoke(
        cli,
        ["install", str(archive), "--prefix", str(target / "p"), "--home", str(target / "h"), "--dry-run", "--json"],
        catch_exceptions=False,
    )

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["manifest_sha256"] == manifest.sha256 and report["dry_run"]
    assert list(target.iterdir()) == []
