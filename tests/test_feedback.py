"""Answer feedback: every answer carries its request_id; POST /v1/feedback rates it; the audit chain keeps the
rating (no answer text); `appliance report feedback` and GET /v1/admin/feedback read it back, joined to the
question the answer's own record holds."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from appliance.audit.reader import read_records
from appliance.audit.verify import verify_audit
from appliance.cli.main import cli
from appliance.config import Settings
from appliance.reports.feedback import read_ratings
from appliance.reports.period import PeriodError, parse_period
from appliance.server.auth import TokenStore
from tests.test_api import (
    OFF_TOPIC,
    QUESTION,
    api_settings,
    assert_problem,
    bearer,
    corpus_home,
    make_client,
    parse_sse,
)

__all__ = ["api_settings", "corpus_home"]  # fixtures, imported for pytest


@pytest.fixture
def client(api_settings: Settings) -> TestClient:
    return make_client(api_settings)


def ask(client: TestClient, question: str = QUESTION) -> dict:
    response = client.post("/v1/ask", json={"question": question})
    assert response.status_code == 200, response.text
    body: dict = response.json()
    return body


def test_every_ask_result_carries_its_request_id(client: TestClient) -> None:
    response = client.post("/v1/ask", json={"question": QUESTION})
    assert response.json()["request_id"] == response.headers["x-request-id"]

    streamed = client.post("/v1/ask", json={"question": QUESTION, "stream": True})
    done = [json.loads(data) for name, data in parse_sse(streamed.text) if name == "done"]
    assert done[0]["request_id"] == streamed.headers["x-request-id"]

    chat = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}]})
    assert chat.json()["appliance"]["request_id"] == chat.headers["x-request-id"]
    chunks = client.post(
        "/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}], "stream": True}
    )
    last = [json.loads(data) for _, data in parse_sse(chunks.text) if data != "[DONE]"][-1]
    assert last["appliance"]["request_id"] == chunks.headers["x-request-id"]


def test_a_rating_is_an_audit_record_in_the_chain_without_answer_text(
    client: TestClient, api_settings: Settings
) -> None:
    answer = ask(client)
    comment = "The gasket part number is missing; " + "x" * 200
    response = client.post(
        "/v1/feedback",
        json={"request_id": answer["request_id"], "rating": "down", "reason": "incomplete", "comment": comment},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "recorded": True,
        "request_id": answer["request_id"],
        "rating": "down",
        "reason": "incomplete",
    }

    records = list(read_records(api_settings.audit_dir))
    asked = [r for r in records if r["request_id"] == answer["request_id"]][-1]
    # The answer's record keeps its evidence confidence: the gaps report finds thin answers by it.
    assert asked["extra"]["evidence_confidence"] == answer["evidence_confidence"] > 0
    rating = [r for r in records if r["endpoint"] == "feedback"][-1]
    assert rating["extra"]["rated_request_id"] == answer["request_id"]
    assert rating["extra"]["rating"] == "down" and rating["extra"]["reason"] == "incomplete"
    assert rating["comment_preview"] == comment[: api_settings.audit.question_preview_chars]
    assert len(rating["comment_sha256"]) == 64
    assert answer["answer"] not in json.dumps(rating)
    assert verify_audit(api_settings.audit_dir).ok


def test_unknown_request_id_is_a_404_that_names_it_and_is_still_audited(
    client: TestClient, api_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("appliance.server.routes_feedback.ANSWER_RECORD_WAIT_S", 0.0)
    body = assert_problem(client.post("/v1/feedback", json={"request_id": "no-such-answer", "rating": "up"}), 404)
    assert "no-such-answer" in body["detail"]
    # A search is not an answer either.
    search = client.post("/v1/search", json={"query": "gasket"})
    assert_problem(
        client.post("/v1/feedback", json={"request_id": search.headers["x-request-id"], "rating": "up"}), 404
    )

    refused = [r for r in read_records(api_settings.audit_dir) if r["endpoint"] == "feedback"]
    assert [(r["status"], r["extra"]["found"]) for r in refused] == [(404, False), (404, False)]
    assert read_ratings(api_settings.audit_dir, parse_period("1d")) == []


def test_only_a_rating_of_an_answer_still_being_recorded_waits_for_its_record(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer's record is written just after its last byte: a rating of it clicked at once waits for it. Any
    other id is looked up once, so a typo or a flood of made-up ids holds no thread for seconds of scans."""
    import appliance.server.middleware as middleware
    import appliance.server.routes_feedback as routes

    state = client.app.state.appliance  # type: ignore[attr-defined]
    pending_while_recorded: list[bool] = []
    write_audit = middleware.write_audit

    def recording(app_state: object, endpoint: str, **fields: object) -> None:
        if endpoint in ("ask", "chat"):
            pending_while_recorded.append(fields["request_id"] in state.unrecorded_answers)
        write_audit(app_state, endpoint, **fields)  # type: ignore[arg-type]

    monkeypatch.setattr(middleware, "write_audit", recording)
    waits: list[float] = []
    find_answer = routes.find_answer

    def looked_up(audit_dir: object, request_id: str, wait_s: float = 0.0) -> object:
        waits.append(wait_s)
        return find_answer(audit_dir, request_id, wait_s)  # type: ignore[arg-type]

    monkeypatch.setattr(routes, "find_answer", looked_up)

    answer = ask(client)
    chat = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": QUESTION}]})
    assert pending_while_recorded == [True, True] and chat.status_code == 200
    assert state.unrecorded_answers == set(), "an answer stays pending after its record is written"
    assert client.post("/v1/feedback", json={"request_id": answer["request_id"], "rating": "up"}).status_code == 200
    assert_problem(client.post("/v1/feedback", json={"request_id": "typo-in-the-id", "rating": "up"}), 404)
    assert waits == [0.0, 0.0], "an answer already recorded and an unknown id are each looked up once"

    state.unrecorded_answers.add("an-answer-whose-last-byte-just-left")
    monkeypatch.setattr(routes, "ANSWER_RECORD_WAIT_S", 0.2)
    assert_problem(
        client.post("/v1/feedback", json={"request_id": "an-answer-whose-last-byte-just-left", "rating": "up"}), 404
    )
    assert waits[-1] == 0.2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rating": "down"}, "request_id"),
        ({"request_id": "abc", "rating": "meh"}, "rating"),
        ({"request_id": "abc", "rating": "down", "reason": "ugly"}, "reason"),
        ({"request_id": "abc", "rating": "up", "reason": "wrong"}, "reason"),
        ({"request_id": "a b", "rating": "up"}, "request_id"),
        ({"request_id": "abc", "rating": "up", "comment": "x" * 2001}, "comment"),
    ],
)
def test_invalid_feedback_is_a_422_naming_the_field(client: TestClient, body: dict, field: str) -> None:
    problem = assert_problem(client.post("/v1/feedback", json=body), 422)
    assert [error["field"] for error in problem["errors"]] == [field]


