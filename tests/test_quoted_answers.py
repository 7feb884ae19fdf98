"""The SOP speaks (answer.mode = quoted, the default): the answer is the documents' own text.

A "how do I" question gets the whole procedure section its hits land in, steps in order, every item
the indexed text of the chunk it cites; a value question gets the line that states the value; no model
is asked. A value no line states, or a section about a sibling of what the question names, is refused.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from appliance.answer.answerer import Answerer
from appliance.answer.generated.prompt import REFUSAL
from appliance.answer.question import read_question
from appliance.answer.quoted.answer import Quoted, quote_answer
from appliance.answer.quoted.candidates import Candidate
from appliance.answer.quoted.choice import Choice, Ranked
from appliance.answer.quoted.ranker import default_ranker
from appliance.answer.quoted.sections import Section, document_sections
from appliance.cli.main import cli
from appliance.config import Settings
from appliance.ingest.pipeline import ingest
from appliance.models.generation import ChatMessage, GenerationStream
from tests.fakes import ScriptedGenerator

CHANGE = """# SOP-CL-004 Chlorine Container Change

## 1. Purpose

To change empty 1-ton chlorine containers safely, without a release of chlorine.

## 3. Safety

- Two people. A container change is never done alone.
- Lead gaskets are single use.

## 6. Procedure

The steps below are written for bank A.

### 6.1 Prepare

1. Tell the control room (ext. 2100) that a container change on bank A is starting.
2. Record date, names and serial numbers on the container change log RWTP-F-043.
3. Confirm that the leak detector AIT-452 reads below 0.5 ppm and fan EF-401 runs.

### 6.2 Isolate the empty bank

1. Close the bank header isolation valve VLV-4501-A.
2. Close the gas valve of CYL-1 with the container valve wrench, clockwise until it seats.
3. Wait until the regulator gauge VR-451 reads zero, normally within 5 minutes.

### 6.3 Connect and start up

1. Place a new lead gasket RW-GSK-0410 on the regulator inlet.
2. Open the gas valve a quarter turn and test every joint with ammonia vapour.

**WARNING:** never open a container valve more than one full turn.

3. Open VLV-4501-A slowly and tell the control room the change is complete.

## 9. Records

Keep the change log RWTP-F-043 for 5 years.
"""

PUMPS = """# SOP-PMP-002 Pump Station PS-2 Hillcrest

## 1. Scope

Booster station PS-2 feeds the Hillcrest zone. Station PS-3 Oakridge has its own SOP.

## 4. Setpoints

| Pump | Start level | Stop level |
| --- | --- | --- |
| P-201 | 12.0 ft | 18.5 ft |
| P-202 | 10.5 ft | 18.0 ft |

The standby pump P-203 starts on the low suction alarm ALM-PS2-SUCT-LO.

## 5. Pump failover

1. Acknowledge ALM-PS2-PUMP-FAIL on the HMI.
2. Confirm that P-203 started within 30 seconds.
3. Call the Distribution Supervisor (ext. 2120).
"""


RUNBOOK = """# LauncherPodStuck

## Meaning

The launcher pod of a virtual machine has stayed in a failed state for more than ten minutes, and the virtual
machine it should run is therefore not available to its users until the pod is replaced on a healthy node.

## Mitigation

Most of the time the pod failed because its node ran out of memory or lost its storage, and a new pod on
another node is enough; read the events before acting so that the cause is known for the review afterwards.

Read the events first.

- **Restart the launcher pod**:

```bash
$ oc delete pod launcher-0 -n vms
```

1. Drain the node:
   - cordon it first
   - then evict the pods
2. Uncordon the node once it reports Ready.
   * check it with oc get nodes
