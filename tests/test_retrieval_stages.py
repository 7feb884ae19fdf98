"""Retrieval stages: weighted fusion, document aggregation, filters in both retrievers, the evidence
decision and the search result's JSON contract."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from appliance.config import Settings
from appliance.index.filters import Filters
from appliance.ingest.pipeline import ingest
from appliance.retrieve.aggregate import aggregate_documents
from appliance.retrieve.evidence import Evidence
from appliance.retrieve.fusion import min_max, weighted_fusion, z_scores, zscore_fusion
from appliance.retrieve.modes import MODES
from appliance.retrieve.search import Searcher

# --- weighted fusion ---------------------------------------------------------------------------------

LEXICAL = [("a", 10.0), ("b", 6.0), ("c", 2.0)]  # min-max: a 1, b 0.5, c 0
DENSE = [("b", 0.9), ("d", 0.7), ("a", 0.5)]  # min-max: b 1, d 0.5, a 0


@pytest.mark.parametrize(
    ("dense_weight", "expected"),
    [
        # a: .25·0 + .75·1; b: .25·1 + .75·.5; d: .25·.5 + 0; c: 0 + 0
        (0.25, [("a", 0.75), ("b", 0.625), ("d", 0.125), ("c", 0.0)]),
        # a: .75·0 + .25·1; b: .75·1 + .25·.5; d: .75·.5 + 0; c: 0 + 0
        (0.75, [("b", 0.875), ("d", 0.375), ("a", 0.25), ("c", 0.0)]),
        (0.5, [("b", 0.75), ("a", 0.5), ("d", 0.25), ("c", 0.0)]),
    ],
)
def test_weighted_fusion_combines_min_max_scores_by_the_dense_weight(
    dense_weight: float, expected: list[tuple[str, float]]
) -> None:
    fused = weighted_fusion(LEXICAL, DENSE, dense_weight)
    assert [key for key, _ in fused] == [key for key, _ in expected]
    assert [score for _, score in fused] == pytest.approx([score for _, score in expected])


def test_a_key_missing_from_one_list_scores_zero_in_that_list() -> None:
    lexical = [("x", 5.0), ("y", 3.0), ("v", 1.0)]  # y: 0.5 lexically, absent from dense
    dense = [("z", 0.8), ("x", 0.6), ("w", 0.4)]  # z: 1.0 densely, absent from lexical
    fused = dict(weighted_fusion(lexical, dense, 0.5))
    assert fused["y"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.0)
    assert fused["z"] == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)
    assert fused["x"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.5)
    assert fused["v"] == fused["w"] == 0.0


def test_weight_zero_keeps_the_lexical_order_and_weight_one_the_dense_order() -> None:
    lexical = [("p", 9.0), ("q", 7.5), ("r", 3.0), ("s", 1.0)]
    dense = [("s", 0.91), ("r", 0.80), ("t", 0.42), ("p", 0.40)]
    lexical_only = [key for key, _ in weighted_fusion(lexical, dense, 0.0) if key in dict(lexical)]
    dense_only = [key for key, _ in weighted_fusion(lexical, dense, 1.0) if key in dict(dense)]
    assert lexical_only == ["p", "q", "r", "s"]
    assert dense_only == ["s", "r", "t", "p"]


def test_min_max_maps_equal_scores_to_one() -> None:
    assert min_max([("a", 3.0), ("b", 3.0)]) == {"a": 1.0, "b": 1.0}
    assert min_max([("only", -2.5)]) == {"only": 1.0}
    assert min_max([]) == {}
    assert min_max([("a", 4.0), ("b", 2.0), ("c", 3.0)]) == pytest.approx({"a": 1.0, "b": 0.0, "c": 0.5})


def test_weighted_fusion_of_equal_scores_gives_every_key_full_credit_and_keeps_first_appearance() -> None:
    fused = weighted_fusion([("a", 2.0), ("b", 2.0)], [("c", 0.3), ("a", 0.3)], 0.5)
    assert fused == [("a", pytest.approx(1.0)), ("b", pytest.approx(0.5)), ("c", pytest.approx(0.5))]


def test_weighted_fusion_of_two_empty_lists_is_empty() -> None:
    assert weighted_fusion([], [], 0.5) == []


# --- z-score fusion ----------------------------------------------------------------------------------


def test_z_scores_are_standard_scores_over_the_list() -> None:
    # mean 6, population std sqrt(32/3)
    spread = (32 / 3) ** 0.5
    assert z_scores(LEXICAL) == pytest.approx({"a": 4 / spread, "b": 0.0, "c": -4 / spread})
    assert z_scores([("only", 7.0)]) == {"only": 0.0}
    assert z_scores([("a", 2.0), ("b", 2.0)]) == {"a": 0.0, "b": 0.0}
    assert z_scores([]) == {}


@given(
    scale=st.floats(min_value=0.01, max_value=1000.0),
    offset=st.floats(min_value=-1000.0, max_value=1000.0),
    dense_weight=st.floats(min_value=0.0, max_value=1.0),
)
def test_zscore_fusion_does_not_depend_on_either_retrievers_scale(
    scale: float, offset: float, dense_weight: float
) -> None:
    """bm25 is unbounded and cosines sit in a narrow band: only each list's own shape may count."""
    rescaled = [(key, score * scale + offset) for key, score in LEXICAL]
    fused, original = zscore_fusion(rescaled, DENSE, dense_weight), zscore_fusion(LEXICAL, DENSE, dense_weight)
    assert [score for _, score in fused] == pytest.approx([score for _, score in original], abs=1e-9)
    assert dict(fused) == pytest.approx(dict(original), abs=1e-9)


