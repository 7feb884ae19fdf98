"""ask."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from appliance.cli.common import current_settings, echo_json, handle_errors
from appliance.cli.table_layout import aligned, table_lines, terminal_width
from appliance.config import AnswerMode
from appliance.documents.original import host_files, open_hint
from appliance.index.filters import DOC_TYPES, Filters
from appliance.retrieve.spelling import did_you_mean_line
from appliance.text.pipe_tables import PipeTable, is_table, row_at

if TYPE_CHECKING:  # the answer path is imported by `ask` alone: every other command starts without it
    from appliance.answer.answerer import Alternative, AnswerResult, EvidenceItem
    from appliance.answer.quoted.answer import Step


def _where(item: EvidenceItem) -> str:
    parts = [item.path]
    if item.section:
        parts.append(item.section)
    text = " › ".join(parts)
    return text + (f" (p. {item.page})" if item.page else "")


def _bold(text: str) -> str:
    return click.style(text, bold=True)


def _print_sentences(item: EvidenceItem, indent: str = "    ") -> None:
    """The passage's best sentences, in bold, so the SOP's own words stand out; a table row under its
    table's header, aligned."""
    prose: list[str] = []
    rows: list[PipeTable] = []
    for sentence in item.sentences:
        found = row_at(item.text, sentence.start) if is_table(sentence.text) else None
        if found is None:
            prose.append(_bold(" ".join(sentence.text.split())))
        else:
            table, row = found
            rows.append(PipeTable(table.header, (row,), row.start, row.end))
    if prose:
        click.echo(indent + " … ".join(prose))
    for table in rows:
        for line in aligned(table, terminal_width() - len(indent), _bold):
            click.echo(indent + line)


def _print_evidence(
    evidence: list[EvidenceItem], refused: bool, files: dict[str, str], *, sentences: bool = True
) -> None:
    title = "Closest passages:" if refused else "Sources:"
    click.echo(click.style(title, underline=True))
    for item in evidence:
        label = f"[{item.n}]" if item.n is not None else "-"
        click.echo(f"{label} {_where(item)}")
        if item.sentences and (sentences or refused):
            _print_sentences(item)
        if item.path in files:
            click.echo(f"    {open_hint(files[item.path], item.page)}")


_KIND_LABELS = {
    "procedure": "The procedure, in the document's own words (no model wrote it):",
    "excerpt": "What the documents say, in their own words (no model wrote it):",
}
_SIGNALS = {"warning": "red", "caution": "yellow", "hold": "magenta", "note": "cyan"}


def _print_steps(answer_kind: str | None, steps: list[Step]) -> None:
    """The SOP's own items as the document lays them out: headings bold, signal words in colour, every
    part left out said."""
    click.echo(click.style(_KIND_LABELS.get(answer_kind or "", "From the documents:"), underline=True))
    for step in _joined_tables(steps):
        indent = "  " * step.level
        if step.kind == "table":
            for line in table_lines(step.text, terminal_width() - len(indent), _bold):
                click.echo(indent + line)
        elif step.kind == "heading":
            page = f", p. {step.page}" if step.page else ""
            click.echo(click.style(f"{indent}{step.text}", bold=True) + f"  [{step.n}{page}]")
        elif step.kind == "omitted":
            click.echo(click.style(f"{indent}[… {step.note}]", fg="yellow"))
        else:
            color = _SIGNALS.get(step.kind)
            click.echo(click.style(step.text, fg=color, bold=color is not None) if color else step.text)


def _joined_tables(steps: Iterable[Step]) -> list[Step]:
    """Steps with each run of table rows of one source as one table step (an excerpt gives every row it
    picks as its own step under the header; the layout drops the repeated header)."""
    joined: list[Step] = []
    for step in steps:
        last = joined[-1] if joined else None
        if last is not None and step.kind == last.kind == "table" and step.n == last.n:
            joined[-1] = replace(last, text=f"{last.text}\n{step.text}", matched=last.matched or step.matched)
        else:
            joined.append(step)
    return joined


def _print_quotes(result: AnswerResult) -> None:
    """The sources' own lines under the sentences that reword them or leave their key fact out."""
    click.echo(click.style("In the sources' own words:", underline=True))
    for quote in result.quotes:
        click.echo(f"  {_shortened(quote.sentence)}")
        lines = table_lines(quote.text, terminal_width() - 6) if is_table(quote.text) else quote.text.split("\n")
        for line in lines:
            click.echo(click.style(f"    > {line}", bold=True))
        click.echo(f"    [{quote.n}]")


