"""The CLI contract, end to end on real runbooks: ingest → search → status → reindex."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RUNBOOKS

PROMETHEUS = RUNBOOKS / "prometheus-operator-runbooks"
pytestmark = pytest.mark.skipif(not PROMETHEUS.is_dir(), reason="../shared/data/runbooks is not beside the repo")


def appliance(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "appliance.cli.main", *args], env=env, capture_output=True, text=True, timeout=600
    )


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_prometheus_operator_runbooks_end_to_end(cli_env: dict[str, str]) -> None:
    report = as_json(appliance(cli_env, "ingest", str(PROMETHEUS), "--json"))
    assert set(report) >= {
        "added",
        "updated",
        "removed",
        "unchanged",
        "failed",
        "chunks_embedded",
        "chunks_total",
        "seconds",
    }
    markdown_files = [p for p in PROMETHEUS.rglob("*.md") if not any(part.startswith(".") for part in p.parts)]
    # Nothing failed: the front-matter-only section index pages (_index.md) hold nothing to index and are
    # skipped with their reason.
    assert report["failed"] == []
    empty_pages = [s for s in report["skipped"] if s["reason"] == "no text content"]
    assert report["added"] + len(empty_pages) == len(markdown_files)
    assert len(empty_pages) == 10  # nine _index.md and the archetype archetypes/default.md
    assert all(s["path"].endswith(("/_index.md", "archetypes/default.md")) for s in empty_pages)
    assert report["added"] >= 100
    assert report["chunks_embedded"] == report["chunks_total"] > 300

    result = as_json(appliance(cli_env, "search", "KubePodCrashLooping", "--k", "3", "--json"))
    assert set(result) >= {"query", "mode", "hits", "timings_ms", "evidence"}
    assert result["mode"] == "hybrid"
    assert result["hits"][0]["path"].endswith("kubernetes/KubePodCrashLooping.md")

    lexical = as_json(appliance(cli_env, "search", "NodeFilesystemSpaceFillingUp", "--mode", "lexical", "--json"))
    assert lexical["hits"][0]["path"].endswith("node/NodeFilesystemSpaceFillingUp.md")

    status = as_json(appliance(cli_env, "status", "--json"))
    assert status["consistent"] is True
    assert status["chunks"] == report["chunks_total"] == status["vectors"]
    assert status["sources"] == [str(PROMETHEUS.resolve())]
    assert status["documents"] == report["added"]

    again = as_json(appliance(cli_env, "reindex", "--json"))
    assert (again["added"], again["updated"], again["removed"], again["chunks_embedded"]) == (0, 0, 0, 0)
    assert again["unchanged"] == report["added"]


def test_usage_errors_exit_2_and_library_errors_exit_1(cli_env: dict[str, str], tmp_path: Path) -> None:
    assert appliance(cli_env, "search").returncode == 2
    assert appliance(cli_env, "search", "x", "--mode", "fuzzy").returncode == 2
    missing = appliance(cli_env, "ingest", str(tmp_path / "nope"))
    assert missing.returncode == 1
    assert "no such file or folder" in missing.stderr and "Traceback" not in missing.stderr


def test_search_on_an_empty_index_returns_no_hits(cli_env: dict[str, str]) -> None:
    result = as_json(appliance(cli_env, "search", "anything at all", "--json"))
    assert result["hits"] == []
