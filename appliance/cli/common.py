"""Helpers shared by the CLI commands: error handling, JSON output, settings."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from appliance.config import Settings
from appliance.durable import WORKING_MARGIN, disk_full, is_disk_full
from appliance.errors import ApplianceError

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Library errors become one clear line on stderr and their exit code; no traceback. So does a full disk
    that a library call did not name itself (reading the index needs room too: SQLite's shared memory)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ApplianceError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except Exception as exc:
            if not is_disk_full(exc):
                raise
            full = disk_full(_full_path(exc), WORKING_MARGIN, "this command")
            click.echo(f"Error: {full}", err=True)
            sys.exit(full.exit_code)

    return wrapper  # type: ignore[return-value]


def _full_path(exc: Exception) -> Path:
    """The file a full-disk error names, else the home (where every command writes)."""
    if isinstance(exc, OSError) and exc.filename:
        return Path(exc.filename)
    return current_settings().home


def current_settings() -> Settings:
    settings: Settings = click.get_current_context().find_root().obj["settings"]
    return settings


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
