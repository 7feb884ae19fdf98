"""One door into the catalog: only `appliance/index/` holds SQL on the catalog's tables. Every other module
reads and writes it through the index's calls (`Index`, `Catalog`, `Catalog.fulltext`, `index.snapshot`),
so whoever changes the schema has one package to change.

The tables are read from the catalog's own migrations, so a table added there is guarded at once. A string
of the code is SQL on a catalog table when it starts as SQL does (a statement: SELECT, INSERT, UPDATE, DELETE,
WITH…, or a clause: FROM, JOIN, WHERE; any case) and a catalog table follows FROM, JOIN, INTO, UPDATE or TABLE
or comes before MATCH; or when a statement leaves its table to a placeholder (`f"SELECT … FROM {table}"`: a
table nobody outside the index should need to choose). Docstrings may show SQL; code may not run it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from appliance.index.migrations import MIGRATIONS

REPO = Path(__file__).resolve().parent.parent
_CREATED = re.compile(r"CREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_STATEMENT = r"^\s*(?:SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|CREATE|ALTER|DROP)\b"
_SQL_START = re.compile(rf"{_STATEMENT}|^\s*(?:FROM|JOIN|WHERE)\b", re.IGNORECASE)
_STATEMENT_START = re.compile(_STATEMENT, re.IGNORECASE)
_PLACEHOLDER_TABLE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE)\s+\{\}|\{\}\s+MATCH\b", re.IGNORECASE)


def catalog_tables() -> set[str]:
    return {name.lower() for _, script in MIGRATIONS for name in _CREATED.findall(script)}


def _naming(tables: set[str]) -> re.Pattern[str]:
    names = "|".join(sorted(tables))
    return re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(?:{names})\b|\b(?:{names})\s+MATCH\b", re.IGNORECASE)


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string nodes that are docstrings (of the module, a class or a function)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _strings(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, text) of every string of the code; an f-string whole, its fields as `{}`."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip |= {id(part) for part in node.values}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            text = "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
            found.append((node.lineno, text))
    return sorted(found)


def catalog_sql_outside_index(repo: Path = REPO) -> list[str]:
    """`path:line: string` of every string outside appliance/index/ that is SQL on a catalog table."""
    package = repo / "appliance"
    naming = _naming(catalog_tables())
    found = []
    for path in sorted(package.rglob("*.py")):
        if (package / "index") in path.parents:
            continue
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if (_SQL_START.search(text) and naming.search(text)) or (
                _STATEMENT_START.search(text) and _PLACEHOLDER_TABLE.search(text)
            ):
                found.append(f"{path.relative_to(repo)}:{line}: {' '.join(text.split())[:100]}")
    return found


def modules_with_catalog_sql(repo: Path = REPO) -> set[str]:
    return {entry.split(":")[0] for entry in catalog_sql_outside_index(repo)}


def test_the_catalog_tables_are_read_from_its_migrations() -> None:
    assert {"sources", "documents", "chunks", "state", "chunks_fts", "chunks_ident", "vector_changes"} <= (
        catalog_tables()
    )


def test_no_module_outside_the_index_holds_sql_on_a_catalog_table() -> None:
    found = catalog_sql_outside_index()
    assert not found, "catalog SQL outside appliance/index/ (add an index call instead):\n" + "\n".join(found)


def test_the_check_finds_catalog_sql_and_passes_prose_and_other_databases(tmp_path: Path) -> None:
    package = tmp_path / "appliance"
    for folder in ("index", "retrieve", "backup", "server", "cli"):
        (package / folder).mkdir(parents=True)
    (package / "index" / "catalog.py").write_text('SQL = "SELECT * FROM documents WHERE path = ?"\n')
    (package / "retrieve" / "words.py").write_text(
        "def occurs(conn, table, match):\n"
        '    """SELECT 1 FROM chunks_fts: a docstring may show it."""\n'
        '    return conn.execute(f"SELECT 1 FROM {table} WHERE {table} MATCH ?", (match,))\n'
    )
    (package / "backup" / "restore.py").write_text(
        'MOVE = "UPDATE sources SET path = ? WHERE path = ?"\nLOWER = "select id from chunks order by id"\n'
    )
    (package / "server" / "auth.py").write_text(
        'COUNT = "SELECT COUNT(*) FROM tokens"\nLISTED = f"SELECT {1} FROM tokens WHERE id = ?"\n'
    )
    (package / "cli" / "status.py").write_text(
        'NOTE = "documents removed; nothing from state changed"\nPATH = f"moved from {1} into {2}"\n'
        'ASKED = "Where does the update of documents come from?"\nJOINED = f"join {1} parts into {2}"\n'
    )
    assert catalog_sql_outside_index(tmp_path) == [
        "appliance/backup/restore.py:1: UPDATE sources SET path = ? WHERE path = ?",
        "appliance/backup/restore.py:2: select id from chunks order by id",
        "appliance/retrieve/words.py:3: SELECT 1 FROM {} WHERE {} MATCH ?",
    ]
    assert modules_with_catalog_sql(tmp_path) == {"appliance/backup/restore.py", "appliance/retrieve/words.py"}
