"""ingest, reindex, search, status."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from appliance.cli.common import current_settings, echo_json, handle_errors
from appliance.documents.original import host_files, open_hint
from appliance.index.filters import DOC_TYPES, Filters
from appliance.retrieve.modes import MODES
from appliance.retrieve.spelling import did_you_mean_line
from appliance.text.pipe_tables import one_line

if TYPE_CHECKING:  # each command imports what it runs: `appliance --help` and `status` start without the rest
    from appliance.ingest.pipeline import IngestReport, Progress

SNIPPET_CHARS = 300  # of a passage, on one line, under each search hit


class _Bar:
    """A click progress bar driven by the pipeline's (path, index, total) callback."""

    def __init__(self) -> None:
        self.bar: Any = None  # click's ProgressBar
        self.total = 0

    def __call__(self, path: str, position: int, total: int) -> None:
        if self.bar is None or total != self.total:
            self.close()
            self.total = total
            self.bar = click.progressbar(length=total, label="indexing", file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _run_with_progress(as_json: bool, run: Any) -> IngestReport:
    bar = None if as_json else _Bar()
    progress: Progress | None = bar
    try:
        report: IngestReport = run(progress)
    finally:
        if bar is not None:
            bar.close()
    return report


def _print_report(report: IngestReport, as_json: bool) -> None:
    if as_json:
        echo_json(report.as_json())
    else:
        click.echo(
            f"added {report.added}, updated {report.updated}, removed {report.removed}, "
            f"unchanged {report.unchanged}, failed {len(report.failed)}, skipped {len(report.skipped)}; "
            f"{report.chunks_embedded} chunks embedded ({report.chunks_reused} reused), "
            f"{report.chunks_total} in the index; {report.seconds:.1f} s"
        )
        if report.repaired:
            click.echo(f"repaired an interrupted earlier run: {report.repaired}")
        _print_handover(report)
        for failure in report.failed:
            click.echo(f"  failed: {failure['path']}: {failure['error']}", err=True)
        for warning in report.warnings:
            click.echo(f"  warning: {warning['path']}: {warning['warning']}", err=True)
    if report.failed:
        # The run itself succeeded: failures are per file and reported, not an exit status.
        pass


def _print_handover(report: IngestReport) -> None:
    """When the running server owns the local vector store, say whether it serves the change yet."""
    owner = report.vectors_applied_by
    if owner is None or owner == "this process" or owner.startswith("the Chroma server"):
        if owner is None and (report.added or report.updated or report.removed):
            click.echo("the local vector store had no owner: the next server or command that opens it applies this")
        return
    if report.vectors_wait_s is not None:
        click.echo(f"served by the running server ({owner}) after {report.vectors_wait_s:.1f} s")
    else:
        click.echo(
            f"not yet served by {owner}: {report.vectors_pending} changes wait for it (see `appliance status`)",
            err=True,
        )


def register(cli: click.Group) -> None:
    @cli.command("ingest")
    @click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON report, no progress bar.")
    @handle_errors
    def ingest_command(paths: tuple[Path, ...], as_json: bool) -> None:
        """Index the documents under PATH… and remember each PATH as a source for reindex.

        Markdown, text, HTML, PDF and DOCX; other files are skipped with a reason, and a bad file is
        reported without stopping the run. Unchanged files cost nothing.

        Example: appliance ingest docs_corpus --json
        """
        from appliance.ingest.pipeline import ingest

        settings = current_settings()
        report = _run_with_progress(as_json, lambda progress: ingest(settings, list(paths), progress))
        _print_report(report, as_json)

    @cli.command("reindex")
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON report, no progress bar.")
    @handle_errors
    def reindex_command(as_json: bool) -> None:
        """Rescan every source: add new files, replace changed ones, remove deleted or moved ones.

        Waits up to index.lock_timeout_s for another running reindex, then gives up with exit 1.

        Example: appliance reindex --json
        """
        from appliance.ingest.pipeline import reindex

        settings = current_settings()
        report = _run_with_progress(as_json, lambda progress: reindex(settings, progress))
        _print_report(report, as_json)

    @cli.command("search")
    @click.argument("query")
    @click.option("--k", type=click.IntRange(1, 1000), default=None, help="Hits to return [default: search.k].")
    @click.option("--mode", type=click.Choice(MODES), default=None, help="Retriever [default: search.mode].")
    @click.option("--path", "path_prefix", default=None, help="Only documents whose path starts with this.")
    @click.option("--type", "doc_types", multiple=True, type=click.Choice(DOC_TYPES), help="Only these document types.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def search_command(
        query: str, k: int | None, mode: str | None, path_prefix: str | None, doc_types: tuple[str, ...], as_json: bool
    ) -> None:
        """Show the passages that best match QUERY, ranked, and whether they are evidence enough to answer.

        Each passage names the file to open on this host, and its page.

        Hybrid mode fuses FTS5 bm25 (words and exact identifiers) with dense HNSW search, then reranks
        with a cross-encoder when one is installed.

        Example: appliance search "VLV-3042-B isolation" --k 5 --path docs_corpus/ --type pdf
        """
        from appliance.retrieve.search import Searcher

        searcher = Searcher(current_settings())
        try:
            result = searcher.search(
                query,
                k=k,
                mode=mode,  # type: ignore[arg-type]
                filters=Filters(path_prefix=path_prefix, doc_types=doc_types),
            )
            files = host_files(searcher.index.catalog, [hit.path for hit in result.hits])
        finally:
            searcher.close()
        if as_json:
            echo_json(result.as_json())
            return
        if result.did_you_mean is not None:
            click.echo(click.style(did_you_mean_line(result.did_you_mean), fg="cyan"))
        if not result.hits:
            click.echo("no matching passages")
        verdict = "evidence found" if result.evidence.sufficient else "NOT covered by the documents"
        click.echo(
            click.style(f"{verdict}: {result.evidence.reason}", fg="green" if result.evidence.sufficient else "red")
        )
        for hit in result.hits:
            where = hit.path + (f" › {hit.section}" if hit.section else "") + (f" (p. {hit.page})" if hit.page else "")
            click.echo(click.style(f"[{hit.rank}] {where}", bold=True) + f"  score {hit.score:.4f}")
            click.echo(f"    {one_line(hit.text, SNIPPET_CHARS)}")  # never cut inside a table row
            if hit.path in files:
                click.echo(f"    {open_hint(files[hit.path], hit.page)}")
        click.echo(f"({result.timings_ms.get('total', 0):.0f} ms)", err=True)

    @cli.command("status")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def status_command(as_json: bool) -> None:
        """Documents, chunks, sources, sizes, last reindex, models, and a consistency check.

        "updated" is when the newest change that searches see was committed; with the local vector store,
        the process that applies changes to it (the running server) and how many still wait for it.
        Warns when a calibrated decision does not apply to the configured embedder (its fallback decides).

        Exits 1 when the catalog, FTS5 and Chroma disagree (run `appliance reindex` to repair).

        Example: appliance status --json
        """
        from appliance.status import index_status

        status = index_status(current_settings())
        if as_json:
            echo_json(status)
        else:
            click.echo(f"home:         {status['home']}")
            click.echo(
                f"documents:    {status['documents']} indexed, {status['failed_documents']} failed, "
                f"{status['skipped_documents']} skipped"
            )
            click.echo(f"chunks:       {status['chunks']} (vectors: {status['vectors']})")
            click.echo(f"sources:      {', '.join(status['sources']) or '(none)'}")
            sizes = status["sizes_bytes"]
            click.echo(
                f"size:         catalog {sizes['catalog'] / 1e6:.1f} MB, vectors {sizes['vectors'] / 1e6:.1f} MB"
            )
            click.echo(f"last reindex: {status['last_reindex'] or 'never'}")
            pending = f", {status['pending_changes']} changes not yet applied" if status["pending_changes"] else ""
            click.echo(f"updated:      {status['index_updated_at'] or 'never'}{pending}")
            if status["vectors_owner"]:
                click.echo(f"vectors by:   {status['vectors_owner']}")
            models = ", ".join(f"{m['role']} {m['name']}" for m in status["models"])
            click.echo(f"models:       {models or '(none)'}")
            click.echo(f"consistent:   {'yes' if status['consistent'] else 'NO ' + str(status['consistency'])}")
            for warning in status["warnings"]:
                click.echo(f"warning:      {warning}")
        if not status["consistent"]:
            raise SystemExit(1)
