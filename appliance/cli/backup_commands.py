"""backup and restore: thin wrappers over appliance.backup."""

from __future__ import annotations

from pathlib import Path

import click

from appliance.backup.restore import restore_backup, verify_backup
from appliance.backup.snapshot import create_backup
from appliance.cli.common import current_settings, echo_json, handle_errors


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.1f} KB"


def register(cli: click.Group) -> None:
    @cli.command("backup")
    @click.argument("dest", type=click.Path(path_type=Path, file_okay=False))
    @click.option(
        "--wait",
        type=click.FloatRange(0.0, 86400.0),
        default=None,
        help="Seconds to wait for a running reindex or upload [default: index.lock_timeout_s].",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def backup_command(dest: Path, wait: float | None, as_json: bool) -> None:
        """Write a consistent snapshot of the home into the new folder DEST, while the service runs.

        DEST holds the catalog and the API tokens (SQLite online backups), the vectors of exactly that
        catalog state, the upload folder's files, the audit log with its chain head, the settings file,
        and manifest.json with the sha256 of every file (written last: a folder without it is partial).
        Answers go on meanwhile; a reindex or an upload waits until the snapshot of the index is taken
        (the backup waits up to --wait seconds for one that is running).

        Example: appliance backup /srv/backups/appliance-$(date +%F) --json
        """
        report = create_backup(current_settings(), dest, wait_s=wait)
        if as_json:
            echo_json(report.as_json())
            return
        catalog, audit = report.manifest["catalog"], report.manifest["audit"]
        click.echo(f"backup written to {report.path}: {len(report.manifest['files'])} files, {_size(report.size)}")
        click.echo(f"  {catalog['documents']} documents, {catalog['chunks']} chunks")
        click.echo(f"  audit log up to seq {audit['last_seq']} ({audit['last_hash']})")
        click.echo(f"  took {report.seconds:.1f} s (waited {report.lock_wait_s:.1f} s for the index)")

    @cli.command("restore")
    @click.argument("src", type=click.Path(path_type=Path, file_okay=False))
    @click.option("--force", is_flag=True, help="Restore into a home that holds state: it is moved aside, not deleted.")
    @click.option("--check", is_flag=True, help="Only verify the backup (manifest, every file's sha256, audit head).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def restore_command(src: Path, force: bool, check: bool, as_json: bool) -> None:
        """Restore the backup SRC into $APPLIANCE_HOME, onto a stopped appliance.

        Refuses a backup with a missing, changed or added file or an edited manifest (naming the file),
        a running appliance (a server, a reindex, an upload or a backup holds the home's locks), and a
        home that already holds state unless --force, which moves that state into
        HOME/replaced-by-restore-STAMP/. Run `appliance audit verify` afterwards.

        Example: systemctl stop appliance && appliance restore /srv/backups/appliance-2026-12-04
        """
        if check:
            manifest = verify_backup(src)
            if as_json:
                echo_json({"ok": True, "files": len(manifest["files"]), "created_at": manifest["created_at"]})
            else:
                click.echo(f"{src}: complete and unchanged ({len(manifest['files'])} files, {manifest['created_at']})")
            return
        report = restore_backup(current_settings(), src, force=force)
        if as_json:
            echo_json(report.as_json())
            return
        click.echo(f"restored {report.source} into {report.home}: {report.files} files, {_size(report.bytes)}")
        click.echo(
            f"  {report.documents} documents, {report.chunks} chunks, audit log up to seq {report.audit_last_seq}"
        )
        if report.moved_aside:
            click.echo(f"  what the home held before is in {report.moved_aside}")
        for note in report.notes:
            click.echo(f"  {note}")
