"""Search: exact identifiers found lexically, any query string safe, stray vectors never shown."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from appliance.config import Settings
from appliance.index.fulltext import FullText
from appliance.index.index import Index
from appliance.index.migrations import apply_migrations
from appliance.ingest.pipeline import ingest
from appliance.retrieve.fusion import reciprocal_rank_fusion
from appliance.retrieve.lexical import lexical_search
from appliance.retrieve.search import Searcher
from appliance.text.identifiers import extract_identifiers

# Each identifier sits in one document among near-miss distractors that share its parts.
DOCS = {
    "valve-b.md": "# Valve B\n\nIsolate VLV-3042-B before opening the strainer basket.\n",
    "valve-a.md": "# Valve A\n\nIsolate VLV-3042-A weekly; valve B (3042) is exercised by the B crew.\n",
    "crashloop.md": "# Pod restarts\n\nThe alert KubePodCrashLooping fires when a pod restarts repeatedly.\n",
    "kube-pod.md": "# Kube pods\n\nA kube pod is crash looping when looping restarts crash the pod.\n",
    "etcd.md": "# etcd\n\netcdHighNumberOfLeaderChanges means the etcd leader changes often.\n",
    "gitlab.md": "# Omnibus\n\nAfter editing gitlab.rb run `gitlab-ctl reconfigure` and check the logs.\n",
    "gitlab-other.md": "# GitLab CTL\n\nThe GitLab web UI lets you reconfigure a project; ctl is short for control.\n",
    "pump.md": "# Pumps\n\nP-HIGH-001 is the duty high-lift pump.\n",
    "pump-2.md": "# Pumps 2\n\nP-HIGH-002 is standby; high lift pump 001 priority is HIGH.\n",
}


@pytest.fixture
def indexed(settings: Settings, tmp_path: Path) -> Settings:
    root = tmp_path / "ids"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    ingest(settings, [root])
    return settings


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("VLV-3042-B", "ids/valve-b.md"),
        ("KubePodCrashLooping", "ids/crashloop.md"),
        ("etcdHighNumberOfLeaderChanges", "ids/etcd.md"),
        ("gitlab-ctl reconfigure", "ids/gitlab.md"),
        ("P-HIGH-001", "ids/pump.md"),
        ("what does P-HIGH-001 do?", "ids/pump.md"),
    ],
)
def test_exact_identifiers_are_found_first_by_the_lexical_side(indexed: Settings, query: str, expected: str) -> None:
    searcher = Searcher(indexed)
    try:
        for mode in ("lexical", "hybrid"):
            hits = searcher.search(query, k=3, mode=mode).hits  # type: ignore[arg-type]
            assert hits[0].path == expected, (mode, [h.path for h in hits])
    finally:
        searcher.close()


def test_hits_carry_provenance_and_scores(indexed: Settings) -> None:
    result = Searcher(indexed).search("strainer basket", k=2, mode="hybrid")
    top = result.as_json()["hits"][0]
    assert set(top) == {"rank", "chunk_id", "path", "title", "section", "page", "score", "text", "ocr_confidence"}
    assert (top["rank"], top["path"], top["title"], top["section"]) == (1, "ids/valve-b.md", "Valve B", "Valve B")
    assert {"lexical", "embed", "dense", "fusion", "total"} <= set(result.timings_ms)


def test_a_searcher_closes_the_index_it_opened_and_leaves_a_shared_one_open(indexed: Settings) -> None:
    own = Searcher(indexed)
    shared = Searcher(indexed, index=own.index, embedder=own.embedder)
    shared.close()
    assert own.search("strainer basket", k=3).hits, "the owner's index still answers"
    own.close()
    with pytest.raises(sqlite3.ProgrammingError):
        own.index.catalog.conn.execute("SELECT 1")


def test_a_stray_vector_without_a_catalog_chunk_is_never_shown(indexed: Settings) -> None:
    index = Index(indexed)
    query_vector = Searcher(indexed, index=index).embedder.embed_query("strainer basket")
    index.vectors.upsert(["ghost-chunk"], np.stack([query_vector]), ["ids/ghost.md"])
    hits = Searcher(indexed, index=index).search("strainer basket", k=10, mode="dense").hits
    assert hits and all(hit.chunk_id != "ghost-chunk" for hit in hits)
    assert not index.check().consistent
    index.reconcile()
    assert index.check().consistent
    index.close()


@pytest.fixture(scope="module")
def fulltext() -> FullText:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    apply_migrations(conn)
    conn.execute("INSERT INTO sources VALUES ('x', 0)")
    conn.execute(
        "INSERT INTO documents VALUES (1, 'x/a.md', '/x/a.md', 'x', '', 1, 0, 'md', 'A', 'indexed', NULL, 1, 0)"
    )
    text = 'Close VLV-3042-B. "Quoted" AND OR NOT NEAR(a b) col:umn * ^ ( ) {x} -- ; \' é 中文'
    conn.execute(
        "INSERT INTO chunks VALUES ('c1', 1, 0, 'A', ?, 'A', NULL, 0, 1, ?, 'sha', x'00', 'm', NULL)",
        (text, " ".join(extract_identifiers(text))),
    )
    return FullText(conn)


@hypothesis_settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_no_query_string_raises_an_fts5_error(fulltext: FullText, query: str) -> None:
    lexical_search(fulltext, query, 10)


@pytest.mark.parametrize(
    "query", ['"', "AND", "NEAR(", "col:umn", "*", "^a", '"unbalanced', "a OR", "-x", "\x00", "中文", "{x}"]
)
def test_fts5_operators_in_a_query_are_plain_text(fulltext: FullText, query: str) -> None:
    lexical_search(fulltext, query, 10)


def test_rrf_sums_reciprocal_ranks_over_lists() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["d"] == pytest.approx(1 / 62)
    assert list(dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=60))) == ["b", "a", "d", "c"]


def test_rrf_breaks_ties_by_first_appearance() -> None:
    assert [key for key, _ in reciprocal_rank_fusion([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert reciprocal_rank_fusion([]) == []
