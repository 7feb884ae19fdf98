"""The local vector store has one owner process, which applies the catalog's change log to it.

Real SQLite and a real local Chroma store; another process is a real subprocess (it claims the store,
or writes the catalog, or dies in the middle of applying). Embeddings are fixed vectors: no model.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from appliance.config import Settings
from appliance.errors import VectorStoreUnavailable
from appliance.faults import ENV as FAULT_ENV
from appliance.index import vector_sync
from appliance.index.index import Index
from appliance.index.records import Chunk

DIM = 8
REPO = Path(__file__).resolve().parent.parent


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def seeded_chunks(path: str, seeds: list[int]) -> list[Chunk]:
    """One chunk per seed (chunk id `path#seed`; its embedding is that seed's `vector`)."""
    return [
        Chunk(
            chunk_id=f"{path}#{seed}",
            path=path,
            title=path,
            section="",
            page=None,
            text=f"text {seed}",
            ord=n,
            header=path,
            start=0,
            end=1,
            identifiers="",
        )
        for n, seed in enumerate(seeds)
    ]


def write(index: Index, path: str, seeds: list[int]) -> list[str]:
    """One document with a chunk per seed (its embedding that seed's vector), in one catalog transaction."""
    chunks = seeded_chunks(path, seeds)
    index.catalog.replace_document(
        path=path,
        abs_path=f"/docs/{path}",
        source="/docs",
        sha256=str(seeds),
        size=1,
        mtime=1.0,
        doc_type="md",
        title=path,
        status="indexed",
        error=None,
        chunks=chunks,
        embeddings=np.stack([vector(s) for s in seeds]),
        embedding_model="fixed",
    )
    return [c.chunk_id for c in chunks]


def nearest(index: Index, seed: int) -> str | None:
    hits = index.vectors.query(vector(seed), 1)
    return hits[0].chunk_id if hits else None


def other_process(settings: Settings, code: str, **env: str) -> subprocess.Popen[str]:
    """Python running `code` with `index` = Index(settings) of the test's home, in its own process."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from appliance.config import Settings
        from appliance.index.index import Index
        from tests.test_vector_sync import write
        index = Index(Settings(home=Path({str(settings.home)!r}), models_dir=Path({str(settings.models_dir)!r})))
        """
    )
    return subprocess.Popen(
        [sys.executable, "-c", script + textwrap.dedent(code)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def holder(settings: Settings) -> Iterator[subprocess.Popen[str]]:
    """Another process that owns the store (as a running server does) until the test ends."""
    process = other_process(settings, 'index.vectors; print("owner", flush=True); time.sleep(120)')
    assert process.stdout is not None and process.stdout.readline().strip() == "owner", process.stderr
    yield process
    process.kill()
    process.wait()


def test_each_chunk_written_or_removed_is_logged_in_its_own_transaction(settings: Settings) -> None:
    index = Index(settings)
    try:
        ids = write(index, "a.md", [1, 2])
        write(index, "a.md", [2, 3])  # replaced: all old chunks go, the new ones come
        logged = [row[0] for row in index.catalog.conn.execute("SELECT chunk_id FROM vector_changes ORDER BY seq")]
        assert logged == [*ids, *ids, "a.md#2", "a.md#3"]
        assert vector_sync.pending(index.catalog.conn) == 6
    finally:
        index.close()


def test_the_owner_applies_the_log_and_prunes_it(settings: Settings) -> None:
    index = Index(settings)
    try:
        assert index.owns_vectors and index.vectors_owner() == "this process"
        write(index, "a.md", [1, 2])
        write(index, "b.md", [3])
        index.catalog.remove_document("b.md")
        applied = index.sync()
        assert (applied.upserted, applied.deleted) == (2, 1)
        assert index.vectors.ids() == {"a.md#1", "a.md#2"}
        assert nearest(index, 2) == "a.md#2"
        fresh = index.freshness()
        assert fresh.pending_changes == 0 and fresh.applied_seq == applied.seq and fresh.updated_at
        assert index.catalog.conn.execute("SELECT COUNT(*) FROM vector_changes").fetchone()[0] == 0
        assert index.sync().upserted == 0  # nothing left to do
        assert index.check().consistent
    finally:
        index.close()


def test_a_process_that_does_not_own_the_store_writes_only_the_catalog(
    settings: Settings, holder: subprocess.Popen[str]
) -> None:
    index = Index(settings)
    try:
        assert not index.owns_vectors
        assert index.vectors_owner() == f"pid {holder.pid} (-c)"
        write(index, "a.md", [1])
        assert index.sync().seq == 0 and vector_sync.pending(index.catalog.conn) == 1  # left to the owner
        assert not index.needs_reconcile()  # nor does it repair what is the owner's to apply
    finally:
        index.close()
    holder.kill()
    holder.wait()
    index = Index(settings)  # the holder is gone: this process claims the store and catches up
    try:
        assert index.owns_vectors
        assert index.sync().upserted == 1 and nearest(index, 1) == "a.md#1"
    finally:
        index.close()


def test_a_server_waits_for_the_store_and_then_names_its_holder(
    settings: Settings, holder: subprocess.Popen[str]
) -> None:
    index = Index(settings)
    index.serve(wait_s=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(VectorStoreUnavailable, match=rf"held by pid {holder.pid}"):
            index.vectors  # noqa: B018
        assert time.monotonic() - started >= 0.3
        started = time.monotonic()
        with pytest.raises(VectorStoreUnavailable):  # waited once: the next request is answered at once
            index.vectors  # noqa: B018
        assert time.monotonic() - started < 0.3
    finally:
        index.close()
    holder.kill()
    holder.wait()
    index = Index(settings)
    index.serve(wait_s=0.3)
    try:
        assert index.owns_vectors  # the holder is gone: claimed
    finally:
        index.close()


def test_the_owner_serves_what_another_process_committed(settings: Settings) -> None:
    index = Index(settings)
    index.serve(wait_s=5.0)
    try:
        write(index, "a.md", [1])
        index.sync()
        writer = other_process(settings, 'write(index, "b.md", [7]); print(index.owns_vectors)')
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0 and out.strip() == "False", err
        with index.reading():  # a consistent read brings the vectors to the catalog's state first
            assert nearest(index, 7) == "b.md#7"
            assert index.catalog.document("b.md") is not None
    finally:
        index.close()


def test_a_read_sees_the_catalog_and_the_vectors_at_one_state(settings: Settings) -> None:
    index, other = Index(settings), Index(settings)
    try:
        write(index, "a.md", [1])
        with index.reading():
            write(other, "a.md", [5])  # committed on another connection during the read
            # The read keeps its state: the old chunk, and its vector.
            assert index.catalog.chunk_ids_of("a.md") == ["a.md#1"]
            assert nearest(index, 1) == "a.md#1"
        with index.reading():
            assert index.catalog.chunk_ids_of("a.md") == ["a.md#5"] and nearest(index, 1) == "a.md#5"
    finally:
        other.close()
        index.close()


def test_a_kill_while_applying_is_repaired_by_the_next_owner(settings: Settings) -> None:
    index = Index(settings)
    try:
        write(index, "a.md", [1, 2])
        index.sync()
        write(index, "a.md", [3])
    finally:
        index.close()  # lets go of the store: the process below claims it
    killed = other_process(settings, "index.sync()", **{FAULT_ENV: "during_vector_sync"})
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    index = Index(settings)
    try:
        check = index.check()  # the owner applies what the killed one did not record as applied
        assert check.consistent and not check.interrupted_write and check.pending_changes == 0, check
        assert index.vectors.ids() == {"a.md#3"} and nearest(index, 1) == "a.md#3"
    finally:
        index.close()


def test_an_interrupted_write_is_told_apart_from_changes_handed_over(settings: Settings) -> None:
    index = Index(settings)
    try:
        write(index, "a.md", [1])
        conn = index.catalog.conn
        assert vector_sync.interrupted(conn)  # committed, not applied, not handed over: a writer died here
        vector_sync.hand_over(index.catalog)
        assert not vector_sync.interrupted(conn) and vector_sync.pending(conn) == 1
    finally:
        index.close()
