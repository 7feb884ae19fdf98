"""The command-line options of the scripts that index a BEIR collection and query it
(scripts/bench_retrieval.py, sweep_retrieval.py): which collection, which split, where the index and
the models live."""

from __future__ import annotations

import argparse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def add_beir_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--beir", type=Path, default=REPO.parent / "shared" / "data" / "scifact")
    parser.add_argument("--split", default="train")
    parser.add_argument("--home", type=Path, default=REPO / ".appliance")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models")
