"""Every citation says which revision of the document it is from ("SOP-CL-004 rev 3, effective 2025-05-01
› 6.2"), in the API's citations and sections and in `ask`; a document past its review date is flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from appliance.answer.answerer import Answerer
from appliance.cli.main import cli
from appliance.config import Settings
from tests.fakes import ScriptedGenerator
from tests.test_api import indexed_home

SOP = """# SOP-CL-004 Chlorine Container Change

| Field | Value |
| --- | --- |
| Document number | SOP-CL-004 |
| Revision | 3 |
| Effective date | 2023-05-01 |
| Next review | 2024-05-01 |

## 6. Procedure

### 6.2 Isolate the empty bank

1. Close the bank header isolation valve VLV-4501-A.
2. Close the gas valve of CYL-1 with the container valve wrench, clockwise until it seats.
3. Wait until the regulator gauge VR-451 reads zero, normally within 5 minutes.
"""

UNCONTROLLED = """# Pump notes

## Priming

1. Open the vent cock on the pump casing of P-7 until water runs clear.
2. Close the vent cock and start P-7.
"""

LABEL = "SOP-CL-004 rev 3, effective 2023-05-01"


@pytest.fixture
def indexed(settings: Settings, tmp_path: Path) -> Settings:
    home = indexed_home(tmp_path, settings.models_dir, {"SOP-CL-004.md": SOP, "pump-notes.md": UNCONTROLLED})
    return Settings(home=home, models_dir=settings.models_dir)


def test_citations_and_sections_carry_the_revision_and_the_overdue_review(indexed: Settings) -> None:
    answerer = Answerer(indexed, generator=ScriptedGenerator(""))  # type: ignore[arg-type]
    try:
        result = answerer.ask("How do I isolate the empty chlorine bank?").as_json()
        other = answerer.ask("How do I prime pump P-7?").as_json()
    finally:
        answerer.close()
    control = result["citations"][0]["document_control"]
    assert control["label"] == LABEL
    assert (control["number"], control["revision"], control["review"]) == ("SOP-CL-004", "3", "2024-05-01")
    assert control["review_overdue"] is True and control["review_from_cycle"] is False
    assert result["sections"][0]["document_control"] == control
    assert {"n", "chunk_id", "path", "section", "page", "document_id"} <= set(result["citations"][0])
    assert other["citations"][0]["document_control"] is None  # states nothing: no label made up


def test_ask_prints_the_revision_with_the_citation_and_warns_of_the_review(
    indexed: Settings, cli_env: dict[str, str]
) -> None:
    result = CliRunner().invoke(cli, ["ask", "How do I isolate the empty chlorine bank?"], env=cli_env)
    assert result.exit_code == 0, result.output
    assert f"    {LABEL} › " in result.output and "6.2 Isolate the empty bank" in result.output
    assert "past its review date 2024-05-01: check that this revision is still in force" in result.output
    as_json = CliRunner().invoke(cli, ["ask", "How do I isolate the empty chlorine bank?", "--json"], env=cli_env)
    assert json.loads(as_json.output)["citations"][0]["document_control"]["label"] == LABEL
