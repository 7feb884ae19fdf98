"""What `appliance status` reports: counts, sizes, sources, models and a consistency check."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from appliance.config import Settings
from appliance.index.index import LAST_REINDEX, Index
from appliance.models.calibration import calibration_warnings, calibrations
from appliance.models.store import ModelStore


def _folder_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _iso(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat()


def index_status(settings: Settings) -> dict[str, Any]:
    index = Index(settings)
    try:
        catalog = index.catalog
        counts = catalog.counts()
        consistency = index.check()
        last = catalog.get_state(LAST_REINDEX)
        freshness = index.freshness()
        catalog_bytes = sum(_folder_size(Path(str(settings.catalog_path) + suffix)) for suffix in ("", "-wal", "-shm"))
        return {
            "home": str(settings.home),
            "documents": counts["documents"],
            "failed_documents": counts["failed"],
            "skipped_documents": counts["skipped"],
            "chunks": counts["chunks"],
            "vectors": consistency.vector_count,
            "sources": catalog.sources(),
            "sizes_bytes": {"catalog": catalog_bytes, "vectors": _folder_size(settings.chroma_path)},
            "last_reindex": _iso(float(last)) if last else None,
            # When the newest change the vectors (and so every search) reflect was committed.
            "index_updated_at": _iso(freshness.updated_at) if freshness.updated_at else None,
            "pending_changes": freshness.pending_changes,
            "vectors_owner": freshness.owner,
            "models": [
                {"role": m.role, "name": m.name, "source": m.source} for m in ModelStore(settings.models_dir).models()
            ],
            "embedder": settings.embedder.model,
            # A decision calibrated for another embedder falls back to a scale-free rule: say so.
            "calibrations": [c.as_json() for c in calibrations(settings)],
            "warnings": calibration_warnings(settings),
            "consistent": consistency.consistent,
            "consistency": {
                "missing_vectors": consistency.missing_vectors,
                "stray_vectors": consistency.stray_vectors,
                "fts_problems": consistency.fts_problems,
                "interrupted_write": consistency.interrupted_write,
                "pending_changes": consistency.pending_changes,
            },
        }
    finally:
        index.close()
