"""docs/reference/ is what the code says: settings, commands and routes regenerated and compared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "docs_reference.py"


def test_the_reference_pages_match_the_code() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_a_page_edited_by_hand_is_caught(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    (copy / "scripts").mkdir(parents=True)
    (copy / "docs" / "reference").mkdir(parents=True)
    (copy / "scripts" / "docs_reference.py").write_text(SCRIPT.read_text())
    for page in (REPO / "docs" / "reference").glob("*.md"):
        (copy / "docs" / "reference" / page.name).write_text(page.read_text())
    settings = copy / "docs" / "reference" / "settings.md"
    settings.write_text(settings.read_text().replace("`answer.mode`", "`answer.style`"))
    script = copy / "scripts" / "docs_reference.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 1
    assert "docs/reference/settings.md" in result.stderr
