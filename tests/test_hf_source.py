"""The `hf:` model source: a pinned snapshot from a (fake, stdlib, 127.0.0.1) Hugging Face Hub,
checked file by file against the hub's metadata and the recipe's pins before anything is installed;
the process stays offline for everything else."""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from huggingface_hub import constants, hf_hub_download
from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled
from huggingface_hub.utils import filter_repo_objects

from appliance.errors import ApplianceError
from appliance.offline.hf_source import (
    HfChecksumMismatch,
    HfSourceError,
    HfUnpinnedRevision,
    HubFile,
    default_allow_patterns,
    fetch_hf,
)
from tests.fake_hub import (
    COMMIT,
    TINY_DIMENSION,
    FakeHub,
    FakeRepo,
    build_tiny_sentence_transformer,
    repo_from_folder,
    serve_fake_hub,
)

REPO = "appliance-tests/tiny-minilm"
XET_REPO = "appliance-tests/tiny-minilm-xet"
DECOYS = {
    "pytorch_model.bin": b"DECOY pickle weights: must never be fetched when model.safetensors exists\n" * 64,
    "onnx/model.onnx": b"DECOY onnx weights\n" * 64,
    "tf_model.h5": b"DECOY tensorflow weights\n" * 64,
}
GITATTRIBUTES = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n*.bin filter=lfs diff=lfs merge=lfs -text\n"


@pytest.fixture(scope="module")
def tiny_repo(tmp_path_factory: pytest.TempPathFactory) -> FakeRepo:
    folder = build_tiny_sentence_transformer(tmp_path_factory.mktemp("tiny-st") / "model")
    return repo_from_folder(folder, {".gitattributes": GITATTRIBUTES, **DECOYS})


@pytest.fixture
def hub(tiny_repo: FakeRepo) -> Iterator[FakeHub]:
    xet_repo = FakeRepo(files=tiny_repo.files, xet=True)
    with serve_fake_hub({REPO: tiny_repo, XET_REPO: xet_repo}) as running:
        yield running


