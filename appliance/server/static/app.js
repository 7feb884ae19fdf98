/* The operator page: ask → stream the answer over SSE (fetch + ReadableStream) → show the checked result;
 * open a cited document at the cited place; keep the conversation so follow-ups are understood.
 *
 * Everything the server sends is untrusted text: it only ever reaches the page through textContent
 * and DOM nodes built here (never innerHTML); a document view is a tree of allowed tag names only.
 * No external requests, no inline code (strict CSP). The token and the conversation live in
 * sessionStorage only: closing the tab forgets them; the server keeps no conversation.
 */
"use strict";

(function () {
  const THREAD_KEY = "appliance.thread";
  const THREAD_TURNS = 10; // turns kept in the tab
  const HISTORY_TURNS = 3; // earlier turns sent with a question
  const REFUSAL = "The documents do not cover this.";

  const $ = (id) => document.getElementById(id);
  const ui = {
    main: $("main"),
    form: $("ask-form"),
    question: $("question"),
    ask: $("ask"),
    stop: $("stop"),
    status: $("status"),
    error: $("error"),
    errorTitle: $("error-title"),
    errorDetail: $("error-detail"),
    errorServer: $("error-server"),
    result: $("result"),
    asked: $("asked"),
    refusal: $("refusal"),
    refusalReason: $("refusal-reason"),
    answer: $("answer"),
    steps: $("steps"),
    stepsKind: $("steps-kind"),
    stepsList: $("steps-list"),
    alternatives: $("alternatives"),
    alternativesList: $("alternatives-list"),
    badge: $("badge"),
    alsoMatches: $("also-matches"),
    judged: $("judged"),
    unsupported: $("unsupported"),
    unsupportedList: $("unsupported-list"),
    removed: $("removed"),
    corrected: $("corrected"),
    quotes: $("quotes"),
    quotesList: $("quotes-list"),
    cited: $("cited"),
    citedList: $("cited-list"),
    timings: $("timings"),
    evidenceSection: $("evidence-section"),
    evidenceHeading: $("evidence-heading"),
    evidenceHelp: $("evidence-help"),
    evidenceList: $("evidence-list"),
    searched: $("searched"),
    thread: $("thread"),
    threadList: $("thread-list"),
    newThread: $("new-thread"),
    viewer: $("viewer"),
    viewerTitle: $("viewer-title"),
    viewerWhere: $("viewer-where"),
    viewerNotice: $("viewer-notice"),
    viewerStatus: $("viewer-status"),
    viewerBody: $("viewer-body"),
    viewerOriginal: $("viewer-original"),
    viewerClose: $("viewer-close"),
  };

  // ---- small DOM helpers (el and clear: dom.js) ----------------------------------------------

  const { el, clear } = window.applianceDom;

  function show(node, visible) {
    node.hidden = !visible;
  }

  function fmtMs(ms) {
    if (typeof ms !== "number" || !isFinite(ms)) return null;
    return ms < 1000 ? Math.round(ms) + "\u00a0ms" : (ms / 1000).toFixed(1) + "\u00a0s";
  }

  function reducedMotion() {
    return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  }

  // ---- token (token.js: sessionStorage only, gone when the tab closes) ----------------------

  const accessToken = window.applianceToken;
  accessToken.bind(
    () => {
      ui.status.textContent = accessToken.saved() ? "Token saved for this tab." : "Token cleared.";
      ui.question.focus();
    },
    () => {
      ui.status.textContent = "Token cleared.";
    },
  );

  // ---- state --------------------------------------------------------------------------------

  let controller = null; // AbortController of the ask in flight
  let runId = 0; // events of an older ask are ignored
  let streamed = ""; // answer text as it arrives
  let sources = new Map(); // source number → its <li>
  let sourceItems = new Map(); // source number → its evidence item
  let sawEvidence = false;

  function setState(state) {
    ui.main.dataset.state = state;
    const busy = state === "asking" || state === "streaming";
    show(ui.stop, busy);
    ui.answer.setAttribute("aria-busy", state === "streaming" ? "true" : "false");
    ui.answer.classList.toggle("streaming", state === "streaming");
  }

  function resetResult(question) {
    streamed = "";
    sources = new Map();
    sourceItems = new Map();
    sawEvidence = false;
    show(ui.error, false);
    clear(ui.answer);
    ui.answer.classList.remove("incomplete");
    ui.asked.textContent = question;
    ui.searched.textContent = "";
    show(ui.searched, false);
    show(ui.refusal, false);
    ui.refusalReason.textContent = "";
    show(ui.badge, false);
    clear(ui.badge);
    show(ui.unsupported, false);
    clear(ui.unsupportedList);
    show(ui.removed, false);
    show(ui.corrected, false);
    show(ui.quotes, false);
    clear(ui.quotesList);
    show(ui.steps, false);
    clear(ui.stepsList);
    ui.stepsKind.textContent = "";
    show(ui.alternatives, false);
    clear(ui.alternativesList);
    show(ui.alsoMatches, false);
    clear(ui.alsoMatches);
    show(ui.judged, false);
    clear(ui.judged);
    show(ui.cited, false);
    clear(ui.citedList);
    show(ui.timings, false);
    clear(ui.evidenceList);
    show(ui.evidenceSection, false);
    ui.result.dataset.outcome = "pending";
    show(ui.result, true);
    // feedback.js hides its buttons until this answer is done.
    document.dispatchEvent(new CustomEvent("appliance:asking"));
  }

  // ---- citation markers inside answer text --------------------------------------------------

  // What citations.py accepts: [1], [1, 2], [1-3], [Source 2], 【1】; after `done` the text holds [n] / [n, m] only.
  const ITEM = "(?:sources?\\s*[:#]?\\s*)?\\d{1,6}(?:\\s*[-\\u2013\\u2014]\\s*\\d{1,6})?";
  const SEP = "\\s*(?:[,;&]\\s*(?:and\\s+)?|and\\s+)";
  const MARKER = "[\\[\\u3010]\\s*" + ITEM + "(?:" + SEP + ITEM + ")*\\s*[\\]\\u3011]";
  // One pass over the text: inline `code`, **bold**, or a citation marker.
  const INLINE = new RegExp("(`[^`\\n]+`)|(\\*\\*[^*\\n]+\\*\\*)|(" + MARKER + ")", "gi");

  function markerNumbers(marker) {
    const numbers = [];
    const re = /(\d{1,6})(?:\s*[-\u2013\u2014]\s*(\d{1,6}))?/g;
    let m;
    while ((m = re.exec(marker)) !== null) {
      const a = parseInt(m[1], 10);
      const b = m[2] ? parseInt(m[2], 10) : a;
      const lo = Math.min(a, b);
      const hi = Math.max(a, b);
      if (hi - lo <= 100) for (let n = lo; n <= hi; n++) numbers.push(n);
      else numbers.push(lo, hi);
    }
    return numbers.filter((n, i) => numbers.indexOf(n) === i);
  }

  // As citations.py: a bracket naming only numbers above 50 (no prompt holds more sources), or one written
  // with a leading zero, is a value the model bracketed ("[555-0195]"), shown as written.
  function isBracketedValue(marker) {
    const written = marker.match(/\d{1,6}/g) || [];
    return written.every((n) => parseInt(n, 10) > 50) || written.some((n) => n.length > 1 && n[0] === "0");
  }

  function citeButton(n) {
    const li = sources.get(n);
    if (!li) {
      const missing = el("span", "cite-missing", String(n));
      missing.title = "No source " + n + " was given";
      return missing;
    }
    const button = el("button", "cite", "[" + n + "]");
    button.type = "button";
    button.dataset.source = String(n);
    button.setAttribute("aria-controls", li.id);
    button.setAttribute("aria-label", "Source " + n + (li.dataset.label ? ": " + li.dataset.label : ""));
    return button;
  }

  function renderMarker(target, marker) {
    const wrap = el("span", "marker");
    markerNumbers(marker).forEach((n) => wrap.appendChild(citeButton(n)));
    target.appendChild(wrap);
  }

  // Plant identifiers (VLV-3042-B, RW-GSK-0410) must never be split over two lines.
  const IDENTIFIER = /\b(?=[A-Za-z0-9-]*\d)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)+\b/g;

  function appendText(target, text) {
    IDENTIFIER.lastIndex = 0;
    let pos = 0;
    let m;
    while ((m = IDENTIFIER.exec(text)) !== null) {
      if (m[0].length > 28) continue; // too long to keep on one line of a phone
      if (m.index > pos) target.appendChild(document.createTextNode(text.slice(pos, m.index)));
      target.appendChild(el("span", "ident", m[0]));
      pos = m.index + m[0].length;
    }
    if (pos < text.length) target.appendChild(document.createTextNode(text.slice(pos)));
  }

  function renderRichText(target, text) {
    clear(target);
    INLINE.lastIndex = 0;
    let pos = 0;
    let m;
    while ((m = INLINE.exec(text)) !== null) {
      if (m.index > pos) appendText(target, text.slice(pos, m.index));
      if (m[1]) target.appendChild(el("code", null, m[1].slice(1, -1)));
      else if (m[2]) target.appendChild(el("strong", null, m[2].slice(2, -2)));
      else if (isBracketedValue(m[3])) appendText(target, m[3]);
      else renderMarker(target, m[3]);
      pos = m.index + m[0].length;
    }
    if (pos < text.length) appendText(target, text.slice(pos));
  }

  // The SOP's own emphasis and inline code, shown as such; brackets stay text (a source is not cited inside).
  const EMPHASIS = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)/g;

  function appendInline(target, text) {
    EMPHASIS.lastIndex = 0;
    let pos = 0;
    let m;
    while ((m = EMPHASIS.exec(text)) !== null) {
      if (m.index > pos) appendText(target, text.slice(pos, m.index));
      if (m[1]) target.appendChild(el("code", null, m[1].slice(1, -1)));
      else target.appendChild(el("strong", null, m[2].slice(2, -2)));
      pos = m.index + m[0].length;
    }
    if (pos < text.length) appendText(target, text.slice(pos));
  }

  // ---- evidence -----------------------------------------------------------------------------

  const Tables = window.ApplianceTables; // tables.js (loaded first): pipe tables as real tables


  /* Passage text with its matching sentences in <mark>, its tables as tables (a matching row marked).
   * The server's offsets count code points (Python); JS strings count UTF-16 units, so slice an array
   * of code points, and fall back to searching for the sentence when the offsets do not match its text. */
  function highlightedPassage(item) {
    const text = typeof item.text === "string" ? item.text : "";
    const points = Array.from(text);
    const spans = [];
    (Array.isArray(item.sentences) ? item.sentences : []).forEach((s) => {
      if (!s || typeof s.text !== "string" || !s.text) return;
      let start = Number.isInteger(s.start) ? s.start : -1;
      let end = Number.isInteger(s.end) ? s.end : -1;
      const fits = start >= 0 && end > start && end <= points.length;
      if (!fits || points.slice(start, end).join("") !== s.text) {
        const at = text.indexOf(s.text);
        if (at < 0) return;
        start = Array.from(text.slice(0, at)).length;
        end = start + Array.from(s.text).length;
      }
      spans.push({ start: start, end: end, score: s.score });
    });
    spans.sort((a, b) => a.start - b.start);

    const units = [0]; // code point → UTF-16 offset
    points.forEach((p) => units.push(units[units.length - 1] + p.length));
    const marks = [];
    spans.forEach((span) => {
      const last = marks[marks.length - 1];
      if (last && units[span.start] < last.end) return; // overlapping: keep the earlier one
      marks.push({ start: units[span.start], end: units[span.end], score: span.score });
    });

    const block = el("div", "passage");
    const parts = Tables.blocks(text);
    parts.forEach((part, i) => {
      if (part.table) {
        const matches = (row) => marks.some((m) => m.start < row.end && m.end > row.start);
        Tables.parse(text, part.start, part.end).forEach((table) => block.appendChild(Tables.build(table, appendText, matches)));
        return;
      }
      const before = parts[i + 1] && parts[i + 1].table && text[part.end - 1] === "\n" ? 1 : 0; // the table is a block
      appendMarked(block, text, part.start, part.end - before, marks);
    });
    return block;
  }

  function appendMarked(block, text, start, end, marks) {
    let pos = start;
    marks.forEach((m) => {
      const from = Math.max(m.start, pos);
      const to = Math.min(m.end, end);
      if (to <= from) return;
      if (from > pos) appendText(block, text.slice(pos, from));
      const mark = el("mark");
      appendText(mark, text.slice(from, to));
      if (typeof m.score === "number") mark.title = "Matches the question (" + m.score.toFixed(2) + ")";
      block.appendChild(mark);
      pos = to;
    });
    if (pos < end) appendText(block, text.slice(pos, end));
  }

  /* The passage's best sentence, shortened; a table row as a table of that row under its header. */
  function preview(item) {
    const list = Array.isArray(item.sentences) ? item.sentences.slice() : [];
    list.sort((a, b) => (b.score || 0) - (a.score || 0));
    const passage = String(item.text || "");
    const text = list.length && typeof list[0].text === "string" ? list[0].text : passage;
    const node = el("span", "src-preview");
    const at = Tables.isTable(text) && list.length ? passage.indexOf(text) : -1;
    const row = at >= 0 ? Tables.rowAt(passage, at) : null;
    if (row) {
      const table = Tables.build(row, appendText);
      table.removeAttribute("tabindex"); // inside the summary, which takes the focus itself
      node.appendChild(table);
    } else {
      node.textContent = Tables.oneLine(text, 200); // never cut inside a table row
    }
    return node;
  }

  function metaRow(dl, term, value) {
    if (value === null || value === undefined || value === "") return;
    dl.appendChild(el("dt", null, term));
    dl.appendChild(el("dd", null, value));
  }

  function renderEvidence(items) {
    clear(ui.evidenceList);
    sources = new Map();
    sourceItems = new Map();
    const closest = items.length > 0 && items.every((item) => item.n === null || item.n === undefined);
    ui.evidenceHeading.textContent = closest ? "Closest passages" : "Sources";
    ui.evidenceHelp.textContent = closest
      ? "These passages were the nearest matches, but not enough to answer from. Open one to read it."
      : "Open a source to read the passage; the sentences that match the question are highlighted.";

    items.forEach((item, i) => {
      const numbered = Number.isInteger(item.n);
      const li = el("li", "source");
      li.id = numbered ? "source-" + item.n : "closest-" + (i + 1);
      const where = item.section || item.title || item.path || "Passage";
      li.dataset.label = where;

      const details = el("details");
      const summary = el("summary");
      summary.appendChild(el("span", "num", numbered ? "[" + item.n + "]" : String(i + 1)));
      const head = el("span", "src-head");
      head.appendChild(el("span", "src-section", where));
      const location = (item.path || "") + (Number.isInteger(item.page) ? " · page " + item.page : "");
      head.appendChild(el("span", "src-path", location));
      head.appendChild(preview(item));
      summary.appendChild(head);
      details.appendChild(summary);

      const body = el("div", "src-body");
      const dl = el("dl", "src-meta");
      metaRow(dl, "Document", item.path);
      if (item.title && item.title !== item.section) metaRow(dl, "Title", item.title);
      metaRow(dl, "Section", item.section);
      metaRow(dl, "Page", Number.isInteger(item.page) ? String(item.page) : null);
      if (typeof item.score === "number") metaRow(dl, "Match", item.score.toFixed(2));
      body.appendChild(dl);
      body.appendChild(highlightedPassage(item));
      const opener = openButton(item, item.chunk_id, "Open the document");
      if (opener) body.appendChild(opener);
      details.appendChild(body);
      li.appendChild(details);
      ui.evidenceList.appendChild(li);
      if (numbered) {
        sources.set(item.n, li);
        sourceItems.set(item.n, item);
      }
    });
    show(ui.evidenceSection, items.length > 0);
  }

  function openSource(n) {
    const li = sources.get(n);
    if (!li) return;
    const details = li.querySelector("details");
    details.open = true;
    li.classList.remove("flash");
    void li.offsetWidth; // restart the animation
    li.classList.add("flash");
    li.scrollIntoView({ block: "start", behavior: reducedMotion() ? "auto" : "smooth" });
    const summary = li.querySelector("summary");
    if (summary) summary.focus({ preventScroll: true });
  }

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target.closest("[data-source]") : null;
    if (!target) return;
    event.preventDefault();
    openSource(parseInt(target.dataset.source, 10));
  });

  // ---- the conversation (sessionStorage only) ----------------------------------------------

  function readThread() {
    try {
      const parsed = JSON.parse(sessionStorage.getItem(THREAD_KEY) || "[]");
      return Array.isArray(parsed) ? parsed.filter((t) => t && typeof t.question === "string") : [];
    } catch (e) {
      return [];
    }
  }

  function writeThread(turns) {
    try {
      if (turns.length) sessionStorage.setItem(THREAD_KEY, JSON.stringify(turns.slice(-THREAD_TURNS)));
      else sessionStorage.removeItem(THREAD_KEY);
    } catch (e) {
      /* storage disabled or full: the conversation lives as long as this page */
    }
  }

  let thread = readThread();
  let currentOnScreen = false; // the last turn of `thread` is the answer shown below

  /* The earlier turns sent with a question: questions, and answers as shown (a refusal says so). */
  function historyForRequest() {
    const turns = [];
    thread.slice(-HISTORY_TURNS).forEach((t) => {
      turns.push({ role: "user", content: t.question });
      if (typeof t.answer === "string" && t.answer) turns.push({ role: "assistant", content: t.answer });
    });
    return turns;
  }

  function remember(result) {
    if (typeof result.question !== "string") return;
    const answer = typeof result.answer === "string" ? result.answer : "";
    thread.push({ question: result.question, answer: answer.slice(0, 2000), refused: Boolean(result.refused) });
    thread = thread.slice(-THREAD_TURNS);
    writeThread(thread);
    currentOnScreen = true;
    renderThread();
  }

  function renderThread() {
    const earlier = currentOnScreen ? thread.slice(0, -1) : thread.slice();
    clear(ui.threadList);
    earlier.forEach((t) => {
      const li = el("li", "turn");
      li.appendChild(el("p", "turn-q", t.question));
      li.appendChild(el("p", "turn-a" + (t.refused ? " refused" : ""), Tables.oneLine(t.answer, 240)));
      ui.threadList.appendChild(li);
    });
    show(ui.thread, earlier.length > 0);
  }

  ui.newThread.addEventListener("click", () => {
    thread = [];
    currentOnScreen = false;
    writeThread(thread);
    renderThread();
    ui.status.textContent = "New conversation: the next question is read on its own.";
    ui.question.focus();
  });

  // ---- the original document ------------------------------------------------------------------

  // What a document view may hold (appliance/documents/tree.py); anything else becomes a <span>.
  const DOC_TAGS = new Set([
    "section", "div", "h1", "h2", "h3", "h4", "h5", "h6", "p", "ul", "ol", "li", "table", "thead", "tbody",
    "tr", "th", "td", "pre", "code", "em", "strong", "blockquote", "hr", "br", "dl", "dt", "dd", "sub", "sup",
    "mark", "span",
  ]);
  const DOC_ID = /^[a-z0-9-]{1,40}$/;
  const MAX_DOC_DEPTH = 64;
  let viewerOpener = null; // the button that opened the viewer: focus returns there on close
  let viewerDoc = null; // {id, type, page, path}
  let blobUrl = null;

  function openButton(item, chunkId, label) {
    if (!item || !Number.isInteger(item.document_id)) return null;
    const button = el("button", "open-doc secondary", label);
    button.type = "button";
    button.addEventListener("click", (event) => {
      event.preventDefault();
      event.stopPropagation();
      openDocument(item, chunkId, button);
    });
    return button;
  }

  function buildDoc(node, depth) {
    if (typeof node === "string") return document.createTextNode(node);
    if (!node || typeof node !== "object") return document.createTextNode("");
    const tag = DOC_TAGS.has(node.t) ? node.t : "span";
    const element = document.createElement(tag);
    const a = node.a && typeof node.a === "object" ? node.a : {};
    if (typeof a.id === "string" && DOC_ID.test(a.id)) element.id = "doc-" + a.id;
    ["colspan", "rowspan"].forEach((name) => {
      if ((tag === "td" || tag === "th") && Number.isInteger(a[name]) && a[name] > 1 && a[name] <= 100) {
        element.setAttribute(name, String(a[name]));
      }
    });
    if (tag === "ol" && Number.isInteger(a.start)) element.setAttribute("start", String(a.start));
    if (Number.isInteger(a.page)) element.dataset.page = String(a.page);
    if (Number.isInteger(a.n)) element.dataset.sentence = String(a.n);
    if (a.kind === "image") element.className = "doc-image";
    if (a.kind === "page-label") element.className = "doc-page-label";
    const children = Array.isArray(node.c) ? node.c : [];
    children.forEach((child) => {
      element.appendChild(depth > MAX_DOC_DEPTH ? document.createTextNode(flatText(child)) : buildDoc(child, depth + 1));
    });
    return element;
  }

  function flatText(node) {
    if (typeof node === "string") return node;
    return Array.isArray(node && node.c) ? node.c.map(flatText).join("") : "";
  }

  function closeViewer() {
    show(ui.viewer, false);
    clear(ui.viewerBody);
    viewerDoc = null;
    if (viewerOpener && document.body.contains(viewerOpener)) viewerOpener.focus();
  }

  async function openDocument(item, chunkId, opener) {
    viewerOpener = opener || null;
    viewerDoc = { id: item.document_id, page: Number.isInteger(item.page) ? item.page : null, path: item.path, type: null };
    clear(ui.viewerBody);
    ui.viewerTitle.textContent = item.title || item.path || "Document";
    ui.viewerWhere.textContent = [item.path, item.section].filter(Boolean).join(" › ") +
      (Number.isInteger(item.page) ? " · page " + item.page : "");
    show(ui.viewerNotice, false);
    ui.viewerStatus.textContent = "Opening the document…";
    show(ui.viewer, true);
    ui.viewer.dataset.state = "loading";
    const sentences = (Array.isArray(item.sentences) ? item.sentences : [])
      .map((s) => (s && typeof s.text === "string" ? s.text : ""))
      .filter(Boolean)
      .slice(0, 20);
    const body = { sentences: sentences };
    if (typeof chunkId === "string" && chunkId) body.chunk_id = chunkId;
    let response;
    try {
      response = await fetch("/v1/documents/" + item.document_id + "/view", {
        method: "POST",
        headers: accessToken.withAuth({ "Content-Type": "application/json" }),
        body: JSON.stringify(body),
        cache: "no-store",
        credentials: "same-origin",
      });
    } catch (e) {
      ui.viewerStatus.textContent = "Cannot reach the appliance.";
      ui.viewer.dataset.state = "error";
      return;
    }
    if (!response.ok) {
      const problem = await problemOf(response);
      ui.viewerStatus.textContent = "This document cannot be opened: " + (problem.detail || problem.title);
      ui.viewer.dataset.state = "error";
      return;
    }
    const data = await response.json();
    renderDocument(data);
  }

  function renderDocument(data) {
    const doc = data.document || {};
    viewerDoc.type = doc.type;
    viewerDoc.page = Number.isInteger(data.page) ? data.page : viewerDoc.page;
    ui.viewerTitle.textContent = doc.title || doc.path || "Document";
    ui.viewerNotice.textContent = doc.notice || "";
    show(ui.viewerNotice, Boolean(doc.notice));
    const pdf = doc.type === "pdf";
    ui.viewerOriginal.textContent = pdf
      ? "Open the PDF" + (viewerDoc.page ? " at page " + viewerDoc.page : "")
      : "Download the original file";
    clear(ui.viewerBody);
    ui.viewerBody.appendChild(buildDoc(data.body, 0));
    const found = Number.isInteger(data.highlighted) ? data.highlighted : 0;
    let status = found
      ? found + (found > 1 ? " cited sentences highlighted." : " cited sentence highlighted.")
      : "The cited sentences were not found word for word; the cited section is shown.";
    if (data.truncated) status += " The document is long: the end is only in the original file.";
    ui.viewerStatus.textContent = status;
    const target = data.target ? document.getElementById("doc-" + data.target) : null;
    if (viewerDoc.page) {
      const page = ui.viewerBody.querySelector('section[data-page="' + viewerDoc.page + '"]');
      if (page) page.classList.add("doc-current");
    }
    if (target) target.classList.add("doc-target");
    ui.viewer.dataset.state = "open";
    ui.viewer.scrollIntoView({ block: "start", behavior: "auto" });
    if (target) target.scrollIntoView({ block: "center", behavior: reducedMotion() ? "auto" : "smooth" });
    ui.viewerTitle.focus({ preventScroll: true });
  }

  /* The original bytes (the token goes in a header, so a plain link cannot carry it): a PDF opens in
   * the browser's own viewer at the cited page (#page=N), other files are downloaded. */
  async function openOriginal() {
    if (!viewerDoc) return;
    const wanted = viewerDoc;
    const popup = wanted.type === "pdf" ? window.open("", "_blank") : null;
    let response;
    try {
      response = await fetch("/v1/documents/" + wanted.id + "/file", { headers: accessToken.withAuth(), cache: "no-store" });
    } catch (e) {
      if (popup) popup.close();
      ui.viewerStatus.textContent = "Cannot reach the appliance.";
      return;
    }
    if (!response.ok) {
      if (popup) popup.close();
      const problem = await problemOf(response);
      ui.viewerStatus.textContent = "The original file cannot be opened: " + (problem.detail || problem.title);
      return;
    }
    if (response.headers.get("X-Document-Changed") === "true") {
      ui.viewerStatus.textContent = "Careful: this file has changed since it was indexed.";
    }
    const blob = await response.blob();
    if (blobUrl) URL.revokeObjectURL(blobUrl);
    blobUrl = URL.createObjectURL(blob);
    if (wanted.type === "pdf") {
      const url = blobUrl + (wanted.page ? "#page=" + wanted.page : "");
      if (popup) popup.location.href = url;
      else window.open(url, "_blank");
      return;
    }
    const link = el("a");
    link.href = blobUrl;
    link.download = String(wanted.path || "document").split("/").pop();
    document.body.appendChild(link);
    link.click();
    link.remove();
  }

  ui.viewerOriginal.addEventListener("click", () => {
    openOriginal();
  });
  ui.viewerClose.addEventListener("click", closeViewer);
  ui.viewer.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeViewer();
  });

  // ---- a quoted answer: the SOP's own items --------------------------------------------------

  const STEPS_KIND = {
    procedure: "The procedure as the document writes it: every line below is the SOP's own text, not a model's.",
    excerpt: "What the document says, in its own words (not a model's):",
  };

  /* Each item as the document lays it out (headings, numbered steps, warnings, tables, commands), as text
   * nodes only; each heading cites its section and opens the document there; parts left out are said. */
  function renderSteps(kind, steps) {
    clear(ui.stepsList);
    const list = Tables.joinSteps(steps); // the rows an excerpt picks from one table, as one table
    ui.stepsKind.textContent = STEPS_KIND[kind] || "From the documents, in their own words:";
    list.forEach((step) => {
      if (!step || typeof step !== "object") return;
      const stepKind = typeof step.kind === "string" ? step.kind : "text";
      const li = el("li", "step-" + stepKind.replace(/[^a-z]/g, ""));
      const level = Number.isInteger(step.level) ? Math.min(step.level, 6) : 0;
      if (level) li.classList.add("level-" + level);
      if (step.matched) li.classList.add("step-matched");
      if (stepKind === "heading") {
        li.appendChild(el("span", "step-heading-text", String(step.text || "")));
        if (Number.isInteger(step.n)) li.appendChild(citeButton(step.n));
        const where = (Number.isInteger(step.page) ? "page " + step.page : "");
        if (where) li.appendChild(el("span", "cited-where", where));
        const item = sourceItems.get(step.n);
        const opener = openButton(
          Object.assign({}, item || {}, { page: step.page, section: step.section, path: step.path }),
          step.chunk_id,
          "Open the document here"
        );
        if (opener) {
          opener.classList.add("small");
          li.appendChild(opener);
        }
      } else if (stepKind === "omitted") {
        li.appendChild(el("span", null, "… " + String(step.note || "not shown: open the document")));
        const item = sourceItems.get(step.n);
        const opener = openButton(
          Object.assign({}, item || {}, { page: step.page, section: step.section, path: step.path }),
          step.chunk_id,
          "Open the document"
        );
        if (opener) li.appendChild(opener);
      } else if (stepKind === "table") {
        li.appendChild(Tables.render(step.text, appendInline));
      } else if (stepKind === "code") {
        appendText(li, String(step.text || "")); // lines as the document has them
      } else {
        // A step's words as written; the source's line breaks are only where its page wrapped them.
        appendInline(li, String(step.text || "").replace(/[ \t]*\n[ \t]*/g, " "));
      }
      ui.stepsList.appendChild(li);
    });
    show(ui.steps, list.length > 0);
  }

  /* The local model checks the section choice after the steps are shown (answer.llm_judge_timing "after"): say
   * so while it runs, and when it picks another section say why the steps changed and offer the first one. */
  function renderChecking() {
    clear(ui.judged);
    ui.judged.className = "judged";
    ui.judged.textContent = "Checking this choice with the local model: the steps may change in a few seconds.";
    show(ui.judged, true);
  }

  function renderReplaced(first) {
    clear(ui.judged);
    if (!first || typeof first !== "object") {
      show(ui.judged, false);
      return;
    }
    ui.judged.className = "judged replaced";
    const name = String(first.section || first.title || first.path || "").split(" › ").pop();
    ui.judged.appendChild(
      el("span", null, "Replaced after the local model's check: it judged the steps below a better match than " + name + " (" + String(first.path || "") + "), shown first.")
    );
    const opener = openButton(first, first.chunk_id, "Open the first");
    if (opener) ui.judged.appendChild(opener);
    show(ui.judged, true);
  }

  // A close call is said on the first screen, above the steps: the other section nearly as likely, to open.
  function renderAlsoMatches(result) {
    clear(ui.alsoMatches);
    const rival = Array.isArray(result.alternatives) ? result.alternatives[0] : null;
    if (result.confidence !== "close" || !rival || typeof rival !== "object") {
      show(ui.alsoMatches, false);
      return;
    }
    const name = String(rival.section || rival.title || rival.path || "").split(" › ").pop();
    ui.alsoMatches.appendChild(el("span", null, "Also matches: " + name + " (" + String(rival.path || "") + ")"));
    const opener = openButton(rival, rival.chunk_id, "Open");
    if (opener) ui.alsoMatches.appendChild(opener);
    show(ui.alsoMatches, true);
  }

  function renderAlternatives(alternatives) {
    clear(ui.alternativesList);
    const list = Array.isArray(alternatives) ? alternatives : [];
    list.forEach((a) => {
      if (!a || typeof a !== "object") return;
      const li = el("li");
      const name = String(a.section || a.title || a.path || "").split(" › ").pop();
      li.appendChild(el("span", null, name));
      li.appendChild(el("span", "cited-where", String(a.path || "") + (Number.isInteger(a.page) ? ", page " + a.page : "")));
      const opener = openButton(a, a.chunk_id, "Open");
      if (opener) li.appendChild(opener);
      ui.alternativesList.appendChild(li);
    });
    show(ui.alternatives, list.length > 0);
  }

  // ---- the finished result ------------------------------------------------------------------

  function renderDone(result) {
    if (!sawEvidence && Array.isArray(result.evidence)) renderEvidence(result.evidence);
    const refused = Boolean(result.refused);
    ui.result.dataset.outcome = refused ? "refused" : "answer";

    if (refused) {
      clear(ui.answer);
      show(ui.refusal, true);
      ui.refusalReason.textContent = result.refusal_reason
        ? "Why: " + result.refusal_reason
        : "No passage supports an answer.";
      ui.evidenceHeading.textContent = "Closest passages";
    } else if (Array.isArray(result.steps) && result.steps.length) {
      clear(ui.answer);
      renderSteps(result.answer_kind, result.steps);
      renderReplaced(result.judge && result.judge.first_shown);
      renderAlsoMatches(result);
      renderAlternatives(result.alternatives);
      renderBadge(result);
    } else {
      renderRichText(ui.answer, typeof result.answer === "string" ? result.answer : streamed);
      renderBadge(result);
    }

    const removed = Array.isArray(result.removed_citations) ? result.removed_citations : [];
    if (removed.length) {
      ui.removed.textContent =
        "Removed citations to sources the model was not given: " + removed.map((n) => "[" + n + "]").join(" ");
      show(ui.removed, true);
    }

    renderQuotes(refused ? [] : result.quotes);
    const corrected = Array.isArray(result.corrected_citations) ? result.corrected_citations : [];
    if (corrected.length && !refused) {
      ui.corrected.textContent = corrected
        .map((c) => {
          const marks = (list) => (Array.isArray(list) ? list : []).map((n) => "[" + n + "]").join(" ");
          const moved = marks(c.cited) + " → " + marks(c.corrected);
          return "Citation corrected " + moved + ": the source the model cited does not hold “" + String(c.sentence || "") + "”.";
        })
        .join(" ");
      show(ui.corrected, true);
    }

    const citations = Array.isArray(result.citations) ? result.citations : [];
    clear(ui.citedList);
    citations.forEach((c) => {
      const li = el("li");
      li.appendChild(citeButton(c.n));
      const where = [c.section, c.path].filter(Boolean).join(" — ");
      li.appendChild(el("span", "cited-where", where + (Number.isInteger(c.page) ? ", page " + c.page : "")));
      renderRevision(li, c.document_control, c.section);
      const item = sourceItems.get(c.n);
      const opener = openButton(
        Object.assign({}, item || {}, { document_id: c.document_id, page: c.page, section: c.section, path: c.path }),
        c.chunk_id,
        "Open the document"
      );
      if (opener) li.appendChild(opener);
      ui.citedList.appendChild(li);
    });
    show(ui.cited, citations.length > 0 && !refused);

    if (typeof result.searched === "string" && result.searched && result.searched !== result.question) {
      const fixes = (result.did_you_mean && result.did_you_mean.corrections) || [];
      const prefix = fixes.length ? "Did you mean " + fixes.map((c) => c.suggested).join(", ") + "? " : "";
      ui.searched.textContent = prefix + "Searched as: " + result.searched;
      show(ui.searched, true);
    }
    remember(result);
    renderTimings(result);
    setState("done");
    // feedback.js offers its buttons for this answer, rated by its request id.
    document.dispatchEvent(new CustomEvent("appliance:answered", { detail: { requestId: result.request_id || "" } }));
    ui.status.textContent = refused
      ? REFUSAL
      : "Answer ready" + (citations.length ? ", citing " + citations.length + (citations.length > 1 ? " sources." : " source.") : ", without citations.");
  }

  /* Which revision a citation is from ("SOP-CL-004 rev 3, effective 2025-05-01 › 6.2"), and a flag when the
   * document is past its review date: the operator must know what he is reading. */
  function renderRevision(li, control, section) {
    if (!control || typeof control !== "object") return;
    if (control.label) {
      li.appendChild(el("span", "cited-revision", String(control.label) + (section ? " › " + section : "")));
    }
    if (control.review_overdue) {
      const cycle = control.review_from_cycle ? " (by its review cycle)" : "";
      const text = "Past its review date " + String(control.review || "") + cycle + ": check that this revision is still in force.";
      li.appendChild(el("span", "review-overdue", text));
    }
  }

  /* The sources' own lines, each under the answer sentence that rewords its source or leaves out its
   * exact command, setting or value. */
  function renderQuotes(quotes) {
    clear(ui.quotesList);
    const list = Array.isArray(quotes) ? quotes : [];
    list.forEach((q) => {
      if (!q || typeof q.text !== "string") return;
      const li = el("li");
      li.appendChild(el("p", "quote-for", String(q.sentence || "")));
      const block = el("blockquote", "quote-text");
      if (Tables.isTable(q.text)) block.appendChild(Tables.render(q.text, appendText));
      else appendText(block, q.text);
      li.appendChild(block);
      if (Number.isInteger(q.n)) li.appendChild(citeButton(q.n));
      ui.quotesList.appendChild(li);
    });
    show(ui.quotes, list.length > 0);
  }

  function renderBadge(result) {
    clear(ui.badge);
    const unsupported = Array.isArray(result.unsupported) ? result.unsupported : [];
    let kind;
    let text;
    const invented = Array.isArray(result.invented) ? result.invented : [];
    const contradicting = Array.isArray(result.contradicting) ? result.contradicting : [];
    const quoted = Array.isArray(result.steps) && result.steps.length > 0;
    if (quoted && result.confidence === "close") {
      // Never a ✓ on a close call: the text is the document's, but which section answers is a guess.
      kind = "warn";
      text = "◐ Close call: another section matches almost as well (named above). Check this is the procedure you need before acting.";
    } else if (quoted && result.confidence === "uncertain") {
      kind = "warn";
      text = "◐ Best match only: shown as the document writes it, but the match is weak. Check the section's heading before acting.";
    } else if (quoted) {
      kind = "ok";
      text = "✓ Shown as the document writes it, each part cited. Read the cited section before acting.";
    } else if (result.grounded) {
      kind = "ok";
      text = "✓ Every statement is supported by the cited passages.";
    } else if (result.verified && (invented.length > 0 || contradicting.length > 0)) {
      // Name what no passage holds: that is what must not be acted on unchecked.
      kind = "warn";
      const parts = [];
      if (invented.length > 0) parts.push("in no passage: " + invented.join(", ") + ".");
      if (contradicting.length > 0) parts.push("a passage says the opposite of " + contradicting.length + " statement(s).");
      text = "⚠ Check before acting: " + parts.join(" ");
    } else if (result.verified) {
      kind = "warn";
      // Nothing named: the statements are worded differently from the passages, or add what no passage says.
      text = "⚠ Check before acting: some statements are not in the cited passages as written (every command, value and name in them is).";
    } else {
      kind = "warn";
      text = "⚠ Check before acting: this answer could not be checked against the passages.";
    }
    if (result.truncated) {
      kind = "warn";
      text += " The answer was cut at the length limit: its last steps may be missing; read the cited passages to the end.";
    }
    // Words the documents never use that may name what the question is about (a fitted reading: most such words,
    // "bigger", slang, typos, are harmless): the answer may be about something else, so never a ✓ (it names them).
    const unmatched = Array.isArray(result.unmatched_warning_terms)
      ? result.unmatched_warning_terms.filter((t) => typeof t === "string")
      : [];
    if (unmatched.length > 0) {
      const note = "◐ The documents never use: " + unmatched.join(", ") + ". Check that this answers what you asked before acting.";
      text = kind === "ok" ? note : note + " " + text;
      kind = "warn";
    }
    ui.badge.className = "badge " + kind;
    ui.badge.textContent = text;
    show(ui.badge, true);

    clear(ui.unsupportedList);
    unsupported.forEach((sentence) => ui.unsupportedList.appendChild(el("li", null, sentence)));
    show(ui.unsupported, unsupported.length > 0);
  }

  function renderTimings(result) {
    const t = result.timings_ms || {};
    const parts = [];
    if (fmtMs(t.first_content)) parts.push("Shown after " + fmtMs(t.first_content));
    if (fmtMs(t.first_token)) parts.push("First words " + fmtMs(t.first_token));
    if (fmtMs(t.total)) parts.push("Total " + fmtMs(t.total));
    if (fmtMs(t.rewrite)) parts.push("Follow-up rewrite " + fmtMs(t.rewrite));
    if (fmtMs(t.retrieve)) parts.push("Search " + fmtMs(t.retrieve));
    // The local model's check of the section choice asks the model, though it writes nothing.
    if (result.judge && fmtMs(result.judge.ms)) parts.push("Choice checked by the local model in " + fmtMs(result.judge.ms));
    else parts.push(result.model ? "Model " + result.model : "No model asked");
    ui.timings.textContent = parts.join(" · ");
    show(ui.timings, true);
  }

  // ---- errors -------------------------------------------------------------------------------

  /* A problem: our advice first, what the server said (if it adds anything) underneath. */
  function showProblem(problem) {
    const status = problem.status;
    const said = typeof problem.detail === "string" ? problem.detail.trim() : "";
    let title = problem.title || "Something went wrong";
    let advice = "";
    if (status === 401) {
      title = accessToken.saved() ? "The access token was not accepted" : "An access token is needed";
      advice = "Enter your access token under “Access token” at the top, then ask again.";
      accessToken.ask();
    } else if (status === 403) {
      title = "Not allowed";
      advice = "This token may not ask questions. Ask the appliance administrator for an operator token.";
    } else if (status === 422) {
      title = "Question not accepted";
    } else if (status === 503) {
      title = "The appliance is busy";
      const wait = parseInt(problem.retryAfter || "", 10);
      advice = wait > 0 ? "Try again in " + wait + " s." : "Try again shortly.";
    } else if (status) {
      title = title + " (HTTP " + status + ")";
    }
    ui.errorTitle.textContent = title;
    ui.errorDetail.textContent = advice || said;
    ui.errorServer.textContent = advice && said ? "Server: " + said : "";
    show(ui.errorServer, Boolean(advice && said));
    show(ui.error, true);
    if (streamed) ui.answer.classList.add("incomplete");
    if (!streamed && !sawEvidence) show(ui.result, false);
    setState("error");
    ui.status.textContent = "";
  }

  async function problemOf(response) {
    const text = await response.text().catch(() => "");
    let body = null;
    try {
      body = JSON.parse(text);
    } catch (e) {
      body = null;
    }
    const p = body && typeof body === "object" ? body : {};
    let detail = p.detail;
    if (Array.isArray(detail)) {
      // FastAPI validation errors: [{loc, msg}, ...]
      detail = detail
        .map((d) => (d && d.msg ? d.msg : typeof d === "string" ? d : JSON.stringify(d)))
        .join("; ");
    } else if (typeof detail !== "string") {
      detail = body ? "" : text.slice(0, 300);
    }
    return {
      status: response.status,
      title: typeof p.title === "string" ? p.title : response.statusText,
      detail: detail,
      retryAfter: response.headers.get("Retry-After"),
    };
  }

  // ---- Server-Sent Events over fetch --------------------------------------------------------

  async function readEvents(body, onEvent) {
    const reader = body.getReader();
    const decoder = new TextDecoder("utf-8");
    let buffer = "";
    let name = "";
    let data = [];

    function dispatch() {
      if (data.length) onEvent(name || "message", data.join("\n"));
      name = "";
      data = [];
    }

    function line(text) {
      if (text === "") return dispatch();
      if (text[0] === ":") return; // comment / keep-alive
      const colon = text.indexOf(":");
      const field = colon < 0 ? text : text.slice(0, colon);
      let value = colon < 0 ? "" : text.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }

    function lines() {
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== "\n" && c !== "\r") continue;
        if (c === "\r" && i + 1 === buffer.length) break; // maybe \r\n split across chunks
        line(buffer.slice(start, i));
        if (c === "\r" && buffer[i + 1] === "\n") i++;
        start = i + 1;
      }
      buffer = buffer.slice(start);
    }

    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      lines();
    }
    buffer += decoder.decode();
    lines();
    if (buffer) line(buffer.replace(/\r$/, ""));
    dispatch();
  }

  // ---- asking -------------------------------------------------------------------------------

  async function ask(question) {
    if (controller) controller.abort();
    const mine = ++runId;
    controller = new AbortController();
    resetResult(question);
    currentOnScreen = false;
    renderThread();
    setState("asking");
    ui.status.textContent = "Searching the documents…";

    const headers = accessToken.withAuth({ "Content-Type": "application/json", Accept: "text/event-stream" });

    let finished = false;
    const current = () => mine === runId;

    function onEvent(name, raw) {
      if (!current() || finished) return;
      let data;
      try {
        data = JSON.parse(raw);
      } catch (e) {
        finished = true;
        showProblem({ title: "The server sent something unreadable", detail: "Event “" + name + "” was not JSON." });
        return;
      }
      if (name === "evidence") {
        sawEvidence = true;
        renderEvidence(Array.isArray(data.evidence) ? data.evidence : []);
        const refusing = data.evidence && data.evidence.length && data.evidence.every((e) => !Number.isInteger(e.n));
        setState("streaming");
        ui.status.textContent = refusing ? "Checking the closest passages…" : "Writing the answer…";
        if (streamed) renderRichText(ui.answer, streamed);
      } else if (name === "steps") {
        setState("streaming");
        ui.answer.classList.remove("streaming"); // no model writes here: no typing cursor
        renderSteps(data.answer_kind, data.steps);
        if (data.checking) {
          renderChecking();
          ui.status.textContent = "Shown from the documents; the local model is checking the choice…";
        } else {
          ui.status.textContent = "Shown from the documents; finishing…";
        }
      } else if (name === "revised") {
        renderEvidence(Array.isArray(data.evidence) ? data.evidence : []);
        renderSteps(data.answer_kind, data.steps);
        renderReplaced(data.first_shown);
      } else if (name === "token") {
        if (ui.main.dataset.state !== "streaming") setState("streaming");
        streamed += typeof data.text === "string" ? data.text : "";
        renderRichText(ui.answer, streamed);
      } else if (name === "done") {
        finished = true;
        renderDone(data);
      } else if (name === "error") {
        finished = true;
        showProblem({ status: data.status, title: data.title, detail: data.detail });
      }
    }

    try {
      const response = await fetch("/v1/ask", {
        method: "POST",
        headers: headers,
        body: JSON.stringify({ question: question, stream: true, history: historyForRequest() }),
        signal: controller.signal,
        cache: "no-store",
        credentials: "same-origin",
      });
      if (!current()) return;
      if (!response.ok) {
        showProblem(await problemOf(response));
        return;
      }
      const type = response.headers.get("Content-Type") || "";
      if (type.indexOf("text/event-stream") >= 0 && response.body) {
        await readEvents(response.body, onEvent);
      } else {
        const result = await response.json();
        if (!current()) return;
        if (Array.isArray(result.evidence)) onEvent("evidence", JSON.stringify({ evidence: result.evidence }));
        onEvent("done", JSON.stringify(result));
      }
      if (current() && !finished) {
        showProblem({ title: "The answer was cut off", detail: "The connection closed before the answer was complete. Ask again." });
      }
    } catch (err) {
      if (!current()) return;
      if (err && err.name === "AbortError") {
        if (streamed) ui.answer.classList.add("incomplete");
        setState("stopped");
        ui.status.textContent = "Stopped. The answer above is incomplete.";
        return;
      }
      showProblem({ title: "Cannot reach the appliance", detail: "Check the network connection, then ask again." });
    } finally {
      if (current()) controller = null;
    }
  }

  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = ui.question.value.trim();
    if (!question) {
      ui.status.textContent = "Type a question first.";
      ui.question.focus();
      return;
    }
    ask(question);
  });

  ui.question.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.altKey || event.isComposing) return;
    event.preventDefault();
    if (typeof ui.form.requestSubmit === "function") ui.form.requestSubmit();
    else ui.ask.click();
  });

  renderThread();

  ui.stop.addEventListener("click", () => {
    if (controller) controller.abort();
    ui.question.focus();
  });
})();
