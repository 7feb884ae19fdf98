"""The installer's `pip check`: a requirement met by another distribution of the same module (the OCR
engine's opencv-python by opencv-python-headless) is accepted; any other problem still stops the install."""

from __future__ import annotations

from pathlib import Path

import pytest

from appliance.offline.installer import pip_check
from appliance.offline.manifest import BundleError


def fake_venv(tmp_path: Path, output: str, code: int) -> Path:
    """A venv whose python answers `-m pip check` with `output` and exit status `code`."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f"#!/bin/sh\ncat <<'END'\n{output}\nEND\nexit {code}\n", encoding="utf-8")
    python.chmod(0o755)
    return tmp_path / "venv"


def test_the_headless_opencv_meets_the_ocr_engines_requirement(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path, "rapidocr-onnxruntime 1.4.4 requires opencv-python, which is not installed.", 1)
    pip_check(venv)  # accepted: opencv-python-headless provides the same cv2


def test_any_other_broken_requirement_stops_the_install(tmp_path: Path) -> None:
    lines = (
        "rapidocr-onnxruntime 1.4.4 requires opencv-python, which is not installed.\n"
        "chromadb 1.5.9 requires tokenizers, which is not installed."
    )
    with pytest.raises(BundleError, match=r"chromadb 1\.5\.9 requires tokenizers") as caught:
        pip_check(fake_venv(tmp_path, lines, 1))
    assert "opencv-python," not in str(caught.value)


def test_a_clean_venv_passes(tmp_path: Path) -> None:
    pip_check(fake_venv(tmp_path, "No broken requirements found.", 0))