def test_operators_may_rate_and_only_admins_read_the_ratings(api_settings: Settings) -> None:
    with TokenStore(api_settings.tokens_path) as store:
        _, operator = store.create("operator", "desk")
        _, admin = store.create("admin", "boss")
    client = make_client(api_settings)
    answer = client.post("/v1/ask", json={"question": QUESTION}, headers=bearer(operator)).json()
    rated = client.post(
        "/v1/feedback", json={"request_id": answer["request_id"], "rating": "up"}, headers=bearer(operator)
    )
    assert rated.status_code == 200
    assert_problem(client.get("/v1/admin/feedback", headers=bearer(operator)), 403)
    listed = client.get("/v1/admin/feedback?since=1d", headers=bearer(admin))
    assert listed.status_code == 200
    assert [(r["rating"], r["principal"], r["question"]) for r in listed.json()["ratings"]] == [
        ("up", "desk", QUESTION)
    ]


def test_the_newest_rating_of_an_answer_counts_and_the_report_joins_the_question(
    client: TestClient, api_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = ask(client), ask(client, OFF_TOPIC)
    client.post("/v1/feedback", json={"request_id": first["request_id"], "rating": "up"})
    client.post("/v1/feedback", json={"request_id": first["request_id"], "rating": "down", "reason": "wrong"})
    client.post("/v1/feedback", json={"request_id": second["request_id"], "rating": "down", "reason": "outdated"})

    monkeypatch.setenv("APPLIANCE_HOME", str(api_settings.home))
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    result = CliRunner().invoke(cli, ["report", "feedback", "--since", "7d", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["rated"], report["up"], report["down"]) == (2, 0, 2)
    assert report["down_reasons"] == {"wrong": 1, "incomplete": 0, "outdated": 1, "unclear": 0, "other": 0}
    by_question = {r["question"]: (r["rating"], r["reason"], r["refused"]) for r in report["ratings"]}
    assert by_question == {QUESTION: ("down", "wrong", False), OFF_TOPIC: ("down", "outdated", True)}

    text = CliRunner().invoke(cli, ["report", "feedback"])
    assert text.exit_code == 0 and "2 answer(s) rated: 0 up, 2 down" in text.output
    assert "wrong" in text.output and QUESTION in text.output


def test_a_period_is_a_number_and_a_unit() -> None:
    period = parse_period("7d", now=8 * 86400.0)
    assert (period.start, period.end) == ("1970-01-02T00:00:00.000Z", "1970-01-09T00:00:00.000Z")
    assert parse_period("24h", now=86400.0).start == "1970-01-01T00:00:00.000Z"
    with pytest.raises(PeriodError, match="since must be a number and a unit"):
        parse_period("last week")


def test_report_feedback_with_a_bad_period_names_the_option(cli_env: dict[str, str]) -> None:
    result = CliRunner().invoke(cli, ["report", "feedback", "--since", "soon"])
    assert result.exit_code == 2 and "since must be a number and a unit" in result.output