"""


class ExplodingGenerator(ScriptedGenerator):
    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        raise AssertionError("a quoted answer never asks the model")


def indexed_folder(settings: Settings, root: Path, documents: dict[str, str]) -> Settings:
    """`settings` with `documents` (file name → text) written to the folder `root` and ingested."""
    root.mkdir()
    for name, text in documents.items():
        (root / name).write_text(text)
    ingest(settings, [root])
    return settings


@pytest.fixture
def indexed(settings: Settings, tmp_path: Path) -> Settings:
    return indexed_folder(settings, tmp_path / "plant", {"SOP-CL-004.md": CHANGE, "SOP-PMP-002.md": PUMPS})


def quoted(settings: Settings) -> Answerer:
    assert settings.answer.mode == "quoted", "quoted answers are the default"
    return Answerer(settings, generator=ExplodingGenerator(""))  # type: ignore[arg-type]


def test_a_how_do_i_question_gets_the_whole_procedure_in_order_verbatim(indexed: Settings) -> None:
    result = quoted(indexed).ask("How do I change a chlorine container?")
    assert not result.refused and result.answer_kind == "procedure" and result.model is None
    # The procedure, or the SOP holding it whole (the fitted choice prefers a complete answer to a tight one).
    assert [s.section for s in result.sections] in (
        ["SOP-CL-004 Chlorine Container Change › 6. Procedure"],
        ["SOP-CL-004 Chlorine Container Change"],
    )
    steps = [step.text for step in result.steps if step.kind not in ("heading", "text")]
    procedure = [
        "1. Tell the control room (ext. 2100) that a container change on bank A is starting.",
        "2. Record date, names and serial numbers on the container change log RWTP-F-043.",
        "3. Confirm that the leak detector AIT-452 reads below 0.5 ppm and fan EF-401 runs.",
        "1. Close the bank header isolation valve VLV-4501-A.",
        "2. Close the gas valve of CYL-1 with the container valve wrench, clockwise until it seats.",
        "3. Wait until the regulator gauge VR-451 reads zero, normally within 5 minutes.",
        "1. Place a new lead gasket RW-GSK-0410 on the regulator inlet.",
        "2. Open the gas valve a quarter turn and test every joint with ammonia vapour.",
        "**WARNING:** never open a container valve more than one full turn.",
        "3. Open VLV-4501-A slowly and tell the control room the change is complete.",
    ]
    start = steps.index(procedure[0])
    assert steps[start : start + len(procedure)] == procedure  # every step, in the SOP's order, nothing between
    assert [s.kind for s in result.steps if "WARNING" in s.text] == ["warning"]


def test_the_server_embeds_a_section_label_once_however_many_requests_ask(indexed: Settings) -> None:
    """Each request answers through a view of its own; the section labels it embeds stay with the process, so a
    second operator's question over the same documents embeds no label again (a second and more on 2 cores)."""
    from fastapi.testclient import TestClient

    from appliance.server.app import create_app
    from tests.test_api import LOOPBACK_CLIENT

    answerer = quoted(indexed)
    labels = answerer.labels
    app = create_app(indexed, answerer=answerer)
    with TestClient(app, client=LOOPBACK_CLIENT) as client:
        first = client.post("/v1/ask", json={"question": "How do I change a chlorine container?"})
        assert first.status_code == 200 and first.json()["answer_kind"] == "procedure"
        remembered = len(labels)
        assert remembered > 0, "the request's labels were not kept by the process"
        again = client.post("/v1/ask", json={"question": "how do i swap an empty chlorine container"})
        assert again.status_code == 200 and again.json()["answer_kind"] == "procedure"
    assert len(labels) == remembered, "the second request embedded the same documents' labels again"


def test_every_shown_step_is_the_text_of_the_chunk_it_cites(indexed: Settings) -> None:
    answerer = quoted(indexed)
    result = answerer.ask("How do I change a chlorine container?")
    chunks = answerer.searcher.catalog.chunks_by_ids([step.chunk_id for step in result.steps])
    for step in result.steps:
        chunk = chunks[step.chunk_id]
        assert (step.path, step.section, step.page) == (chunk.path, chunk.section, chunk.page)
        if step.kind != "heading":
            assert step.text.split("\n")[0] in chunk.text
    assert result.grounded and result.verified and not result.unsupported
    assert [c.n for c in result.citations] == [1] and result.citations[0].path == "plant/SOP-CL-004.md"


def test_the_steps_come_before_the_result_and_no_token_is_generated(indexed: Settings) -> None:
    events = list(quoted(indexed).events("How do I change a chlorine container?"))
    assert [event.kind for event in events] == ["evidence", "steps", "done"]
    assert events[1].answer_kind == "procedure" and events[1].steps == events[2].result.steps  # type: ignore[union-attr]
    timings = events[2].result.timings_ms  # type: ignore[union-attr]
    assert {"retrieve", "sections", "first_content", "total"} <= set(timings) and "first_token" not in timings


def test_a_value_question_gets_the_line_that_states_it_with_its_heading(indexed: Settings) -> None:
    result = quoted(indexed).ask("What is the start level of pump P-202 at PS-2?")
    assert not result.refused and result.answer_kind == "excerpt"
    shown = [step.text for step in result.steps]
    assert shown[0] == "4. Setpoints" and result.steps[0].kind == "heading"
    row = next(text for text in shown if "P-202" in text)
    assert row.splitlines() == [
        "| Pump | Start level | Stop level |",
        "| --- | --- | --- |",
        "| P-202 | 10.5 ft | 18.0 ft |",
    ]
    assert sum(len(text.split()) for text in shown) <= indexed.answer.excerpt_words + 10


