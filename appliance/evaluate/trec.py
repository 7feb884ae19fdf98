"""TREC run files: ``qid Q0 docid rank score tag``, one retrieved document per line.

Written in trec_eval's own ranking order (score descending, ties by docid descending; see ``metrics``) so the rank
column agrees with what trec_eval will compute from the scores. Scores are written with ``repr`` so that reading the
file back gives the very same floats, and with them the very same order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from appliance.durable import write_atomically
from appliance.evaluate.errors import DataFileError
from appliance.evaluate.metrics import rank_documents

QueryRanking = Sequence[tuple[str, float]] | Mapping[str, float]
RunRankings = Mapping[str, QueryRanking]


def write_run(path: str | Path, run: RunRankings, tag: str, depth: int = 100) -> None:
    """Write ``run`` (``{qid: [(docid, score), ...]}`` or ``{qid: {docid: score}}``) to ``path``.

    Queries are written in sorted qid order, each with at most ``depth`` documents ranked from 1. The file is
    replaced atomically, so a crash never leaves half a run behind.
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    _check_token("tag", tag)
    lines = [line for qid in sorted(run) for line in _query_lines(qid, run[qid], tag, depth)]
    write_atomically(Path(path), "".join(lines))


def _query_lines(qid: str, ranking: QueryRanking, tag: str, depth: int) -> list[str]:
    _check_token("query id", qid)
    pairs = ranking.items() if isinstance(ranking, Mapping) else ranking
    lines = []
    for rank, (docid, score) in enumerate(rank_documents(pairs)[:depth], start=1):
        _check_token("document id", docid)
        if not math.isfinite(score):
            raise ValueError(f"query {qid!r}, document {docid!r}: score {score} is not finite")
        lines.append(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")
    return lines


def _check_token(what: str, value: str) -> None:
    # Columns are whitespace-separated: an id with a space would shift every column after it.
    if not value or any(char.isspace() for char in value):
        raise ValueError(f"{what} {value!r} must be non-empty and without whitespace")


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a TREC run file into ``{qid: {docid: score}}``.

    As in trec_eval, the Q0 and rank columns are not used: the order comes from the scores. A document listed twice
    for one query is an error (trec_eval rejects it too).
    """
    path = Path(path)
    if not path.is_file():
        raise DataFileError(path, None, "file not found")
    run: dict[str, dict[str, float]] = {}
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            qid, docid, score = _parse_line(line, path, lineno)
            scores = run.setdefault(qid, {})
            if docid in scores:
                raise DataFileError(path, lineno, f"document {docid!r} listed twice for query {qid!r}")
            scores[docid] = score
    return run


def _parse_line(line: str, path: Path, lineno: int) -> tuple[str, str, float]:
    fields = line.split()
    if len(fields) != 6:
        raise DataFileError(path, lineno, f"expected 6 columns (qid Q0 docid rank score tag), found {len(fields)}")
    qid, _, docid, rank, score_text, _ = fields
    if not (rank.isascii() and rank.isdigit()):
        raise DataFileError(path, lineno, f"rank {rank!r} is not a non-negative integer")
    try:
        score = float(score_text)
    except ValueError:
        raise DataFileError(path, lineno, f"score {score_text!r} is not a number") from None
    if not math.isfinite(score):
        raise DataFileError(path, lineno, f"score {score_text!r} is not finite")
    return qid, docid, score