def _revised_line(first: Alternative | None) -> str:
    """Why the steps above were replaced, naming the section shown first."""
    name = (first.section.split(" › ")[-1] if first.section else first.title) if first else "the first section"
    where = f" ({first.path})" if first else ""
    return f"Replaced after the local model's check: it judged the section below a better match than {name}{where}."


def _shortened(sentence: str, limit: int = 90) -> str:
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


def _print_result(result: AnswerResult, streamed: bool, files: dict[str, str]) -> None:
    if result.steps and not streamed:
        _print_steps(result.answer_kind, result.steps)
    elif not streamed:
        click.echo(result.answer)
    click.echo()
    if result.quotes:
        _print_quotes(result)
        click.echo()
    if result.did_you_mean is not None:
        click.echo(click.style(did_you_mean_line(result.did_you_mean), fg="cyan"))
    if result.unmatched_warning_terms and not result.refused:
        # The answer may be about something else: name the words that may be its subject; no all-clear below.
        unmatched = ", ".join(result.unmatched_warning_terms)
        click.echo(
            click.style(
                f"The documents never use: {unmatched}. Check that this answers what you asked before acting.",
                fg="yellow",
            )
        )
    if result.judge is not None and result.judge.timing == "after" and result.judge.kept:
        click.echo(click.style("Checked by the local model: it kept this choice.", fg="cyan"))
    if result.refused:
        click.echo(click.style(f"Not answered: {result.refusal_reason}", fg="yellow"))
    elif result.steps and result.confidence == "close" and result.alternatives:
        rival = result.alternatives[0]
        name = rival.section.split(" › ")[-1] if rival.section else rival.title
        click.echo(
            click.style(f"Close call: also matches {name} ({rival.path}). Check which one you need.", fg="yellow")
        )
    elif result.steps and result.confidence == "uncertain":
        click.echo(click.style("Best match only, a weak one: check the section's heading before acting.", fg="yellow"))
    elif result.unmatched_warning_terms and (result.steps or result.grounded):
        pass  # no all-clear: the line above names what the documents never use
    elif result.steps:
        click.echo(click.style("Shown as the document writes it: read the cited section before acting.", fg="green"))
    elif result.grounded:
        click.echo(click.style("Every statement is supported by the sentences it cites.", fg="green"))
    elif not result.verified:
        click.echo(click.style("Check before acting: this answer could not be checked against the sources.", fg="red"))
    else:
        # Named first: what no given source holds, or what a source says the opposite of, is what the operator
        # must not act on unchecked.
        if result.invented:
            click.echo(click.style(f"Check before acting: in no source: {', '.join(result.invented)}", fg="red"))
        for sentence in result.contradicting:
            click.echo(click.style(f"Check before acting: the source says the opposite of: {sentence}", fg="red"))
        heading = (
            "Statements not supported by their citations:"
            if result.invented or result.contradicting
            else "Check before acting: some statements are not supported by their citations "
            "(every command, value and name in them is in the sources):"
        )
        click.echo(click.style(heading, fg="red"))
        for sentence in result.unsupported:
            click.echo(f"  - {sentence}")
    if result.truncated:
        click.echo(
            click.style(
                "The answer was cut at the length limit (generator.max_tokens): its last steps may be missing; "
                "read the cited sources to the end.",
                fg="yellow",
            )
        )
    if result.citations:
        click.echo(click.style("Citations:", underline=True))
        for citation in result.citations:
            page = f", p. {citation.page}" if citation.page else ""
            section = f" › {citation.section}" if citation.section else ""
            click.echo(f"[{citation.n}] {citation.path}{section}{page}")
            _print_control(citation.document_control, citation.section)
            if citation.ocr_note:
                note = f"    {citation.ocr_note} (confidence {citation.ocr_confidence:.2f})"
                click.echo(click.style(note, fg="yellow"))
            if citation.path in files:
                click.echo(f"    {open_hint(files[citation.path], citation.page)}")
    if result.removed_citations:
        click.echo(f"(removed citations to sources that were not given: {result.removed_citations})")
    for corrected in result.corrected_citations:
        moved = f"{_marker(corrected.cited)} → {_marker(corrected.corrected)}"
        held = _shortened(corrected.sentence, 60)
        click.echo(f"(citation corrected {moved}: the source the model cited does not hold “{held}”)")
    t = result.timings_ms
    first = f", first token {t['first_token'] / 1000:.1f} s" if "first_token" in t else ""
    if "first_content" in t and result.judge is not None:
        first = f", shown after {t['first_content'] / 1000:.1f} s"
    # The judge writes nothing but is a model asked: say so, and how long it took.
    asked = result.model or (
        f"choice checked by the local model in {result.judge.ms / 1000:.1f} s" if result.judge else "no model asked"
    )
    click.echo(f"({asked}{first}, total {t['total'] / 1000:.1f} s)", err=True)


