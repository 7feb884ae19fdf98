"""The chunker: sections, pages, token bounds, whole words, whole code blocks, stable ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance.ingest.chunker import SPECIAL_TOKENS, chunk_document
from appliance.ingest.document import DocumentBuilder, LoadedDocument
from appliance.models.embedder import TokenCounter


@pytest.fixture(scope="module")
def count_tokens(models_dir: Path) -> TokenCounter:
    return TokenCounter(models_dir / "embedder" / "all-MiniLM-L6-v2")


def sop(long_paragraphs: int = 1) -> LoadedDocument:
    builder = DocumentBuilder("plant/SOP-CL-004.md", "md")
    builder.add("heading", "# Chlorine cylinder change", level=1)
    builder.add("paragraph", "This procedure replaces an empty 68 kg chlorine cylinder at the feed room.")
    builder.add("heading", "## Isolation", level=2)
    for i in range(long_paragraphs):
        builder.add(
            "paragraph",
            " ".join(
                f"Step {i}.{j}: close valve VLV-3042-B and confirm the vacuum regulator reads zero on gauge PI-{j}."
                for j in range(12)
            ),
        )
    builder.add("code", "```\nHMI> SELECT CL2-FEED-1\nHMI> MODE MANUAL\n```")
    builder.add("heading", "### Leak check", level=3)
    builder.add("paragraph", "Apply ammonia vapour to every joint. White smoke means a leak: evacuate.")
    return builder.build("Chlorine cylinder change")


def test_every_chunk_fits_the_token_limit_with_its_header(count_tokens: TokenCounter) -> None:
    chunks = chunk_document(sop(long_paragraphs=4), count_tokens, max_tokens=128, overlap_tokens=16)
    assert len(chunks) > 3
    for chunk in chunks:
        assert count_tokens([chunk.embedding_text])[0] + SPECIAL_TOKENS <= 128


def test_chunks_carry_title_and_section_path_and_never_cross_a_heading(count_tokens: TokenCounter) -> None:
    chunks = chunk_document(sop(), count_tokens, max_tokens=256)
    sections = [c.section for c in chunks]
    assert sections[0] == "Chlorine cylinder change"
    assert "Chlorine cylinder change › Isolation" in sections
    assert sections[-1] == "Chlorine cylinder change › Isolation › Leak check"
    leak = chunks[-1]
    assert leak.header == "Chlorine cylinder change › Isolation › Leak check"
    assert "ammonia" in leak.text and "VLV-3042-B" not in leak.text


def test_offsets_point_at_the_chunk_text_and_no_word_is_cut(count_tokens: TokenCounter) -> None:
    doc = sop(long_paragraphs=3)
    for chunk in chunk_document(doc, count_tokens, max_tokens=96, overlap_tokens=0):
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.start == 0 or doc.text[chunk.start - 1].isspace()
        assert chunk.end == len(doc.text) or doc.text[chunk.end].isspace()


def test_a_code_block_that_fits_stays_whole(count_tokens: TokenCounter) -> None:
    chunks = chunk_document(sop(long_paragraphs=2), count_tokens, max_tokens=128, overlap_tokens=0)
    holding = [c for c in chunks if "HMI> SELECT" in c.text]
    assert len(holding) == 1
    assert "HMI> MODE MANUAL" in holding[0].text and holding[0].text.count("```") == 2


def test_consecutive_chunks_of_a_section_overlap_by_whole_sentences(count_tokens: TokenCounter) -> None:
    chunks = chunk_document(sop(long_paragraphs=2), count_tokens, max_tokens=96, overlap_tokens=32)
    isolation = [c for c in chunks if c.section.endswith("Isolation")]
    assert len(isolation) >= 2
    first, second = isolation[0], isolation[1]
    assert second.start < first.end, "the second chunk starts inside the first"
    assert second.text.startswith("Step")


def test_pdf_chunks_keep_their_page_and_never_span_two(count_tokens: TokenCounter) -> None:
    builder = DocumentBuilder("manual.pdf", "pdf")
    for page in (1, 2, 3):
        builder.add("paragraph", f"Page {page} text about backwash of filter F-{page}0{page}.", page=page)
    chunks = chunk_document(builder.build("Filter manual"), count_tokens, max_tokens=256)
    assert [c.page for c in chunks] == [1, 2, 3]
    assert all(f"F-{c.page}0{c.page}" in c.text for c in chunks)


def test_ids_are_stable_and_follow_content_not_position(count_tokens: TokenCounter) -> None:
    first = chunk_document(sop(), count_tokens)
    again = chunk_document(sop(), count_tokens)
    assert [c.chunk_id for c in first] == [c.chunk_id for c in again]
    edited = sop()
    edited.blocks.insert(0, edited.blocks[1])  # unrelated change earlier in the document
    moved_ids = {c.chunk_id for c in chunk_document(edited, count_tokens)}
    assert first[-1].chunk_id in moved_ids
    renamed = sop()
    renamed.path = "plant/other.md"
    assert not {c.chunk_id for c in chunk_document(renamed, count_tokens)} & {c.chunk_id for c in first}


def test_identical_passages_in_one_document_get_distinct_ids(count_tokens: TokenCounter) -> None:
    builder = DocumentBuilder("x.md", "md")
    builder.add("paragraph", "Call the control room on extension 4411.")
    builder.add("heading", "## A", level=2)
    builder.add("paragraph", "Call the control room on extension 4411.")
    builder.add("heading", "## A", level=2)
    builder.add("paragraph", "Call the control room on extension 4411.")
    chunks = chunk_document(builder.build("X"), count_tokens)
    assert len({c.chunk_id for c in chunks}) == len(chunks) == 3


def test_identifiers_are_recorded_per_chunk(count_tokens: TokenCounter) -> None:
    chunks = chunk_document(sop(), count_tokens)
    isolation = next(c for c in chunks if c.section.endswith("Isolation"))
    assert "vlv-3042-b" in isolation.identifiers.split()


def test_a_run_on_sentence_is_split_between_words(count_tokens: TokenCounter) -> None:
    builder = DocumentBuilder("x.txt", "txt")
    builder.add("paragraph", " ".join(f"word{i}" for i in range(2000)))
    chunks = chunk_document(builder.build("X"), count_tokens, max_tokens=64, overlap_tokens=0)
    assert len(chunks) > 10
    words = " ".join(c.text for c in chunks).split()
    assert words == [f"word{i}" for i in range(2000)]
