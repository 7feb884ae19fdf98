"""Schema migrations when several processes open a new database at once.

The workers of `appliance serve --workers N` start together and each opens the home's SQLite files; on a
fresh home every one of them finds the migrations unapplied. Exactly one applies each migration, the others
wait for it and go on: no process fails with "table … already exists", and each migration is recorded once.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from appliance.index.catalog import Catalog
from appliance.index.migrations import MIGRATIONS, apply_migrations, statements
from appliance.server.auth import TokenStore

PROCESSES = 6
ROUNDS = 4


def _open_together(kind: str, path: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait(timeout=60)
    opened = Catalog(Path(path)) if kind == "catalog" else TokenStore(Path(path))
    opened.close()


@pytest.mark.parametrize("kind", ["catalog", "tokens"])
def test_processes_opening_a_new_database_together_all_start_and_apply_each_migration_once(
    tmp_path: Path, kind: str
) -> None:
    context = multiprocessing.get_context("spawn")  # as uvicorn starts its workers
    for round_number in range(ROUNDS):
        path = tmp_path / f"{kind}-{round_number}.sqlite"
        barrier = context.Barrier(PROCESSES)
        workers = [context.Process(target=_open_together, args=(kind, str(path), barrier)) for _ in range(PROCESSES)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert [worker.exitcode for worker in workers] == [0] * PROCESSES, f"round {round_number}"
        with sqlite3.connect(path) as conn:
            names = [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY name")]
        assert len(names) == len(set(names)) and names, names


def test_an_up_to_date_database_is_opened_without_taking_the_write_lock(tmp_path: Path) -> None:
    # A server worker opening the catalog while `appliance ingest` holds a long write transaction must not
    # wait for it: with nothing to apply, opening only reads.
    path = tmp_path / "catalog.sqlite"
    Catalog(path).close()
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        reader = sqlite3.connect(path, timeout=0.1, isolation_level=None)
        assert apply_migrations(reader) == []
        reader.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_migration_is_applied_whole_or_not_at_all(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    broken = [("0001_ok", "CREATE TABLE a (x);"), ("0002_broken", "CREATE TABLE b (x);\nCREATE TABLE a (y);")]
    with pytest.raises(sqlite3.OperationalError, match="already exists"):
        apply_migrations(conn, broken)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "b" not in tables and "a" not in tables  # one transaction for what was pending: nothing half-done
    assert apply_migrations(conn, broken[:1]) == ["0001_ok"]


def test_the_statements_of_each_migration_rebuild_the_schema_executescript_builds(tmp_path: Path) -> None:
    # Triggers hold semicolons inside BEGIN … END; comments and blank lines between statements are kept apart.
    split = sqlite3.connect(tmp_path / "split.sqlite", isolation_level=None)
    whole = sqlite3.connect(tmp_path / "whole.sqlite", isolation_level=None)
    for _, script in MIGRATIONS:
        for statement in statements(script):
            assert sqlite3.complete_statement(statement), statement
            split.execute(statement)
        whole.executescript(script)
    schema = "SELECT type, name, sql FROM sqlite_master ORDER BY type, name"
    assert split.execute(schema).fetchall() == whole.execute(schema).fetchall()
    assert any(name.startswith("chunks_vector_") for _, name, _ in split.execute(schema).fetchall())
    with pytest.raises(ValueError, match="unfinished"):
        list(statements("CREATE TABLE a (x);\nCREATE TABLE b (x"))
