"""Shared fixtures: a model store built from the installed PyPI model packages, and a fresh
APPLIANCE_HOME per test. Nothing here touches a network."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from appliance.config import Settings
from appliance.models.packages import init_store_from_packages
from appliance.models.store import ModelStore

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
RUNBOOKS = SHARED_DATA / "runbooks"


# `make test` runs the suite in two processes (pytest-xdist, `-n 2 --no-loadscope-reorder`): many tests wait
# on servers, subprocesses and a browser rather than on the CPU. A module's tests stay in one process, since
# they share module fixtures (servers, indexes), and the modules that share the session's bundle and its
# offline install are one unit of work. The longest units start first (measured with `--durations`), so
# the two processes finish close together; the rest keep their collection order.
SHARED_BUNDLE_MODULES = ("test_offline_install.py", "test_zero_network.py")
LONGEST_FIRST = (
    "offline-bundle",
    "test_offline_recipe.py",
    "test_cross_process_index.py",
    "test_crash_harness.py",
    "test_web_page.py",
    "test_cli_end_to_end.py",
    "test_concurrency.py",
    "test_backup_under_load.py",
    "test_crash_safety.py",
    "test_generator.py",
)


# `make test-fast` (`-m "not slow"`) leaves out the tests marked slow: these modules whole, and single tests
# marked where they are. They drive a browser, build a bundle and install it offline, start servers and
# subprocesses or kill them, generate with an LLM, run OCR, export the embedder to ONNX or fuzz the API;
# what is left is the quick loop for someone changing one module (its time on this machine is in the README).
SLOW_MODULES = (
    *SHARED_BUNDLE_MODULES,
    *(module for module in LONGEST_FIRST if module.endswith(".py")),
    "test_admin_page.py",
    "test_serve_workers.py",
    "test_chroma_server.py",
    "test_index_writes.py",
    "test_vector_sync.py",
    "test_writer_lock.py",
    "test_watch.py",
    "test_metrics.py",
    "test_security_matrix.py",
    "test_answerer.py",
    "test_ocr.py",
    "test_scanned_tables.py",
    "test_docs_commands.py",
    "test_embedder_backends.py",
    "test_api_fuzz.py",
    "test_followup_model.py",
)


def unit_of_work(nodeid: str) -> str:
    """The module of a test (tests/ is flat: its file name), or the group of modules that share one session
    fixture."""
    module = Path(nodeid.split("::", 1)[0]).name
    return "offline-bundle" if module in SHARED_BUNDLE_MODULES else module


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {unit: position for position, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(unit_of_work(item.nodeid), len(rank)))  # stable otherwise
    for item in items:
        if Path(item.nodeid.split("::", 1)[0]).name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


if importlib.util.find_spec("xdist") is not None:
    # xdist's own `--dist loadgroup` marks do not reach its scheduler under pytest 9.2 (it rewrites
    # `item._nodeid`, which pytest no longer reads), so the units are given through its scheduler hook.
    from xdist.scheduler import LoadScopeScheduling

    class ModuleUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of_work(nodeid)

    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling:
        return ModuleUnits(config, log)


@pytest.fixture(autouse=True)
def searchers_are_closed_after_each_test(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every Searcher a test opens (an Answerer's, an app's) is closed when the test ends, as the service closes
    its own: a test process runs hundreds of tests, and each index left open holds a dozen descriptors (CI's
    worker passed 1024, where select() fails)."""
    from appliance.retrieve.search import Searcher

    opened: list[Searcher] = []
    original = Searcher.__init__

    def recorded(self: Searcher, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(Searcher, "__init__", recorded)
    yield
    for searcher in opened:
        with contextlib.suppress(Exception):
            searcher.close()


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model store with the real embedder, the small SmolLM2 generator and the OCR model (hard links: instant)."""
    root = tmp_path_factory.mktemp("models")
    init_store_from_packages(ModelStore(root), ["all-MiniLM-L6-v2", "smollm2-135m-instruct", "ppocr-v6-small"])
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def settings(home: Path, models_dir: Path) -> Settings:
    return Settings(home=home, models_dir=models_dir)


@pytest.fixture
def cli_env(home: Path, models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Environment for running the CLI (in-process or as a subprocess) against the test home."""
    env = {"APPLIANCE_HOME": str(home), "APPLIANCE_MODELS_DIR": str(models_dir)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    yield {**os.environ, **env}


@pytest.fixture(scope="session")
def cpu_small_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """`appliance bundle --profile cpu-small` from the wheelhouse (≈ 35 s): (archive, --json summary)."""
    from tests.offline_target import APPLIANCE, require_wheelhouse, run

    output = tmp_path_factory.mktemp("bundle") / "appliance-cpu-small.tar.zst"
    command = [APPLIANCE, "bundle", "--profile", "cpu-small", "--output", str(output)]
    result = run([*command, "--wheels-from", str(require_wheelhouse()), "--json"])
    return output, json.loads(result.stdout)


@pytest.fixture(scope="session")
def installed_appliance(
    cpu_small_bundle: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The cpu-small bundle installed (≈ 1 min) with the network cut off and every network system
    call recorded: {"prefix", "home", "report" (install --json), "strace_log"}. The admin's PYTHONPATH
    names a folder that holds another `appliance` distribution: the install must not take it for installed."""
    from tests.offline_target import APPLIANCE, clean_env, foreign_site, network_cut, run, traced

    archive, summary = cpu_small_bundle
    base = tmp_path_factory.mktemp("target")
    prefix, home, log = base / "opt" / "appliance", base / "var" / "appliance", base / "install.strace"
    command = [APPLIANCE, "install", str(archive), "--prefix", str(prefix), "--home", str(home), "--no-systemd"]
    command += ["--manifest-sha256", str(summary["manifest_sha256"]), "--json"]
    foreign = foreign_site(base / "admin-site")
    pythonpath = os.pathsep.join(p for p in (str(foreign), os.environ.get("PYTHONPATH", "")) if p)
    result = run([*traced(log), *network_cut(), *command], env=clean_env(PYTHONPATH=pythonpath))
    return {"prefix": prefix, "home": home, "report": json.loads(result.stdout), "strace_log": log}