def test_a_section_about_a_sibling_of_what_the_question_names_is_refused(indexed: Settings) -> None:
    result = quoted(indexed).ask("What are the start and stop levels of the PS-3 pumps?")
    assert result.refused and result.answer == REFUSAL and result.answer_kind == "refusal"
    assert "PS-3" in (result.refusal_reason or "") and "PS-2" in (result.refusal_reason or "")
    assert result.evidence and all(item.n is None for item in result.evidence)


def shown_from(
    answerer: Answerer,
    heading: str,
    hit_text: str,
    text: str,
    max_words: int,
    max_steps_words: int = 0,
    path: str = "plant/SOP-CL-004.md",
) -> tuple[Section, Quoted]:
    """The quoted answer to `text` when the choice is the section `heading` of the document at `path`
    (SOP-CL-004), hit at the chunk holding `hit_text`, with `max_words` to show (`max_steps_words` for the steps
    alone)."""
    catalog = answerer.searcher.catalog
    chunks = catalog.chunks_of_documents([path])[path]
    section = document_sections(chunks)[heading]
    hit = next(c for c in section.chunks if hit_text in c.text)
    candidate = Candidate(section, ((hit, 1.0, 1),), 1, 1.0, 0.0, 0.0)
    question = read_question(text, text, text, answerer.searcher.embedder.embed_query(text))
    assert question.kind == "procedure"
    result = quote_answer(
        question,
        Choice(Ranked(candidate, 1.0), [Ranked(candidate, 1.0)]),
        [(hit, 1.0)],
        chunks_of=catalog.chunks_of_documents,
        embed_texts=answerer.searcher.embedder.embed,
        max_words=max_words,
        excerpt_words=70,
        max_steps_words=max_steps_words,
    )
    return section, result


def test_a_procedure_longer_than_the_limit_shows_the_matched_parts_and_says_what_it_left_out(
    indexed: Settings,
) -> None:
    _, result = shown_from(
        quoted(indexed),
        "SOP-CL-004 Chlorine Container Change › 6. Procedure",
        "VLV-4501-A.",
        "How do I isolate the empty bank?",
        max_words=40,
    )
    omitted = [step for step in result.steps if step.kind == "omitted"]
    assert omitted and all(step.text == "" and "not shown" in (step.note or "") for step in omitted)
    assert any((step.note or "").startswith("steps 1–3 not shown") for step in omitted)
    headings = [step.text for step in result.steps if step.kind == "heading"]
    assert headings == ["6. Procedure", "6.1 Prepare", "6.2 Isolate the empty bank", "6.3 Connect and start up"]
    assert "1. Close the bank header isolation valve VLV-4501-A." in [step.text for step in result.steps]
    assert sum(len(step.text.split()) for step in result.steps if step.kind != "heading") <= 40
    assert "[… steps 1–3 not shown" in result.text()


def test_a_whole_sop_longer_than_the_limit_drops_the_prose_around_the_steps_not_a_step(indexed: Settings) -> None:
    answerer = quoted(indexed)
    heading, text = "SOP-CL-004 Chlorine Container Change", "How do I change a chlorine container?"
    whole, _ = shown_from(answerer, heading, "without a release of chlorine", text, max_words=10_000)
    steps_words = sum(len(item.text.split()) for item in whole.items if item.kind in ("heading", "step", "warning"))
    assert steps_words < whole.words
    # room for the steps, not for the prose around them
    _, result = shown_from(answerer, heading, "without a release of chlorine", text, max_words=steps_words)
    shown = [step.text for step in result.steps]
    numbered = [item.text for item in whole.items if item.kind in ("step", "warning")]
    assert [t for t in shown if t in numbered] == numbered  # every step and warning, in order
    assert "Two people. A container change is never done alone." not in "\n".join(shown)
    assert any(step.kind == "omitted" and "not shown" in (step.note or "") for step in result.steps)


