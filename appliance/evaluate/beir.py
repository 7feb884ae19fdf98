"""Readers for a BEIR-format dataset folder.

Layout::

    corpus.jsonl        {"_id": ..., "title": ..., "text": ..., "metadata": {...}} one per line
    queries.jsonl       {"_id": ..., "text": ...} one per line
    qrels/<split>.tsv   a header line, then  query-id <TAB> corpus-id <TAB> score

Ids are always strings: SciFact's are numbers in the JSON and must still match the qrels' text ids. Every malformed
input raises ``DataFileError`` naming the file and the line; blank lines are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from appliance.evaluate.errors import DataFileError, SplitNotFound

_INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class BeirDoc:
    """One corpus document."""

    doc_id: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def load_corpus(folder: str | Path) -> Iterator[BeirDoc]:
    """Stream ``corpus.jsonl`` one document at a time (corpora can be far larger than memory wants)."""
    path = _existing(Path(folder) / "corpus.jsonl")  # checked now, not at the first next()
    return _iter_corpus(path)


def _iter_corpus(path: Path) -> Iterator[BeirDoc]:
    seen: set[str] = set()  # ids only: small next to the texts
    for lineno, obj in _read_jsonl(path):
        doc_id = _id_of(obj, path, lineno)
        if doc_id in seen:
            raise DataFileError(path, lineno, f"duplicate _id {doc_id!r}")
        seen.add(doc_id)
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise DataFileError(path, lineno, "metadata must be a JSON object")
        title = _text_field(obj, "title", path, lineno, required=False)
        text = _text_field(obj, "text", path, lineno, required=False)
        yield BeirDoc(doc_id=doc_id, title=title, text=text, metadata=metadata)


def load_queries(folder: str | Path) -> dict[str, str]:
    """``queries.jsonl`` as ``{query_id: text}``."""
    path = _existing(Path(folder) / "queries.jsonl")
    queries: dict[str, str] = {}
    for lineno, obj in _read_jsonl(path):
        query_id = _id_of(obj, path, lineno)
        if query_id in queries:
            raise DataFileError(path, lineno, f"duplicate _id {query_id!r}")
        queries[query_id] = _text_field(obj, "text", path, lineno, required=True)
    return queries


def load_qrels(folder: str | Path, split: str) -> dict[str, dict[str, int]]:
    """``qrels/<split>.tsv`` as ``{query_id: {corpus_id: grade}}``.

    The first non-blank line is taken as the header when its score column is not an integer (BEIR skips line 1
    blindly, which would drop a judgment from a file without a header). A pair judged twice with different grades is
    an error.
    """
    qrels_dir = Path(folder) / "qrels"
    path = qrels_dir / f"{split}.tsv"
    if not path.is_file():
        available = sorted(p.stem for p in qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
        raise SplitNotFound(path, split, available)
    qrels: dict[str, dict[str, int]] = {}
    for index, (lineno, fields) in enumerate(_read_tsv(path)):
        if index == 0 and len(fields) == 3 and not _INTEGER.fullmatch(fields[2]):
            continue  # the header
        query_id, corpus_id, grade = _judgment(fields, path, lineno)
        judged = qrels.setdefault(query_id, {})
        if judged.get(corpus_id, grade) != grade:
            raise DataFileError(path, lineno, f"{query_id}/{corpus_id} judged again with a different score")
        judged[corpus_id] = grade
    return qrels


def _judgment(fields: list[str], path: Path, lineno: int) -> tuple[str, str, int]:
    if len(fields) != 3:
        raise DataFileError(path, lineno, f"expected 3 tab-separated columns, found {len(fields)}")
    query_id, corpus_id, score = fields
    if not query_id or not corpus_id:
        raise DataFileError(path, lineno, "empty query-id or corpus-id")
    if not _INTEGER.fullmatch(score):
        raise DataFileError(path, lineno, f"score {score!r} is not an integer")
    return query_id, corpus_id, int(score)


def _existing(path: Path) -> Path:
    if not path.is_file():
        raise DataFileError(path, None, "file not found")
    return path


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers; decoded one by one so a bad byte names its line."""
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataFileError(path, lineno, f"not UTF-8 ({exc.reason})") from None
            if line.strip():
                yield lineno, line.rstrip("\r\n")


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in _lines(path):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFileError(path, lineno, f"bad JSON: {exc.msg} at column {exc.colno}") from None
        if not isinstance(obj, dict):
            raise DataFileError(path, lineno, "expected a JSON object")
        yield lineno, obj


def _read_tsv(path: Path) -> Iterator[tuple[int, list[str]]]:
    for lineno, line in _lines(path):
        yield lineno, [column.strip() for column in line.split("\t")]


def _id_of(obj: dict[str, Any], path: Path, lineno: int) -> str:
    if "_id" not in obj:
        raise DataFileError(path, lineno, "missing _id")
    value = obj["_id"]
    # bool is an int subclass; true/false as an id is a mistake, not a number
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    raise DataFileError(path, lineno, f"_id must be a non-empty string or an integer, got {value!r}")


def _text_field(obj: dict[str, Any], name: str, path: Path, lineno: int, *, required: bool) -> str:
    value = obj.get(name)
    if value is None:
        if required:
            raise DataFileError(path, lineno, f"missing {name}")
        return ""
    if not isinstance(value, str):
        raise DataFileError(path, lineno, f"{name} must be a string")
    return value
