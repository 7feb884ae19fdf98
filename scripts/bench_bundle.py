"""Bundle and install figures: size by part, bundle and install times, install → first answer.

    .venv/bin/python scripts/bench_bundle.py [--profile cpu-small] [--out scripts/results/bench_bundle.json]

1. `appliance bundle` (zstd, the default) and the same bundle with `--compression gzip` — the naive
   alternative, what `tar czf` gives — side by side: seconds and bytes.
2. `appliance install` of the zstd bundle into a clean prefix with the network cut off (`unshare -n`),
   timed by phase (verify, extract, pip, total).
3. From the end of the install: ingest two demo SOPs with the installed appliance and ask one question
   with the installed generator, the time to the first answered question.
4. `appliance verify` of the installed prefix.
Wheels come from the wheelhouse (`make wheelhouse`), so nothing reaches an index.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
APPLIANCE = str(Path(sys.executable).parent / "appliance")
WHEELHOUSE = Path(os.environ.get("APPLIANCE_WHEELHOUSE", Path.home() / ".cache" / "appliance" / "wheelhouse"))
DOCS = ["SOP-CL-004-chlorine-cylinder-change.md", "SOP-SCADA-001-scada-alarm-response-guide.md"]
QUESTION = "Which gasket is used on the chlorine regulator, and can it be reused?"


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("APPLIANCE_", "PIP_"))}


def timed(command: list[str], extra_env: dict[str, str] | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env={**env(), **(extra_env or {})})
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{command[:3]} failed:\n{result.stderr[-2000:]}")
    return seconds, result.stdout


def mib(size: int) -> float:
    return round(size / (1 << 20), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="cpu-small")
    parser.add_argument("--out", type=Path, default=REPO / "scripts" / "results" / "bench_bundle.json")
    args = parser.parse_args()
    report: dict[str, Any] = {"profile": args.profile, "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-bundle-") as work_name:
        work = Path(work_name)
        bundles = {}
        for compression in ("zstd", "gzip"):
            output = work / f"bundle.{compression}"
            command = [APPLIANCE, "bundle", "--profile", args.profile, "--output", str(output)]
            seconds, out = timed([*command, "--compression", compression, "--wheels-from", str(WHEELHOUSE), "--json"])
            summary = json.loads(out)
            bundles[compression] = {
                "seconds": round(seconds, 1),
                "archive_mib": mib(summary["bytes"]),
                "parts_mib": {part: mib(size) for part, size in summary["parts_bytes"].items()},
                "phase_seconds": summary["seconds"],
                "files": summary["files"],
            }
            print(f"bundle {compression}: {bundles[compression]['archive_mib']} MiB in {seconds:.1f} s", flush=True)
        report["bundle"] = bundles
        report["zstd_vs_gzip"] = {
            "size_ratio": round(bundles["zstd"]["archive_mib"] / bundles["gzip"]["archive_mib"], 3),
            "pack_time_ratio": round(
                bundles["zstd"]["phase_seconds"]["pack"] / max(bundles["gzip"]["phase_seconds"]["pack"], 0.01), 3
            ),
        }

        prefix, home = work / "opt" / "appliance", work / "var" / "appliance"
        command = ["unshare", "-n", APPLIANCE, "install", str(work / "bundle.zstd"), "--prefix", str(prefix)]
        seconds, out = timed([*command, "--home", str(home), "--no-systemd", "--json"])
        installed = json.loads(out)
        report["install"] = {"seconds": round(seconds, 1), "phases": installed["timings_s"]}
        print(f"install: {seconds:.1f} s {installed['timings_s']}", flush=True)

        for name in DOCS:
            shutil.copy(REPO / "docs_corpus" / name, home / "docs" / name)
        cli = ["unshare", "-n", str(prefix / "bin" / "appliance")]
        ingest_s, _ = timed([*cli, "ingest", str(home / "docs")])
        ask_s, out = timed([*cli, "ask", QUESTION, "--json"], {"APPLIANCE_GENERATOR_MAX_TOKENS": "96"})
        answer = json.loads(out)
        report["first_answer"] = {
            "ingest_s": round(ingest_s, 1),
            "ask_s": round(ask_s, 1),
            "install_to_first_answer_s": round(ingest_s + ask_s, 1),
            "refused": answer["refused"],
            "citations": len(answer["citations"]),
            "model": answer["model"],
        }
        print(f"first answer: {report['first_answer']}", flush=True)
        verify_s, out = timed([*cli, "verify", "--json"])
        verified = json.loads(out)
        report["verify"] = {
            "seconds": round(verify_s, 1),
            "ok": verified["ok"],
            "packages": verified["packages_checked"],
        }
        report["installed_prefix_mib"] = mib(sum(p.stat().st_size for p in prefix.rglob("*") if p.is_file()))
    print(json.dumps(report, indent=2))
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
