"""report feedback / report gaps: thin wrappers over appliance.reports.feedback and appliance.reports.gaps."""

from __future__ import annotations

import json
from typing import Any

import click

from appliance.cli.common import current_settings, echo_json, handle_errors
from appliance.reports.feedback import feedback_report
from appliance.reports.gaps import gaps_report, searcher_probe
from appliance.reports.period import DEFAULT_SINCE, parse_period

SINCE_HELP = "The period, counted back from now: a number and m, h, d or w (7d, 24h, 2w)."


def _quoted(text: Any) -> str:
    # json.dumps keeps control characters in a stored question or comment from reaching the terminal.
    return json.dumps(text, ensure_ascii=False) if text is not None else "-"


def register(cli: click.Group) -> None:
    @cli.group()
    def report() -> None:
        """Reports for SOP owners, read from the audit log: answer feedback and documentation gaps."""

    @report.command("feedback")
    @click.option("--since", default=DEFAULT_SINCE, help=SINCE_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def report_feedback(since: str, as_json: bool) -> None:
        """How operators rated the answers of the period (POST /v1/feedback), newest first.

        Each answer counts once, with its newest rating; the question is the preview its own audit
        record keeps. Example: appliance report feedback --since 30d
        """
        data = feedback_report(current_settings().audit_dir, parse_period(since))
        if as_json:
            echo_json(data)
            return
        period = data["period"]
        click.echo(f"{period['start']} .. {period['end']}")
        click.echo(f"{data['rated']} answer(s) rated: {data['up']} up, {data['down']} down")
        reasons = ", ".join(f"{reason} {count}" for reason, count in data["down_reasons"].items() if count)
        if reasons:
            click.echo(f"down, by reason: {reasons}")
        for rating in data["ratings"]:
            click.echo(
                f"{rating['time']}  {rating['rating']:<4} {rating['reason'] or '-':<10} "
                f"{rating['principal'] or '-'}  {_quoted(rating['question'])}"
                + (f"  comment {_quoted(rating['comment'])}" if rating["comment"] else "")
            )

    @report.command("gaps")
    @click.option("--since", default=DEFAULT_SINCE, help=SINCE_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def report_gaps(since: str, as_json: bool) -> None:
        """What operators asked that the documents did not answer well, grouped by topic, most asked first.

        A gap is an answer of the period that was refused, given with an evidence confidence below
        reports.low_confidence, or rated down. Each topic is "not covered" (no wording of it finds a
        section: a procedure to write) or "covered but not found" (one wording does, with confidence of
        at least reports.covered_confidence: the section exists but operators' words miss it), with its
        nearest document and section. Loads the embedder and searches the index (read only).

        Example: appliance report gaps --since 30d --json
        """
        from appliance.retrieve.search import Searcher  # the index and embedder, for this report only

        settings = current_settings()
        period = parse_period(since)
        searcher = Searcher(settings)
        try:
            data = gaps_report(
                settings.audit_dir,
                period,
                settings.reports,
                searcher.embedder.embed,
                searcher_probe(lambda question: searcher.search(question, k=1)),
            )
        finally:
            searcher.close()
        if as_json:
            echo_json(data)
            return
        click.echo(f"{data['period']['start']} .. {data['period']['end']}")
        click.echo(
            f"{data['gap_questions']} of {data['answers']} answer(s) were gaps, in {len(data['topics'])} topic(s): "
            f"{data['not_covered']} not covered, {data['covered_but_not_found']} covered but not found"
        )
        for number, topic in enumerate(data["topics"], start=1):
            why = ", ".join(f"{reason.replace('_', ' ')} {count}" for reason, count in topic["why"].items() if count)
            click.echo(
                f"\n{number}. {topic['label']} (coverage {topic['coverage']:.2f}): asked {topic['count']}x ({why})"
            )
            nearest = topic["nearest"]
            if nearest:
                section = f" \u203a {nearest['section']}" if nearest["section"] else ""
                click.echo(f"   nearest: {nearest['path']}{section}")
            for example in topic["examples"]:
                click.echo(f"   - {_quoted(example)}")
