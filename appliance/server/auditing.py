"""One audit record per ask, search, reindex, documents, chat and document request, written when it ends.

Routes leave what they know in `request.state` (`note_audit`); the request middleware adds the
final status, the principal, the client address and the latency, and writes the record (even for
401/403/422, which never reach a route). Only what `AuditLog.record` is meant to keep goes in:
the question (it truncates and hashes it), source paths, chunk ids and scores, never the answer
or any chunk text; `extra` holds small scalars only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from fastapi import Request

from appliance.answer.answerer import AnswerResult
from appliance.retrieve.search import SearchResult
from appliance.server.state import AppState

log = logging.getLogger("appliance.server")

# (method, path) → the endpoint name the audit log records.
AUDITED: dict[tuple[str, str], str] = {
    ("POST", "/v1/ask"): "ask",
    ("POST", "/v1/search"): "search",
    ("POST", "/v1/reindex"): "reindex",
    ("GET", "/v1/documents"): "documents",
    ("POST", "/v1/chat/completions"): "chat",
    ("POST", "/v1/feedback"): "feedback",
    # The admin page's reads and actions: every one is audited.
    ("GET", "/v1/admin/feedback"): "admin_feedback",
    ("GET", "/v1/admin/gaps"): "admin_gaps",
    ("GET", "/v1/admin/status"): "admin_status",
    ("POST", "/v1/admin/models/verify"): "admin_models_verify",
    ("POST", "/v1/admin/audit/verify"): "admin_audit_verify",
    ("GET", "/v1/admin/tokens"): "admin_tokens",
    ("POST", "/v1/admin/tokens"): "admin_token_create",
    ("POST", "/v1/admin/tokens/{token_id}/revoke"): "admin_token_revoke",
    # Keyed by route template: who opened which document.
    ("GET", "/v1/documents/{document_id}/file"): "document_file",
    ("POST", "/v1/documents/{document_id}/view"): "document_view",
    # Admins adding and removing documents (who uploaded or deleted which file).
    ("POST", "/v1/documents"): "document_upload",
    ("DELETE", "/v1/documents/{document_id}"): "document_delete",
}


def note_audit(request: Request, **fields: Any) -> None:
    """Merge fields (question, sources, refused, models, latency_ms, extra, status) into this request's audit record."""
    notes: dict[str, Any] = request.scope.setdefault("state", {}).setdefault("audit", {})
    extra = fields.pop("extra", None)
    notes.update(fields)
    if extra:
        notes.setdefault("extra", {}).update(extra)


def answer_audit(state: AppState, result: AnswerResult) -> dict[str, Any]:
    """What the audit keeps of an answer: its sources (citations, else the evidence shown) and flags."""
    scores = {item.chunk_id: item.score for item in result.evidence}
    if result.citations:
        sources = [
            {"path": c.path, "chunk_id": c.chunk_id, "score": round(float(scores.get(c.chunk_id, 0.0)), 6)}
            for c in result.citations
        ]
    else:
        sources = [
            {"path": item.path, "chunk_id": item.chunk_id, "score": round(float(item.score), 6)}
            for item in result.evidence
        ]
    return {
        "sources": sources,
        "refused": result.refused,
        "models": state.models(result.model),
        "latency_ms": {stage: round(float(ms), 1) for stage, ms in result.timings_ms.items()},
        "extra": {
            "grounded": result.grounded,
            "answer_kind": result.answer_kind,
            "citations": len(result.citations),
            "followup": result.rewrite != "none",
            "rewrite": result.rewrite,
            "evidence_confidence": result.evidence_confidence,
        },
    }


def search_audit(state: AppState, result: SearchResult) -> dict[str, Any]:
    return {
        "sources": [{"path": h.path, "chunk_id": h.chunk_id, "score": float(h.score)} for h in result.hits],
        "refused": not result.evidence.sufficient,
        "models": state.models(None),
        "latency_ms": {stage: round(float(ms), 1) for stage, ms in result.timings_ms.items()},
        "extra": {"mode": result.mode, "hits": len(result.hits), "reranked": result.reranked},
    }


def _small_scalars(extra: dict[str, Any]) -> dict[str, Any]:
    """Defence in depth: the audit never takes long strings or nested data, whatever a route noted."""
    kept: dict[str, Any] = {}
    for key, value in extra.items():
        if isinstance(value, bool | int | float) or value is None or (isinstance(value, str) and len(value) <= 64):
            kept[key] = value
    return kept


def _sources(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"path": s.get("path"), "chunk_id": s.get("chunk_id"), "score": s.get("score")} for s in items]


def write_audit(
    state: AppState,
    endpoint: str,
    *,
    status: int,
    request_id: str,
    principal: str | None,
    client: str | None,
    latency_ms: float,
    notes: dict[str, Any],
) -> None:
    """Write one record; called by the middleware in a worker thread once the response is complete.

    `latency_ms` is the whole request; the stages an answer or a search noted are added beside it.
    """
    latencies = {"request": round(latency_ms, 1), **notes.get("latency_ms", {})}
    state.audit.record(
        endpoint=endpoint,
        status=int(notes.get("status", status)),
        request_id=request_id,
        principal=principal,
        client=client,
        question=notes.get("question"),
        sources=_sources(notes.get("sources", ())),
        refused=notes.get("refused"),
        latency_ms=latencies,
        models=notes.get("models") or state.models(None),
        extra=_small_scalars(notes.get("extra", {})),
        comment=notes.get("comment"),
    )
