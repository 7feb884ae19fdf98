"""Operators' ratings of answers: audit records of the endpoint "feedback", read back joined to the answer.

A rating is written by the request middleware like every audited request (`POST /v1/feedback`), so it
sits in the one hash-chained, append-only audit log: `appliance audit verify` checks it, retention
prunes it with the rest, and no second chain needs its own lock, verify and retention. The record
holds the rated answer's request id, the rating and the reason in `extra`, and an optional comment
as a preview plus its sha256 (like a question). Never the answer's text: the question it answered is
found by joining on the rated request id, in the answer's own record.

An operator may rate an answer again: the newest rating of a request id counts.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from appliance.audit.reader import find_record, read_records
from appliance.reports.period import Period

RATINGS = ("up", "down")
REASONS = ("wrong", "incomplete", "outdated", "unclear", "other")
# The audit endpoints whose records are answers (POST /v1/ask and /v1/chat/completions).
ANSWER_ENDPOINTS = ("ask", "chat")
FEEDBACK_ENDPOINT = "feedback"
_FEEDBACK_MARKER = b'"endpoint":"feedback"'


def find_answer(audit_dir: Path, request_id: str, wait_s: float = 0.0) -> dict[str, Any] | None:
    """The audit record of the answer `request_id` names, or None.

    The middleware writes an answer's record just after the last byte is sent, so a rating clicked at
    once may arrive first: `wait_s` looks again for that long.
    """
    deadline = time.monotonic() + wait_s
    while True:
        record = find_record(audit_dir, request_id, ANSWER_ENDPOINTS)
        if record is not None and record.get("status") == 200:
            return record
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.1)


@dataclass(frozen=True)
class Rating:
    """One answer's newest rating, with what the audit kept of the question and the answer."""

    time: str
    request_id: str  # the rated answer's
    rating: str
    reason: str | None
    comment: str | None  # the preview the audit kept
    principal: str | None
    question: str | None  # the answer record's question preview
    answer_kind: str | None
    refused: bool | None
    evidence_confidence: float | None
    top_source: str | None  # the path of the answer's first source

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def read_ratings(audit_dir: Path, period: Period) -> list[Rating]:
    """The newest rating of each answer rated in the period, newest first."""
    newest: dict[str, dict[str, Any]] = {}
    for record in read_records(audit_dir, since=period.start, marker=_FEEDBACK_MARKER):
        extra = record.get("extra") or {}
        if (
            record.get("endpoint") == FEEDBACK_ENDPOINT
            and record.get("status") == 200
            and extra.get("rated_request_id")
        ):
            newest[str(extra["rated_request_id"])] = record
    answers = _answers(audit_dir, set(newest))
    ratings = [_rating(rated, record, answers.get(rated)) for rated, record in newest.items()]
    return sorted(ratings, key=lambda rating: rating.time, reverse=True)


def _answers(audit_dir: Path, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The answer records of the rated request ids: one pass over the log, then a look-up for stragglers."""
    found: dict[str, dict[str, Any]] = {}
    if not wanted:
        return found
    for record in read_records(audit_dir):
        if record.get("request_id") in wanted and record.get("endpoint") in ANSWER_ENDPOINTS:
            found[str(record["request_id"])] = record  # the newest answer of a reused id wins, as find_answer
    return found


def _rating(rated: str, record: dict[str, Any], answer: dict[str, Any] | None) -> Rating:
    extra = record.get("extra") or {}
    answer = answer or {}
    answer_extra = answer.get("extra") or {}
    sources = answer.get("sources") or []
    confidence = answer_extra.get("evidence_confidence")
    return Rating(
        time=str(record.get("time")),
        request_id=rated,
        rating=str(extra.get("rating")),
        reason=extra.get("reason"),
        comment=record.get("comment_preview"),
        principal=record.get("principal"),
        question=answer.get("question_preview"),
        answer_kind=answer_extra.get("answer_kind"),
        refused=answer.get("refused"),
        evidence_confidence=float(confidence) if isinstance(confidence, int | float) else None,
        top_source=sources[0].get("path") if sources else None,
    )


def feedback_report(audit_dir: Path, period: Period) -> dict[str, Any]:
    """`appliance report feedback` and GET /v1/admin/feedback: counts, reasons, and every rating."""
    ratings = read_ratings(audit_dir, period)
    counts = Counter(rating.rating for rating in ratings)
    reasons = Counter(rating.reason for rating in ratings if rating.rating == "down" and rating.reason)
    return {
        "period": period.as_json(),
        "rated": len(ratings),
        "up": counts.get("up", 0),
        "down": counts.get("down", 0),
        "down_reasons": {reason: reasons.get(reason, 0) for reason in REASONS},
        "ratings": [rating.as_json() for rating in ratings],
    }


def rated_down(audit_dir: Path, period: Period) -> dict[str, Rating]:
    """Answers whose newest rating in the period is down, by request id (the gaps report's third input)."""
    return {rating.request_id: rating for rating in read_ratings(audit_dir, period) if rating.rating == "down"}
