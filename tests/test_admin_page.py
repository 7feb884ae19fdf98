"""The rating buttons of the operator page and the admin page, in the real headless Chromium against a real
uvicorn on 127.0.0.1 (as tests/test_web_page.py does for the operator page).

An operator rates an answer down with a reason and a comment, by keyboard; the admin page then shows, with
an admin token: the index status and its sources, a file that failed with its reason, reindex now, model
and audit verification, token create and revoke, the gaps report (the refused question, not covered) and
the feedback. Every action reachable by Tab, every admin call audited, no request to another host, no
console error but the refusals an operator token gets on the admin page.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from appliance.answer.answerer import Answerer
from appliance.audit.reader import read_records
from appliance.audit.verify import verify_audit
from appliance.config import Settings
from appliance.ingest.pipeline import ingest
from appliance.server.app import create_app
from appliance.server.auth import TokenStore
from appliance.server.security import STRICT_CSP
from tests.fakes import generated
from tests.test_web_page import (
    ANSWER,
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    QUESTION,
    REFUSED_QUESTION,
    SOP,
    GatedGenerator,
    serving,
    sync_api,
)

ADMIN_ACTIONS = [
    "status-refresh",
    "reindex",
    "models-verify",
    "audit-verify",
    "upload-file",
    "upload-replace",
    "upload-button",
    "token-create-button",
    "gaps-load",
    "feedback-load",
]


@pytest.fixture
def site(settings: Settings, tmp_path: Path) -> dict[str, object]:
    settings = generated(settings)
    root = tmp_path / "plant"
    root.mkdir()
    (root / "SOP-CL-004.md").write_text(SOP)
    (root / "scanned-permit.pdf").write_bytes(b"%PDF-1.4 not really a pdf")  # fails, with its reason
    ingest(settings, [root])
    with TokenStore(settings.tokens_path) as store:
        _, operator = store.create("operator", name="shift-a")
        _, admin = store.create("admin", name="chief")
    return {"settings": settings, "operator": operator, "admin": admin}


@pytest.fixture
def server(site: dict[str, object]) -> Iterator[str]:
    generator = GatedGenerator([ANSWER], "")
    generator.gate.set()
    settings = site["settings"]
    assert isinstance(settings, Settings)
    answerer = Answerer(settings, generator=generator)  # type: ignore[arg-type]
    with serving(create_app(settings, answerer=answerer), "uvicorn-admin-page-test") as base:
        yield base


def tab_order(page: sync_api.Page, presses: int) -> list[str]:
    """The ids focused by pressing Tab from the top of the page."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    seen: list[str] = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        seen.append(page.evaluate("document.activeElement ? document.activeElement.id : ''"))
    return seen


