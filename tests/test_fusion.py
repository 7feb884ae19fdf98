"""Fusion of a short lexical list: a tag the lexical search finds in one or two chunks leads the hybrid
ranking. A lexical list shorter than the dense list holds every chunk with a query word; the other
candidates score bm25's no-match 0, and z-score fusion counts them."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from appliance.config import Settings
from appliance.ingest.pipeline import ingest
from appliance.retrieve.fusion import unmatched_candidates, weighted_fusion, z_scores, zscore_fusion
from appliance.retrieve.search import Searcher

SCORE_FUSIONS = {"zscore": zscore_fusion, "weighted": weighted_fusion}

# --- the normalization ----------------------------------------------------------------------------


def test_a_short_lexical_list_is_normalized_with_its_unmatched_candidates_at_zero() -> None:
    # One hit among four candidates: 8, 0, 0, 0 → mean 2, population std √12, z = 6 / √12 = √3.
    assert z_scores([("tag", 8.0)], unmatched=3) == pytest.approx({"tag": 3**0.5})
    # 6, 3, 0, 0 → mean 2.25, std √6.1875.
    assert z_scores([("a", 6.0), ("b", 3.0)], unmatched=2) == pytest.approx(
        {"a": 3.75 / 6.1875**0.5, "b": 0.75 / 6.1875**0.5}
    )
    assert z_scores([("a", 6.0), ("b", 3.0)]) == pytest.approx({"a": 1.0, "b": -1.0}), "nothing unmatched: as before"


def test_the_unmatched_candidates_are_what_the_dense_list_holds_beyond_the_lexical_list() -> None:
    assert unmatched_candidates(["a"], ["a", "b", "c", "d"]) == 3
    assert unmatched_candidates([], ["a", "b"]) == 2
    assert unmatched_candidates(["a", "b", "c"], ["a"]) == 0


def test_a_lone_lexical_hit_leads_a_dense_list_that_never_found_it() -> None:
    # Before, a list of one scored its hit at the list's mean, z = 0: exactly what no match scores.
    dense = [(f"chunk-{i}", 0.62 - 0.004 * i) for i in range(100)]
    fused = zscore_fusion([("tag", 3.1)], dense, 0.5)
    assert fused[0][0] == "tag"
    assert fused[0][1] > fused[1][1] + 1.0
    # Min-max gives each list's best a 1: the lone hit ties the dense best and leads by appearing first.
    assert weighted_fusion([("tag", 3.1)], dense, 0.5)[:2] == [("tag", 0.5), ("chunk-0", 0.5)]


def test_both_hits_of_a_two_hit_lexical_list_lead() -> None:
    # Before, the second of two hits scored its list's lowest, z = −1: the same as no match.
    dense = [("tag-1", 0.55), *((f"chunk-{i}", 0.54 - 0.003 * i) for i in range(97)), ("tag-2", 0.2)]
    fused = zscore_fusion([("tag-1", 9.0), ("tag-2", 8.5)], dense, 0.5)
    assert [key for key, _ in fused[:2]] == ["tag-1", "tag-2"]


def test_a_lexical_list_as_long_as_the_dense_list_is_standardized_over_itself() -> None:
    lexical = [("a", 7.0), ("b", 4.0), ("c", 1.0)]
    dense = [("b", 0.8), ("d", 0.5), ("a", 0.4)]
    mean, spread = statistics.fmean([7.0, 4.0, 1.0]), statistics.pstdev([7.0, 4.0, 1.0])
    fused = dict(zscore_fusion(lexical, dense, 0.0))
    assert fused == pytest.approx({"a": 3 / spread, "b": 0.0, "c": -3 / spread, "d": (1.0 - mean) / spread})


scores = st.floats(min_value=0.01, max_value=1000.0, allow_nan=False)


@given(lexical_scores=st.lists(scores, min_size=1, max_size=12), surplus=st.integers(min_value=1, max_value=100))
def test_with_the_lexical_side_alone_every_chunk_with_a_query_word_scores_above_every_chunk_without(
    lexical_scores: list[float], surplus: int
) -> None:
    lexical = [(f"hit-{i}", s) for i, s in enumerate(sorted(lexical_scores, reverse=True))]
    dense = [(f"other-{i}", 1.0 - i / 1000) for i in range(len(lexical) + surplus)]
    fused = dict(zscore_fusion(lexical, dense, 0.0))
    assert min(fused[key] for key, _ in lexical) > max(fused[key] for key, _ in dense)


@hypothesis_settings(deadline=None)
@given(candidates=st.integers(min_value=4, max_value=120), score=scores)
def test_the_fewer_chunks_hold_the_query_words_the_more_they_count(candidates: int, score: float) -> None:
    """Under z-scores, n equal hits among the candidates lead a chunk without a match by
    candidates / √(n · (candidates − n)), which falls as n grows to half the candidates."""
    dense = [(f"chunk-{i}", 1.0 - i / 1000) for i in range(candidates)]

    def lead(hits: int) -> float:
        fused = dict(zscore_fusion([(key, score) for key, _ in dense[:hits]], dense, 0.0))
        return fused[dense[0][0]] - fused[dense[-1][0]]

    leads = [lead(hits) for hits in range(1, candidates // 2 + 1)]
    assert all(rarer > commoner for rarer, commoner in itertools.pairwise(leads))
    assert leads[0] == pytest.approx(candidates / (candidates - 1) ** 0.5)


@given(
    lexical_scores=st.lists(scores, min_size=1, max_size=8),
    surplus=st.integers(min_value=0, max_value=30),
    scale=st.floats(min_value=0.01, max_value=1000.0),
    dense_weight=st.floats(min_value=0.0, max_value=1.0),
    fusion=st.sampled_from(sorted(SCORE_FUSIONS)),
)
def test_score_fusion_does_not_depend_on_the_lexical_scale_however_short_the_list(
    lexical_scores: list[float], surplus: int, scale: float, dense_weight: float, fusion: str
) -> None:
    """bm25 has no fixed scale but a fixed zero (no match): a short list keeps its shape under any factor."""
    lexical = [(f"chunk-{i}", s) for i, s in enumerate(sorted(lexical_scores, reverse=True))]
    dense = [(f"chunk-{i}", 0.9 - i / 100) for i in range(len(lexical) + surplus)]
    rescaled = [(key, s * scale) for key, s in lexical]
    fuse = SCORE_FUSIONS[fusion]
    expected = dict(fuse(lexical, dense, dense_weight))
    assert dict(fuse(rescaled, dense, dense_weight)) == pytest.approx(expected, abs=1e-9)


# --- tags on a real index ---------------------------------------------------------------------------

# A plant's SOPs. GC-8841 is in one long procedure only, and tag lists with neighbouring numbers
# (GD-8840, WO-8850, SP-8846) look closer to the bare tag to the embedder; ESD-7731 is in a procedure
# and in an I/O table; AIT-4410 is one row of an analyzer table, and AIT also names another chunk's tag.
PLANT = {
    "sop-lab-009-dbp-sampling.md": (
        "# SOP-LAB-009 Disinfection by-product sampling and analysis\n\n"
        "## Quarterly sampling run\n\n"
        "1. Collect the trihalomethane and haloacetic acid samples at the four distribution sites on the "
        "Tuesday of the first week of the quarter, before 10:00, in the amber vials from the lab fridge.\n"
        "2. Quench each vial with ammonium chloride, fill it without headspace and keep it on ice.\n"
        "3. Log the site, time, chlorine residual and temperature on the chain-of-custody form.\n"
        "4. Back in the lab, let the instrument warm up for thirty minutes, then check that the carrier "
        "gas pressure on GC-8841 reads 80 psi before loading the autosampler tray.\n"
        "5. Run the blank, the calibration check standard and the samples in the order of the worksheet.\n"
        "6. Report any result above 80 ug/L total trihalomethanes to the superintendent the same day.\n"
    ),
    "sop-saf-005-gas-detectors.md": (
        "# SOP-SAF-005 Fixed gas detectors\n\n## Detector list\n\n"
        "GD-8801 chlorine room east, GD-8802 chlorine room west, GD-8803 ammonia room, GD-8810 ozone contact "
        "basin, GD-8811 boiler room (CO), GD-8840 laboratory fume hood, GD-8842 laboratory bench.\n\n"
        "## Bump test\n\nBump-test every detector monthly with the test gas for its range.\n"
    ),
    "sop-mnt-001-work-orders.md": (
        "# SOP-MNT-001 Work orders\n\n## Codes\n\nWO-8850 corrective, WO-8851 preventive, WO-8852 calibration, "
        "WO-8853 emergency, WO-8854 contractor. Use the code of the work, not of the asset.\n"
    ),
    "sop-mnt-002-spare-parts.md": (
        "# SOP-MNT-002 Spare parts\n\n## Minimum stock\n\nSP-8820 regulator yoke gasket (10), SP-8821 vacuum "
        "regulator diaphragm (2), SP-8830 metering pump check valve (4), SP-8846 analyzer reagent set (6).\n"
    ),
    "sop-cl-001-leak-response.md": (
        "# SOP-CL-001 Chlorine leak response\n\n## Immediate actions\n\n"
        "1. When the chlorine room detector alarms, leave the room and close the door behind you.\n"
        "2. From the control room, press the emergency shutdown pushbutton ESD-7731, which closes the "
        "cylinder actuators and stops the evaporator.\n"
        "3. Call the supervisor and keep everyone upwind of the building.\n"
        "4. Two operators in SCBA may enter only after the supervisor agrees and a standby person is posted.\n"
    ),
    "sop-scada-004-io-list.md": (
        "# SOP-SCADA-004 Chlorine building I/O\n\n## Inputs\n\n"
        "| point | device | signal |\n| --- | --- | --- |\n"
        "| DI-7701 | cylinder actuator 1 closed | 24 VDC |\n"
        "| DI-7702 | cylinder actuator 2 closed | 24 VDC |\n"
        "| DI-7731 | emergency shutdown ESD-7731 pressed | 24 VDC |\n"
        "| AI-7710 | room chlorine gas | 4-20 mA |\n"
    ),
    "sop-lab-002-analyzers.md": (
        "# SOP-LAB-002 Online analyzer list\n\n## Analyzers and ranges\n\n"
        "| tag | measures | location | range |\n| --- | --- | --- | --- |\n"
        "| AIT-4401 | free chlorine | clearwell inlet | 0-5 mg/L |\n"
        "| AIT-4402 | free chlorine | plant effluent | 0-5 mg/L |\n"
        "| AIT-4410 | fluoride | plant effluent | 0-2 mg/L |\n"
        "| AIT-4415 | pH | plant effluent | 0-14 |\n"
        "| AIT-4420 | turbidity | combined filter effluent | 0-10 NTU |\n\n"
        "## Verification\n\nVerify each analyzer weekly against a grab sample analysed in the lab.\n"
    ),
    "sop-scada-001-alarms.md": (
        "# SOP-SCADA-001 Alarm response\n\n"
        "## High chlorine residual\n\nWhen AIT-4402 reads above 4 mg/L, reduce the chlorinator feed rate.\n\n"
        "## Low clearwell level\n\nWhen LIT-1201 falls below 5 ft, start the second high-lift pump.\n\n"
        "## Communication failure\n\nWhen a PLC stops reporting, check the network switch in the control room.\n"
    ),
    "sop-flt-003-filter-flow.md": (
        "# SOP-FLT-003 Filter flow control\n\n"
        "## Flow setpoint\n\nEach filter runs at 2.5 gpm/sq ft. The effluent flow transmitter FIT-2207 on filter 7 "
        "reports the rate to SCADA; the operator adjusts the effluent valve FCV-2207 when the rate drifts.\n\n"
        "## Backwash trigger\n\nStart a backwash when head loss reaches 8 ft or effluent turbidity exceeds 0.3 NTU.\n"
    ),
    "sop-cl-004-cylinder-change.md": (
        "# SOP-CL-004 Chlorine cylinder change\n\n"
        "## Preparation\n\nPut on the SCBA. Check the scale reading WT-3101 and the vacuum regulator.\n\n"
        "## Changing the cylinder\n\n1. Close the cylinder valve.\n2. Remove the regulator yoke.\n"
        "3. Fit the new cylinder and open the valve a quarter turn.\n4. Test for leaks with ammonia.\n"
    ),
    "sop-pmp-001-high-lift.md": (
        "# SOP-PMP-001 High-lift pump start\n\n"
        "## Start\n\n1. Confirm the clearwell level LIT-1201 is above 6 ft.\n"
        "2. Start pump P-101 from the HMI.\n3. Open the discharge valve MOV-1011 over 60 seconds.\n\n"
        "## Stop\n\n1. Close MOV-1011.\n2. Stop P-101 when the valve is closed.\n"
    ),
    "sop-saf-001-lockout.md": (
        "# SOP-SAF-001 Lockout tagout\n\n## Steps\n\n1. Notify the affected operators.\n2. Shut down the "
        "equipment.\n3. Isolate every energy source and apply your lock and tag.\n4. Verify zero energy before work.\n"
    ),
}


@pytest.fixture(scope="module")
def plant(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Iterator[Searcher]:
    root = tmp_path_factory.mktemp("plant-src") / "plant"
    root.mkdir()
    for name, text in PLANT.items():
        (root / name).write_text(text)
    settings = Settings(home=tmp_path_factory.mktemp("plant-home"), models_dir=models_dir)
    assert ingest(settings, [root]).failed == []
    searcher = Searcher(settings)
    yield searcher
    searcher.close()


def _under(searcher: Searcher, fusion: str) -> Searcher:
    settings = searcher.settings.model_copy(deep=True)
    settings.search.fusion = fusion  # type: ignore[assignment]
    return Searcher(settings, index=searcher.index, embedder=searcher.embedder)


def _holding(searcher: Searcher, query: str, tag: str) -> set[str]:
    return {h.chunk_id for h in searcher.search(query, k=50, mode="lexical").hits if tag in h.text}


@pytest.mark.parametrize(
    ("query", "tag", "lexical_hits"),
    [
        pytest.param("GC-8841", "GC-8841", 1, id="single-hit tag"),
        pytest.param("where is GC-8841", "GC-8841", 1, id="single-hit tag in a question"),
        pytest.param("ESD-7731", "ESD-7731", 2, id="two-hit tag, procedure and table"),
        pytest.param("what does ESD-7731 do", "ESD-7731", 2, id="two-hit tag in a question"),
        pytest.param("AIT-4410", "AIT-4410", 2, id="tag in a table row"),
    ],
)
def test_a_tag_the_lexical_search_finds_in_few_chunks_leads_the_hybrid_ranking(
    plant: Searcher, query: str, tag: str, lexical_hits: int
) -> None:
    assert plant.settings.search.fusion == "zscore", "the default"
    holding = _holding(plant, query, tag)
    found = plant.candidates(query, "hybrid", plant.settings.search.candidates)
    assert len(found.lexical) == lexical_hits < len(found.dense), "a short lexical list: the case at issue"
    dense = [h.chunk_id for h in plant.search(query, k=len(holding), mode="dense").hits]
    assert set(dense) != holding, "the embedder alone does not put the tag first: the fusion has to"
    hybrid = [h.chunk_id for h in plant.search(query, k=len(holding), mode="hybrid").hits]
    assert set(hybrid) == holding


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
def test_a_single_hit_tag_leads_under_the_other_fusion_settings_too(plant: Searcher, fusion: str) -> None:
    """Min-max gives a list of one full credit, and RRF its first rank; a tie with the dense best goes to the
    lexical list, which comes first."""
    searcher = _under(plant, fusion)
    hybrid = searcher.search("GC-8841", k=1, mode="hybrid").hits
    assert {h.chunk_id for h in hybrid} == _holding(searcher, "GC-8841", "GC-8841")
