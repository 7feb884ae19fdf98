"""The operator page in a real headless Chromium against a real uvicorn on 127.0.0.1.

The answer comes from a scripted generator (no LLM), gated so the test can see the page mid-stream:
the evidence is listed and the first words are on screen before the answer is finished. Then the
finished answer, its grounding badge and citations; a citation opens its passage with the
matching sentence highlighted; a 401 asks for the token, which lives in sessionStorage only;
a refusal shows the refusal display with the closest passages. Throughout: no console errors and
no request to any host but 127.0.0.1. Screenshots go to test-artifacts/ (git-ignored).

Needs the Debian package `chromium` and the Python package `playwright` (never `playwright install`:
that downloads browsers). Without them the test is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import uvicorn

from appliance.answer.answerer import Answerer
from appliance.config import GeneratorSettings, Settings
from appliance.ingest.pipeline import ingest
from appliance.models.generation import ChatMessage, GenerationStats, GenerationStream
from appliance.models.generation.base import StatsBox
from appliance.server.app import create_app
from tests.fakes import cut_at_max_tokens, generated

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"

if CHROMIUM is None:
    pytest.skip(
        "/usr/bin/chromium not found: install the Debian package (apt-get install -y chromium) to run the browser test",
        allow_module_level=True,
    )
try:
    from playwright import sync_api
except ImportError:  # pragma: no cover - the Makefile installs it
    pytest.fail("the Python package playwright is missing: .venv/bin/pip install playwright", pytrace=False)

SOP = """# Chlorine cylinder change

## Isolation

Close the cylinder valve VLV-3042-B and wait until the vacuum regulator gauge reads zero.
Hang the tag <DO NOT OPEN> on the valve handle.
Replace the lead gasket RW-GSK-0410 at every connection; a gasket is never reused.

## Leak check

Apply ammonia vapour to the joint. A white cloud means a leak: evacuate and call extension 2100.
"""

QUESTION = "What do I close before the cylinder change?"
FIRST_HALF = "Close the cylinder valve VLV-3042-B"
ANSWER = FIRST_HALF + " and wait until the vacuum regulator gauge reads zero [1]."
# An invented step, and two steps that leave out what their source gives (quoted under them): the gauge's
# "zero" and the gasket's part number.
UNSUPPORTED = (
    "Close VLV-3042-B [1]. Replace the lead gasket at every connection [1]. Then open valve VLV-9999-Z to vent [7]."
)
REFUSED_QUESTION = "How do I restart the Zabbix agent on the bastion hosts?"
# Longer than generator.max_tokens (384; one token per word here): the model is cut off.
CUT = ANSWER + " " + " ".join(["Replace the lead gasket RW-GSK-0410 at every connection [1]."] * 45)


class GatedGenerator:
    """The scripted generator of test_answerer.py with one answer per call; the first one stops halfway
    until the test opens the gate."""

    model_id = "scripted"
    n_ctx = 4096
    last_stats: GenerationStats | None = None

    def __init__(self, answers: list[str], pause_after: str) -> None:
        self.answers = answers
        self.pause_after = pause_after
        self.gate = threading.Event()
        self.calls = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def prompt_tokens(self, messages: list[ChatMessage]) -> int:
        return sum(self.count_tokens(m.content) for m in messages)

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        box = StatsBox()
        words = self.answers[min(self.calls, len(self.answers) - 1)].split(" ")
        words, finish = cut_at_max_tokens(words, max_tokens)
        pause_at = len(self.pause_after.split(" ")) if self.calls == 0 else -1
        self.calls += 1

        def pieces() -> Iterator[str]:
            for i, word in enumerate(words):
                if i == pause_at:
                    self.gate.wait(timeout=20)  # never hang the suite if the page does not get here
                yield word if i == 0 else " " + word
            box.stats = GenerationStats(self.prompt_tokens(messages), len(words), 5.0, 5.0, 1.0, 2.0, 0.0, finish)

        return GenerationStream(pieces(), box)  # type: ignore[arg-type]

    def complete(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> tuple[str, GenerationStats]:
        with self.stream(messages, max_tokens=max_tokens) as stream:
            text = "".join(stream)
        assert stream.stats is not None
        return text, stream.stats

    def close(self) -> None:
        self.gate.set()

    def queue_depth(self) -> int:
        return 0

    def system_info(self) -> dict[str, Any]:
        return {"backend": "scripted"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The conftest's settings, answering with the (scripted) model; quoted answers have their own test below."""
    return generated(settings)