def test_a_procedure_whose_steps_fit_the_steps_budget_shows_every_step_though_it_is_longer_than_the_limit(
    indexed: Settings,
) -> None:
    answerer = quoted(indexed)
    heading, text = "SOP-CL-004 Chlorine Container Change", "How do I change a chlorine container?"
    whole, _ = shown_from(answerer, heading, "without a release of chlorine", text, max_words=10_000)
    steps_words = sum(len(item.text.split()) for item in whole.items if item.kind in ("heading", "step", "warning"))
    numbered = [item.text for item in whole.items if item.kind in ("step", "warning")]

    def shown_steps(max_steps_words: int) -> list[str]:
        _, result = shown_from(
            answerer, heading, "without a release of chlorine", text, steps_words - 20, max_steps_words
        )
        return [step.text for step in result.steps if step.text in numbered]

    assert shown_steps(0) != numbered  # the limit alone: the steps do not fit, the matched parts are shown
    assert shown_steps(steps_words) == numbered  # room for the steps: every step and warning, in order


@pytest.fixture
def runbook(settings: Settings, tmp_path: Path) -> Settings:
    return indexed_folder(settings, tmp_path / "runbooks", {"LauncherPodStuck.md": RUNBOOK})


def test_a_trimmed_procedure_keeps_the_line_that_introduces_a_command_and_a_steps_own_sub_items(
    runbook: Settings,
) -> None:
    answerer = quoted(runbook)
    heading, hit, text, path = (
        "LauncherPodStuck",
        "Restart the launcher pod",
        "How do I fix a stuck launcher pod?",
        "runbooks/LauncherPodStuck.md",
    )
    whole, _ = shown_from(answerer, heading, hit, text, max_words=10_000, path=path)
    parts = (
        "Restart the launcher pod",
        "oc delete pod launcher-0",
        "Drain the node",
        "cordon it first",
        "then evict the pods",
        "Uncordon the node",
        "check it with oc get nodes",
    )
    wanted = [item for item in whole.items if item.kind == "heading" or any(p in item.text for p in parts)]
    assert len(wanted) < len(whole.items)  # the prose: what gives way
    # room for the headings, the command with its label and the steps with their sub-items, nothing more
    _, result = shown_from(answerer, heading, hit, text, sum(len(i.text.split()) for i in wanted), path=path)
    assert [step.text for step in result.steps if step.kind != "omitted"] == [item.text for item in wanted]
    assert any(step.kind == "omitted" for step in result.steps)


def test_the_generated_answer_stays_available_as_a_setting(indexed: Settings) -> None:
    generated = indexed.model_copy(update={"answer": indexed.answer.model_copy(update={"mode": "generated"})})
    generator = ScriptedGenerator("Close VLV-4501-A first [1].")
    result = Answerer(generated, generator=generator).ask("What do I close first in a chlorine container change?")  # type: ignore[arg-type]
    assert result.answer_kind == "generated" and result.steps == [] and result.model == "scripted"
    assert "VLV-4501-A" in result.answer


def test_ask_json_carries_the_kind_the_steps_and_the_sections(indexed: Settings, cli_env: dict[str, str]) -> None:
    out = CliRunner().invoke(cli, ["ask", "How do I change a chlorine container?", "--json"], env=cli_env)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["answer_kind"] == "procedure" and data["refused"] is False
    assert {"text", "section", "page", "chunk_id", "kind", "n"} <= set(data["steps"][0])
    assert data["sections"][0]["path"] == "plant/SOP-CL-004.md" and data["sections"][0]["words"] > 0
    assert "1. Close the bank header isolation valve VLV-4501-A." in data["answer"]
    assert isinstance(data["alternatives"], list)


def test_ask_prints_the_procedure_as_the_document_writes_it(indexed: Settings, cli_env: dict[str, str]) -> None:
    out = CliRunner().invoke(cli, ["ask", "How do I change a chlorine container?"], env=cli_env)
    assert out.exit_code == 0, out.output
    assert "The procedure, in the document's own words (no model wrote it):" in out.output
    assert "1. Close the bank header isolation valve VLV-4501-A." in out.output
    assert "no model asked" in out.output


