"""Prompt assembly: numbered sources in rank order, labelled with path/section/page, within budget."""

from __future__ import annotations

from dataclasses import replace

from appliance.answer.generated.prompt import SYSTEM_PROMPT, Following, build_prompt
from appliance.index.records import ChunkRow
from appliance.text.sentences import leading_sentences
from appliance.text.terms import extract_terms


def chunk(i: int, text: str, *, page: int | None = None, section: str = "SOP › Steps") -> ChunkRow:
    return ChunkRow(
        chunk_id=f"c{i}",
        rowid=i,
        path=f"docs/sop-{i}.md",
        title="SOP",
        type="md",
        ord=0,
        header="SOP › Steps",
        text=text,
        section=section,
        page=page,
        start=0,
        end=len(text),
        identifiers="",
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


def test_the_instructions_show_the_citation_format_without_an_example_step_to_copy() -> None:
    # A sample sentence naming a valve was copied into answers as their first step: the instructions
    # name no tag, part or command a small model could take for one of the sources'.
    assert "[1]" in SYSTEM_PROMPT
    assert extract_terms(SYSTEM_PROMPT).identifiers == ()


def test_at_most_max_sources_are_given() -> None:
    chunks = [chunk(i, f"Fact number {i}.") for i in range(1, 8)]
    prompt = build_prompt("q", chunks, count_tokens=words, budget_tokens=10_000, max_sources=3)
    assert [s.chunk.chunk_id for s in prompt.sources] == ["c1", "c2", "c3"]


def test_lowest_ranked_sources_are_dropped_first_to_fit_the_budget() -> None:
    long = " ".join(["word"] * 60) + "."
    chunks = [chunk(1, long), chunk(2, long), chunk(3, "Short one.")]
    fixed = build_prompt("q", [], count_tokens=words, budget_tokens=10_000, max_sources=4).prompt_tokens
    prompt = build_prompt("q", chunks, count_tokens=words, budget_tokens=fixed + 140, max_sources=4)
    assert [s.chunk.chunk_id for s in prompt.sources] == ["c1", "c2"]
    assert prompt.dropped == 1
    assert prompt.prompt_tokens <= fixed + 140
    # A lower-ranked source never displaces a higher-ranked one, even when it alone would fit.
    tight = build_prompt("q", chunks, count_tokens=words, budget_tokens=fixed + 80, max_sources=4)
    assert [s.chunk.chunk_id for s in tight.sources] == ["c1"]


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


# --- windows: a retrieved chunk is given with the chunks that follow it -------------------------


def doc_chunks(path: str, texts: list[str], *, overlap: int = 0, sections: list[str] | None = None) -> list[ChunkRow]:
    """Consecutive chunks of one document as the chunker stores them: each repeats the last
    `overlap` characters of the one before, and start/end are offsets in the document."""
    rows: list[ChunkRow] = []
    start = 0
    for i, text in enumerate(texts):
        if i and overlap:
            text = rows[-1].text[-overlap:] + text
            start = rows[-1].end - overlap
        section = sections[i] if sections else "SOP › Steps"
        rows.append(
            ChunkRow(
                chunk_id=f"{path}#{i}",
                rowid=100 + i,
                path=path,
                title="SOP",
                type="md",
                ord=i,
                header=section,
                text=text,
                section=section,
                page=None,
                start=start,
                end=start + len(text),
                identifiers="",
            )
        )
        start = rows[-1].end
    return rows


def following_in(rows: list[ChunkRow]) -> Following:
    return lambda row, n: [r for r in rows if r.path == row.path and row.ord < r.ord <= row.ord + n]


def test_a_retrieved_chunk_comes_with_the_chunks_that_follow_it_joined_without_their_overlap() -> None:
    rows = doc_chunks("docs/a.md", ["Stop the pump.", " Close VLV-1.", " Vent to 0.2 bar.", " Log it."], overlap=6)
    prompt = build_prompt(
        "q", [rows[0]], count_tokens=words, budget_tokens=10_000, max_sources=4,
        following=following_in(rows), window_chunks=2,
    )  # fmt: skip
    assert len(prompt.sources) == 1
    source = prompt.sources[0]
    assert source.text == "Stop the pump. Close VLV-1. Vent to 0.2 bar."
    assert [c.chunk_id for c in source.chunks] == ["docs/a.md#0", "docs/a.md#1", "docs/a.md#2"]
    assert [source.text[s:e] for s, e in source.spans] == ["Stop the pump.", " Close VLV-1.", " Vent to 0.2 bar."]


def test_a_new_section_inside_a_window_is_headed_and_a_text_that_does_not_match_its_offsets_is_not_cut() -> None:
    rows = doc_chunks(
        "docs/a.md", ["Stop the pump.", "Close VLV-1."], overlap=0, sections=["SOP › Shutdown", "SOP › Isolation"]
    )
    prompt = build_prompt(
        "q", [rows[0]], count_tokens=words, budget_tokens=10_000, max_sources=4,
        following=following_in(rows), window_chunks=1,
    )  # fmt: skip
    assert prompt.sources[0].text == "Stop the pump.\n\n### Isolation\nClose VLV-1."
    # Offsets that claim an overlap the texts do not share: nothing is cut from the second chunk.
    liar = doc_chunks("docs/b.md", ["Stop the pump.", "Close VLV-1."])
    liar[1] = replace(liar[1], start=liar[1].start - 4)
    joined = build_prompt(
        "q", [liar[0]], count_tokens=words, budget_tokens=10_000, max_sources=4,
        following=following_in(liar), window_chunks=1,
    )  # fmt: skip
    assert joined.sources[0].text == "Stop the pump.\n\nClose VLV-1."


def test_adjacent_retrieved_chunks_of_one_document_form_one_source_ranked_by_its_best_chunk() -> None:
    a = doc_chunks("docs/a.md", ["A zero.", "A one.", "A two.", "A three."])
    b = doc_chunks("docs/b.md", ["B zero.", "B one."])
    retrieved = [b[0], a[2], a[1]]  # a[1], retrieved last, joins the window of a[2] that it precedes
    prompt = build_prompt(
        "q", retrieved, count_tokens=words, budget_tokens=10_000, max_sources=4,
        following=following_in(a + b), window_chunks=1,
    )  # fmt: skip
    assert [[c.chunk_id for c in s.chunks] for s in prompt.sources] == [
        ["docs/b.md#0", "docs/b.md#1"],
        ["docs/a.md#1", "docs/a.md#2", "docs/a.md#3"],
    ]
    # The source stands for its best retrieved chunk, and no chunk is given twice.
    assert prompt.sources[1].chunk.chunk_id == "docs/a.md#2"
    assert prompt.user.count("A two.") == 1
    assert prompt.dropped == 0


def test_neighbours_are_given_only_while_they_fit_and_never_displace_a_retrieved_chunk() -> None:
    long = " ".join(["word"] * 50) + "."
    a = doc_chunks("docs/a.md", ["Close VLV-1.", long, long])
    b = doc_chunks("docs/b.md", ["Open VLV-2."])
    fixed = build_prompt("q", [], count_tokens=words, budget_tokens=10_000, max_sources=4).prompt_tokens
    prompt = build_prompt(
        "q", [a[0], b[0]], count_tokens=words, budget_tokens=fixed + 80, max_sources=4,
        following=following_in(a + b), window_chunks=2,
    )  # fmt: skip
    assert [[c.chunk_id for c in s.chunks] for s in prompt.sources] == [["docs/a.md#0", "docs/a.md#1"], ["docs/b.md#0"]]
    assert prompt.prompt_tokens <= fixed + 80


def test_a_window_cites_the_chunk_holding_the_words_and_its_page() -> None:
    pdf = {"path": "docs/a.pdf", "title": "SOP", "type": "pdf", "header": "SOP", "section": "SOP", "identifiers": ""}
    rows = [
        ChunkRow(chunk_id="p3", rowid=1, ord=0, text="Stop the feed pump P-101.", page=3, start=0, end=25, **pdf),
        ChunkRow(chunk_id="p4", rowid=2, ord=1, text="Vent the header to 0.2 bar.", page=4, start=26, end=53, **pdf),
    ]
    prompt = build_prompt(
        "q", [rows[0]], count_tokens=words, budget_tokens=10_000, max_sources=4,
        following=following_in(rows), window_chunks=1,
    )  # fmt: skip
    source = prompt.sources[0]
    assert source.label == "[1] SOP (docs/a.pdf, pp. 3–4)"
    assert source.chunk_for(["Vent the header to 0.2 bar [1]."]).chunk_id == "p4"
    assert source.chunk_for(["Stop pump P-101 first."]).chunk_id == "p3"
    assert source.chunk_for([]).chunk_id == "p3"