@pytest.fixture
def hf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every place huggingface_hub could write or read user state points into an empty folder
    (its constants are computed at import, so the environment variable alone would not do)."""
    home = tmp_path / "hf-home"
    home.mkdir()
    monkeypatch.setenv("HF_HOME", str(home))
    for name, relative in {
        "HF_HOME": "",
        "HF_HUB_CACHE": "hub",
        "HUGGINGFACE_HUB_CACHE": "hub",
        "HF_ASSETS_CACHE": "assets",
        "HF_TOKEN_PATH": "token",
        "HF_STORED_TOKENS_PATH": "stored_tokens",
        "AGENT_HARNESSES_PATH": ".agent_harnesses.json",
        "CHECK_FOR_UPDATE_DONE_PATH": ".check_for_update_done",
        "CHECK_FOR_SKILL_UPDATE_DONE_PATH": ".check_for_skill_update_done",
    }.items():
        if hasattr(constants, name):
            monkeypatch.setattr(constants, name, str(home / relative) if relative else str(home))
    return home


def _model_files(repo: FakeRepo) -> set[str]:
    return set(repo.files) - set(DECOYS)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _chain(error: BaseException | None) -> Iterator[BaseException]:
    while error is not None:
        yield error
        error = error.__cause__ or error.__context__


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".hf-" in p.name)


# --- the happy path -----------------------------------------------------------------------------------------


def test_a_pinned_snapshot_arrives_verified_and_loads_as_a_sentence_transformer(
    hub: FakeHub, tiny_repo: FakeRepo, hf_home: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "bundle" / "embedder" / "tiny"
    said: list[str] = []
    files = fetch_hf(REPO, COMMIT, destination, endpoint=hub.endpoint, progress=said.append)

    assert {f.path for f in files} == _model_files(tiny_repo)
    for f in files:
        data = tiny_repo.files[f.path]
        assert f == HubFile(path=f.path, size=len(data), sha256=_sha256(data))
        assert (destination / f.path).read_bytes() == data
    on_disk = {p.relative_to(destination).as_posix() for p in destination.rglob("*") if p.is_file()}
    assert on_disk == _model_files(tiny_repo)  # no .cache/huggingface bookkeeping, no decoys
    assert _leftovers(destination.parent) == []
    assert any(COMMIT in line for line in said)

    # the decoys were never asked for, not even their metadata
    assert hub.downloaded(REPO) == sorted(_model_files(tiny_repo))
    assert not [r for r in hub.requests if r.file in DECOYS or any(d in r.path for d in DECOYS)]
    assert not [r for r in hub.requests if "agent-harnesses" in r.path]
    assert all(r.authorization is None for r in hub.requests)  # no token unless one is given
    assert list(hf_home.rglob("*")) == []  # neither the user's cache nor token was touched

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(destination), device="cpu", local_files_only=True)
    embedding = model.encode(["close the valve before the pump trip"])
    assert embedding.shape == (1, TINY_DIMENSION)


def test_a_second_fetch_replaces_the_folder_and_a_token_is_sent_as_bearer(
    hub: FakeHub, tiny_repo: FakeRepo, hf_home: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "tiny"
    destination.mkdir()
    (destination / "stale.txt").write_text("from an older bundle")
    files = fetch_hf(REPO, COMMIT, destination, endpoint=hub.endpoint, token="hf_buildhost", allow_patterns=["*.json"])
    assert {f.path for f in files} == {p for p in tiny_repo.files if p.endswith(".json")}
    assert not (destination / "stale.txt").exists()
    assert {r.authorization for r in hub.requests if r.server == "hub"} == {"Bearer hf_buildhost"}
    assert _leftovers(tmp_path) == []


def test_an_unpinned_revision_is_accepted_only_when_asked_and_reports_its_commit(
    hub: FakeHub, hf_home: Path, tmp_path: Path
) -> None:
    said: list[str] = []
    files = fetch_hf(
        REPO, "main", tmp_path / "tiny", endpoint=hub.endpoint, allow_unpinned=True, progress=said.append,
        allow_patterns=["config.json"],
    )  # fmt: skip
    assert [f.path for f in files] == ["config.json"]
    assert any("main" in line and COMMIT in line for line in said)
    # downloads go to the resolved commit, never to the moving branch
    assert all(f"/resolve/{COMMIT}/" in r.path for r in hub.requests if "/resolve/" in r.path)


# --- refusals -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ["main", "v1.0", COMMIT[:12], "refs/pr/1"])
def test_a_revision_that_is_not_a_commit_sha_is_refused_before_any_request(
    hub: FakeHub, tmp_path: Path, revision: str
) -> None:
    with pytest.raises(HfUnpinnedRevision) as caught:
        fetch_hf(REPO, revision, tmp_path / "tiny", endpoint=hub.endpoint)
    message = str(caught.value)
    assert REPO in message and f"'{revision}'" in message and "40-hex" in message and "allow_unpinned" in message
    assert isinstance(caught.value, ApplianceError)
    assert hub.requests == []
    assert not (tmp_path / "tiny").exists()


def test_a_corrupted_lfs_file_is_an_error_naming_both_hashes_and_nothing_is_installed(
    hub: FakeHub, tiny_repo: FakeRepo, hf_home: Path, tmp_path: Path
) -> None:
    hub.corrupt(REPO, "model.safetensors")
    sent = hub.content(REPO, "model.safetensors")
    destination = tmp_path / "tiny"
    with pytest.raises(HfChecksumMismatch) as caught:
        fetch_hf(REPO, COMMIT, destination, endpoint=hub.endpoint)
    message = str(caught.value)
    original = tiny_repo.sha256("model.safetensors")
    assert f"hf:{REPO}@{COMMIT}" in message and "model.safetensors" in message
    assert original in message and _sha256(sent) in message and "LFS" in message
    assert caught.value.mismatches == [("model.safetensors", original, _sha256(sent))]
    assert not destination.exists()
    assert _leftovers(tmp_path) == []
    assert "model.safetensors" in hub.downloaded(REPO)  # it was fetched, and thrown away


def test_a_corrupted_regular_file_fails_its_git_blob_id_and_an_older_install_is_kept(
    hub: FakeHub, hf_home: Path, tmp_path: Path
) -> None:
    destination = tmp_path / "tiny"
    destination.mkdir()
    (destination / "config.json").write_text("{}")
    hub.corrupt(REPO, "modules.json")
    with pytest.raises(HfChecksumMismatch, match=r"modules\.json: git blob id \w{40} does not match"):
        fetch_hf(REPO, COMMIT, destination, endpoint=hub.endpoint)
    assert [p.name for p in destination.iterdir()] == ["config.json"]
    assert _leftovers(tmp_path) == []


def test_a_recipe_pin_that_does_not_match_is_an_error(
    hub: FakeHub, tiny_repo: FakeRepo, hf_home: Path, tmp_path: Path
) -> None:
    wrong = "0" * 64
    pins = {"config.json": tiny_repo.sha256("config.json"), "model.safetensors": wrong}
    with pytest.raises(HfChecksumMismatch) as caught:
        fetch_hf(REPO, COMMIT, tmp_path / "tiny", endpoint=hub.endpoint, expected=pins)
    message = str(caught.value)
    assert "model.safetensors" in message and wrong in message and tiny_repo.sha256("model.safetensors") in message
    assert "config.json" not in message
    assert not (tmp_path / "tiny").exists()


def test_a_recipe_pin_for_a_file_left_out_is_an_error(hub: FakeHub, hf_home: Path, tmp_path: Path) -> None:
    with pytest.raises(HfSourceError, match=r"pins pytorch_model\.bin, which the snapshot .* lacks"):
        fetch_hf(REPO, COMMIT, tmp_path / "tiny", endpoint=hub.endpoint, expected={"pytorch_model.bin": "0" * 64})
    assert not (tmp_path / "tiny").exists()


def test_an_unknown_repo_an_unknown_commit_and_an_unreachable_hub_are_errors_naming_them(
    hub: FakeHub, hf_home: Path, tmp_path: Path
) -> None:
    with pytest.raises(HfSourceError, match=r"hf:appliance-tests/nothing-here@5f0c3e1d.*RepositoryNotFoundError"):
        fetch_hf("appliance-tests/nothing-here", COMMIT, tmp_path / "a", endpoint=hub.endpoint)
    other = "a" * 40
    with pytest.raises(HfSourceError, match=rf"hf:{REPO}@{other}.*RevisionNotFoundError"):
        fetch_hf(REPO, other, tmp_path / "b", endpoint=hub.endpoint)
    closed = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(HfSourceError, match=rf"cannot read the repository from {closed}: ConnectError"):
        fetch_hf(REPO, COMMIT, tmp_path / "c", endpoint=closed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf-home"]


# --- the process stays offline ------------------------------------------------------------------------------


def test_the_process_is_offline_again_after_a_fetch_and_after_a_failed_one(
    hub: FakeHub, hf_home: Path, tmp_path: Path
) -> None:
    assert constants.HF_HUB_OFFLINE is True and os.environ["HF_HUB_OFFLINE"] == "1"
    fetch_hf(REPO, COMMIT, tmp_path / "ok", endpoint=hub.endpoint, allow_patterns=["config.json"])
    hub.corrupt(REPO, "config.json")
    with pytest.raises(HfChecksumMismatch):
        fetch_hf(REPO, COMMIT, tmp_path / "bad", endpoint=hub.endpoint, allow_patterns=["config.json"])
    assert constants.HF_HUB_OFFLINE is True and os.environ["HF_HUB_OFFLINE"] == "1"
    assert constants.HF_HUB_DISABLE_TELEMETRY is True

    before = len(hub.requests)
    with pytest.raises(LocalEntryNotFoundError) as caught:
        hf_hub_download(REPO, "config.json", revision=COMMIT, endpoint=hub.endpoint, cache_dir=tmp_path / "c")
    assert any(isinstance(e, OfflineModeIsEnabled) for e in _chain(caught.value))
    from sentence_transformers import SentenceTransformer

    with pytest.raises(OSError):
        SentenceTransformer(REPO, device="cpu", cache_folder=str(tmp_path / "st-cache"))
    assert len(hub.requests) == before  # neither reached the hub


def test_telemetry_stays_off_during_the_fetch_even_if_the_process_had_it_on(
    hub: FakeHub, hf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With telemetry on, huggingface_hub 2.4 builds its user agent with `detect_agent()`, which fetches
    {HF_ENDPOINT}/api/agent-harnesses (huggingface.co, whatever `endpoint=` says) and caches the answer in
    HF_HOME. Offline, that fetch is skipped; inside the fetch's online window it must not happen either."""
    from huggingface_hub.utils import _detect_agent, build_hf_headers

    registry_fetches: list[bool] = []

    def spy() -> None:
        registry_fetches.append(constants.HF_HUB_OFFLINE)
        return None

    monkeypatch.setattr(_detect_agent, "_fetch_registry", spy)
    monkeypatch.setattr(_detect_agent, "_registry", None)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", False)

    fetch_hf(REPO, COMMIT, tmp_path / "tiny", endpoint=hub.endpoint, allow_patterns=["config.json"])
    assert registry_fetches == []
    assert constants.HF_HUB_DISABLE_TELEMETRY is False  # restored as it was
    assert list(hf_home.rglob("*")) == []

    build_hf_headers()  # the control: the same call outside fetch_hf does reach for the registry
    assert registry_fetches == [True]


