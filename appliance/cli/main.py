"""The `appliance` command: thin wrappers that parse options, call one library function, print."""

from __future__ import annotations

import sys

import click

from appliance import __version__
from appliance.cli import (
    admin_commands,
    ask_command,
    backup_commands,
    eval_commands,
    index_commands,
    models_commands,
    offline_commands,
    report_commands,
    serve_command,
    watch_command,
)
from appliance.cli.common import echo_json, handle_errors
from appliance.config import ConfigError, load_settings, load_settings_with_sources, settings_table


@click.group(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(__version__, prog_name="appliance")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Offline question answering over your standard operating procedures.

    All state lives under $APPLIANCE_HOME (default ./.appliance); settings come from defaults,
    then $APPLIANCE_CONFIG or $APPLIANCE_HOME/appliance.toml, then APPLIANCE_* variables.

    Example: appliance ingest docs_corpus && appliance search "chlorine cylinder change"
    """
    ctx.ensure_object(dict)
    try:
        ctx.obj["settings"] = load_settings()
    except ConfigError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exc.exit_code)


@cli.group()
def config() -> None:
    """Inspect settings."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_errors
def config_show(as_json: bool) -> None:
    """Show every setting, its value, its default and where the value came from.

    Example: APPLIANCE_SEARCH_K=5 appliance config show
    """
    loaded = load_settings_with_sources()
    rows = settings_table(loaded)
    if as_json:
        echo_json({"file": str(loaded.file) if loaded.file else None, "settings": rows})
        return
    click.echo(f"config file: {loaded.file or '(none)'}")
    width = max(len(row["key"]) for row in rows)
    for row in rows:
        source = "" if row["source"] == "default" else f"  [{row['source']}]"
        click.echo(f"{row['key']:<{width}}  {row['value']!r}{source}")
        click.echo(f"{'':<{width}}    {row['description']}")


index_commands.register(cli)
models_commands.register(cli)
eval_commands.register(cli)
ask_command.register(cli)
serve_command.register(cli)
admin_commands.register(cli)
offline_commands.register(cli)
report_commands.register(cli)
watch_command.register(cli)
backup_commands.register(cli)


def main() -> None:
    cli(prog_name="appliance")


if __name__ == "__main__":
    main()
