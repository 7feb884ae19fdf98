"""bundle, install, verify: carrying the appliance across the air gap."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from appliance.cli.common import echo_json, handle_errors


def _progress(as_json: bool) -> object:
    return (lambda _: None) if as_json else (lambda message: click.echo(message, err=True))


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


def register(cli: click.Group) -> None:
    @cli.command("bundle")
    @click.option("--profile", default="cpu-small", help="Profile of bundle/models.toml (cpu-small, cpu-tiny, gpu).")
    @click.option(
        "--output",
        type=click.Path(path_type=Path),
        default=None,
        help="Archive to write [default: appliance-VERSION-PROFILE.tar.zst].",
    )
    @click.option(
        "--gpu",
        type=click.Choice(["cuda"]),
        default=None,
        help="Build llama-cpp-python with CUDA for the target (default: portable CPU build).",
    )
    @click.option("--compression", type=click.Choice(["zstd", "gzip"]), default="zstd")
    @click.option(
        "--recipe",
        type=click.Path(path_type=Path, exists=True, dir_okay=False),
        default=None,
        help="Bundle recipe [default: bundle/models.toml of this checkout].",
    )
    @click.option(
        "--wheels-from",
        type=click.Path(path_type=Path, exists=True, file_okay=False),
        default=None,
        help="Take wheels only from this folder, never from an index.",
    )
    @click.option(
        "--llama-wheel",
        type=click.Path(path_type=Path, exists=True, dir_okay=False),
        default=None,
        help="A llama-cpp-python wheel already built for the target (a CPU bundle takes only the portable build "
        "with every CPU variant).",
    )
    @click.option("--hf-endpoint", default=None, help="Hugging Face hub endpoint for hf: sources (a mirror).")
    @click.option("--allow-unpinned", is_flag=True, help="Accept hf: sources pinned to a branch only.")
    @click.option("--json", "as_json", is_flag=True, help="Print a JSON summary (sizes per part, seconds).")
    @handle_errors
    def bundle_command(
        profile: str,
        output: Path | None,
        gpu: str | None,
        compression: str,
        recipe: Path | None,
        wheels_from: Path | None,
        llama_wheel: Path | None,
        hf_endpoint: str | None,
        allow_unpinned: bool,
        as_json: bool,
    ) -> None:
        """Build one verified archive to carry across the air gap (run on a connected host).

        Fetches the profile's models and checks every file against the recipe's sha256 pins,
        builds the wheelhouse from bundle/requirements.lock (plus llama-cpp-python for the target
        and the appliance itself), adds the systemd units, docs and licenses, writes MANIFEST.json
        (size + sha256 of every file) and packs one tar. Prints the manifest sha256: give it to the
        installing admin (install --manifest-sha256).

        Example: appliance bundle --profile cpu-small --output /media/usb/appliance.tar.zst
        """
        from appliance.offline.builder import BundleOptions, build_bundle

        options = BundleOptions(
            profile=profile,
            output=output,
            gpu=gpu,
            compression=compression,
            wheels_from=wheels_from,
            llama_wheel=llama_wheel,
            hf_endpoint=hf_endpoint,
            allow_unpinned=allow_unpinned,
        )
        if recipe is not None:
            options.recipe = recipe
        result = build_bundle(options, progress=_progress(as_json))  # type: ignore[arg-type]
        summary = result.as_json()
        if as_json:
            echo_json(summary)
            return
        click.echo(f"wrote {summary['output']} ({_mib(summary['bytes'])}, {summary['files']} files)")
        for part, size in sorted(summary["parts_bytes"].items()):
            click.echo(f"  {part:<10} {_mib(size)}")
        click.echo(f"manifest sha256: {summary['manifest_sha256']}")
        click.echo(f"took {summary['seconds']['total']} s")

    @cli.command("install")
    @click.argument("archive", type=click.Path(path_type=Path, dir_okay=False))
    @click.option("--prefix", type=click.Path(path_type=Path), default=Path("/opt/appliance"), show_default=True)
    @click.option("--home", type=click.Path(path_type=Path), default=Path("/var/lib/appliance"), show_default=True)
    @click.option(
        "--docs",
        type=click.Path(path_type=Path),
        default=None,
        help="Documents folder the reindex units watch [default: HOME/docs].",
    )
    @click.option(
        "--systemd/--no-systemd", default=True, show_default=True, help="Install and enable the systemd units."
    )
    @click.option("--dry-run", is_flag=True, help="Verify the bundle, write nothing.")
    @click.option("--manifest-sha256", default=None, help="Refuse unless the bundle's manifest has this sha256.")
    @click.option("--host", default="127.0.0.1", show_default=True, help="Listen address written into the unit.")
    @click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
    @click.option("--operator-subnet", default=None, help="CIDR allowed to reach the API (IPAddressAllow=).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def install_command(
        archive: Path,
        prefix: Path,
        home: Path,
        docs: Path | None,
        systemd: bool,
        dry_run: bool,
        manifest_sha256: str | None,
        host: str,
        port: int,
        operator_subnet: str | None,
        as_json: bool,
    ) -> None:
        """Install a bundle with no network: verify every file first, then venv, models, config, units.

        Nothing is written until every archive member matched MANIFEST.json. A re-install or
        upgrade keeps the index, appliance.toml, tokens and the audit log under --home. On a host
        without any appliance, use the bundle's own installer: see INSTALL.txt inside it.

        Example: sudo appliance install appliance-0.1.0-cpu-small.tar.zst --prefix /opt/appliance
        """
        from appliance.offline.installer import InstallOptions, install

        options = InstallOptions(
            archive=archive,
            prefix=prefix.absolute(),
            home=home.absolute(),
            docs=docs.absolute() if docs else None,
            systemd=systemd,
            dry_run=dry_run,
            manifest_sha256=manifest_sha256,
            python=sys.executable,
            host=host,
            port=port,
            operator_subnet=operator_subnet,
        )
        result = install(options, progress=_progress(as_json))  # type: ignore[arg-type]
        if as_json:
            echo_json(result)
            return
        verb = "verified" if dry_run else "installed"
        click.echo(f"{verb} appliance {result['version']} ({result['profile']}) → {result['prefix']}")
        for action in result["actions"]:
            click.echo(f"  {action}")

    @cli.command("verify")
    @click.option(
        "--prefix",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Installed prefix [default: the one this command runs from].",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @handle_errors
    def verify_command(prefix: Path | None, as_json: bool) -> None:
        """Re-check an installed appliance against its manifest (models, docs, units, every pip-installed file).

        Exit 1 when anything differs.

        Example: /opt/appliance/bin/appliance verify
        """
        from appliance.offline.installer import default_prefix, verify_installation

        report = verify_installation(prefix or default_prefix())
        if as_json:
            echo_json(report)
        else:
            state = "intact" if report["ok"] else f"{len(report['problems'])} problem(s)"
            click.echo(
                f"{report['prefix']}: appliance {report['version']}, {report['files_checked']} files and "
                f"{report['packages_checked']} packages checked: {state}"
            )
            for problem in report["problems"]:
                click.echo(f"  {problem}")
        if not report["ok"]:
            sys.exit(1)
