"""The gaps report on a seeded audit log whose topics are known: refused, thin and rated-down questions are
grouped by topic with the real embedder, labelled by searching the real index again, sorted by count; what
was answered well, searched, or asked before the period stays out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from appliance.audit.writer import AuditLog
from appliance.cli.main import cli
from appliance.config import ReportsSettings, Settings
from appliance.reports.gaps import (
    COVERED_NOT_FOUND,
    NOT_COVERED,
    Probe,
    build_topics,
    cluster,
    gap_questions,
    gaps_report,
    label_topic,
    searcher_probe,
)
from appliance.reports.period import parse_period
from appliance.retrieve.search import Searcher
from appliance.server.auth import TokenStore
from tests.test_api import api_settings, assert_problem, bearer, corpus_home, make_client

__all__ = ["api_settings", "corpus_home"]  # fixtures, imported for pytest

NOW = 1_780_000_000.0  # the seeded log's "now"
DAY = 86400.0

ZABBIX = [  # not in the corpus: one topic, six askings, four wordings
    ("How do I restart the Zabbix agent on the bastion hosts?", 3),
    ("restart zabbix agent on bastion", 1),
    ("the zabbix agent on a bastion host is down, how do I restart it", 1),
    ("Zabbix agent bastion restart procedure", 1),
]
GASKET = [  # in the chlorine SOP, but answered thinly or rated down: covered but not found
    ("which gasket do I fit on the chlorine cylinder connection?", 2),
    ("chlorine cylinder connection gasket part number", 1),
]
FLUORIDE = [("how do I calibrate the fluoride analyser probe", 1)]  # not covered, asked once


class Seeder:
    """Writes audit records as the server would, at chosen times."""

    def __init__(self, settings: Settings) -> None:
        self.now = NOW - 3 * DAY
        self.log = AuditLog(settings, clock=lambda: self.now)
        self.count = 0

    def answer(
        self, question: str, *, refused: bool = False, confidence: float = 0.9, endpoint: str = "ask", at: float = 0.0
    ) -> str:
        self.count += 1
        self.now = at or self.now + 60
        request_id = f"req-{self.count}"
        self.log.record(
            endpoint=endpoint,
            status=200,
            request_id=request_id,
            principal="desk",
            client="127.0.0.1",
            question=question,
            refused=refused,
            extra={"answer_kind": "refusal" if refused else "procedure", "evidence_confidence": confidence},
        )
        return request_id

    def rate_down(self, request_id: str, reason: str = "wrong") -> None:
        self.now += 30
        self.log.record(
            endpoint="feedback",
            status=200,
            request_id=f"fb-{request_id}",
            principal="desk",
            client="127.0.0.1",
            extra={"rated_request_id": request_id, "rating": "down", "reason": reason},
        )


def seed(settings: Settings) -> None:
    seeder = Seeder(settings)
    seeder.answer("How do I restart the Zabbix agent on the bastion hosts?", refused=True, at=NOW - 30 * DAY)  # too old
    seeder.now = NOW - 3 * DAY
    for question, times in ZABBIX:
        for _ in range(times):
            seeder.answer(question, refused=True, confidence=0.1)
    seeder.answer(GASKET[0][0], confidence=0.45)  # thin: below reports.low_confidence
    rated = seeder.answer(GASKET[0][0], confidence=0.8)
    seeder.rate_down(rated)
    seeder.answer(GASKET[1][0], confidence=0.9, endpoint="chat")
    seeder.rate_down(f"req-{seeder.count}", reason="incomplete")
    seeder.answer(FLUORIDE[0][0], refused=True, confidence=0.05)
    for _ in range(4):  # answered well: not a gap
        seeder.answer("What do I close before the chlorine cylinder change?", confidence=0.95)
    seeder.log.record(  # a search is not an answer
        endpoint="search", status=200, request_id="s-1", principal="desk", client=None, question="zabbix", refused=True
    )
    seeder.log.record(  # a failed ask is not an answer either
        endpoint="ask", status=504, request_id="t-1", principal="desk", client=None, question="zabbix timeout"
    )


@pytest.fixture
def seeded(api_settings: Settings) -> Settings:
    seed(api_settings)
    return api_settings


def report(settings: Settings) -> dict[str, Any]:
    searcher = Searcher(settings)
    try:
        return gaps_report(
            settings.audit_dir,
            parse_period("7d", now=NOW),
            settings.reports,
            searcher.embedder.embed,
            searcher_probe(lambda question: searcher.search(question, k=1)),
        )
    finally:
        searcher.close()


def test_the_seeded_topics_come_back_sorted_by_count_and_labelled(seeded: Settings) -> None:
    data = report(seeded)
    assert (data["answers"], data["gap_questions"]) == (14, 10)
    topics = [(t["count"], t["label"], sorted(t["examples"])) for t in data["topics"]]
    assert topics == [
        (6, NOT_COVERED, sorted(question for question, _ in ZABBIX)),
        (3, COVERED_NOT_FOUND, sorted(question for question, _ in GASKET)),
        (1, NOT_COVERED, [FLUORIDE[0][0]]),
    ]
    zabbix, gasket, _ = data["topics"]
    assert zabbix["why"] == {"refused": 6, "low_confidence": 0, "rated_down": 0}
    assert zabbix["examples"][0] == ZABBIX[0][0]  # the most asked wording first, as the audit log holds it
    assert gasket["why"] == {"refused": 0, "low_confidence": 1, "rated_down": 2}
    assert gasket["nearest"]["path"].endswith("SOP-CL-004.md") and gasket["nearest"]["section"]
    assert gasket["coverage"] >= seeded.reports.covered_confidence > zabbix["coverage"]
    assert (data["not_covered"], data["covered_but_not_found"]) == (2, 1)


def test_examples_are_at_most_five_previews_as_the_log_keeps_them(api_settings: Settings) -> None:
    seeder = Seeder(api_settings)
    long_question = "How do I restart the Zabbix agent on the bastion hosts when the agent " + "x" * 200
    seeder.answer(long_question, refused=True)
    for number in range(7):
        seeder.answer(f"restart the zabbix agent on bastion host {number}", refused=True)
    questions, _ = gap_questions(api_settings.audit_dir, parse_period("7d", now=NOW), 0.6)
    previews = [item.text for item in questions]
    assert long_question[: api_settings.audit.question_preview_chars] in previews
    topics = build_topics(questions, _bag_of_words, _no_hits, ReportsSettings(cluster_similarity=0.3))
    assert [(t.count, len(t.examples), t.questions) for t in topics] == [(8, 5, 8)]


def _bag_of_words(texts: Any) -> np.ndarray:
    """A tiny embedder for the clustering rules: shared words make vectors close."""
    vocabulary = sorted({word for text in texts for word in text.lower().split()})
    return np.array([[float(word in text.lower().split()) for word in vocabulary] for text in texts])


def _no_hits(question: str) -> Probe:
    return Probe(0.0)


def test_clustering_groups_by_cosine_to_the_centroid_in_the_given_order() -> None:
    vectors = np.array([[1.0, 0.0], [0.96, 0.28], [0.0, 1.0], [0.6, 0.8]])
    assert cluster(vectors, 0.9) == [[0, 1], [2], [3]]
    # [0.6, 0.8] is within 0.5 of both topics: it joins the nearer centroid (cos 0.8 against 0.71).
    assert cluster(vectors, 0.5) == [[0, 1], [2, 3]]
    assert cluster(vectors, 0.0) == [[0, 1, 2, 3]]  # at 0 every question joins the first topic


def test_a_topic_is_covered_when_one_wording_reaches_the_threshold() -> None:
    found = Probe(0.55, "plant/SOP-CL-004.md", "Chlorine", "Isolation")
    assert label_topic([Probe(0.1), found], 0.5) == (COVERED_NOT_FOUND, 0.55, found)
    assert label_topic([Probe(0.1), found], 0.6)[0] == NOT_COVERED
    assert label_topic([], 0.5) == (NOT_COVERED, 0.0, None)


def test_an_empty_period_is_an_empty_report(api_settings: Settings) -> None:
    data = report(api_settings)
    assert (data["answers"], data["gap_questions"], data["topics"]) == (0, 0, [])


def test_report_gaps_cli_prints_topics_and_json(seeded: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPLIANCE_HOME", str(seeded.home))
    monkeypatch.setenv("APPLIANCE_MODELS_DIR", str(seeded.models_dir))
    monkeypatch.delenv("APPLIANCE_CONFIG", raising=False)
    monkeypatch.setattr("time.time", lambda: NOW)
    result = CliRunner().invoke(cli, ["report", "gaps", "--since", "7d", "--json"])
    assert result.exit_code == 0, result.output
    assert [topic["count"] for topic in json.loads(result.output)["topics"]] == [6, 3, 1]
    text = CliRunner().invoke(cli, ["report", "gaps"])
    assert text.exit_code == 0, text.output
    assert "10 of 14 answer(s) were gaps, in 3 topic(s): 2 not covered, 1 covered but not found" in text.output
    assert "1. not covered" in text.output and "nearest: plant/SOP-CL-004.md" in text.output


def test_gaps_over_http_is_for_admins(seeded: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    with TokenStore(seeded.tokens_path) as store:
        _, operator = store.create("operator", "desk")
        _, admin = store.create("admin", "boss")
    monkeypatch.setattr("appliance.reports.period.time.time", lambda: NOW)
    client = make_client(seeded)
    assert_problem(client.get("/v1/admin/gaps", headers=bearer(operator)), 403)
    problem = assert_problem(client.get("/v1/admin/gaps?since=lastweek", headers=bearer(admin)), 422)
    assert problem["errors"][0]["field"] == "since"
    response = client.get("/v1/admin/gaps?since=7d", headers=bearer(admin))
    assert response.status_code == 200, response.text
    assert [topic["count"] for topic in response.json()["topics"]] == [6, 3, 1]


def test_the_audit_keeps_only_previews(seeded: Settings) -> None:
    text = "".join(path.read_text() for path in Path(seeded.audit_dir).glob("audit-*.jsonl"))
    assert "answer" not in {key for line in text.splitlines() for key in json.loads(line)}