def _print_control(control: dict[str, Any] | None, section: str) -> None:
    """Which revision the citation is from ("SOP-CL-004 rev 3, effective 2025-05-01 › 6.2"), and a warning
    when the document is past its review date."""
    if not control:
        return
    label = str(control.get("label") or "")
    if label:
        click.echo(f"    {label}" + (f" › {section}" if section else ""))
    if control.get("review_overdue"):
        worked_out = " (worked out from its review cycle)" if control.get("review_from_cycle") else ""
        note = (
            f"    past its review date {control.get('review')}{worked_out}: check that this revision is still in force"
        )
        click.echo(click.style(note, fg="yellow"))


def _marker(numbers: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, numbers)) + "]"


def register(cli: click.Group) -> None:
    @cli.command("ask")
    @click.argument("question")
    @click.option(
        "--k",
        type=click.IntRange(1, 50),
        default=None,
        help="Most retrieved passages given as sources, each with the passages that follow it "
        "(answer.window_chunks) [default: answer.max_sources].",
    )
    @click.option("--stream", is_flag=True, help="Print the answer as it is generated.")
    @click.option(
        "--mode",
        type=click.Choice(["quoted", "generated"]),
        default=None,
        help="quoted: the documents' own text, no model; generated: the local model's answer [default: answer.mode].",
    )
    @click.option("--path", "path_prefix", default=None, help="Only documents whose path starts with this.")
    @click.option("--type", "doc_types", multiple=True, type=click.Choice(DOC_TYPES), help="Only these document types.")
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object (no streaming).")
    @handle_errors
    def ask_command(
        question: str,
        k: int | None,
        stream: bool,
        mode: AnswerMode | None,
        path_prefix: str | None,
        doc_types: tuple[str, ...],
        as_json: bool,
    ) -> None:
        """Answer QUESTION from the indexed documents, citing them, or say plainly that they do not cover it.

        By default (answer.mode = quoted) the answer is the documents' own text: for "how do I…" the whole
        procedure section the question lands in, steps in order with their warnings and hold points; for a
        value or a fact the lines that state it; each item cited to its section and page, with the file to
        open on this host, and every part of a long procedure left out said. No model writes it. Tables
        are printed with their columns aligned within the terminal's width ($COLUMNS when not a terminal).

        With answer.mode = generated the local model writes a short answer from the retrieved passages;
        every sentence is checked against the sources it cites (and cited to the one that holds it), and
        the sources' own lines stand under sentences that reword them. When retrieval finds no evidence,
        no model is asked at all.

        Examples: appliance ask "How do I change a chlorine ton container?"
                  appliance ask "What do I check before changing a chlorine cylinder?" --mode generated --stream
        """
        from appliance.answer.answerer import Answerer

        answerer = Answerer(current_settings())
        filters = Filters(path_prefix=path_prefix, doc_types=doc_types)
        try:
            if as_json:
                echo_json(answerer.ask(question, k=k, filters=filters, mode=mode).as_json())
                return
            streamed = False
            files: dict[str, str] = {}
            quoting = (mode or answerer.settings.answer.mode) == "quoted"
            for event in answerer.events(question, k=k, filters=filters, mode=mode):
                if event.kind == "evidence" and event.evidence is not None:
                    refused_now = bool(event.evidence) and event.evidence[0].n is None
                    files = host_files(answerer.searcher.catalog, [item.path for item in event.evidence])
                    _print_evidence(event.evidence, refused_now, files, sentences=not quoting)
                    click.echo()
                elif event.kind == "steps" and event.steps is not None:
                    _print_steps(event.answer_kind, event.steps)
                    streamed = True
                    if event.checking:
                        click.echo(click.style("The local model is checking this choice…", fg="cyan"))
                elif event.kind == "revised" and event.steps is not None:
                    click.echo()
                    click.echo(click.style(_revised_line(event.first_shown), fg="yellow"))
                    files = host_files(answerer.searcher.catalog, [item.path for item in event.evidence or []])
                    _print_evidence(event.evidence or [], False, files, sentences=False)
                    click.echo()
                    _print_steps(event.answer_kind, event.steps)
                elif event.kind == "token" and stream and event.text:
                    streamed = True
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
                elif event.kind == "done" and event.result is not None:
                    if streamed and not event.result.steps:
                        click.echo()
                    _print_result(event.result, streamed and not event.result.refused, files)
        finally:
            answerer.close()
