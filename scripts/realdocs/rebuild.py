"""Rebuild the real-document set from fetched git mirrors, outside the project.

The files are other organisations' documents, most without a licence that allows
redistribution, so the project keeps only their provenance (``sources.json``) and this
script. It reads each file at its recorded commit from a bare mirror of its repository
(``MIRRORS/<owner>+<name>/repo``, as the session's fetch tool lays them out, or any
clone at that path), checks its sha256 and writes it to the output folder.

    python scripts/realdocs/rebuild.py [--mirrors /work/.mirror] [--out /work/realdocs/files]

Exit status 1 when a mirror is missing or a file's checksum differs; the message names
the file and the repository to fetch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

SOURCES = Path(__file__).with_name("sources.json")
DEFAULT_MIRRORS = Path("/work/.mirror")
DEFAULT_OUT = Path("/work/realdocs/files")


def git_dir(mirrors: Path, repository: str) -> Path | None:
    """The git directory of a mirror: a bare ``repo`` or a work tree's ``repo/.git``."""
    base = mirrors / repository.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "objects").is_dir():
            return candidate
    return None


def read_blob(gitdir: Path, commit: str, path: str) -> bytes:
    done = subprocess.run(
        ["git", f"--git-dir={gitdir}", "show", f"{commit}:{path}"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise LookupError(done.stderr.decode("utf8", "replace").strip())
    return done.stdout


def rebuild(sources: list[dict], mirrors: Path, out: Path) -> list[str]:
    """Write every source file to ``out``; return one error line per file that failed."""
    out.mkdir(parents=True, exist_ok=True)
    errors = []
    for entry in sources:
        gitdir = git_dir(mirrors, entry["repository"])
        if gitdir is None:
            errors.append(f"{entry['file']}: no mirror of {entry['repository']} under {mirrors} (fetch it)")
            continue
        try:
            data = read_blob(gitdir, entry["commit"], entry["path"])
        except LookupError as exc:
            errors.append(f"{entry['file']}: {entry['repository']}@{entry['commit'][:10]}:{entry['path']}: {exc}")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != entry["sha256"]:
            errors.append(f"{entry['file']}: sha256 {digest} differs from the recorded {entry['sha256']}")
            continue
        (out / entry["file"]).write_bytes(data)
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=DEFAULT_MIRRORS, help="folder of fetched mirrors")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write the set into")
    parser.add_argument("--sources", type=Path, default=SOURCES, help="provenance file")
    args = parser.parse_args(argv)
    sources = json.loads(args.sources.read_text(encoding="utf8"))
    errors = rebuild(sources, args.mirrors, args.out)
    for line in errors:
        print(line, file=sys.stderr)
    print(f"{len(sources) - len(errors)} of {len(sources)} files written to {args.out}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