@pytest.mark.slow
def test_rating_an_answer_and_running_the_appliance_from_the_admin_page(server: str, site: dict[str, object]) -> None:
    settings = site["settings"]
    assert isinstance(settings, Settings)
    operator, admin = str(site["operator"]), str(site["admin"])
    ARTIFACTS.mkdir(exist_ok=True)
    requests: list[str] = []
    console_errors: list[str] = []
    expect = sync_api.expect

    with sync_api.sync_playwright() as pw:
        assert CHROMIUM is not None
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(20_000)
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
            page.on("dialog", lambda dialog: dialog.accept())

            # --- the operator rates an answer down, by keyboard -------------------------------------------
            page.goto(server + "/")
            page.locator("#token-box summary").click()
            page.get_by_label("Access token", exact=True).fill(operator)
            page.get_by_role("button", name="Save").click()
            question = page.get_by_label("Question", exact=True)
            question.fill(QUESTION)
            question.press("Enter")
            expect(page.locator("main")).to_have_attribute("data-state", "done")
            feedback = page.locator("#feedback")
            expect(feedback).to_be_visible()
            page.locator("#feedback-down").focus()
            page.keyboard.press("Enter")
            expect(page.get_by_label("What was wrong?")).to_be_focused()
            page.get_by_label("What was wrong?").select_option("outdated")
            page.keyboard.press("Tab")
            page.keyboard.type("Valve number changed in 2025")
            page.keyboard.press("Enter")  # submits the form
            expect(page.locator("#feedback-status")).to_have_text(
                "Thank you: rated not helpful. The SOP owners will see it."
            )
            expect(page.locator("#feedback-down")).to_have_attribute("aria-pressed", "true")
            page.screenshot(path=str(ARTIFACTS / "web-page-feedback.png"), full_page=True)

            # A refused question is a gap; a new question hides the buttons until its answer is done.
            question.fill(REFUSED_QUESTION)
            question.press("Enter")
            expect(page.locator("#result")).to_have_attribute("data-outcome", "refused")
            expect(page.locator("#feedback-up")).to_have_attribute("aria-pressed", "false")
            page.locator("#feedback-up").click()
            expect(page.locator("#feedback-status")).to_have_text("Thank you: rated helpful.")

            # --- the admin page: an operator token is refused, an admin token opens it ------------------
            response = page.goto(server + "/admin")
            assert response is not None and response.headers["content-security-policy"] == STRICT_CSP
            expect(page).to_have_title("SOP appliance — admin")
            expect(page.locator("#error")).to_contain_text("Not allowed")
            page.locator("#token-box summary").click()
            page.get_by_label("Admin token", exact=True).fill(admin)
            page.get_by_role("button", name="Save").click()
            expect(page.locator("#status")).to_have_text("Loaded.")
            expect(page.locator("#error")).to_be_hidden()

            facts = page.locator("#index-facts")
            expect(facts).to_contain_text("1 indexed, 1 failed")
            expect(facts).to_contain_text("consistent")
            expect(page.locator("#sources-list")).to_contain_text("plant")
            expect(page.locator("#not-indexed-rows")).to_contain_text("scanned-permit.pdf")
            expect(page.locator("#not-indexed-rows tr")).to_have_count(1)
            expect(page.locator("section#documents")).to_be_visible()

            # Every action is reachable by Tab.
            order = tab_order(page, 80)
            assert set(ADMIN_ACTIONS) <= set(order), [a for a in ADMIN_ACTIONS if a not in order]

            page.locator("#status-refresh").press("Enter")
            expect(page.locator("#status")).to_have_text("Index status loaded.")
            page.locator("#reindex").click()
            expect(page.locator("#reindex-result")).to_contain_text("Reindex done: 0 added, 0 updated, 0 removed")
            page.locator("#models-verify").click()
            expect(page.locator("#models-result")).to_contain_text("All model files intact")
            page.locator("#audit-verify").click()
            expect(page.locator("#audit-result")).to_contain_text("Intact:")

            page.get_by_label("Name", exact=True).fill("night-shift")
            page.get_by_label("Role", exact=True).select_option("operator")
            page.locator("#token-create-button").click()
            expect(page.locator("#new-token-secret")).to_have_text(re.compile(r"^apl_[0-9a-f]{8}_"))
            expect(page.locator("#new-token-secret")).to_be_focused()
            row = page.locator("#tokens-rows tr", has_text="night-shift")
            expect(row).to_contain_text("active")
            row.get_by_role("button", name="Revoke token night-shift").click()
            expect(row).to_contain_text("revoked")

            page.locator("#gaps-load").click()
            gaps = page.locator("#gaps-list > li")
            expect(page.locator("#gaps-summary")).to_contain_text("answer(s) were gaps")
            refused_topic = gaps.filter(has_text=REFUSED_QUESTION)
            expect(refused_topic).to_contain_text("not covered")
            expect(gaps.filter(has_text=QUESTION)).to_contain_text("rated down 1")

            page.locator("#feedback-load").click()
            expect(page.locator("#feedback-summary")).to_contain_text("2 answer(s) rated: 1 helpful, 1 not helpful")
            down = page.locator("#feedback-rows tr.rated-down")
            expect(down).to_contain_text("outdated")
            expect(down).to_contain_text(QUESTION)
            expect(down).to_contain_text("Valve number changed in 2025")
            expect(down).to_contain_text("shift-a")
            page.screenshot(path=str(ARTIFACTS / "admin-page.png"), full_page=True)
        finally:
            browser.close()

    foreign = [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert requests and not foreign, foreign
    # Chromium logs every non-2xx fetch as a console error: the operator token's 403s on /admin are the point.
    unexpected = [error for error in console_errors if "status of 403" not in error]
    assert not unexpected, f"console errors: {unexpected}"

    audited = {record["endpoint"] for record in read_records(settings.audit_dir) if record.get("principal") == "chief"}
    assert {
        "admin_status",
        "reindex",
        "admin_models_verify",
        "admin_audit_verify",
        "admin_tokens",
        "admin_token_create",
        "admin_token_revoke",
        "admin_gaps",
        "admin_feedback",
    } <= audited
    assert verify_audit(settings.audit_dir).ok
    with TokenStore(settings.tokens_path) as store:
        assert [t.active for t in store.list() if t.name == "night-shift"] == [False]


def listed_documents(base: str, token: str) -> list[dict[str, object]]:
    request = urllib.request.Request(base + "/v1/documents", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=30) as response:
        return list(json.load(response)["documents"])


@pytest.mark.slow
def test_uploading_and_deleting_a_document_from_the_admin_page(server: str, site: dict[str, object]) -> None:
    settings = site["settings"]
    assert isinstance(settings, Settings)
    admin = str(site["admin"])
    requests: list[str] = []
    console_errors: list[str] = []
    expect = sync_api.expect
    note = (
        b"# SOP-UP-001 Torque check\n\nRevision 2, effective 2020-01-06. Next review: 2021-01-06.\n\n"
        b"Tighten the flange bolts to 45 Nm in a star pattern, then check again.\n"
    )

    with sync_api.sync_playwright() as pw:
        assert CHROMIUM is not None
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(20_000)
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda msg: console_errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: console_errors.append(f"uncaught: {exc}"))
            page.on("dialog", lambda dialog: dialog.accept())

            page.goto(server + "/admin")
            expect(page.locator("#token-box")).to_have_attribute("open", "")  # no token yet: 401 opens the box
            page.get_by_label("Admin token", exact=True).fill(admin)
            page.get_by_role("button", name="Save").click()
            expect(page.locator("#status")).to_have_text("Loaded.")
            documents = page.locator("section#documents")
            expect(documents).to_contain_text("appliance backup DEST")
            expect(page.locator("#upload-file")).to_have_attribute("accept", re.compile(r"\.md,.*\.docx,.*\.tiff"))
            expect(page.locator("#documents-rows tr")).to_have_count(2)  # the plant's SOP and its failed PDF

            # Upload through the form: the outcome names the document's id.
            page.get_by_label("File", exact=True).set_input_files(
                {"name": "torque-check.md", "mimeType": "text/markdown", "buffer": note}
            )
            page.locator("#upload-button").click()
            result = page.locator("#upload-result")
            expect(result).to_have_text(re.compile(r"^torque-check\.md: added as document \d+ \(.*torque-check\.md"))
            expect(page.locator("#upload-button")).to_be_focused()
            uploaded = [d for d in listed_documents(server, admin) if str(d["path"]).endswith("/torque-check.md")]
            assert len(uploaded) == 1 and uploaded[0]["status"] == "indexed", uploaded
            document_id = uploaded[0]["id"]
            assert f"document {document_id} " in result.inner_text()
            row = page.locator("#documents-rows tr", has_text="torque-check.md")
            expect(row).to_have_attribute("data-document-id", str(document_id))
            # Its revision, as the document states it, and the flag of a document past its review date.
            expect(row.locator("td.revision")).to_contain_text("SOP-UP-001 rev 2, effective 2020-01-06")
            expect(row.locator(".review-overdue")).to_have_text("Past its review date 2021-01-06")

            # The same name again without "replace": the server's refusal is shown.
            page.get_by_label("File", exact=True).set_input_files(
                {"name": "torque-check.md", "mimeType": "text/markdown", "buffer": note}
            )
            page.locator("#upload-button").click()
            expect(result).to_contain_text("torque-check.md not uploaded.")
            # ... and with it: unchanged bytes, the same document.
            page.get_by_label("Replace if it exists").check()
            page.locator("#upload-button").click()
            expect(result).to_have_text(re.compile(rf"^torque-check\.md: \w+ as document {document_id} "))

            # A plant document is not deleted from the page: the server says why.
            plant = page.locator("#documents-rows tr", has_text="SOP-CL-004.md")
            plant.get_by_role("button", name=re.compile("^Delete document")).click()
            expect(page.locator("#documents-result")).to_contain_text("Not deleted:")
            expect(plant).to_have_count(1)

            # Delete the uploaded one through the page.
            row.get_by_role("button", name=re.compile("^Delete document .*torque-check.md$")).click()
            deleted = re.compile(r"^Deleted .*torque-check\.md \(removed\)\.")
            expect(page.locator("#documents-result")).to_have_text(deleted)
            expect(row).to_have_count(0)
            page.screenshot(path=str(ARTIFACTS / "admin-page-documents.png"), full_page=True)
        finally:
            browser.close()

    assert not [d for d in listed_documents(server, admin) if str(d["path"]).endswith("/torque-check.md")]
    foreign = [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert requests and not foreign, foreign
    # Chromium logs as console errors the first calls without a token (401), the refused duplicate and delete (409).
    unexpected = [error for error in console_errors if not re.search("status of (401|409)", error)]
    assert not unexpected, f"console errors: {unexpected}"
    audited = {r["endpoint"] for r in read_records(settings.audit_dir) if r.get("principal") == "chief"}
    assert {"documents", "document_upload", "document_delete"} <= audited
    assert verify_audit(settings.audit_dir).ok
