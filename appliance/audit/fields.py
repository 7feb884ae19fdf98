"""What an audit record may hold, and never more.

A question preview (at most ``audit.question_preview_chars``, ≤ 80 characters) plus the sha256 of the full
question, the sources' path/chunk_id/score, status, latencies, model names and a few small scalars. Never
the answer, chunk text, the full question or a token secret: `record_body` refuses values that could carry
them, and masks a token secret wherever it hides.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

from appliance.audit.format import AuditError

# A token secret (see appliance.server.auth) must never reach the log, whatever field it hides in:
# its random part is masked (the replacement is never longer, so a preview stays within its limit).
_SECRET_RE = re.compile(r"apl_([0-9a-f]{8})_[A-Za-z0-9_-]+")
MAX_EXTRA_KEYS = 32
MAX_EXTRA_STRING = 200
MAX_FIELD_CHARS = 512


def record_body(
    *,
    endpoint: str,
    status: int,
    request_id: str,
    principal: str | None,
    client: str | None,
    question: str | None,
    sources: Sequence[Mapping[str, Any]],
    refused: bool | None,
    latency_ms: Mapping[str, float] | None,
    models: Mapping[str, str] | None,
    extra: Mapping[str, Any] | None,
    comment: str | None,
    preview_chars: int,
) -> dict[str, Any]:
    """A record's fields after `seq`, `time` and `prev`, checked and cut, in the order they are written.

    `comment` (an operator's remark on an answer) is kept like the question: a preview and its sha256, and
    only on records that have one, so every other record keeps its shape.
    """
    body = {
        "request_id": _text("request_id", request_id),
        "principal": _optional_text("principal", principal),
        "client": _optional_text("client", client),
        "endpoint": _text("endpoint", endpoint),
        "status": _int("status", status),
        "question_preview": None if question is None else _preview(question, preview_chars),
        "question_sha256": None if question is None else _sha256(question),
        "sources": [_source(source) for source in sources],
        "refused": None if refused is None else bool(refused),
        "latency_ms": _latencies(latency_ms),
        "models": _models(models),
        "extra": _extra(extra),
    }
    if comment is not None:
        body["comment_preview"] = _preview(comment, preview_chars)
        body["comment_sha256"] = _sha256(comment)
    return body


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _text(name: str, value: str) -> str:
    """A short string field; request-derived values are cut, not refused, so a request is always logged."""
    if not isinstance(value, str):
        raise AuditError(f"audit field {name} must be a string, not {type(value).__name__}")
    return _redact(value[:MAX_FIELD_CHARS])


def _redact(value: str) -> str:
    return _SECRET_RE.sub(r"apl_\1_*", value)


def _preview(question: str, chars: int) -> str:
    if not isinstance(question, str):
        raise AuditError(f"audit field question must be a string, not {type(question).__name__}")
    return _redact(question[:chars])


def _optional_text(name: str, value: str | None) -> str | None:
    return None if value is None else _text(name, value)


def _int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise AuditError(f"audit field {name} must be an integer, not {type(value).__name__}")
    return int(value)


def _number(name: str, value: Any) -> float | int:
    """A finite number as a plain int or float (numpy scalars from retrieval included)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise AuditError(f"audit field {name} must be a finite number, not {value!r:.40}")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def _source(source: Mapping[str, Any]) -> dict[str, Any]:
    """path, chunk_id and score only: whatever else a hit carries (its text) stays out."""
    path, chunk_id, score = source.get("path"), source.get("chunk_id"), source.get("score")
    return {
        "path": None if path is None else _text("sources.path", str(path)),
        "chunk_id": None if chunk_id is None else _text("sources.chunk_id", str(chunk_id)),
        "score": None if score is None else _number("sources.score", score),
    }


def _latencies(latency_ms: Mapping[str, float] | None) -> dict[str, float | int] | None:
    if latency_ms is None:
        return None
    if isinstance(latency_ms, numbers.Real):  # a bare number is the whole request's time
        return {"total": _number("latency_ms", latency_ms)}
    if not isinstance(latency_ms, Mapping):
        raise AuditError(f"audit field latency_ms must map stage names to milliseconds, not {latency_ms!r:.40}")
    return {_text("latency_ms key", key): _number(f"latency_ms.{key}", value) for key, value in latency_ms.items()}


def _models(models: Mapping[str, str] | None) -> dict[str, str | None] | None:
    """Model names by role; a role without a model (no reranker, no generator yet) is null."""
    if models is None:
        return None
    return {
        _text("models key", key): None if value is None else _text(f"models.{key}", value)
        for key, value in models.items()
    }


def _extra(extra: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Small scalars only, so an answer or a chunk can never slip in through here."""
    if extra is None:
        return None
    if len(extra) > MAX_EXTRA_KEYS:
        raise AuditError(f"audit extra has {len(extra)} keys; at most {MAX_EXTRA_KEYS}")
    checked: dict[str, Any] = {}
    for key, value in extra.items():
        if not isinstance(key, str) or len(key) > 64:
            raise AuditError(f"audit extra key {key!r:.70} must be a string of at most 64 characters")
        if value is None or isinstance(value, bool):
            checked[key] = value
        elif isinstance(value, numbers.Real):
            checked[key] = _number(f"extra.{key}", value)
        elif isinstance(value, str):
            if len(value) > MAX_EXTRA_STRING:
                raise AuditError(
                    f"audit extra.{key} is a {len(value)}-character string; at most {MAX_EXTRA_STRING} "
                    "(answer or chunk text never goes into the audit log)"
                )
            checked[key] = _redact(value)
        else:
            raise AuditError(
                f"audit extra.{key} is a {type(value).__name__}; only null, booleans, numbers and short strings"
            )
    return checked
