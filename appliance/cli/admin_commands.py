"""token create/list/revoke and audit verify/tail: thin wrappers over appliance.server.auth and appliance.audit."""

from __future__ import annotations

import json
import time
from typing import Any, cast

import click

from appliance.audit.reader import tail_audit
from appliance.audit.verify import verify_audit
from appliance.cli.common import current_settings, echo_json, handle_errors
from appliance.server.auth import ROLE_ALLOWS, ROLES, Role, TokenInfo, TokenStore

STORE_IT_NOW = "Store it now: it cannot be shown again (only its sha256 is kept)."


def _when(timestamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(timestamp)) if timestamp is not None else "-"


def _token_line(info: TokenInfo) -> str:
    state = "active" if info.active else f"revoked {_when(info.revoked_at)}"
    return (
        f"{info.id}  {info.name:<24} {info.role:<8} created {_when(info.created_at)}  "
        f"last used {_when(info.last_used_at)}  {state}"
    )


def register(cli: click.Group) -> None:
    @cli.group()
    def token() -> None:
        """API tokens for the HTTP server (settings.home/tokens.sqlite). Only sha256 hashes are stored."""

    @token.command("create")
    @click.option(
        "--role",
        type=click.Choice(ROLES),
        required=True,
        help="; ".join(f"{role}: {', '.join(sorted(ROLE_ALLOWS[role]))}" for role in ROLES),
    )
    @click.option("--name", help="A unique name, shown in the audit log [default: ROLE-ID].")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def token_create(role: str, name: str | None, as_json: bool) -> None:
        """Create a token and print its secret, once.

        Example: appliance token create --role operator --name shift-desk
        """
        with TokenStore(current_settings().tokens_path) as store:
            info, secret = store.create(cast(Role, role), name)  # click.Choice checked it
        if as_json:
            echo_json({"token": info.as_json(), "secret": secret, "note": STORE_IT_NOW})
            return
        click.echo(f"created {info.role} token {info.name} (id {info.id})")
        click.echo(f"secret: {secret}")
        click.echo(STORE_IT_NOW)

    @token.command("list")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def token_list(as_json: bool) -> None:
        """List tokens, active and revoked (never their secrets or hashes).

        Example: appliance token list --json
        """
        with TokenStore(current_settings().tokens_path) as store:
            tokens = store.list()
        if as_json:
            echo_json({"tokens": [info.as_json() for info in tokens], "active": sum(t.active for t in tokens)})
        elif not tokens:
            click.echo("no tokens: create one with `appliance token create --role operator`")
        else:
            for info in tokens:
                click.echo(_token_line(info))

    @token.command("revoke")
    @click.argument("id_or_name")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def token_revoke(id_or_name: str, as_json: bool) -> None:
        """Revoke a token by id or name; it is refused from then on. Its row stays, for the audit log.

        Example: appliance token revoke shift-desk
        """
        with TokenStore(current_settings().tokens_path) as store:
            info = store.revoke(id_or_name)
        if as_json:
            echo_json({"token": info.as_json()})
        else:
            click.echo(f"revoked token {info.name} (id {info.id}) at {_when(info.revoked_at)}")

    @cli.group()
    def audit() -> None:
        """The audit log of API requests (settings.home/audit): hash-chained JSON Lines."""

    @audit.command("verify")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def audit_verify(as_json: bool) -> None:
        """Check the hash chain of every audit file. Exits 1 on any problem, a torn last line included.

        Example: appliance audit verify --json
        """
        audit_dir = current_settings().audit_dir
        report = verify_audit(audit_dir)
        if as_json:
            echo_json({"dir": str(audit_dir), **report.as_json()})
        else:
            for problem in report.problems:
                click.echo(f"{problem.file}:{problem.line}: {problem.problem}", err=True)
            for note in report.notes:
                click.echo(f"note: {note}")
            verdict = "intact" if report.ok else f"{len(report.problems)} problem(s)"
            click.echo(f"audit log {audit_dir}: {report.records} record(s) in {report.files} file(s), {verdict}")
            click.echo(f"head: seq {report.last_seq} sha256 {report.last_hash}")
        if not report.ok:
            raise SystemExit(1)

    @audit.command("tail")
    @click.option("-n", "count", type=click.IntRange(min=0), default=20, help="How many records.")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def audit_tail(count: int, as_json: bool) -> None:
        """Show the last records, oldest first.

        Example: appliance audit tail -n 50 --json
        """
        audit_dir = current_settings().audit_dir
        records = tail_audit(audit_dir, count)
        if as_json:
            echo_json({"dir": str(audit_dir), "records": records})
            return
        for record in records:
            click.echo(_record_line(record))


def _record_line(record: dict[str, Any]) -> str:
    refused = {True: "refused", False: "answered", None: "-"}.get(record.get("refused"), "-")
    # json.dumps keeps control characters in a stored question from reaching the terminal.
    preview = json.dumps(record.get("question_preview"), ensure_ascii=True)
    return (
        f"{record.get('time')}  #{record.get('seq')}  {record.get('principal') or '-'}  {record.get('client') or '-'}  "
        f"{record.get('endpoint')} {record.get('status')} {refused}  {preview}"
    )
