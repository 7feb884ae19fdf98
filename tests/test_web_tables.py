"""Tables on the operator page, in a real headless Chromium against a real uvicorn on 127.0.0.1.

A question answered by a table row shows a real <table> (the header row as <th>, never raw `| --- |`
text) in the quoted answer and in the sources panel, where the matching row is marked and the closed
source's preview is that row under its header. A table wider than a phone scrolls sideways inside its
box while the page itself stays as wide as the screen; the document view shows the SOP's tables too;
a table in a past answer's one-line summary is cut between rows. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from appliance.config import GeneratorSettings, Settings
from appliance.ingest.pipeline import ingest
from appliance.server.app import create_app
from appliance.text.pipe_tables import one_line
from tests.test_web_page import ARTIFACTS, serving, sync_api, watched_page

SOP = """# SOP-CHM-002 Fluoride feed

## 3. Limits

The fluoride feed runs only inside these limits.

| Item | Value |
| --- | --- |
| Target at entry point (AIT-403) | 0.7 mg/L |
| Operating range | 0.6–0.9 mg/L |
| Maximum contaminant level (public notice) | 4.0 mg/L |

## 5. Alarms

| Alarm code | Priority | Tag | Limit | Meaning | First response | Detailed SOP |
| --- | --- | --- | --- | --- | --- | --- |
| ALM-FL-LOW-01 | P3 | AIT-403 | below 0.5 mg/L for 30 min | Fluoride below target | Check pump P-CHM-461A and day tank T-460 | SOP-CHM-002 section 7 |
| ALM-FL-HIGH-02 | P1 | AIT-403 | above 1.5 mg/L for 2 min | Fluoride overfeed; PLC-400 stops P-CHM-461A/B | Confirm both metering pumps stopped, then follow the shutdown procedure | SOP-CHM-002 section 7 |

## 7. Shutdown

1. On HMI page FLUORIDE press FEED STOP.
2. Close the day tank outlet valve VLV-4610.
"""  # noqa: E501 - a table row is one line

VALUE_QUESTION = "What is the fluoride operating range?"
WIDE_QUESTION = "What is the first response to alarm ALM-FL-HIGH-02?"
# Tags the page builds for a passage: its text, identifiers, marks, and tables.
PASSAGE_TAGS = {"MARK", "SPAN", "DIV", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD"}


@pytest.fixture(scope="module")
def table_server(models_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One SOP with a narrow and a wide table, served with the default (quoted) answers, no token."""
    base = tmp_path_factory.mktemp("tables")
    (base / "plant").mkdir()
    (base / "plant" / "SOP-CHM-002.md").write_text(SOP)
    (base / "home").mkdir()
    generator = GeneratorSettings.model_validate({"model": "smollm2-135m-instruct"})  # in the test model store
    settings = Settings(home=base / "home", models_dir=models_dir, generator=generator)
    assert settings.answer.mode == "quoted"
    ingest(settings, [base / "plant"])
    with serving(create_app(settings), "uvicorn-tables-page-test") as url:
        yield url


