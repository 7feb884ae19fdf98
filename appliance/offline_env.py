"""Process-wide switches that keep model libraries and Chroma off the network.

Set before those libraries are imported: huggingface_hub and transformers read these once at
import time, ONNX Runtime when it initializes. Chroma's telemetry is also disabled per client (see index/vectors.py).
"""

from __future__ import annotations

import os

OFFLINE_VARIABLES = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "DO_NOT_TRACK": "1",
    "ANONYMIZED_TELEMETRY": "False",
    # ONNX Runtime >= 1.29 sends telemetry from Linux too (a 1DS uploader: a look-up of
    # mobile.events.data.microsoft.com a few seconds into a process). Read once, at its initialization.
    # The opt-out is ORT_DISABLE_TELEMETRY in the releases pinned here (1.29-1.32) and ORT_TELEMETRY_DISABLED
    # in later ones (onnxruntime PR 29843): both, so that an upgrade of the wheel does not reopen it.
    "ORT_DISABLE_TELEMETRY": "1",
    "ORT_TELEMETRY_DISABLED": "1",
    "TOKENIZERS_PARALLELISM": "false",
    # Quiet: progress bars and advice from the model libraries are noise on an operator's console.
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


def enforce_offline_environment() -> None:
    """Force the offline switches on (an inherited HF_HUB_OFFLINE=0 must not win)."""
    for name, value in OFFLINE_VARIABLES.items():
        os.environ[name] = value
