"""The import graph follows the layer order written in docs/architecture.md: no import from a lower layer
to a higher one, none between peers of one layer, and so no cycle between packages.

The product (`appliance/`) sits below the lab (`scripts/lib/`, code only benchmarks use) and the
scripts (`scripts/`): a script may import the lab and the product, the lab the product, and the product
neither."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "appliance"
CHECKED = ("appliance", "scripts")  # the top-level folders whose imports are checked


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
    """appliance.answer.support -> answer; appliance -> appliance; scripts.lib.flips -> scripts.lib;
    scripts.bench_sop, scripts.reliability.procs -> scripts."""
    parts = module.split(".")
    if parts[0] == "scripts":
        return "scripts.lib" if parts[1:2] == ["lib"] else "scripts"
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path, repo: Path = REPO) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def script_module(target: str, path: Path, repo: Path) -> str:
    """A bare import in a script (`import bench_perturbations`, found on sys.path as the script's own
    folder or scripts/) as the module it names there: scripts.bench_perturbations."""
    first = target.split(".")[0]
    for folder in (path.parent, repo / "scripts"):
        if (folder / f"{first}.py").is_file() or (folder / first / "__init__.py").is_file():
            return module_name(folder / first, repo) + target[len(first) :]
    return target


def imported_modules(path: Path, repo: Path = REPO) -> list[tuple[str, int]]:
    """(module, line) of every import of the product, the lab or a script in the file, wherever in
    the file it is."""
    name = module_name(path, repo)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    in_scripts = name.split(".")[0] == "scripts"
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
        if in_scripts:
            targets = [script_module(t, path, repo) for t in targets]
        found += [(t, node.lineno) for t in targets if t.split(".")[0] in CHECKED]
    return found


def package_imports(repo: Path = REPO) -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for every import that crosses units."""
    crossings = []
    for path in sorted(p for folder in CHECKED for p in (repo / folder).rglob("*.py")):
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


def test_every_unit_of_the_package_and_the_scripts_has_a_layer() -> None:
    units = {unit_of(module_name(path)) for folder in CHECKED for path in (REPO / folder).rglob("*.py")}
    assert units <= set(documented_layers()), (
        f"not in docs/architecture.md's layers: {units - set(documented_layers())}"
    )


def test_every_layer_names_a_unit_that_exists() -> None:
    units = {unit_of(module_name(path)) for folder in CHECKED for path in (REPO / folder).rglob("*.py")}
    assert set(documented_layers()) <= units, f"no such unit: {set(documented_layers()) - units}"


def test_the_package_layout_table_names_every_unit() -> None:
    """docs/architecture.md's table (`appliance/index/`, `appliance/errors.py`, `appliance/__init__.py`,
    `scripts/lib/`) against the layers: a unit added, removed or renamed changes both."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `((?:appliance|scripts)/[\w/.]*)` \|", text, re.MULTILINE)
    tabled = {
        unit_of(module_name(REPO / row.rstrip("/") / ("__init__.py" if row.endswith("/") else ""))) for row in rows
    }
    assert tabled == set(documented_layers())


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


def test_the_product_imports_neither_the_lab_nor_a_script(tmp_path: Path) -> None:
    (tmp_path / "appliance" / "answer").mkdir(parents=True)
    (tmp_path / "scripts" / "lib").mkdir(parents=True)
    (tmp_path / "appliance" / "answer" / "quoted.py").write_text("from scripts.lib.paired import compare_runs\n")
    (tmp_path / "appliance" / "cli.py").write_text("import scripts.bench_sop\n")
    (tmp_path / "scripts" / "lib" / "__init__.py").write_text("")
    (tmp_path / "scripts" / "lib" / "flips.py").write_text("from appliance.answer import quoted\nimport bench_sop\n")
    (tmp_path / "scripts" / "bench_sop.py").write_text("from scripts.lib import flips\nimport appliance.cli\n")
    assert violations(tmp_path) == [
        "appliance/answer/quoted.py:1: answer (layer 8) imports scripts.lib (layer 13)",
        "appliance/cli.py:1: cli (layer 12) imports scripts (layer 14)",
        "scripts/lib/flips.py:2: scripts.lib (layer 13) imports scripts (layer 14)",
    ]
