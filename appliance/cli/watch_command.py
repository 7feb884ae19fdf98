"""watch: follow the source folders and their subfolders, and reindex (or ask systemd to) when documents
land, change, move or go."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from appliance.cli.common import current_settings, echo_json, handle_errors
from appliance.errors import ApplianceError
from appliance.index.catalog import Catalog
from appliance.ingest.watch import TreeWatcher, WatchError, watch, write_trigger


def register(cli: click.Group) -> None:
    @cli.command("watch")
    @click.argument("paths", nargs=-1, type=click.Path(path_type=Path, exists=True, file_okay=False))
    @click.option(
        "--trigger",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help="Only write this file when something changed (a systemd PathChanged= on it starts "
        "appliance-reindex.service); without it, this command runs the ingest itself.",
    )
    @click.option(
        "--settle",
        type=click.FloatRange(0.0, 3600.0),
        default=2.0,
        help="Seconds without further change before acting, so a copy of many files is one run.",
    )
    @click.option("--json", "as_json", is_flag=True, help="One JSON object per run instead of text.")
    @handle_errors
    def watch_command(paths: tuple[Path, ...], trigger: Path | None, settle: float, as_json: bool) -> None:
        """Watch PATH… (default: every indexed source) and all folders under them, including folders
        created later, and index what lands, changes, moves or goes as soon as it settles.

        systemd runs it as appliance-watch.service with --trigger, because a .path unit does not see
        subfolders. Runs until stopped (Ctrl+C, SIGTERM).

        Example: appliance watch docs_corpus --settle 5
        """
        settings = current_settings()
        roots = list(paths)
        if not roots:
            catalog = Catalog(settings.catalog_path)
            try:
                roots = [Path(source) for source in catalog.sources() if Path(source).is_dir()]
            finally:
                catalog.close()
        if not roots:
            raise ApplianceError("nothing to watch: give a folder, or `appliance ingest` one first")
        where = ", ".join(str(root) for root in roots)

        def ready(watcher: TreeWatcher) -> None:
            click.echo(f"watching {len(watcher.folders)} folders under {where}", err=True)
            for problem in watcher.unwatched:
                click.echo(f"  not watched (changes there wait for the nightly reindex): {problem}", err=True)

        def on_change(changed: list[Path]) -> None:
            if trigger is not None:
                write_trigger(trigger, changed)
                line = {"changed": len(changed), "first": str(changed[0]), "trigger": str(trigger)}
            else:
                from appliance.ingest.pipeline import ingest  # the first change loads the pipeline

                try:
                    report = ingest(settings, roots)
                except ApplianceError as exc:  # another writer holds the index: the next change retries
                    click.echo(f"not indexed now: {exc}", err=True)
                    return
                line = {"changed": len(changed), "first": str(changed[0]), "report": report.as_json()}
            if as_json:
                echo_json(line)
            else:
                done = "trigger written" if trigger else "indexed"
                click.echo(f"{len(changed)} changed (first {changed[0]}): {done}")

        try:
            with contextlib.suppress(KeyboardInterrupt):
                watch(roots, on_change, settle_s=settle, on_ready=ready)
        except WatchError as exc:
            raise ApplianceError(str(exc)) from None
