"""`python3 install.pyz BUNDLE …`: the bootstrap installer (standard library only, argparse).

Same options and JSON as `appliance install`, for a host where nothing is installed yet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from appliance.errors import ApplianceError
from appliance.offline.installer import InstallOptions, install


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="install.pyz",
        description="Install an appliance bundle offline: verify every file, then venv, models, config, systemd units.",
        epilog="Example: sudo python3 install.pyz appliance-0.1.0-cpu-small.tar.zst --prefix /opt/appliance",
    )
    p.add_argument("archive", type=Path)
    p.add_argument("--prefix", type=Path, default=Path("/opt/appliance"))
    p.add_argument("--home", type=Path, default=Path("/var/lib/appliance"))
    p.add_argument("--docs", type=Path, default=None, help="documents folder watched by the reindex units (HOME/docs)")
    p.add_argument("--systemd", dest="systemd", action="store_true", default=True)
    p.add_argument("--no-systemd", dest="systemd", action="store_false")
    p.add_argument("--dry-run", action="store_true", help="verify the bundle and stop")
    p.add_argument("--manifest-sha256", default=None, help="the bundle id printed by `appliance bundle`")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--operator-subnet", default=None)
    p.add_argument("--json", action="store_true")
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    options = InstallOptions(
        archive=args.archive,
        prefix=args.prefix.absolute(),
        home=args.home.absolute(),
        docs=args.docs.absolute() if args.docs else None,
        systemd=args.systemd,
        dry_run=args.dry_run,
        manifest_sha256=args.manifest_sha256,
        python=sys.executable,
        host=args.host,
        port=args.port,
        operator_subnet=args.operator_subnet,
    )
    try:
        result = install(options, progress=(lambda _: None) if args.json else (lambda m: print(m, file=sys.stderr)))
    except (ApplianceError, ValueError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        sys.exit(1)
    print(
        json.dumps(result, indent=2) if args.json else f"installed appliance {result['version']} in {result['prefix']}"
    )