def test_an_answer_despite_words_the_documents_never_use_names_them_and_gives_no_all_clear(
    indexed: Settings, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closest procedure may be about something else (another machine sharing the question's other words):
    the operator is told which words the documents never use, and no plain "shown as the document writes it".
    Where the ranker is sure of its section the answer would otherwise carry the ✓, so every such word is named
    (the ranker is made sure here: how sure the shipped one is of this small corpus is the fit's business)."""
    sure = replace(default_ranker(), certain_probability=0.5, close_ratio=1.0)
    monkeypatch.setattr("appliance.answer.quoted.choice.default_ranker", lambda: sure)
    asked = "How do I change a chlorine container on the evaporator?"
    result = Answerer(indexed).ask(asked)
    assert not result.refused, result.refusal_reason  # one unknown word never refuses on its own
    assert result.confidence == "certain"
    assert result.unmatched_terms == ["evaporator"]
    assert result.unmatched_warning_terms == ["evaporator"]
    assert Answerer(indexed).ask("How do I change a chlorine container?").unmatched_terms == []
    out = CliRunner().invoke(cli, ["ask", asked], env=cli_env)
    assert out.exit_code == 0, out.output
    assert "The documents never use: evaporator. Check that this answers what you asked" in out.output
    assert "Shown as the document writes it" not in out.output
    data = json.loads(CliRunner().invoke(cli, ["ask", asked, "--json"], env=cli_env).output)
    assert data["unmatched_terms"] == ["evaporator"]
    assert data["unmatched_warning_terms"] == ["evaporator"]


@pytest.mark.parametrize(
    "asked",
    [
        "The bigger container is empty, what now?",
        "the bigger container is empty, what now?",
        "THE BIGGER CONTAINER IS EMPTY, WHAT NOW?",
        "The bigger contianer is empty, what now?",
    ],
)
def test_an_ordinary_word_the_documents_never_use_is_not_named_where_the_badge_already_says_check(
    indexed: Settings, cli_env: dict[str, str], asked: str
) -> None:
    """The word "bigger" names no subject of its own (answer/unmatched_note.py, fitted): under an answer with no ✓
    anyway (a close call here: 6.2 or the whole procedure) it is in the API's unmatched_terms but not named to the
    operator."""
    result = Answerer(indexed).ask(asked)
    assert not result.refused, result.refusal_reason
    assert result.confidence != "certain"
    assert "bigger" in [t.lower() for t in result.unmatched_terms]
    assert "bigger" not in [t.lower() for t in result.unmatched_warning_terms]
    out = CliRunner().invoke(cli, ["ask", asked], env=cli_env)
    assert out.exit_code == 0, out.output
    assert "The documents never use" not in out.output
    assert "Shown as the document writes it" not in out.output


@pytest.mark.parametrize(
    "asked",
    [
        "How do I change a chlorine container? The bigger one is empty",
        "How do I change a container? The bigger one is empty",
    ],
)
def test_a_sure_answer_names_every_word_the_documents_never_use_and_loses_its_check_mark(
    indexed: Settings, cli_env: dict[str, str], asked: str
) -> None:
    """Where the choice would be badged sure, the ✓ stays strict (answer/unmatched_note.py): even an ordinary word
    no document uses is named, and the answer is not shown as certain."""
    result = Answerer(indexed).ask(asked)
    assert not result.refused, result.refusal_reason
    assert result.confidence == "certain"
    assert "bigger" in [t.lower() for t in result.unmatched_warning_terms]
    out = CliRunner().invoke(cli, ["ask", asked], env=cli_env)
    assert out.exit_code == 0, out.output
    assert "The documents never use: bigger" in out.output
    assert "Shown as the document writes it" not in out.output


GITALY = """# Gitaly operations

## Restarting gitaly-ruby

1. Find the gitaly-ruby workers of the node with `pgrep -f gitaly-ruby`.
2. Wait 5 seconds between killing gitaly-ruby workers so that the next one can take over.

## Ceph settings

The mon_osd_full_ratio of the ODF clusters is 0.85.

## References

The Ceph documentation explains mon_osd_down_out_interval and the other monitor settings.
"""


@pytest.fixture
def gitaly(settings: Settings, tmp_path: Path) -> Settings:
    return indexed_folder(settings, tmp_path / "runbooks", {"gitaly.md": GITALY})


@pytest.mark.parametrize(
    "question",
    [
        "How many gitaly-ruby workers does each Gitaly node run?",  # a number of seconds is no number of workers
        "how many gitaly ruby workers run on a gitaly node",
        "What is mon_osd_down_out_interval set to on our ODF clusters?",  # a neighbour's value is no answer
    ],
)
def test_a_value_of_another_thing_does_not_answer_a_value_question(gitaly: Settings, question: str) -> None:
    result = quoted(gitaly).ask(question)
    assert result.refused and "asks for a value" in (result.refusal_reason or ""), result.steps


def test_the_value_of_the_thing_named_answers(gitaly: Settings) -> None:
    result = quoted(gitaly).ask("What is mon_osd_full_ratio set to on the ODF clusters?")
    assert not result.refused, result.refusal_reason
    assert any("0.85" in step.text for step in result.steps)
