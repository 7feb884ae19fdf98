"""Retention: the oldest rotated files past ``audit.retention_days`` are deleted, each noted in CHAIN first.

CHAIN keeps what `verify_audit` needs to tell pruning from a file deleted by hand: the file's name, its
record count, first seq and prev, last seq and hash (appliance.audit.format). It is rewritten atomically
before the file goes, so a crash between the two leaves a noted file that is still there (verify checks it
as usual), never a silent gap; a disk too full to rewrite it keeps the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from appliance.audit.format import (
    CHAIN_NAME,
    GENESIS,
    complete_lines,
    encode_chain,
    iso_time,
    line_hash,
    parse_line,
    read_chain,
)
from appliance.durable import fsync_dir, write_atomically


def prune_files(audit_dir: Path, files: list[Path], now: float, retention_days: float) -> list[str]:
    """Delete the oldest rotated files past retention, oldest first, so the rest stays contiguous; the
    last of `files` (the current one) is never deleted. The caller holds the audit lock."""
    cutoff = now - retention_days * 86400
    chain = read_chain(audit_dir)
    deleted: list[str] = []
    for path in files[:-1]:
        if path.stat().st_mtime >= cutoff:
            break
        entry = _summarize(path, chain, now)
        chain = [item for item in chain if item["file"] != path.name] + [entry]
        write_atomically(audit_dir / CHAIN_NAME, encode_chain(chain), mode=0o600)  # noted first
        path.unlink()
        deleted.append(path.name)
    if deleted:
        fsync_dir(audit_dir)
    return deleted


def _summarize(path: Path, chain: list[dict[str, Any]], now: float) -> dict[str, Any]:
    """The CHAIN entry of a file about to be pruned: enough to check the next file's first record."""
    records = [(raw, parse_line(raw)) for raw in complete_lines(path.read_bytes())]
    valid = [(raw, rec) for raw, rec in records if rec is not None]
    before_seq, before_hash = (chain[-1]["last_seq"], chain[-1]["last_hash"]) if chain else (0, GENESIS)
    return {
        "file": path.name,
        "records": len(records),
        "first_seq": valid[0][1]["seq"] if valid else None,
        "first_prev": valid[0][1]["prev"] if valid else None,
        "last_seq": int(valid[-1][1]["seq"]) if valid else before_seq,
        "last_hash": line_hash(records[-1][0]) if records else before_hash,
        "pruned_at": iso_time(now),
    }
