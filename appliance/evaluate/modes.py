"""What an evaluation can measure: the retrievers, and the reranked hybrid search. A module of its own so
that the command line offers them without importing the evaluation."""

from __future__ import annotations

from typing import Literal

EvalMode = Literal["lexical", "dense", "hybrid", "rerank"]
EVAL_MODES: tuple[EvalMode, ...] = ("lexical", "dense", "hybrid", "rerank")
