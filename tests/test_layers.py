"""The package's import graph follows the layer order written in docs/architecture.md: no import from a
lower layer to a higher one, none between peers of one layer, and so no cycle between packages."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "appliance"


def documented_layers() -> dict[str, int]:
    """Unit name -> layer number, from the ```layers block of docs/architecture.md."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```layers\n(.*?)```", text, re.DOTALL)
    assert block, "docs/architecture.md has no ```layers block"
    layers: dict[str, int] = {}
    for line in block.group(1).splitlines():
        number, _, names = line.partition(".")
        for name in names.split():
            assert name not in layers, f"{name} is listed twice"
            layers[name] = int(number)
    return layers


def unit_of(module: str) -> str:
    """appliance.answer.support -> answer; appliance.config -> config; appliance -> appliance."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path, repo: Path = REPO) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, repo: Path = REPO) -> list[tuple[str, int]]:
    """(module, line) of every appliance import in the file, wherever in the file it is."""
    name = module_name(path, repo)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                targets = [".".join([*base, *([node.module] if node.module else [])])]
            else:
                targets = [node.module or ""]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        found += [(t, node.lineno) for t in targets if t == "appliance" or t.startswith("appliance.")]
    return found


def package_imports(repo: Path = REPO) -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for every import that crosses units."""
    crossings = []
    for path in sorted((repo / "appliance").rglob("*.py")):
        source = unit_of(module_name(path, repo))
        for target, line in imported_modules(path, repo):
            if unit_of(target) != source:
                crossings.append((source, unit_of(target), f"{path.relative_to(repo)}:{line}"))
    return crossings


def violations(repo: Path = REPO) -> list[str]:
    layers = documented_layers()
    return [
        f"{where}: {source} (layer {layers[source]}) imports {target} (layer {layers[target]})"
        for source, target, where in package_imports(repo)
        if layers[target] >= layers[source]
    ]


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {unit_of(module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert units <= set(documented_layers()), (
        f"not in docs/architecture.md's layers: {units - set(documented_layers())}"
    )


def test_no_import_reaches_up_or_sideways() -> None:
    wrong = violations()
    assert not wrong, "\n".join(wrong)


def test_the_package_graph_has_no_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for source, target, _ in package_imports():
        graph.setdefault(source, set()).add(target)
    state: dict[str, str] = {}

    def visit(unit: str, trail: tuple[str, ...]) -> None:
        state[unit] = "open"
        for following in sorted(graph.get(unit, ())):
            assert state.get(following) != "open", f"import cycle: {' -> '.join([*trail, unit, following])}"
            if following not in state:
                visit(following, (*trail, unit))
        state[unit] = "done"

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, ())


def test_the_check_finds_upward_sideways_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "appliance"
    (package / "text").mkdir(parents=True)
    (package / "ingest").mkdir()
    (package / "__init__.py").write_text("")
    (package / "text" / "rules.py").write_text("def f():\n    from appliance.server.app import create_app\n")
    (package / "ingest" / "__init__.py").write_text("from ..retrieve import search\nfrom . import chunker\n")
    assert violations(tmp_path) == [
        "appliance/ingest/__init__.py:1: ingest (layer 7) imports retrieve (layer 7)",
        "appliance/text/rules.py:2: text (layer 4) imports server (layer 11)",
    ]