def test_a_key_missing_from_one_list_gets_that_lists_lowest_z_score() -> None:
    lexical = [("x", 5.0), ("y", 3.0), ("v", 1.0)]
    dense = [("z", 0.8), ("x", 0.6), ("w", 0.4)]
    zl, zd = z_scores(lexical), z_scores(dense)
    fused = dict(zscore_fusion(lexical, dense, 0.25))
    assert fused["y"] == pytest.approx(0.25 * min(zd.values()) + 0.75 * zl["y"])
    assert fused["z"] == pytest.approx(0.25 * zd["z"] + 0.75 * min(zl.values()))
    assert fused["x"] == pytest.approx(0.25 * zd["x"] + 0.75 * zl["x"])


def test_zscore_fusion_at_an_extreme_weight_keeps_that_lists_order() -> None:
    lexical = [("p", 9.0), ("q", 7.5), ("r", 3.0), ("s", 1.0)]
    dense = [("s", 0.91), ("r", 0.80), ("t", 0.42), ("p", 0.40)]
    assert [k for k, _ in zscore_fusion(lexical, dense, 0.0) if k in dict(lexical)] == ["p", "q", "r", "s"]
    assert [k for k, _ in zscore_fusion(lexical, dense, 1.0) if k in dict(dense)] == ["s", "r", "t", "p"]


def test_zscore_fusion_of_one_empty_list_is_the_other_list_in_order() -> None:
    assert [k for k, _ in zscore_fusion(LEXICAL, [], 0.5)] == ["a", "b", "c"]
    assert [k for k, _ in zscore_fusion([], DENSE, 0.5)] == ["b", "d", "a"]
    assert zscore_fusion([], [], 0.5) == []


# --- aggregation -------------------------------------------------------------------------------------


def _doc(item: tuple[str, str]) -> str:
    return item[0]


def test_a_document_scores_as_its_best_chunk() -> None:
    scored = [(("A", "a1"), 0.4), (("B", "b1"), 0.9), (("A", "a2"), 0.7), (("B", "b2"), 0.1)]
    assert aggregate_documents(scored, _doc) == [("B", 0.9, ("B", "b1")), ("A", 0.7, ("A", "a2"))]


def test_other_chunks_weight_adds_a_share_of_the_other_chunks() -> None:
    scored = [(("A", "a1"), 0.5), (("B", "b1"), 0.6), (("A", "a2"), 0.4), (("A", "a3"), 0.3)]
    documents = aggregate_documents(scored, _doc, other_chunks_weight=0.5)
    assert [(doc, item) for doc, _, item in documents] == [("A", ("A", "a1")), ("B", ("B", "b1"))]
    assert documents[0][1] == pytest.approx(0.5 + 0.5 * (0.4 + 0.3))
    assert documents[1][1] == pytest.approx(0.6)


def test_a_better_chunk_seen_later_becomes_the_best_and_the_old_best_joins_the_rest() -> None:
    scored = [(("A", "a1"), 0.2), (("A", "a2"), 0.8), (("A", "a3"), 0.1)]
    [(doc, score, best)] = aggregate_documents(scored, _doc, other_chunks_weight=1.0)
    assert (doc, best) == ("A", ("A", "a2"))
    assert score == pytest.approx(0.8 + 0.2 + 0.1)


