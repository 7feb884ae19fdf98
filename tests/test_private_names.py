"""No module of this repository uses another module's private names (a leading underscore).

A name with a leading underscore is its module's own business: it may change with no caller to warn.
So no module of the product (`appliance/`), the lab and the scripts (`scripts/`) or the tests imports one
from another module of the repository (`from appliance.answer.quotes import _flat`), nor reads one
through a module it imported (`quotes._segments(...)`); what another module needs is made public or
moved. The tests are held to the same rule: a test uses the module under test as its callers do.

Private names of other projects are outside this check: `llama_cpp._internals` is reached into on
purpose (pinned release, pyproject.toml), and `os._Environ` / `hashlib._Hash` are the stdlib's types.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("appliance", "scripts", "tests")


def module_name(path: Path, repo: Path) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def is_ours(module: str, repo: Path) -> bool:
    """Whether `module` is a module or package of this repository (scripts import their folder's
    siblings by bare name: `import bench_perturbations`)."""
    if not module:
        return False
    where = repo.joinpath(*module.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file() or where.is_dir()


def private_uses(path: Path, repo: Path) -> list[str]:
    """'file:line: module._name' for every private name of another module of ours the file uses."""
    name = module_name(path, repo)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    folder = path.parent.relative_to(repo).parts  # a script's own folder is on its sys.path
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: dict[str, str] = {}  # local name -> module of ours it is bound to

    def resolve(module: str) -> str | None:
        for candidate in (module, ".".join([*folder, module])):
            if is_ours(candidate, repo):
                return candidate
        return None

    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = resolve(".".join([*base, *([node.module] if node.module else [])]))
            else:
                source = resolve(node.module or "")
            if source is None:
                continue
            for alias in node.names:
                if is_private(alias.name):
                    found.append(f"{path.relative_to(repo)}:{node.lineno}: {source}.{alias.name}")
                if (submodule := resolve(f"{source}.{alias.name}")) is not None:
                    modules[alias.asname or alias.name] = submodule
        elif isinstance(node, ast.Import):
            for alias in node.names:  # `import a.b` binds a, `import a.b as c` binds c to a.b
                bound = alias.asname or alias.name.split(".")[0]
                if (module := resolve(alias.name if alias.asname else bound)) is not None:
                    modules[bound] = module
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            chain: list[str] = []
            value: ast.expr = node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in modules:
                module = ".".join([modules[value.id], *chain])
                found.append(f"{path.relative_to(repo)}:{node.lineno}: {module}.{node.attr}")
    return found


def all_private_uses(repo: Path = REPO) -> list[str]:
    return [
        use
        for folder in FOLDERS
        if (repo / folder).is_dir()
        for path in sorted((repo / folder).rglob("*.py"))
        for use in private_uses(path, repo)
    ]


def test_no_module_uses_a_private_name_of_another() -> None:
    uses = all_private_uses()
    assert not uses, "\n".join(uses)


def test_the_check_finds_imported_and_attribute_uses(tmp_path: Path) -> None:
    (tmp_path / "appliance" / "answer").mkdir(parents=True)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "appliance" / "__init__.py").write_text("")
    (tmp_path / "appliance" / "answer" / "__init__.py").write_text("")
    (tmp_path / "appliance" / "answer" / "quotes.py").write_text("def _flat(t):\n    return t\n")
    (tmp_path / "appliance" / "answer" / "quoted.py").write_text("from .quotes import _flat\n")
    (tmp_path / "scripts" / "helpers.py").write_text("_cache = {}\n")
    (tmp_path / "scripts" / "bench.py").write_text(
        "import helpers\n"
        "from appliance.answer import quotes as q\n"
        "import os\n"
        "q._flat('x')\n"
        "helpers._cache.clear()\n"
        "os._exit(0)  # not ours\n"
        "q.flat('x')  # public\n"
    )
    assert all_private_uses(tmp_path) == [
        "appliance/answer/quoted.py:1: appliance.answer.quotes._flat",
        "scripts/bench.py:4: appliance.answer.quotes._flat",
        "scripts/bench.py:5: scripts.helpers._cache",
    ]
