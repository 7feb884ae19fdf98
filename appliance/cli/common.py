"""Helpers shared by the CLI commands: error handling, JSON output, settings."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from appliance.config import Settings
from appliance.errors import ApplianceError

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Library errors become one clear line on stderr and their exit code; no traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ApplianceError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


def current_settings() -> Settings:
    settings: Settings = click.get_current_context().find_root().obj["settings"]
    return settings


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
