"""Import what the appliance runs, once, in a venv `appliance install` has just built: Python writes the bytecode
of exactly those modules (the units then run the venv read-only, where each start would compile them again).

What is imported: every module of the appliance itself, and every module outside the standard library that its
source names in an import statement (found by reading the source, so a function's late `import torch` counts),
with what those import in turn. On the cpu-small bundle that is 4,194 of the venv's 16,467 Python files, in
29 s on one core, where compiling every file took 47 s on 2 cores (about 94 s of CPU); the commands an operator and
an admin run (ingest of Markdown, PDF, DOCX and HTML, search, ask, status) then compiled 3 more modules of
their own. A module that fails to import here (one only a build host has, such as onnx) is skipped: it is
compiled where it is imported, as before.

Run as `python -m appliance.offline.warm_imports` with bytecode writing on; prints one JSON line.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path

import appliance  # noqa: F401  (the offline switches, before any library is imported)

PACKAGE = Path(__file__).resolve().parent.parent


def named_modules(package: Path = PACKAGE) -> list[str]:
    """The modules outside the standard library that the package's source imports, by name, sorted."""
    names: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    own = package.name
    return sorted(n for n in names if n.split(".")[0] not in sys.stdlib_module_names and n.split(".")[0] != own)


def own_modules(package: Path = PACKAGE) -> list[str]:
    """The package's own modules (a subpackage that fails to import is skipped with what is under it)."""
    return [module.name for module in pkgutil.walk_packages([str(package)], f"{package.name}.", onerror=lambda _: None)]


def main() -> int:
    started = time.monotonic()
    wanted = [*named_modules(), *own_modules()]
    failed: dict[str, str] = {}
    for name in wanted:
        try:
            importlib.import_module(name)
        except (Exception, SystemExit) as exc:  # a module's own import-time error: skipped, compiled where used
            failed[name] = type(exc).__name__
    seconds = round(time.monotonic() - started, 1)
    print(json.dumps({"modules": len(wanted), "failed": failed, "loaded": len(sys.modules), "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
