"""The index's write operations, as ingest uses them: a batch of embedded documents written, a document
removed, a failure recorded, and a run's state kept. The index writes both of its stores (the SQLite
catalog, the Chroma vectors) in the crash-safe order of appliance.index.writes; ingest never touches
them itself.

Real SQLite and real Chroma: the local store, and for the order on a Chroma server a real `chroma run`
(skipped without its CLI). Embeddings are fixed vectors: no model. The crash points are observed, not
fired: a test records what the stores hold at each one (the kills themselves: test_crash_safety.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from appliance.config import Settings, VectorSettings
from appliance.index.catalog import text_sha256
from appliance.index.index import LAST_REINDEX, HandOver, Index
from appliance.index.writes import EmbeddedDocument
from tests.chroma_server import ChromaServer, requires_chroma_cli, running_chroma, unique_collection
from tests.test_vector_sync import DIM, other_process, seeded_chunks, vector

MODEL = "fixed"
# The crash points of one batch of two documents, then of one removal, in the order a write reaches them.
BATCH_AND_REMOVAL = [
    "after_vectors_upsert",
    "inside_catalog_transaction",
    "inside_catalog_transaction",
    "after_catalog_commit",
    "after_vectors_delete",
    "after_catalog_remove",
]


def embedded(path: str, seeds: list[int], *, version: str = "v1") -> EmbeddedDocument:
    """A document with one chunk per seed (chunk id `path#seed`, embedding that seed's vector)."""
    chunks = seeded_chunks(path, seeds)
    return EmbeddedDocument(
        path=path,
        abs_path=f"/docs/{path}",
        source="/docs",
        sha256=f"{path}-{version}",
        size=len(seeds),
        mtime=1.0,
        doc_type="md",
        title=path,
        chunks=chunks,
        embeddings=np.stack([vector(s) for s in seeds]) if seeds else np.zeros((0, DIM), dtype=np.float32),
        embedding_model=MODEL,
    )


def nearest(index: Index, seed: int) -> str | None:
    hits = index.vectors.query(vector(seed), 1)
    return hits[0].chunk_id if hits else None


def chunk_ids(index: Index, path: str) -> list[str]:
    return sorted(index.catalog.chunk_ids_of(path))


def observe_crash_points(monkeypatch: pytest.MonkeyPatch, look: Callable[[str], object] | None = None) -> list[str]:
    """The crash points the writes reach from now on, in order; `look(point)` runs at each one."""
    reached: list[str] = []

    def observed(point: str) -> None:
        reached.append(point)
        if look is not None:
            look(point)

    monkeypatch.setattr("appliance.index.writes.crash_point", observed)
    return reached


@pytest.fixture
def index(settings: Settings) -> Iterator[Index]:
    index = Index(settings)
    try:
        yield index
    finally:
        index.close()


# --- writing a batch --------------------------------------------------------------------------------


def test_a_written_batch_reads_back_with_its_chunks_and_their_vectors(index: Index) -> None:
    index.write_documents([embedded("a.md", [1, 2]), embedded("b.md", [3])])
    a = index.document("a.md")
    assert a is not None
    assert (a.status, a.chunk_count, a.sha256, a.abs_path, a.error) == ("indexed", 2, "a.md-v1", "/docs/a.md", None)
    assert [doc.path for doc in index.documents()] == ["a.md", "b.md"]
    assert [doc.path for doc in index.documents(source="/docs")] == ["a.md", "b.md"]
    assert index.chunk_count() == 3
    assert index.vectors.ids() == {"a.md#1", "a.md#2", "b.md#3"} and nearest(index, 3) == "b.md#3"
    assert index.pending_changes() == 0  # the owner of the local store applied its own write at once
    assert index.check().consistent


def test_a_rewrite_replaces_the_old_version_and_deletes_its_stale_vectors(index: Index) -> None:
    index.write_documents([embedded("a.md", [1, 2])])
    index.write_documents([embedded("a.md", [2, 3], version="v2")])
    a = index.document("a.md")
    assert a is not None and a.sha256 == "a.md-v2" and chunk_ids(index, "a.md") == ["a.md#2", "a.md#3"]
    assert index.vectors.ids() == {"a.md#2", "a.md#3"} and nearest(index, 1) != "a.md#1"
    assert index.check().consistent


def test_a_batch_is_written_whole_or_not_at_all(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    index.write_documents([embedded("kept.md", [9])])

    def fail_in_the_second_document(point: str) -> None:
        if reached.count("inside_catalog_transaction") == 2:
            raise RuntimeError("the write stops here")

    reached = observe_crash_points(monkeypatch, fail_in_the_second_document)
    with pytest.raises(RuntimeError, match="the write stops here"):
        index.write_documents([embedded("a.md", [1]), embedded("b.md", [2])])
    assert [doc.path for doc in index.documents()] == ["kept.md"]  # the first document rolled back with it
    assert index.vectors.ids() == {"kept.md#9"} and index.check().consistent


def test_a_document_with_no_chunks_is_listed_with_nothing_to_search(index: Index) -> None:
    index.write_documents([embedded("empty.md", []), embedded("a.md", [1])])
    empty = index.document("empty.md")
    assert empty is not None and (empty.status, empty.chunk_count) == ("indexed", 0)
    assert index.vectors.ids() == {"a.md#1"}


def test_embeddings_already_made_are_found_by_their_text_and_model(index: Index) -> None:
    document = embedded("a.md", [1])
    index.write_documents([document])
    sha = text_sha256(document.chunks[0].embedding_text)
    found = index.stored_embeddings([sha, text_sha256("never embedded")], MODEL)
    assert list(found) == [sha] and np.allclose(found[sha], vector(1))
    assert index.stored_embeddings([sha], "another model") == {}  # another model's vectors are not reused


# --- removing a document ------------------------------------------------------------------------------


def test_a_removed_document_leaves_no_chunk_and_no_vector(index: Index) -> None:
    index.write_documents([embedded("a.md", [1, 2]), embedded("b.md", [3])])
    index.remove_document("a.md")
    assert index.document("a.md") is None and chunk_ids(index, "a.md") == []
    assert index.vectors.ids() == {"b.md#3"} and index.chunk_count() == 1
    assert index.check().consistent


# --- a document that failed ---------------------------------------------------------------------------


def record_failure(index: Index, path: str, error: str) -> None:
    index.record_failure(
        path=path, abs_path=f"/docs/{path}", source="/docs", size=5, mtime=2.0, doc_type="md", error=error
    )


def test_a_failure_keeps_the_indexed_version_searchable_with_the_error_noted(index: Index) -> None:
    index.write_documents([embedded("a.md", [1, 2])])
    record_failure(index, "a.md", "cannot read file")
    a = index.document("a.md")
    assert a is not None and (a.status, a.error, a.sha256, a.chunk_count) == (
        "indexed",
        "cannot read file",
        "a.md-v1",
        2,
    )
    assert index.vectors.ids() == {"a.md#1", "a.md#2"} and nearest(index, 2) == "a.md#2"


def test_a_failure_with_no_indexed_version_is_listed_as_failed(index: Index) -> None:
    record_failure(index, "bad.md", "not valid UTF-8")
    record_failure(index, "bad.md", "still not valid UTF-8")  # a failed version is replaced
    bad = index.document("bad.md")
    assert bad is not None
    assert (bad.status, bad.error, bad.sha256, bad.chunk_count, bad.type) == (
        "failed",
        "still not valid UTF-8",
        None,
        0,
        "md",
    )
    assert index.chunk_count() == 0 and index.check().consistent


# --- sources, mtimes ----------------------------------------------------------------------------------


def test_sources_are_remembered_once_each_in_order(index: Index) -> None:
    for source in ("/srv/sops", "/srv/manuals", "/srv/sops"):
        index.add_source(source)
    assert index.sources() == ["/srv/manuals", "/srv/sops"]


def test_a_touched_document_keeps_its_content_with_the_new_mtime(index: Index) -> None:
    index.write_documents([embedded("a.md", [1])])
    index.touch_document("a.md", 42.0)
    a = index.document("a.md")
    assert a is not None and (a.mtime, a.sha256, a.chunk_count) == (42.0, "a.md-v1", 1)


# --- a run's state ------------------------------------------------------------------------------------


def test_a_run_records_the_pipeline_signature_and_the_time_it_finished(index: Index) -> None:
    assert index.stored_pipeline_signature() is None  # nothing chunked yet: every file is (re)chunked
    index.record_pipeline_signature("chunker=3;max_tokens=256")
    assert index.stored_pipeline_signature() == "chunker=3;max_tokens=256"
    assert index.catalog.get_state(LAST_REINDEX) is None
    index.record_reindex_time()
    assert float(index.catalog.get_state(LAST_REINDEX) or 0) > 0


def test_on_the_local_store_a_write_never_marks_the_vectors_dirty(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    reached = observe_crash_points(monkeypatch, lambda point: seen.append(index.writes_unfinished()))
    index.write_documents([embedded("a.md", [1]), embedded("b.md", [2])])
    index.remove_document("b.md")
    assert reached == BATCH_AND_REMOVAL  # the same kill points as on a Chroma server
    assert seen == [False] * len(BATCH_AND_REMOVAL)  # the change log, not a mark, tells what to apply
    assert index.hand_over(wait_s=0) == HandOver("this process")


def test_a_run_that_does_not_own_the_local_store_hands_its_changes_over(settings: Settings) -> None:
    holder = other_process(settings, 'index.vectors; print("owner", flush=True); time.sleep(120)')
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "owner", holder.stderr
        index = Index(settings)
        try:
            index.write_documents([embedded("a.md", [1, 2])])
            assert not index.owns_vectors and index.pending_changes() == 2  # left to the owner
            # The holder sleeps instead of applying: the run reports who owes the changes, and how many.
            assert index.hand_over(wait_s=0.1) == HandOver(f"pid {holder.pid} (-c)", None, 2)
            assert not index.check().interrupted_write  # handed over, not abandoned
        finally:
            index.close()
    finally:
        holder.kill()
        holder.wait()


# --- on a Chroma server: the order, step by step --------------------------------------------------------


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    with running_chroma(tmp_path_factory.mktemp("chroma")) as server:
        yield server


@pytest.fixture
def remote_index(settings: Settings, chroma: ChromaServer) -> Iterator[Index]:
    vectors = VectorSettings.model_validate({"url": chroma.url, "collection": unique_collection()})
    index = Index(settings.model_copy(update={"vectors": vectors}))
    try:
        yield index
    finally:
        index.close()


@requires_chroma_cli
def test_on_a_chroma_server_every_step_leaves_what_a_crash_there_can_repair(
    remote_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = remote_index
    index.write_documents([embedded("a.md", [1, 2])])
    index.finish_run()
    states: dict[str, tuple[bool, set[str], list[str], bool]] = {}

    def look(point: str) -> None:
        if point != "inside_catalog_transaction":  # the transaction's own reads would see its writes
            states[point] = (
                index.writes_unfinished(),
                index.vectors.ids(),
                chunk_ids(index, "a.md"),
                bool(index.document("b.md")),
            )

    reached = observe_crash_points(monkeypatch, look)
    index.write_documents([embedded("a.md", [2, 3], version="v2"), embedded("b.md", [4])])
    new = {"a.md#2", "a.md#3", "b.md#4"}
    # 1-2. Marked dirty, then the new vectors upserted beside the old ones; the catalog is still the old version.
    assert states["after_vectors_upsert"] == (True, new | {"a.md#1"}, ["a.md#1", "a.md#2"], False)
    # 3. One transaction: both documents are new; the replaced chunk's vector is a stray nobody finds.
    assert states["after_catalog_commit"] == (True, new | {"a.md#1"}, ["a.md#2", "a.md#3"], True)
    # 4-5. The stray deleted and the change log applied; the mark stays until the run finishes.
    assert states["after_vectors_delete"] == (True, new, ["a.md#2", "a.md#3"], True)
    assert index.pending_changes() == 0 and index.writes_unfinished()
    index.finish_run()
    check = index.check()
    assert not index.writes_unfinished() and check.consistent and not check.interrupted_write
    assert reached[:5] == BATCH_AND_REMOVAL[:5]


@requires_chroma_cli
def test_on_a_chroma_server_a_removal_deletes_the_vectors_after_the_catalog(
    remote_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = remote_index
    index.write_documents([embedded("a.md", [1]), embedded("b.md", [2])])
    index.finish_run()
    states: list[tuple[bool, set[str], bool]] = []
    reached = observe_crash_points(
        monkeypatch,
        lambda point: states.append((index.writes_unfinished(), index.vectors.ids(), bool(index.document("b.md")))),
    )
    index.remove_document("b.md")
    assert reached == ["after_catalog_remove"]
    assert states == [(True, {"a.md#1", "b.md#2"}, False)]  # gone from the catalog first: its vector is a stray
    assert index.vectors.ids() == {"a.md#1"} and index.pending_changes() == 0
    index.finish_run()
    assert index.check().consistent


@requires_chroma_cli
def test_on_a_chroma_server_the_run_hands_over_to_nobody(remote_index: Index, chroma: ChromaServer) -> None:
    remote_index.write_documents([embedded("a.md", [1])])
    assert remote_index.hand_over(wait_s=0) == HandOver(f"the Chroma server at {chroma.url}")