@pytest.fixture
def page(table_server: str) -> Iterator[Any]:
    """A desktop-sized page on the server; no request may leave 127.0.0.1 and no console error may show."""
    ARTIFACTS.mkdir(exist_ok=True)
    with watched_page(table_server + "/") as (tab, requests, errors):
        yield tab
    assert not [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert not errors, f"console errors: {errors}"


def _ask(page: Any, question: str) -> None:
    box = page.get_by_label("Question", exact=True)
    box.fill(question)
    box.press("Enter")
    sync_api.expect(page.locator("main")).to_have_attribute("data-state", "done", timeout=60_000)
    sync_api.expect(page.locator("#result")).to_have_attribute("data-outcome", "answer")


def _texts(locator: Any) -> list[str]:
    return [text.strip() for text in locator.all_inner_texts()]


@pytest.mark.slow
def test_a_table_row_answer_is_shown_as_a_real_table_that_scrolls_sideways_on_a_phone(page: Any) -> None:
    expect = sync_api.expect
    _ask(page, VALUE_QUESTION)
    steps = page.locator("#steps-list")
    table = steps.locator("li.step-table table")
    expect(table).to_have_count(1)
    assert _texts(table.locator("thead th")) == ["Item", "Value"]
    rows = [_texts(row.locator("td")) for row in table.locator("tbody tr").all()]
    assert ["Operating range", "0.6–0.9 mg/L"] in rows, rows  # with the rows beside it: the answer is a passage
    expect(steps).not_to_contain_text("| ---")
    expect(steps).not_to_contain_text("| Operating range")
    page.screenshot(path=str(ARTIFACTS / "web-tables-answer.png"), full_page=True)

    # A seven-column table on a 360 px phone: the page stays the screen's width, the table scrolls in its box.
    _ask(page, WIDE_QUESTION)
    wide = steps.locator("li.step-table .table-scroll").first
    assert _texts(wide.locator("thead th"))[:2] == ["Alarm code", "Priority"]
    expect(wide.locator("tbody")).to_contain_text("ALM-FL-HIGH-02")
    page.set_viewport_size({"width": 360, "height": 780})
    page.evaluate("window.scrollTo(0, 0)")
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    box = wide.evaluate("el => ({scroll: el.scrollWidth, client: el.clientWidth})")
    assert box["scroll"] > box["client"], "the wide table scrolls inside its box"
    cell = wide.locator("th").first.evaluate("el => el.getBoundingClientRect().width")
    assert cell >= 70, "a column is not squeezed to a letter a line"
    wide.focus()  # reachable by keyboard, and scrolled with the arrow keys
    page.keyboard.press("ArrowRight")
    expect(wide).to_be_focused()
    page.screenshot(path=str(ARTIFACTS / "web-tables-answer-360.png"), full_page=True)

    # The document view shows the SOP's own tables, header cells included, inside the phone's width.
    steps.locator("li.step-heading").first.get_by_role("button", name="Open the document here").click()
    viewer = page.locator("#viewer")
    expect(viewer).to_have_attribute("data-state", "open")
    expect(viewer.locator("#viewer-body table")).to_have_count(2)
    expect(viewer.locator("#viewer-body th", has_text="First response")).to_be_attached()
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    viewer.locator("#viewer-body table").nth(1).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "web-tables-view-360.png"))
    page.keyboard.press("Escape")

    # The past answer's one-line summary cuts its table between rows, each row under its header's names.
    page.set_viewport_size({"width": 1280, "height": 900})
    summaries = _texts(page.locator("#thread-list .turn-a"))
    assert summaries and all("|" not in text and "---" not in text for text in summaries), summaries
    assert "Item: Operating range · Value: 0.6–0.9 mg/L" in summaries[0]


@pytest.mark.slow
def test_the_sources_panel_shows_the_passages_table_with_the_matching_row_marked(page: Any) -> None:
    expect = sync_api.expect
    _ask(page, VALUE_QUESTION)
    source = page.locator("#source-1")
    expect(source.locator("details")).not_to_have_attribute("open", "")
    preview = source.locator("summary .src-preview table")  # the closed source: the row under its header
    assert _texts(preview.locator("th")) == ["Item", "Value"]
    assert _texts(preview.locator("td")) == ["Operating range", "0.6–0.9 mg/L"]
    page.screenshot(path=str(ARTIFACTS / "web-tables-sources-closed.png"))

    source.locator("summary").click()
    passage = source.locator(".passage")
    expect(passage).to_be_visible()
    table = passage.locator("table")
    expect(table).to_have_count(1)
    assert _texts(table.locator("thead th")) == ["Item", "Value"]
    marked = table.locator("tbody tr.row-match")
    expect(marked).to_have_count(1)
    assert _texts(marked.locator("td mark")) == ["Operating range", "0.6–0.9 mg/L"]
    expect(passage).not_to_contain_text("| ---")
    tags = passage.evaluate("el => [...new Set([...el.querySelectorAll('*')].map(n => n.tagName))]")
    assert set(tags) <= PASSAGE_TAGS, f"the passage holds elements the page did not build: {tags}"
    page.screenshot(path=str(ARTIFACTS / "web-tables-sources.png"), full_page=True)
    page.set_viewport_size({"width": 360, "height": 780})
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    source.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "web-tables-sources-360.png"))


@pytest.mark.slow
def test_the_pages_table_reader_builds_text_only_and_shortens_like_the_server(page: Any) -> None:
    """tables.js and appliance/text/pipe_tables.py read the same tables: the page's one-line form is the
    CLI's; a cell's markup is text, never an element."""
    hostile = "| Tag | Note |\n| --- | --- |\n| <b>VLV-4610</b> | <img src=x onerror=alert(1)> |"
    built = page.evaluate(
        """text => { const box = document.createElement('div');
                     box.appendChild(window.ApplianceTables.render(text));
                     return {tags: [...box.querySelectorAll('*')].map(n => n.tagName),
                             cells: [...box.querySelectorAll('td')].map(n => n.textContent)}; }""",
        hostile,
    )
    assert set(built["tags"]) == {"DIV", "TABLE", "THEAD", "TBODY", "TR", "TH"} | {"TD"}
    assert built["cells"] == ["<b>VLV-4610</b>", "<img src=x onerror=alert(1)>"]
    for limit in (20, 60, 120, 400):
        shown = page.evaluate("([text, limit]) => window.ApplianceTables.oneLine(text, limit)", [SOP, limit])
        assert shown == one_line(SOP, limit), json.dumps([limit, shown])