def test_a_chunk_scoring_below_zero_adds_nothing_to_its_document() -> None:
    # Z-score fusion scores a chunk below its list's mean negative: a weak extra chunk must not pull its
    # document below one that matched only once.
    scored = [(("A", "a1"), 1.2), (("B", "b1"), 1.1), (("A", "a2"), -0.9), (("A", "a3"), 0.4)]
    documents = aggregate_documents(scored, _doc, other_chunks_weight=0.5)
    assert [doc for doc, _, _ in documents] == ["A", "B"]
    assert documents[0][1] == pytest.approx(1.2 + 0.5 * 0.4)
    [(_, score, best)] = aggregate_documents([(("A", "a1"), -0.5), (("A", "a2"), 0.3)], _doc, other_chunks_weight=1.0)
    assert (score, best) == (pytest.approx(0.3), ("A", "a2")), "a negative former best adds nothing either"


def test_documents_with_equal_scores_keep_their_first_appearance() -> None:
    scored = [(("C", "c1"), 0.5), (("A", "a1"), 0.5), (("B", "b1"), 0.5), (("A", "a2"), 0.5)]
    documents = aggregate_documents(scored, _doc)
    assert [doc for doc, _, _ in documents] == ["C", "A", "B"]
    assert documents[1][2] == ("A", "a1"), "of two equal chunks the first one stays the best"


def test_aggregating_nothing_gives_nothing() -> None:
    assert aggregate_documents([], _doc, other_chunks_weight=0.3) == []


# --- filters, end to end in both retrievers -----------------------------------------------------------

# Two sources; "it_ops" and "itXops" differ only where LIKE's "_" would match any character, and
# "plant/50%" and "plant/50-old" share everything before LIKE's "%".
FILTER_CORPUS = {
    "it_ops/pump-restart.md": "# Pump restart\n\nRestart the pump after a trip and check the pump seal.\n",
    "it_ops/pump-log.txt": "Pump log review: read the pump log every day.\n",
    "itXops/pump-notes.md": "# Pump notes\n\nNotes on the pump controller and its pump alarms.\n",
    "plant/50%/pump-half.html": (
        "<html><head><title>Pump half</title></head><body><h1>Half speed pump</h1>"
        "<p>Run the pump at half speed during the night.</p></body></html>"
    ),
    "plant/50-old/pump-old.txt": "Old pump procedure: the pump is drained first.\n",
    "plant/pump-main.md": (
        "# Main pump\n\n## Duty\n\nThe main pump feeds the clearwell.\n\n"
        "## Pump maintenance\n\nGrease the main pump bearings monthly; the pump must be isolated first.\n"
    ),
}
TYPES = {"md", "txt", "html"}


def _searcher_over(settings: Settings, root: Path, files: dict[str, str]) -> Searcher:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sources = sorted({root / relative.split("/")[0] for relative in files})
    report = ingest(settings, sources)
    assert report.failed == [], report.failed
    return Searcher(settings)


@pytest.fixture(scope="module")
def filter_searcher(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Iterator[Searcher]:
    settings = Settings(home=tmp_path_factory.mktemp("filters-home"), models_dir=models_dir)
    searcher = _searcher_over(settings, tmp_path_factory.mktemp("filters-src"), FILTER_CORPUS)
    yield searcher
    searcher.close()


def _type_of(path: str) -> str:
    return path.rsplit(".", 1)[1]


def _variant(searcher: Searcher, **search: Any) -> Searcher:
    """The same index and embedder under other search settings (defaults are not what these tests pin)."""
    settings = searcher.settings.model_copy(deep=True)
    for name, value in search.items():
        setattr(settings.search, name, value)
    return Searcher(settings, index=searcher.index, embedder=searcher.embedder)


def test_the_filter_corpus_is_found_whole_without_filters(filter_searcher: Searcher) -> None:
    for mode in MODES:
        paths = {hit.path for hit in filter_searcher.search("pump", k=50, mode=mode).hits}
        assert paths == set(FILTER_CORPUS), mode


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (Filters(path_prefix="it_ops/"), {"it_ops/pump-restart.md", "it_ops/pump-log.txt"}),
        (Filters(path_prefix="it_"), {"it_ops/pump-restart.md", "it_ops/pump-log.txt"}),
        (Filters(path_prefix="plant/50%"), {"plant/50%/pump-half.html"}),
        (Filters(path_prefix="plant/50%/"), {"plant/50%/pump-half.html"}),
        (Filters(path_prefix="plant/"), {p for p in FILTER_CORPUS if p.startswith("plant/")}),
        (Filters(doc_types=("txt",)), {"it_ops/pump-log.txt", "plant/50-old/pump-old.txt"}),
        (Filters(doc_types=("html",)), {"plant/50%/pump-half.html"}),
        (Filters(path_prefix="plant/", doc_types=("md", "html")), {"plant/pump-main.md", "plant/50%/pump-half.html"}),
        (Filters(path_prefix="nowhere/"), set()),
        (Filters(doc_types=("pdf",)), set()),
    ],
    ids=lambda value: repr(value) if isinstance(value, Filters) else "",
)
def test_every_hit_passes_the_filter_in_every_mode(
    filter_searcher: Searcher, mode: str, filters: Filters, expected: set[str]
) -> None:
    hits = filter_searcher.search("pump", k=50, mode=mode, filters=filters).hits  # type: ignore[arg-type]
    for hit in hits:
        assert filters.admits(hit.path, _type_of(hit.path)), hit.path
    assert {hit.path for hit in hits} == expected