@pytest.fixture
def indexed(settings: Settings, tmp_path: Path) -> Settings:
    root = tmp_path / "plant"
    root.mkdir()
    (root / "SOP-CL-004.md").write_text(SOP)
    ingest(settings, [root])
    return settings


@pytest.fixture
def token(indexed: Settings) -> str:
    """With an active token the API wants `Authorization: Bearer`, even from loopback."""
    from appliance.server.auth import TokenStore

    with TokenStore(indexed.tokens_path) as store:
        _, secret = store.create("operator", name="shift-a")
    return secret


@pytest.fixture
def generator() -> Iterator[GatedGenerator]:
    gen = GatedGenerator([ANSWER, UNSUPPORTED, CUT], FIRST_HALF)
    yield gen
    gen.gate.set()


@contextlib.contextmanager
def serving(app: Any, name: str) -> Iterator[str]:
    """A real uvicorn serving `app` on a free 127.0.0.1 port in a thread: its base URL, once it has started."""
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=15)


@contextlib.contextmanager
def watched_page(url: str) -> Iterator[tuple[Any, list[str], list[str]]]:
    """A desktop-sized page of a fresh headless Chromium opened at `url`: (page, the URL of every request
    it made, its console errors and uncaught exceptions)."""
    requests: list[str] = []
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.on("request", lambda request: requests.append(request.url))
            page = context.new_page()
            page.set_default_timeout(20_000)
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
            page.goto(url)
            yield page, requests, errors
        finally:
            browser.close()


@pytest.fixture
def server(indexed: Settings, token: str, generator: GatedGenerator) -> Iterator[str]:
    answerer = Answerer(indexed, generator=generator)  # type: ignore[arg-type]
    with serving(create_app(indexed, answerer=answerer), "uvicorn-web-page-test") as base:
        try:
            yield base
        finally:
            generator.gate.set()  # a request still waiting on the gate must end before the server can stop