def test_files_the_hub_stores_with_xet_come_by_plain_http_not_through_hf_xet(
    hub: FakeHub, tiny_repo: FakeRepo, hf_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hf_xet keeps a chunk cache and logs under HF_HOME; the fetch turns Xet off so that the bytes come
    through the hub's redirect like any LFS file (and through the same checks)."""
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", False)
    files = fetch_hf(XET_REPO, COMMIT, tmp_path / "tiny", endpoint=hub.endpoint)
    assert {f.path for f in files} == _model_files(tiny_repo)
    assert "model.safetensors" in hub.downloaded(XET_REPO)
    assert not [r for r in hub.requests if "/xet-read-token/" in r.path]
    assert constants.HF_HUB_DISABLE_XET is False  # restored as it was
    assert list(hf_home.rglob("*")) == []

    # the control: with Xet on, huggingface_hub asks the hub for a Xet token instead
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(Exception):  # noqa: B017 - this fake hub has no Xet service
        hf_hub_download(XET_REPO, "model.safetensors", revision=COMMIT, endpoint=hub.endpoint, cache_dir=tmp_path / "c")
    assert [r for r in hub.requests if "/xet-read-token/" in r.path]


# --- the default file selection -----------------------------------------------------------------------------


def test_default_patterns_prefer_safetensors_per_folder_and_keep_everything_else() -> None:
    listing = [
        ".gitattributes",
        "config.json",
        "model.safetensors",
        "pytorch_model.bin",
        "tf_model.h5",
        "flax_model.msgpack",
        "rust_model.ot",
        "training_args.bin",
        "onnx/model.onnx",
        "onnx/tokenizer.json",
        "openvino/openvino_model.xml",
        "openvino/openvino_model.bin",
        "1_Pooling/config.json",
        "2_Dense/pytorch_model.bin",  # the only weights of that module: kept
        "2_Dense/config.json",
        "weird[1]*name?.json",
    ]
    patterns = default_allow_patterns(listing)
    assert patterns is not None
    assert sorted(filter_repo_objects(items=listing, allow_patterns=patterns)) == sorted(
        [
            ".gitattributes",
            "config.json",
            "model.safetensors",
            "1_Pooling/config.json",
            "2_Dense/pytorch_model.bin",
            "2_Dense/config.json",
            "weird[1]*name?.json",
        ]
    )


def test_default_patterns_fetch_everything_without_safetensors_or_without_duplicates() -> None:
    assert default_allow_patterns(["config.json", "pytorch_model.bin", "tf_model.h5"]) is None
    assert default_allow_patterns(["config.json", "model.safetensors", "tokenizer.json"]) is None
    sharded = ["model-00001-of-00002.safetensors", "model.safetensors.index.json", "pytorch_model.bin.index.json"]
    assert default_allow_patterns(sharded) == ["model-00001-of-00002.safetensors", "model.safetensors.index.json"]