@pytest.mark.parametrize("fusion", ["weighted", "zscore"])
@pytest.mark.parametrize(("dense_weight", "like"), [(0.0, "lexical"), (1.0, "dense")])
def test_hybrid_with_score_fusion_at_an_extreme_weight_ranks_like_that_retriever(
    filter_searcher: Searcher, dense_weight: float, like: str, fusion: str
) -> None:
    searcher = _variant(filter_searcher, fusion=fusion, dense_weight=dense_weight)
    single = [hit.chunk_id for hit in searcher.search("main pump bearings", k=50, mode=like).hits]  # type: ignore[arg-type]
    hybrid = [hit.chunk_id for hit in searcher.search("main pump bearings", k=50, mode="hybrid").hits]
    assert [chunk for chunk in hybrid if chunk in single] == single


def test_filters_apply_inside_each_retriever_not_after_it(filter_searcher: Searcher) -> None:
    # With one candidate per retriever, filtering afterwards would leave nothing whenever the
    # unfiltered best match is another document.
    searcher = _variant(filter_searcher, candidates=1)
    for mode in MODES:
        unfiltered = searcher.search("pump", k=1, mode=mode).hits[0].path
        target = next(p for p in ("plant/50-old/pump-old.txt", "it_ops/pump-log.txt") if p != unfiltered)
        only = Filters(path_prefix=target)
        assert [hit.path for hit in searcher.search("pump", k=1, mode=mode, filters=only).hits] == [target], mode


def test_filters_reach_search_documents_too(filter_searcher: Searcher) -> None:
    for mode in MODES:
        documents, _ = filter_searcher.search_documents("pump", mode=mode, filters=Filters(doc_types=("txt",)))
        assert {doc for doc, _ in documents} == {"it_ops/pump-log.txt", "plant/50-old/pump-old.txt"}


def test_filters_admits_and_sql_agree_on_literal_prefixes() -> None:
    filters = Filters(path_prefix="a_b%/", doc_types=("md",))
    assert filters.active and not Filters().active
    assert filters.admits("a_b%/x.md", "md")
    assert not filters.admits("aXbY/x.md", "md")
    assert not filters.admits("a_b%/x.txt", "txt")
    where, params = filters.sql("d")
    assert "LIKE" not in where.upper()
    assert "a_b%/" in params and "md" in params


# --- search_documents ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fusion", ["rrf", "weighted", "zscore"])
@pytest.mark.parametrize("mode", MODES)
def test_search_documents_ranks_each_document_by_its_best_chunk(
    filter_searcher: Searcher, mode: str, fusion: str
) -> None:
    searcher = _variant(filter_searcher, other_chunks_weight=0.0, fusion=fusion)
    hits = searcher.search("main pump bearings", k=100, mode=mode).hits  # type: ignore[arg-type]
    first_seen = list(dict.fromkeys(hit.path for hit in hits))
    best = {path: max(hit.score for hit in hits if hit.path == path) for path in first_seen}
    documents, timings = searcher.search_documents("main pump bearings", k=100, mode=mode)  # type: ignore[arg-type]
    assert [doc for doc, _ in documents] == first_seen
    assert [score for _, score in documents] == pytest.approx([best[doc] for doc in first_seen], abs=1e-6)
    assert "fusion" in timings
    assert len({doc for doc, _ in documents}) == len(documents), "each document once"


