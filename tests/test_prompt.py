"""Prompt assembly: numbered sources in rank order, labelled with path/section/page, within budget."""

from __future__ import annotations

from appliance.answer.prompt import SYSTEM_PROMPT, build_prompt, leading_sentences
from appliance.index.catalog import ChunkRow


def chunk(i: int, text: str, *, page: int | None = None, section: str = "SOP › Steps") -> ChunkRow:
    return ChunkRow(
        id=f"c{i}",
        rowid=i,
        document_path=f"docs/sop-{i}.md",
        title="SOP",
        type="md",
        ord=0,
        header="SOP › Steps",
        text=text,
        section=section,
        page=page,
        start=0,
        end=len(text),
    )


def words(text: str) -> int:
    return len(text.split())


def test_sources_are_numbered_in_rank_order_with_their_provenance() -> None:
    chunks = [chunk(1, "Close VLV-3042-B."), chunk(2, "Open VLV-3042-A.", page=4, section="SOP › Valves")]
    prompt = build_prompt("Which valve?", chunks, count_tokens=words, budget_tokens=1000, max_sources=4)
    assert [s.n for s in prompt.sources] == [1, 2]
    assert "[1] SOP › Steps (docs/sop-1.md)\nClose VLV-3042-B." in prompt.user
    assert "[2] SOP › Valves (docs/sop-2.md, p. 4)\nOpen VLV-3042-A." in prompt.user
    assert prompt.user.index("[1]") < prompt.user.index("[2]") < prompt.user.index("Question: Which valve?")
    assert prompt.system == SYSTEM_PROMPT and "do not cover" in prompt.system


def test_at_most_max_sources_are_given() -> None:
    chunks = [chunk(i, f"Fact number {i}.") for i in range(1, 8)]
    prompt = build_prompt("q", chunks, count_tokens=words, budget_tokens=10_000, max_sources=3)
    assert [s.chunk.id for s in prompt.sources] == ["c1", "c2", "c3"]


def test_lowest_ranked_sources_are_dropped_first_to_fit_the_budget() -> None:
    long = " ".join(["word"] * 60) + "."
    chunks = [chunk(1, long), chunk(2, long), chunk(3, "Short one.")]
    fixed = build_prompt("q", [], count_tokens=words, budget_tokens=10_000, max_sources=4).prompt_tokens
    prompt = build_prompt("q", chunks, count_tokens=words, budget_tokens=fixed + 140, max_sources=4)
    assert [s.chunk.id for s in prompt.sources] == ["c1", "c2"]
    assert prompt.dropped == 1
    assert prompt.prompt_tokens <= fixed + 140
    # A lower-ranked source never displaces a higher-ranked one, even when it alone would fit.
    tight = build_prompt("q", chunks, count_tokens=words, budget_tokens=fixed + 80, max_sources=4)
    assert [s.chunk.id for s in tight.sources] == ["c1"]


def test_a_source_is_never_cut_mid_sentence() -> None:
    text = "First step is to close the valve. Second step is to vent the line. Third step is to log it."
    fixed = build_prompt("q", [], count_tokens=words, budget_tokens=10_000, max_sources=4).prompt_tokens
    prompt = build_prompt("q", [chunk(1, text)], count_tokens=words, budget_tokens=fixed + 22, max_sources=4)
    assert prompt.sources[0].text == "First step is to close the valve. Second step is to vent the line."
    shorter = build_prompt(
        "q", [chunk(1, text), chunk(2, "x.")], count_tokens=words, budget_tokens=fixed + 5, max_sources=4
    )
    assert shorter.sources == []


def test_leading_sentences_keeps_whole_sentences_only() -> None:
    text = "Close VLV-3042-B. Vent to 0.2 bar. Log on RWTP-F-005."
    assert leading_sentences(text, lambda t: len(t) <= 20) == "Close VLV-3042-B."
    assert leading_sentences(text, lambda t: len(t) <= 5) == ""
    assert leading_sentences(text, lambda t: True) == text
