"""The sandboxing of the rendered systemd units, as `systemd-analyze security --offline=true` scores it.

Renders systemd/ for two hosts (single-host: 127.0.0.1, no subnet; network: 0.0.0.0 with an operator
subnet) into a temporary prefix with stand-in executables, checks them with `systemd-analyze verify`,
prints each unit's exposure (0 = fully sandboxed, 10 = not at all) and what still adds to it, and
writes the same to scripts/results/systemd_security.txt.

Needs systemd-analyze (Debian: apt-get install systemd); systemd need not be running.

Example: .venv/bin/python scripts/systemd_security.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from appliance.offline.systemd_units import (
    UnitParams,
    install_units,
    render_units,
    security_exposure,
    unit_templates_dir,
)

RESULTS = Path(__file__).resolve().parent / "results" / "systemd_security.txt"
CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "single-host (127.0.0.1:8080, no operator subnet)": {},
    "network (0.0.0.0:8080, operator subnet 10.20.0.0/16)": {"host": "0.0.0.0", "operator_subnet": "10.20.0.0/16"},
}


def layout(root: Path) -> dict[str, Path]:
    prefix = root / "opt" / "appliance"
    (prefix / "venv" / "bin").mkdir(parents=True)
    for name in ("appliance", "python"):  # verify checks that Exec binaries exist
        exe = prefix / "venv" / "bin" / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    paths = {"prefix": prefix, "home": root / "var" / "lib" / "appliance", "docs": root / "srv" / "sops"}
    paths["home"].mkdir(parents=True)
    paths["docs"].mkdir(parents=True)
    return paths


def main() -> int:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("systemd-analyze is missing (Debian: apt-get install systemd)", file=sys.stderr)
        return 1
    version = subprocess.run([analyze, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    lines = [
        f"systemd-analyze security --offline=true, {version}",
        "Exposure: 0 = fully sandboxed, 10 = not at all (0 PERFECT, <1 SAFE, <5 OK, <7.5 MEDIUM, then worse).",
        "Path and timer units run no process: systemd-analyze scores them as an unhardened service (n/a).",
        "",
    ]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for number, (title, changes) in enumerate(CONFIGURATIONS.items()):
            paths = layout(Path(tmp) / str(number))
            params = UnitParams(prefix=paths["prefix"], home=paths["home"], docs=paths["docs"], **changes)
            units = render_units(unit_templates_dir(), params)
            unit_dir = Path(tmp) / str(number) / "units"
            install_units(units, unit_dir, enable=False)
            files = [str(unit_dir / name) for name in units]
            verify = subprocess.run([analyze, "verify", "--man=no", *files], capture_output=True, text=True)
            clean = verify.returncode == 0 and not (verify.stdout + verify.stderr).strip()
            failed |= not clean
            lines.append(f"{title}")
            lines.append(f"  systemd-analyze verify --man=no <{len(files)} units>: {'clean' if clean else 'PROBLEMS'}")
            lines.extend("    " + line for line in (verify.stdout + verify.stderr).strip().splitlines())
            for name in units:
                exposure, level, report = security_exposure(unit_dir / name, analyze)
                if name.endswith(".service"):
                    lines.append(f"  {name:<28} {exposure:4.1f} {level}; still open (weights before scaling):")
                    open_items = [line for line in report.splitlines() if line.startswith("✗")]
                    # "✗ Setting=  what it allows  weight": the setting and what it adds to the exposure
                    lines.extend(f"      {item.split()[1]:<44} +{item.split()[-1]}" for item in open_items)
                else:
                    lines.append(f"  {name:<28}  n/a (runs no process; systemd-analyze prints {exposure:.1f} {level})")
            lines.append("")
    text = "\n".join(lines)
    print(text)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