def test_search_documents_adds_other_chunks_by_weight(filter_searcher: Searcher) -> None:
    searcher = _variant(filter_searcher, other_chunks_weight=1.0)
    hits = searcher.search("main pump", k=100, mode="lexical").hits
    main_chunks = [hit.score for hit in hits if hit.path == "plant/pump-main.md"]
    assert len(main_chunks) == 2, "the two sections of pump-main.md are two chunks"
    documents = dict(searcher.search_documents("main pump", mode="lexical")[0])
    assert documents["plant/pump-main.md"] == pytest.approx(sum(main_chunks), abs=1e-5)


def test_search_documents_returns_at_most_k(filter_searcher: Searcher) -> None:
    documents, _ = filter_searcher.search_documents("pump", k=2, mode="hybrid")
    assert len(documents) == 2


# --- evidence ------------------------------------------------------------------------------------------

PUMP = """# Pump station PS-2 failover

## When to use

Use this when pump P-HIGH-001 trips on overload and the clearwell level falls below 3.2 m.

## Steps

1. Acknowledge alarm ALM-PS2-TRIP-01 on the SCADA overview.
2. Open valve VLV-3042-B to bring standby pump P-HIGH-002 on line.
3. Confirm discharge pressure above 4.1 bar within two minutes.
"""

CHLORINE = """# Chlorine residual low

If free chlorine at AIT-201 reads below 0.2 mg/L for five minutes, raise the hypochlorite dose by
10 percent and take a grab sample for the lab. Never exceed 4.0 mg/L at the plant outlet.
"""

BACKWASH = """# Filter backwash

Start a backwash of filter F-3 when head loss exceeds 2.4 m or turbidity exceeds 0.3 NTU.
"""

SOPS = {"sops/pump-failover.md": PUMP, "sops/chlorine.md": CHLORINE, "sops/ops/backwash.md": BACKWASH}


@pytest.fixture(scope="module")
def sop_searcher(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Iterator[Searcher]:
    settings = Settings(home=tmp_path_factory.mktemp("sops-home"), models_dir=models_dir)
    searcher = _searcher_over(settings, tmp_path_factory.mktemp("sops-src"), SOPS)
    yield searcher
    searcher.close()


def test_a_question_about_something_never_mentioned_is_refused_naming_the_term(sop_searcher: Searcher) -> None:
    evidence = sop_searcher.search("How do I restart the Zabbix agent?").evidence
    assert not evidence.sufficient
    assert "zabbix" in evidence.reason.lower()
    assert evidence.signals is not None and "Zabbix" in evidence.signals.unknown_terms
    assert evidence.probability < sop_searcher.settings.evidence.threshold


def test_an_identifier_absent_from_the_corpus_is_refused_naming_it(sop_searcher: Searcher) -> None:
    evidence = sop_searcher.search("What does alarm ALM-XYZ-999 mean?").evidence
    assert not evidence.sufficient
    assert "alm-xyz-999" in evidence.reason.lower()
    assert evidence.signals is not None
    assert [i.lower() for i in evidence.signals.unknown_identifiers] == ["alm-xyz-999"]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What should I do when free chlorine at AIT-201 reads below 0.2 mg/L?", "sops/chlorine.md"),
        ("What do I do when pump P-HIGH-001 trips on overload?", "sops/pump-failover.md"),
        ("When should filter F-3 be backwashed?", "sops/ops/backwash.md"),
    ],
)
def test_a_question_a_passage_answers_directly_is_sufficient(
    sop_searcher: Searcher, question: str, expected: str
) -> None:
    result = sop_searcher.search(question)
    assert result.hits[0].path == expected
    assert result.evidence.sufficient, result.evidence.reason
    assert result.evidence.probability >= sop_searcher.settings.evidence.threshold
    assert result.evidence.signals is not None and result.evidence.signals.unknown_terms == ()


