"""Asking with the model (answer.mode = generated): refusal without the LLM, evidence first, citations
checked, the `ask --json` contract. The default quoted answers are tested in test_quoted_answers.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from appliance.answer.answerer import Answerer
from appliance.answer.generated.prompt import REFUSAL
from appliance.cli.main import cli
from appliance.config import GeneratorSettings, Settings
from appliance.ingest.pipeline import ingest
from appliance.models.generation import ChatMessage, GenerationStream
from tests.fakes import ScriptedGenerator, generated

SOP = """# Chlorine cylinder change

## Isolation

Close the cylinder valve VLV-3042-B and wait until the vacuum regulator gauge reads zero.
Replace the lead gasket RW-GSK-0410 at every connection; a gasket is never reused.

## Leak check

Apply ammonia vapour to the joint. A white cloud means a leak: evacuate and call extension 2100.
"""


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The conftest's settings, answering with the model."""
    return generated(settings)


@pytest.fixture
def cli_env(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("APPLIANCE_ANSWER_MODE", "generated")
    return {**cli_env, "APPLIANCE_ANSWER_MODE": "generated"}


class ExplodingGenerator(ScriptedGenerator):
    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        raise AssertionError("the refusal path must not call the model")


@pytest.fixture
def indexed(settings: Settings, tmp_path: Path) -> Settings:
    root = tmp_path / "plant"
    root.mkdir()
    (root / "SOP-CL-004.md").write_text(SOP)
    ingest(settings, [root])
    return settings


def test_insufficient_evidence_is_refused_without_calling_the_model(indexed: Settings) -> None:
    answerer = Answerer(indexed, generator=ExplodingGenerator(""))  # type: ignore[arg-type]
    result = answerer.ask("How do I restart the Zabbix agent on the bastion hosts?")
    assert result.refused and result.answer == REFUSAL
    assert result.model is None and not result.grounded and not result.verified
    assert "Zabbix" in (result.refusal_reason or "")
    assert all(item.n is None for item in result.evidence), "closest passages are listed, not numbered sources"
    assert set(result.timings_ms) == {"retrieve", "total"}


class CharacterCountingGenerator(ExplodingGenerator):
    def count_tokens(self, text: str) -> int:
        return len(text)  # a token per character: not even the best passage fits a small budget


def test_a_budget_too_small_for_any_source_is_a_refusal_without_calling_the_model(indexed: Settings) -> None:
    tight = indexed.model_copy(update={"answer": indexed.answer.model_copy(update={"max_prompt_tokens": 256})})
    answerer = Answerer(tight, generator=CharacterCountingGenerator(""))  # type: ignore[arg-type]
    result = answerer.ask("What do I close before the cylinder change?")
    assert result.refused and result.answer == REFUSAL and result.model is None
    assert "answer.max_prompt_tokens" in (result.refusal_reason or "")
    assert result.evidence and all(item.n is None for item in result.evidence)


def test_evidence_comes_first_then_tokens_then_the_checked_result(indexed: Settings) -> None:
    generator = ScriptedGenerator("Close VLV-3042-B until the gauge reads zero [1].")
    events = list(Answerer(indexed, generator=generator).events("What do I close before the cylinder change?"))  # type: ignore[arg-type]
    kinds = [event.kind for event in events]
    assert kinds[0] == "evidence" and kinds[-1] == "done" and set(kinds[1:-1]) == {"token"}
    evidence = events[0].evidence
    assert evidence and evidence[0].n == 1 and evidence[0].path == "plant/SOP-CL-004.md"
    assert any("VLV-3042-B" in s.text for s in evidence[0].sentences)
    for sentence in evidence[0].sentences:
        assert evidence[0].text[sentence.start : sentence.end] == sentence.text
    result = events[-1].result
    assert result is not None and result.grounded and result.verified and not result.refused
    assert [c.n for c in result.citations] == [1] and result.citations[0].section.endswith("Isolation")


def test_the_prompt_numbers_the_sources_and_asks_for_citations(indexed: Settings) -> None:
    generator = ScriptedGenerator("Replace the gasket RW-GSK-0410 [1].")
    Answerer(indexed, generator=generator).ask("Which gasket part number do I use?")  # type: ignore[arg-type]
    system, user = generator.calls[0]
    assert system.role == "system" and "[1]" in system.content and "ONLY the numbered sources" in system.content
    assert user.content.startswith("Sources:\n\n[1] ") and "(plant/SOP-CL-004.md)" in user.content
    assert user.content.rstrip().endswith("Answer with citations:")


def test_a_misspelt_question_is_searched_and_answered_as_corrected_and_says_did_you_mean(indexed: Settings) -> None:
    generator = ScriptedGenerator("Replace the gasket RW-GSK-0410 [1].")
    answerer = Answerer(indexed, generator=generator)  # type: ignore[arg-type]
    result = answerer.ask("Which gaskett do I use at every conection?")
    assert result.question == "Which gaskett do I use at every conection?"  # the operator's own words
    assert result.searched == "Which gasket do I use at every connection?"
    assert result.did_you_mean == {
        "question": result.searched,
        "corrections": [{"typed": "gaskett", "suggested": "gasket"}, {"typed": "conection", "suggested": "connection"}],
    }
    assert not result.refused, result.refusal_reason
    assert "Question: Which gasket do I use at every connection?" in generator.calls[0][1].content  # the prompt too
    assert result.as_json()["did_you_mean"] == result.did_you_mean


def test_citations_to_sources_not_given_are_removed_and_invented_facts_flagged(indexed: Settings) -> None:
    generator = ScriptedGenerator("Close VLV-3042-B [1]. Then open valve VLV-9999-Z to vent [7].")
    result = Answerer(indexed, generator=generator).ask("What do I close before the cylinder change?")  # type: ignore[arg-type]
    assert result.removed_citations == [7]
    assert "[7]" not in result.answer
    assert not result.grounded
    assert any("VLV-9999-Z" in sentence for sentence in result.unsupported)


def test_a_model_that_says_the_documents_do_not_cover_it_is_a_refusal(indexed: Settings) -> None:
    generator = ScriptedGenerator("The documents do not cover this.")
    result = Answerer(indexed, generator=generator).ask("How long is the chlorine cylinder change?")  # type: ignore[arg-type]
    assert result.refused and result.answer == REFUSAL and result.citations == []
    assert result.model == "scripted"


def test_a_real_small_model_answers_end_to_end(indexed: Settings) -> None:
    real = indexed.model_copy(
        update={"generator": GeneratorSettings(model="smollm2-135m-instruct", max_tokens=16, n_threads=1)}
    )
    answerer = Answerer(real)
    try:
        result = answerer.ask("Which gasket part number is used, and can a gasket be reused?")
    finally:
        answerer.close()
    assert not result.refused and result.model == "smollm2-135m-instruct"
    assert result.answer.strip()
    assert 0 < result.generation["completion_tokens"] <= 16
    assert result.generation["prefill_ms"] > 0
    assert result.timings_ms["first_token"] <= result.timings_ms["total"]
    assert result.verified in (True, False) and isinstance(result.unsupported, list)


def test_ask_json_contract(indexed: Settings, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPLIANCE_GENERATOR_MODEL", "smollm2-135m-instruct")
    monkeypatch.setenv("APPLIANCE_GENERATOR_MAX_TOKENS", "16")
    monkeypatch.setenv("APPLIANCE_GENERATOR_N_THREADS", "1")
    result = CliRunner().invoke(cli, ["ask", "Which gasket part number do I use at each connection?", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {
        "question",
        "answer",
        "refused",
        "grounded",
        "unsupported",
        "citations",
        "evidence",
        "timings_ms",
        "model",
        "truncated",
    } <= set(data)
    assert data["truncated"] == (data["generation"]["finish_reason"] == "length")
    assert {"retrieve", "first_token", "total"} <= set(data["timings_ms"])
    for citation in data["citations"]:
        fields = {"n", "chunk_id", "path", "section", "page", "document_id", "ocr_confidence", "ocr_note"}
        assert set(citation) == fields | {"document_control"}
        assert citation["ocr_confidence"] is None and citation["ocr_note"] is None  # no scan in this corpus
        assert isinstance(citation["document_id"], int)  # GET /v1/documents/{document_id}/file opens it
    assert data["evidence"] and {"n", "chunk_id", "path", "section", "page", "sentences", "document_id"} <= set(
        data["evidence"][0]
    )
    assert data["searched"] == data["question"] and data["rewrite"] == "none"  # a first question as asked
    assert data["did_you_mean"] is None  # nothing misspelt


def test_ask_refusal_json_has_no_model_and_lists_the_closest_passages(
    indexed: Settings, cli_env: dict[str, str]
) -> None:
    result = CliRunner().invoke(cli, ["ask", "What does alarm ALM-XYZ-999 on the ozone skid mean?", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["refused"] is True and data["model"] is None and data["answer"] == REFUSAL
    assert data["evidence"] and all(item["n"] is None for item in data["evidence"])


def test_a_copied_sentence_without_a_marker_gets_its_source_cited_and_is_checked(indexed: Settings) -> None:
    generator = ScriptedGenerator("Replace the lead gasket RW-GSK-0410 at every connection. Then open VLV-7777-Q.")
    result = Answerer(indexed, generator=generator).ask("Which gasket part number do I use?")  # type: ignore[arg-type]
    assert result.attributed_citations == [1]
    assert "RW-GSK-0410 at every connection [1]." in result.answer
    assert [c.n for c in result.citations] == [1]
    assert result.unsupported == ["Then open VLV-7777-Q."], "an invented tag is never attributed"
    assert not result.grounded


def test_a_sentence_naming_the_document_id_of_its_sources_title_is_supported(
    settings: Settings, tmp_path: Path
) -> None:
    root = tmp_path / "lab"
    root.mkdir()
    (root / "hold-times.md").write_text(
        "# SOP-LAB-001 Sample collection\n\n## Hold times\n\n"
        "Coliform samples must reach the contract laboratory within 30 h of collection.\n"
    )
    ingest(settings, [root])
    answer = "As SOP-LAB-001 says, coliform samples must reach the contract laboratory within 30 h of collection [1]."
    result = Answerer(settings, generator=ScriptedGenerator(answer)).ask("coliform hold time before the lab?")  # type: ignore[arg-type]
    assert result.grounded and not result.unsupported, "the model read the ID in the source's label"
    # Only the label's identifiers count: a document ID the label does not hold is still unsupported.
    other = answer.replace("SOP-LAB-001", "SOP-LAB-002")
    result = Answerer(settings, generator=ScriptedGenerator(other)).ask("coliform hold time before the lab?")  # type: ignore[arg-type]
    assert not result.grounded and result.unsupported == [other.replace(" [1].", ".")]


# --- abstention: a generated answer that is not an answer from the documents ---------------------


def test_a_question_asking_for_a_value_is_refused_when_no_supported_sentence_gives_one(indexed: Settings) -> None:
    # A near miss: the SOP covers the cylinder change but gives no duration; the model answers beside it.
    generator = ScriptedGenerator("Close the cylinder valve VLV-3042-B and wait until the gauge reads zero [1].")
    result = Answerer(indexed, generator=generator).ask("How long does the cylinder change take?")  # type: ignore[arg-type]
    assert result.refused and result.answer == REFUSAL
    assert "how long" in (result.refusal_reason or "").lower()
    # The same supported sentence stands when the question asks for a procedure, not a value.
    answered = Answerer(indexed, generator=ScriptedGenerator(generator.answer)).ask(
        "What do I close before the cylinder change?"
    )  # type: ignore[arg-type]
    assert not answered.refused and answered.grounded


class SiblingCitingGenerator(ScriptedGenerator):
    """Answers with PS-2's setpoints, citing whichever number the prompt gave the PS-2 source."""

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        match = re.search(r"^\[(\d+)\][^\n]*PS-2", messages[-1].content, re.MULTILINE)
        assert match, "the PS-2 source is in the prompt"
        self.answer = f"The lead pump starts at 24.0 ft and stops at 32.0 ft [{match.group(1)}]."
        return super().stream(messages, max_tokens=max_tokens)


def test_an_answer_about_a_sibling_of_what_was_asked_is_refused(settings: Settings, tmp_path: Path) -> None:
    root = tmp_path / "stations"
    root.mkdir()
    (root / "SOP-PMP-002.md").write_text(
        "# Pump station PS-2 (Hillcrest)\n\n## Setpoints\n\n"
        "The PS-2 lead pump starts at 24.0 ft of tank level and stops at 32.0 ft.\n"
    )
    (root / "SOP-PMP-003.md").write_text(
        "# Pump station PS-3 (Oakridge)\n\n## Operation\n\n"
        "PS-3 pumps run on the Oakridge tank level; the station is manned on weekdays.\n"
    )
    ingest(settings, [root])
    question = "What are the start and stop setpoints for the PS-3 Oakridge pumps?"
    result = Answerer(settings, generator=SiblingCitingGenerator()).ask(question)  # type: ignore[arg-type]
    assert result.refused and result.answer == REFUSAL
    assert result.refusal_reason == (
        "the question names PS-3, which the sources the answer cites do not mention: they are about PS-2"
    )
    # The same answer stands for the station it is about.
    answered = Answerer(settings, generator=SiblingCitingGenerator()).ask(  # type: ignore[arg-type]
        "What are the start and stop setpoints for the PS-2 Hillcrest pumps?"
    )
    assert not answered.refused and answered.grounded


def test_a_value_that_the_sources_give_answers_a_question_asking_for_one(indexed: Settings) -> None:
    generator = ScriptedGenerator("Call extension 2100 if a white cloud shows a leak [1].")
    result = Answerer(indexed, generator=generator).ask("What number do I call on a leak?")  # type: ignore[arg-type]
    assert not result.refused and result.grounded and result.answer.startswith("Call extension 2100")


def test_an_answer_cut_at_the_token_limit_is_flagged_and_the_cli_says_its_last_steps_may_be_missing(
    indexed: Settings, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = (
        "Close VLV-3042-B [1]. Wait until the vacuum regulator gauge reads zero [1]. "
        "Replace the lead gasket RW-GSK-0410 at every connection [1]."
    )  # 22 words: the scripted model writes one token per word
    short = indexed.model_copy(update={"generator": indexed.generator.model_copy(update={"max_tokens": 16})})
    question = "What do I close before the cylinder change?"
    cut = Answerer(short, generator=ScriptedGenerator(steps)).ask(question)  # type: ignore[arg-type]
    assert cut.truncated and cut.generation["finish_reason"] == "length" and not cut.refused
    assert "Replace the lead gasket" in cut.answer and "every connection" not in cut.answer
    whole = Answerer(indexed, generator=ScriptedGenerator(steps)).ask(question)  # type: ignore[arg-type]
    assert not whole.truncated and whole.as_json()["truncated"] is False

    monkeypatch.setenv("APPLIANCE_GENERATOR_MAX_TOKENS", "16")
    monkeypatch.setattr(
        "appliance.answer.answerer.Answerer",  # what `appliance ask` imports when it runs
        lambda settings: Answerer(settings, generator=ScriptedGenerator(steps)),  # type: ignore[arg-type]
    )
    printed = CliRunner().invoke(cli, ["ask", question])
    assert printed.exit_code == 0, printed.output
    assert "cut at the length limit (generator.max_tokens): its last steps may be missing" in printed.output


LEAK_DETECTOR = """# Chlorine leak detector

## Test

Test the chlorine leak detector AIT-460 weekly with the test kit; the alarm sounds at 1 ppm.
"""


class WrongSourceGenerator(ScriptedGenerator):
    """Cites the gasket to the source that does not name it, as the README's demo answer did."""

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        blocks = re.split(r"\n(?=\[\d+\] )", messages[-1].content)
        other = next(b for b in blocks if re.match(r"\[\d+\] ", b) and "RW-GSK-0410" not in b)
        n = re.match(r"\[(\d+)\]", other).group(1)  # type: ignore[union-attr]
        self.answer = (
            f"Use the lead gasket RW-GSK-0410 at every connection [{n}]. Close the cylinder valve first [{n}]."
        )
        return super().stream(messages, max_tokens=max_tokens)


def test_a_sentence_cited_to_the_wrong_source_is_corrected_and_the_key_fact_left_out_is_quoted(
    indexed: Settings, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (Path(indexed.home) / "more").mkdir()
    (Path(indexed.home) / "more" / "SOP-CL-007.md").write_text(LEAK_DETECTOR)
    ingest(indexed, [Path(indexed.home) / "more"])
    question = "Which gasket is used on the chlorine regulator, and can it be reused?"
    result = Answerer(indexed, generator=WrongSourceGenerator("")).ask(question)  # type: ignore[arg-type]
    assert not result.refused, result.refusal_reason
    gasket = next(e.n for e in result.evidence if e.path.endswith("SOP-CL-004.md"))
    other = next(e.n for e in result.evidence if e.path.endswith("SOP-CL-007.md"))
    data = json.loads(json.dumps(result.as_json()))  # as the API sends it
    assert data["corrected_citations"] == [
        {"sentence": "Use the lead gasket RW-GSK-0410 at every connection.", "cited": [other], "corrected": [gasket]},
        {"sentence": "Close the cylinder valve first.", "cited": [other], "corrected": [gasket]},
    ]
    assert result.answer.startswith(f"Use the lead gasket RW-GSK-0410 at every connection [{gasket}].")
    assert result.grounded and [c.n for c in result.citations] == [gasket]
    # The valve's tag, left out of the answer, is put in front of the operator in the SOP's own words.
    assert [(q["n"], q["why"], q["sentence"]) for q in data["quotes"]] == [
        (gasket, "key fact", "Close the cylinder valve first.")
    ]
    assert "VLV-3042-B" in data["quotes"][0]["text"]

    monkeypatch.setattr(
        "appliance.answer.answerer.Answerer",  # what `appliance ask` imports when it runs
        lambda settings: Answerer(settings, generator=WrongSourceGenerator("")),  # type: ignore[arg-type]
    )
    printed = CliRunner().invoke(cli, ["ask", question])
    assert printed.exit_code == 0, printed.output
    assert f"citation corrected [{other}] → [{gasket}]" in printed.output
    assert "In the sources' own words:" in printed.output and "> Close the cylinder valve VLV-3042-B" in printed.output


def test_the_warning_names_what_no_source_holds_and_says_so_when_nothing_is_invented(
    indexed: Settings, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "What do I close before the cylinder change?"
    invented = "Close VLV-3042-B [1]. Then run `chlorctl purge --all` on the panel [1]."
    reworded = "Close VLV-3042-B [1]. Everyone on the shift should feel confident about the work [1]."
    result = Answerer(indexed, generator=ScriptedGenerator(invented)).ask(question)  # type: ignore[arg-type]
    assert not result.grounded and result.as_json()["invented"] == ["chlorctl purge --all"]
    calm = Answerer(indexed, generator=ScriptedGenerator(reworded)).ask(question)  # type: ignore[arg-type]
    assert not calm.grounded and calm.unsupported and calm.invented == [] and calm.contradicting == []

    for answer, shown, not_shown in (
        (invented, "Check before acting: in no source: chlorctl purge --all", "every command, value and name"),
        (reworded, "(every command, value and name in them is in the sources)", "in no source"),
    ):
        monkeypatch.setattr(
            "appliance.answer.answerer.Answerer",  # what `appliance ask` imports when it runs
            lambda settings, answer=answer: Answerer(settings, generator=ScriptedGenerator(answer)),  # type: ignore[arg-type]
        )
        printed = CliRunner().invoke(cli, ["ask", question])
        assert printed.exit_code == 0, printed.output
        assert shown in printed.output and not_shown not in printed.output