@pytest.mark.slow
def test_operator_page_in_a_real_browser(server: str, token: str, generator: GatedGenerator) -> None:
    ARTIFACTS.mkdir(exist_ok=True)

    with watched_page(server + "/") as (page, requests, console_errors):
        page.set_default_timeout(15_000)
        expect = sync_api.expect
        expect(page).to_have_title("SOP assistant")
        main = page.locator("main")
        expect(main).to_have_attribute("data-state", "idle")
        # When the index this server answers from was last updated (GET /readyz, open).
        expect(page.locator("#index-updated")).to_contain_text("Index updated")

        # --- no token yet: the 401 problem asks for it ------------------------------------------
        question = page.get_by_label("Question", exact=True)
        question.fill(QUESTION)
        question.press("Enter")
        expect(main).to_have_attribute("data-state", "error")
        expect(page.locator("#error")).to_contain_text("access token")
        expect(page.locator("#token-box")).to_have_attribute("open", "")
        expect(page.get_by_label("Access token", exact=True)).to_be_focused()
        page.screenshot(path=str(ARTIFACTS / "web-page-401.png"))

        page.get_by_label("Access token", exact=True).fill(token)
        page.get_by_role("button", name="Save").click()
        expect(page.locator("#token-state")).to_have_text("set")
        assert page.evaluate("sessionStorage.getItem('appliance.token')") == token
        assert page.evaluate("localStorage.length") == 0, "the token must not outlive the tab"

        # --- ask: evidence first, the answer streamed ----------------------------------------------
        question.fill("")
        question.press_sequentially(QUESTION)
        question.press("Shift+Enter")  # a new line, not a submit
        assert question.input_value() == QUESTION + "\n"
        expect(main).to_have_attribute("data-state", "error")
        question.press("Enter")

        expect(main).to_have_attribute("data-state", "streaming")
        sources = page.locator("#evidence-list > li")
        expect(sources.first).to_be_visible()
        expect(page.locator("#evidence-heading")).to_have_text("Sources")
        expect(sources.first).to_contain_text("SOP-CL-004.md")
        expect(page.locator("#answer")).to_have_text(FIRST_HALF)
        expect(page.locator("#answer")).to_have_attribute("aria-busy", "true")
        page.screenshot(path=str(ARTIFACTS / "web-page-streaming.png"))
        generator.gate.set()

        expect(main).to_have_attribute("data-state", "done", timeout=30_000)
        answer = page.locator("#answer")
        expect(answer).to_have_text(ANSWER)
        expect(answer).to_have_attribute("aria-live", "polite")
        expect(page.locator("#badge")).to_contain_text("Every statement is supported")
        expect(page.locator("#quotes")).to_be_hidden()  # the answer copies its source's line
        expect(page.locator("#timings")).to_contain_text("First words")
        expect(page.locator("#timings")).to_contain_text("Total")
        expect(page.locator("#cited-list > li")).to_have_count(1)
        expect(page.locator("#cited-list")).to_contain_text("Isolation")

        # --- citation [1] inside the answer opens its passage, sentence highlighted -------------------
        source_1 = page.locator("#source-1")
        expect(source_1.locator("details")).not_to_have_attribute("open", "")
        cite = answer.locator("button.cite[data-source='1']")
        expect(cite).to_have_text("[1]")
        cite.click()
        expect(source_1.locator("details")).to_have_attribute("open", "")
        passage = source_1.locator(".passage")
        expect(passage).to_be_visible()
        expect(source_1.locator(".src-meta")).to_contain_text("plant/SOP-CL-004.md")
        expect(source_1.locator(".src-meta")).to_contain_text("Isolation")
        marks = passage.locator("mark")
        assert marks.count() >= 1
        assert any("VLV-3042-B" in text for text in marks.all_inner_texts())
        expect(passage).to_contain_text("<DO NOT OPEN>")  # server text is text, never markup
        built = "el => [...el.querySelectorAll('*')].every(n => n.tagName === 'MARK' || n.className === 'ident')"
        assert passage.evaluate(built), "the passage holds elements the page did not build"
        expect(source_1.locator("summary")).to_be_focused()
        # Keyboard: the citation in the "Cited" list toggles nothing but reopens the same source.
        source_1.locator("summary").press("Enter")  # closes it
        expect(source_1.locator("details")).not_to_have_attribute("open", "")
        page.locator("#cited-list button.cite").focus()
        page.keyboard.press("Enter")
        expect(source_1.locator("details")).to_have_attribute("open", "")
        page.screenshot(path=str(ARTIFACTS / "web-page.png"), full_page=True)

        # --- the same page on a 360 px phone: nothing wider than the screen -------------------------
        page.set_viewport_size({"width": 360, "height": 780})
        page.evaluate("window.scrollTo(0, 0)")
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        page.screenshot(path=str(ARTIFACTS / "web-page-360.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.emulate_media(color_scheme="dark")
        page.screenshot(path=str(ARTIFACTS / "web-page-dark.png"))
        page.emulate_media(color_scheme="light")

        # --- a refusal: the sentence, the reason, the closest passages -------------------------------
        question.fill(REFUSED_QUESTION)
        question.press("Enter")
        expect(page.locator("#result")).to_have_attribute("data-outcome", "refused")
        expect(main).to_have_attribute("data-state", "done")
        refusal = page.locator("#refusal")
        expect(refusal).to_be_visible()
        expect(refusal).to_contain_text("The documents do not cover this.")
        expect(page.locator("#refusal-reason")).to_contain_text("Zabbix")
        expect(page.locator("#evidence-heading")).to_have_text("Closest passages")
        expect(sources.first).to_be_visible()
        expect(page.locator("#badge")).to_be_hidden()
        expect(page.locator("#answer")).to_have_text("")
        expect(page.locator("#timings")).to_contain_text("No model asked")
        page.screenshot(path=str(ARTIFACTS / "web-page-refusal.png"), full_page=True)

        # --- an answer with an invented step: the warning, the unsupported sentence, the removed [7] ------
        question.fill(QUESTION)
        question.press("Enter")
        expect(page.locator("#result")).to_have_attribute("data-outcome", "answer")
        expect(main).to_have_attribute("data-state", "done")
        expect(page.locator("#badge")).to_contain_text("Check before acting")
        expect(page.locator("#badge")).to_contain_text("in no passage: VLV-9999-Z")  # named, not just warned
        expect(page.locator("#unsupported-list")).to_contain_text("VLV-9999-Z")
        expect(page.locator("#removed")).to_contain_text("[7]")
        expect(page.locator("#answer")).not_to_contain_text("[7]")
        expect(page.locator("#refusal")).to_be_hidden()
        quotes = page.locator("#quotes-list > li")
        expect(quotes).to_have_count(2)  # in answer order, each under the step that leaves its value out
        expect(quotes.nth(0).locator(".quote-for")).to_contain_text("Close VLV-3042-B")
        expect(quotes.nth(0).locator("blockquote")).to_contain_text("reads zero")
        quote = quotes.nth(1)
        expect(quote.locator(".quote-for")).to_have_text("Replace the lead gasket at every connection.")
        expect(quote.locator("blockquote")).to_contain_text("RW-GSK-0410")
        expect(quote.locator("button.cite[data-source='1']")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "web-page-warning.png"))

        # --- an answer cut at the token limit: never shown as complete -------------------------------
        question.fill(QUESTION)
        question.press("Enter")
        expect(main).to_have_attribute("data-state", "done")
        expect(page.locator("#badge")).to_contain_text("cut at the length limit")
        expect(page.locator("#badge")).to_have_class(re.compile(r"\bwarn\b"))
        expect(page.locator("#quotes")).to_be_hidden()  # this answer carries the part number itself

        # --- clearing the token forgets it ----------------------------------------------------------
        page.locator("#token-box summary").click()
        page.get_by_role("button", name="Clear").click()
        assert page.evaluate("sessionStorage.getItem('appliance.token')") is None
        expect(page.locator("#token-state")).to_have_text("not set")

    assert requests, "the browser made no requests"
    foreign = [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert not foreign, f"requests to other hosts: {foreign}"
    # Chromium logs every non-2xx fetch as a console error: the one 401 above is the point of that step.
    expected = [e for e in console_errors if "status of 401" in e]
    assert len(expected) <= 1, console_errors
    unexpected = [e for e in console_errors if e not in expected]
    assert not unexpected, f"console errors: {unexpected}"


# --- the demo corpus: open the cited PDF and Markdown SOPs, then a follow-up ---------------------

DEMO_CORPUS = Path(__file__).resolve().parent.parent / "docs_corpus"
PDF_QUESTION = "What permissives must be true before PLC-300 starts a filter backwash?"
MD_QUESTION = "What do I close to isolate the empty chlorine bank?"
FOLLOW_UP = "and how long must I wait after that?"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# The id of Chromium's built-in PDF viewer (a component extension, the same in every build).
PDF_VIEWER_EXTENSION = "mhjfbmdgcfjbbpaeojofohoefgiehjai"


class CitingGenerator(GatedGenerator):
    """Answers like a careful model: one sentence copied from the source whose label names `marker`
    (the first holding `phrase`), cited with that source's number. The plan gives one (marker, phrase)
    per call; the prompt's own numbering decides the number, so retrieval order does not matter."""

    def __init__(self, plan: list[tuple[str, str]]) -> None:
        super().__init__([""], pause_after="")
        self.plan = plan
        self.gate.set()

    def stream(self, messages: list[ChatMessage], *, max_tokens: int | None = None) -> GenerationStream:
        marker, phrase = self.plan[min(self.calls, len(self.plan) - 1)]
        prompt = messages[-1].content
        blocks = re.split(r"\n\n(?=\[\d+\] )", prompt.split("Sources:\n\n", 1)[-1].split("\n\nQuestion:", 1)[0])
        answer = "The documents do not cover this."
        for block in blocks:
            label, _, text = block.partition("\n")
            number = re.match(r"\[(\d+)\]", label)
            if number and marker in label:
                sentences = [" ".join(s.split()) for s in _SENTENCE.split(text) if s.strip()]
                chosen = next((s for s in sentences if phrase.lower() in s.lower()), sentences[0])
                answer = re.sub(r"^\d+\.\s+", "", chosen) + f" [{number.group(1)}]"
                break
        self.answers = [answer]
        return super().stream(messages, max_tokens=max_tokens)


def pdf_viewer_page(browser: Any, page: int, timeout_s: float = 20.0) -> str | None:
    """The page number Chromium's built-in PDF viewer shows ("3/8"), read over CDP from its extension frame
    (Playwright does not list that frame): as soon as it shows `page`, else the last it showed within
    `timeout_s` (it shows "1/8" first and moves to #page=N once the document has loaded). None when no
    viewer appeared."""

    cdp = browser.new_browser_cdp_session()
    deadline = time.monotonic() + timeout_s
    target = None
    while time.monotonic() < deadline and target is None:
        infos = cdp.send("Target.getTargets")["targetInfos"]
        target = next((t for t in infos if t["url"].startswith(f"chrome-extension://{PDF_VIEWER_EXTENSION}/")), None)
        if target is None:
            time.sleep(0.25)
    if target is None:
        return None
    replies: list[dict[str, Any]] = []
    cdp.on("Target.receivedMessageFromTarget", lambda event: replies.append(json.loads(event["message"])))
    session = cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": False})["sessionId"]
    script = (
        "(() => { const v = document.querySelector('pdf-viewer');"
        " const t = v && v.shadowRoot.querySelector('viewer-toolbar');"
        " const s = t && t.shadowRoot.querySelector('viewer-page-selector');"
        " const i = s && s.shadowRoot.querySelector('input');"
        " return i && s.docLength ? i.value + '/' + s.docLength : null; })()"
    )
    shown: str | None = None
    for attempt in range(int(timeout_s / 0.25)):
        message = {
            "id": attempt + 1,
            "method": "Runtime.evaluate",
            "params": {"expression": script, "returnByValue": True},
        }
        cdp.send("Target.sendMessageToTarget", {"sessionId": session, "message": json.dumps(message)})
        time.sleep(0.25)
        values = [r.get("result", {}).get("result", {}).get("value") for r in replies]
        if values and values[-1]:
            shown = str(values[-1])
            if shown.split("/")[0] == str(page):
                break
    return shown


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory, models_dir: Path) -> Path:
    """The demo corpus indexed once for this module's servers; each serves its own copy of the home."""
    home = tmp_path_factory.mktemp("demo-index") / "home"
    ingest(Settings(home=home, models_dir=models_dir), [DEMO_CORPUS])
    return home


@pytest.fixture
def demo_server(settings: Settings, demo_home: Path) -> Iterator[tuple[str, str, CitingGenerator]]:
    from appliance.server.auth import TokenStore

    shutil.copytree(demo_home, settings.home, dirs_exist_ok=True)
    with TokenStore(settings.tokens_path) as store:
        _, secret = store.create("operator", name="shift-b")
    generator = CitingGenerator(
        [("SOP-FLT-001", "will not start a backwash"), ("SOP-CL-004", "VLV-4501-A"), ("SOP-CL-004", "minutes")]
    )
    app = create_app(settings, answerer=Answerer(settings, generator=generator))  # type: ignore[arg-type]
    with serving(app, "uvicorn-demo-page-test") as base:
        yield base, secret, generator


@pytest.mark.slow
def test_open_the_cited_pdf_and_markdown_sops_and_ask_a_follow_up(
    demo_server: tuple[str, str, CitingGenerator],
) -> None:
    server, token, _ = demo_server
    ARTIFACTS.mkdir(exist_ok=True)
    bodies: list[str] = []

    with watched_page(server + "/") as (page, requests, console_errors):
        context, browser = page.context, page.context.browser
        page.on("request", lambda r: bodies.append(r.post_data or "") if r.url.endswith("/v1/ask") else None)
        expect = sync_api.expect
        page.locator("#token-box summary").click()
        page.get_by_label("Access token", exact=True).fill(token)
        page.get_by_role("button", name="Save").click()
        main = page.locator("main")
        question = page.get_by_label("Question", exact=True)

        # --- a PDF SOP: its citation opens the view at the cited page ----------------------------
        question.fill(PDF_QUESTION)
        question.press("Enter")
        expect(main).to_have_attribute("data-state", "done", timeout=60_000)
        expect(page.locator("#result")).to_have_attribute("data-outcome", "answer")
        cited = page.locator("#cited-list > li").filter(has_text="SOP-FLT-001")
        expect(cited).to_have_count(1)
        page_number = int(re.search(r"page (\d+)", cited.inner_text()).group(1))  # type: ignore[union-attr]
        opener = cited.get_by_role("button", name="Open the document")
        opener.focus()
        page.keyboard.press("Enter")  # keyboard reachable
        viewer = page.locator("#viewer")
        expect(viewer).to_have_attribute("data-state", "open")
        current = viewer.locator(f'section.doc-current[data-page="{page_number}"]')
        expect(current).to_be_in_viewport()
        expect(current).to_contain_text("PLC-300 will not start a backwash")
        expect(current.locator("mark").first).to_be_visible()
        expect(page.locator("#viewer-title")).to_be_focused()
        page.screenshot(path=str(ARTIFACTS / "web-page-pdf-view.png"))
        original = page.locator("#viewer-original")
        expect(original).to_have_text(f"Open the PDF at page {page_number}")
        with context.expect_page() as popup:
            original.click()
        pdf = popup.value
        pdf.wait_for_load_state()
        expect(pdf).to_have_url(re.compile(rf"^blob:http://127\.0\.0\.1:\d+/[0-9a-f-]+#page={page_number}$"))
        shown = pdf_viewer_page(browser, page_number)
        assert shown is not None and shown.split("/")[0] == str(page_number), shown
        pdf.screenshot(path=str(ARTIFACTS / "web-page-pdf-original.png"))
        pdf.close()
        page.keyboard.press("Escape")
        expect(viewer).to_be_hidden()
        expect(opener).to_be_focused()

        # --- a Markdown SOP: its citation shows the rendered SOP, the cited sentences highlighted --------
        question.fill(MD_QUESTION)
        question.press("Enter")
        expect(main).to_have_attribute("data-state", "done", timeout=60_000)
        expect(page.locator("#answer")).to_contain_text("VLV-4501-A")
        expect(page.locator("#thread-list > li")).to_have_count(1)  # the PDF question, above
        cited = page.locator("#cited-list > li").filter(has_text="SOP-CL-004")
        cited.get_by_role("button", name="Open the document").click()
        expect(viewer).to_have_attribute("data-state", "open")
        target = viewer.locator("#doc-cited")
        expect(target).to_be_in_viewport()
        expect(target).to_have_js_property("tagName", "MARK")
        assert viewer.locator("mark").count() >= 1
        expect(viewer.locator("h3", has_text="6.2 Isolate the empty bank")).to_be_visible()
        expect(viewer.locator("#viewer-body table").first).to_be_attached()  # rendered, not raw pipes
        assert viewer.locator("#viewer-body script, #viewer-body img, #viewer-body iframe").count() == 0
        page.screenshot(path=str(ARTIFACTS / "web-page-markdown-view.png"))
        page.locator("#viewer-close").click()

        # --- the follow-up: only makes sense with the question before it ---------------------------------
        question.fill(FOLLOW_UP)
        question.press("Enter")
        expect(main).to_have_attribute("data-state", "done", timeout=60_000)
        expect(page.locator("#result")).to_have_attribute("data-outcome", "answer")
        expect(page.locator("#answer")).to_contain_text("5 minutes")
        expect(page.locator("#cited-list")).to_contain_text("SOP-CL-004")
        expect(page.locator("#searched")).to_contain_text(MD_QUESTION)
        expect(page.locator("#thread-list > li")).to_have_count(2)
        sent = json.loads(bodies[-1])
        assert sent["question"] == FOLLOW_UP and MD_QUESTION in [t["content"] for t in sent["history"]]
        assert page.evaluate("JSON.parse(sessionStorage.getItem('appliance.thread')).length") == 3
        assert page.evaluate("localStorage.length") == 0
        page.screenshot(path=str(ARTIFACTS / "web-page-follow-up.png"), full_page=True)

        page.get_by_role("button", name="New conversation").click()
        expect(page.locator("#thread")).to_be_hidden()
        assert page.evaluate("sessionStorage.getItem('appliance.thread')") is None

    # Chromium's own PDF viewer loads its files from chrome:// and its extension: the browser's, not the network.
    internal = ("blob:http://127.0.0.1:", "chrome://resources/", f"chrome-extension://{PDF_VIEWER_EXTENSION}/")
    foreign = [url for url in requests if urlsplit(url).hostname != "127.0.0.1" and not url.startswith(internal)]
    assert not foreign, f"requests to other hosts: {foreign}"
    assert not console_errors, f"console errors: {console_errors}"


@pytest.fixture
def quoted_server(home: Path, models_dir: Path, demo_home: Path) -> Iterator[tuple[str, str]]:
    """The demo corpus served with the default settings: answers are the documents' own text."""
    from appliance.server.auth import TokenStore

    generator = GeneratorSettings.model_validate({"model": "smollm2-135m-instruct"})  # in the test model store
    settings = Settings(home=home, models_dir=models_dir, generator=generator)
    assert settings.answer.mode == "quoted"
    shutil.copytree(demo_home, home, dirs_exist_ok=True)
    with TokenStore(settings.tokens_path) as store:
        _, secret = store.create("operator", name="shift-c")
    with serving(create_app(settings), "uvicorn-quoted-page-test") as base:
        yield base, secret


@pytest.mark.slow
def test_a_procedure_is_shown_as_the_sop_writes_it_and_opens_at_its_section(quoted_server: tuple[str, str]) -> None:
    server, token = quoted_server
    ARTIFACTS.mkdir(exist_ok=True)
    with watched_page(server + "/") as (page, requests, console_errors):
        expect = sync_api.expect
        page.locator("#token-box summary").click()
        page.get_by_label("Access token", exact=True).fill(token)
        page.get_by_role("button", name="Save").click()
        question = page.get_by_label("Question", exact=True)
        question.fill("How do I change a chlorine ton container?")
        question.press("Enter")
        expect(page.locator("main")).to_have_attribute("data-state", "done", timeout=60_000)
        expect(page.locator("#result")).to_have_attribute("data-outcome", "answer")

        steps = page.locator("#steps")
        expect(steps).to_be_visible()
        expect(page.locator("#steps-kind")).to_contain_text("every line below is the SOP's own text")
        headings = page.locator("#steps-list > li.step-heading")
        # the procedure, or the SOP holding it (the fitted choice prefers a complete answer to a tight one)
        expect(headings.first).to_contain_text(re.compile(r"6\. Procedure|SOP-CL-004"))
        expect(headings.filter(has_text="6.5 Connect and start up")).to_have_count(1)
        items = page.locator("#steps-list > li")
        texts = [text.strip() for text in items.all_inner_texts()]
        first = next(i for i, t in enumerate(texts) if t.startswith("1. Tell the control room"))
        last = next(i for i, t in enumerate(texts) if t.startswith("3. Tell the Shift Supervisor"))
        isolate = next(i for i, t in enumerate(texts) if "Close the bank header isolation valve" in t)
        assert first < isolate < last, "the steps are shown in the document's order"
        expect(page.locator("#answer")).to_be_empty()  # nothing paraphrased above the steps
        expect(page.locator("#badge")).to_contain_text("Shown as the document writes it")
        expect(page.locator("#timings")).to_contain_text("No model asked")
        expect(page.locator("#alternatives-list > li").first).to_be_visible()
        # Every citation says which revision it is from; this one is past its review date (annual cycle).
        cited = page.locator("#cited-list > li").filter(has_text="SOP-CL-004").first
        expect(cited.locator(".cited-revision")).to_contain_text("SOP-CL-004 rev 5, effective 2023-08-07 › ")
        expect(cited.locator(".review-overdue")).to_contain_text("Past its review date 2024-08-07")
        page.screenshot(path=str(ARTIFACTS / "web-page-quoted-procedure.png"), full_page=True)

        opener = headings.filter(has_text="6.2 Isolate the empty bank").get_by_role(
            "button", name="Open the document here"
        )
        opener.focus()
        page.keyboard.press("Enter")  # keyboard reachable
        viewer = page.locator("#viewer")
        expect(viewer).to_have_attribute("data-state", "open")
        expect(viewer.locator("h3", has_text="6.2 Isolate the empty bank")).to_be_visible()
        page.keyboard.press("Escape")
        expect(viewer).to_be_hidden()

        # Equipment no SOP covers: refused, or the closest section under a badge that says to check it, no ✓.
        question.fill("How do I start up the chlorine dioxide generator?")
        question.press("Enter")
        expect(page.locator("main")).to_have_attribute("data-state", "done", timeout=60_000)
        if page.locator("#result").get_attribute("data-outcome") == "answer":
            expect(page.locator("#badge")).to_have_class(re.compile(r"\bwarn\b"))
            expect(page.locator("#badge")).to_contain_text("Check")
            expect(page.locator("#badge")).not_to_contain_text("✓")

        # A section the ranker is sure of, on a question with a word the documents never use: the ✓ stays strict,
        # the word is named instead.
        question.fill("one HMI is frozen, clock stopped and the values went magenta - how do I restart it?")
        question.press("Enter")
        expect(page.locator("main")).to_have_attribute("data-state", "done", timeout=60_000)
        expect(page.locator("#badge")).to_contain_text("The documents never use: went")
        expect(page.locator("#badge")).not_to_contain_text("✓")
    foreign = [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert not foreign, f"requests to other hosts: {foreign}"
    assert not console_errors, f"console errors: {console_errors}"


@pytest.fixture
def judging_server(home: Path, models_dir: Path, tmp_path: Path) -> Iterator[tuple[str, threading.Event]]:
    """An alarm guide and the SOP it points to, served with the judge after the steps (the CPU's default when on);
    the scripted judge waits on a gate, as a slow CPU model does, then picks the ranker's second region."""
    from tests.fakes import ScriptedJudgeGenerator, judging
    from tests.test_section_choice import ALARMS, LEAK

    settings = judging(Settings(home=home, models_dir=models_dir), "after")
    root = tmp_path / "plant"
    root.mkdir()
    (root / "SOP-SCADA-001.md").write_text(ALARMS)
    (root / "SOP-CL-001.md").write_text(LEAK)
    ingest(settings, [root])
    gate = threading.Event()
    answerer = Answerer(settings, generator=ScriptedJudgeGenerator(favour=None, gate=gate))  # type: ignore[arg-type]
    with serving(create_app(settings, answerer=answerer), "uvicorn-judge-page-test") as base:
        try:
            yield base, gate
        finally:
            gate.set()


@pytest.mark.slow
def test_steps_replaced_by_the_local_models_check_say_so_and_offer_the_first(
    judging_server: tuple[str, threading.Event],
) -> None:
    from tests.test_judge_after import QUESTION as JUDGED_QUESTION

    server, gate = judging_server
    ARTIFACTS.mkdir(exist_ok=True)
    with watched_page(server + "/") as (page, requests, console_errors):
        expect = sync_api.expect
        question = page.get_by_label("Question", exact=True)
        question.fill(JUDGED_QUESTION)
        question.press("Enter")
        # The ranker's steps are on screen while the model checks them, and the page says they may change.
        judged = page.locator("#judged")
        expect(judged).to_contain_text("Checking this choice with the local model")
        expect(page.locator("#steps")).to_be_visible()
        first = page.locator("#steps-list > li").first.inner_text()
        expect(page.locator("#badge")).to_be_hidden()  # no ✓ before the check is done
        expect(page.locator("#answer")).not_to_have_class(re.compile(r"\bstreaming\b"))  # nothing is being written
        page.screenshot(path=str(ARTIFACTS / "web-page-judge-checking.png"), full_page=True)

        gate.set()
        expect(page.locator("main")).to_have_attribute("data-state", "done", timeout=30_000)
        expect(judged).to_contain_text("Replaced after the local model's check")
        expect(judged).to_have_class(re.compile(r"\breplaced\b"))
        assert page.locator("#steps-list > li").first.inner_text() != first
        expect(page.locator("#badge")).not_to_contain_text("✓")
        expect(page.locator("#timings")).to_contain_text("Choice checked by the local model in")
        page.screenshot(path=str(ARTIFACTS / "web-page-judge-replaced.png"), full_page=True)
        judged.get_by_role("button", name="Open the first").click()
        expect(page.locator("#viewer")).to_have_attribute("data-state", "open")
    foreign = [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert not foreign, f"requests to other hosts: {foreign}"
    assert not console_errors, f"console errors: {console_errors}"