@pytest.mark.parametrize(
    "question",
    [
        "What should I do when free chlroine at AIT-201 reads below 0.2 mg/L?",  # a typo
        "WHAT SHOULD I DO WHEN FREE CHLORINE AT AIT-201 READS BELOW 0.2 MG/L?",  # upper case
        "What should I do when free chlorine at AIT-201 reads below 0.2 mg/L (p99 latency is up too)?",
        "we got paged at 3am and free chlorine at AIT-201 reads below 0.2 mg/L, 5xx on the dosing api: what now?",
        "[FIRING:1] ALM-PS2-TRIP-01 (severity=warning) pump P-HIGH-001 tripped on overload, what do I do?",
        "pump-related trip of P-HIGH-001 on overload: what do I do?",
    ],
)
def test_an_operators_wording_does_not_refuse_a_question_the_documents_answer(
    sop_searcher: Searcher, question: str
) -> None:
    result = sop_searcher.search(question)
    assert result.evidence.sufficient, result.evidence.reason


def test_a_typo_is_searched_corrected_and_said(sop_searcher: Searcher) -> None:
    result = sop_searcher.search("What should I do when free chlroine at AIT-201 reads low?")
    assert result.searched == "What should I do when free chlorine at AIT-201 reads low?"
    assert result.did_you_mean == {
        "question": result.searched,
        "corrections": [{"typed": "chlroine", "suggested": "chlorine"}],
    }
    assert result.hits[0].path == "sops/chlorine.md"


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("The Vorquelzan dosing skid tripped, what do I do?", "Vorquelzan"),
        ("How do I restart the zabbix agent?", "zabbix"),
    ],
)
def test_an_invented_name_is_still_refused_whatever_the_wording(
    sop_searcher: Searcher, question: str, name: str
) -> None:
    evidence = sop_searcher.search(question).evidence
    assert not evidence.sufficient and name in evidence.reason


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["", "  \t", "?!...;--"])
def test_an_empty_or_punctuation_query_is_insufficient_without_an_exception(
    sop_searcher: Searcher, query: str, mode: str
) -> None:
    evidence = sop_searcher.search(query, mode=mode).evidence  # type: ignore[arg-type]
    assert not evidence.sufficient
    assert evidence.reason


@pytest.mark.parametrize("query", ["", "?!"])
def test_lexical_mode_says_an_empty_question_has_no_searchable_words(sop_searcher: Searcher, query: str) -> None:
    evidence = sop_searcher.search(query, mode="lexical").evidence
    assert evidence.reason == "the question has no searchable words"
    assert evidence.probability == 0.0


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
@pytest.mark.parametrize("query", ["", "?!"])
def test_dense_and_hybrid_modes_say_an_empty_question_has_no_searchable_words(
    sop_searcher: Searcher, query: str, mode: str
) -> None:
    evidence = sop_searcher.search(query, mode=mode).evidence  # type: ignore[arg-type]
    assert "no searchable words" in evidence.reason


# --- the result's JSON contract --------------------------------------------------------------------------


def test_search_result_json_has_hits_evidence_rerank_flag_and_timings(sop_searcher: Searcher) -> None:
    data = sop_searcher.search("free chlorine hypochlorite dose", k=2).as_json()
    assert set(data) == {"query", "searched", "did_you_mean", "mode", "hits", "evidence", "reranked", "timings_ms"}
    assert (data["query"], data["mode"], data["reranked"]) == ("free chlorine hypochlorite dose", "hybrid", False)
    assert (data["searched"], data["did_you_mean"]) == (data["query"], None)  # nothing misspelt
    assert len(data["hits"]) == 2 and [h["rank"] for h in data["hits"]] == [1, 2]
    evidence = data["evidence"]
    assert set(evidence) == {"sufficient", "reason", "probability", "signals"}
    assert isinstance(evidence["sufficient"], bool) and isinstance(evidence["reason"], str)
    assert 0.0 <= evidence["probability"] <= 1.0
    assert set(evidence["signals"]) >= {
        "unknown_fraction",
        "unknown_identifier",
        "top_dense",
        "coverage",
        "agreement",
        "unknown_terms",
        "unknown_identifiers",
        "unknown_readings",
        "unknown_name",
        "unknown_words",
        "top_rerank",
    }
    assert evidence["signals"]["top_rerank"] is None
    assert {"lexical", "embed", "dense", "fusion", "evidence", "total"} <= set(data["timings_ms"])
    assert "rerank" not in data["timings_ms"]


# --- any text at all ---------------------------------------------------------------------------------------


@hypothesis_settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_search_never_raises_and_always_decides_on_evidence(sop_searcher: Searcher, query: str) -> None:
    result = sop_searcher.search(query, k=3)
    assert isinstance(result.evidence, Evidence)
    assert 0.0 <= result.evidence.probability <= 1.0
    assert result.evidence.reason
    assert len(result.hits) <= 3
    result.as_json()
