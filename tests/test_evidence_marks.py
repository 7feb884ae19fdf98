"""The sentences marked in a passage shown beside an answer (a source, a refusal's closest passage) are the ones
that answer the question, read by meaning as well as by words: an operator asking in their own words finds the
line at a glance (evidence_sentences.py, fitted by scripts/fit_evidence_sentences.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from appliance.answer.answerer import Answerer
from appliance.config import Settings
from appliance.ingest.pipeline import ingest

DEMO = Path(__file__).resolve().parent.parent / "docs_corpus"
DOCUMENTS = ("SOP-SCADA-002-hmi-login-and-recovery.html", "SOP-CHM-002-fluoride-feed-shutdown.md")


@pytest.fixture(scope="module")
def answerer(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Answerer:
    root = tmp_path_factory.mktemp("marks")
    (root / "docs").mkdir()
    for name in DOCUMENTS:
        shutil.copy(DEMO / name, root / "docs" / name)
    settings = Settings(home=root / "home", models_dir=models_dir)
    ingest(settings, [root / "docs"])
    return Answerer(settings)


@pytest.mark.parametrize(
    "question",
    [
        # The line says "Three wrong PINs or passwords lock the account": "tries", "bad" and "locks out" are
        # not its words; by the words alone the marks fell on "Accounts are never shared…" and "Roles: …".
        "how many bad PIN tries before an HMI account locks out, and what alarm pops?",
        "HOW MANY BAD PIN TRIES BEFORE AN HMI ACCOUNT LOCKS OUT, AND WHAT ALARM POPS?",
        "quick one: how many bad pin tries before an hmi account locks out and what alarm pops",
        "how many bad PIN trys before an HMI acount locks out, and what alarm pops?",
        "How many bad PIN tries before an HMI account locks out?",
    ],
)
def test_the_line_that_answers_in_other_words_is_marked(answerer: Answerer, question: str) -> None:
    result = answerer.ask(question)

    rules = [item for item in result.evidence if item.section.endswith("3. Rules")]
    assert rules, [item.section for item in result.evidence]
    marked = [sentence.text for item in rules for sentence in item.sentences]
    assert any(text.startswith("Three wrong PINs or passwords lock the account") for text in marked), marked
    for item in rules:
        for sentence in item.sentences:
            assert item.text[sentence.start : sentence.end] == sentence.text
