/* The admin page: index status, files not indexed, reindex, models and audit verification, tokens, the gaps
 * report and feedback, each from its /v1 route with the admin token (the server checks the role).
 *
 * Like the operator page: no external requests, no inline code (strict CSP), the token kept by token.js
 * (sessionStorage only, the operator page's key, so one tab holds one token), and every text from the server
 * reaches the page only through textContent. The Documents section uploads a file (multipart field `file`, XMLHttpRequest for its
 * progress events) and lists the indexed documents with a Delete button (the server refuses documents that
 * were not uploaded, and the page shows why).
 */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);

  const { el, clear } = window.applianceDom;

  /* A table row's last cell: one button that acts on the row, named for screen readers by `label`. */
  function actionCell(text, label, onClick) {
    const cell = el("td");
    const button = el("button", "secondary", text);
    button.type = "button";
    button.setAttribute("aria-label", label);
    button.addEventListener("click", onClick);
    cell.appendChild(button);
    return cell;
  }

  function when(value) {
    if (value === null || value === undefined || value === "") return "—";
    const date = typeof value === "number" ? new Date(value * 1000) : new Date(String(value));
    return isNaN(date.getTime()) ? String(value) : date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  // ---- token (token.js: sessionStorage only, the operator page's key) -----------------------------

  const accessToken = window.applianceToken;
  accessToken.bind(loadAll, null);

  // ---- calling the API --------------------------------------------------------------------------

  function say(text) {
    $("status").textContent = text;
  }

  function showError(title, detail) {
    $("error-title").textContent = title;
    $("error-detail").textContent = detail || "";
    $("error").hidden = false;
  }

  /* JSON of a /v1 route, or null after showing why not (a 401 opens the token box). */
  async function api(method, path, body) {
    const headers = accessToken.withAuth({ Accept: "application/json" });
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method: method,
        headers: headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
        credentials: "same-origin",
      });
    } catch (e) {
      showError("Cannot reach the appliance", "Check the network connection, then try again.");
      return null;
    }
    let data = null;
    try {
      data = await response.json();
    } catch (e) {
      data = null;
    }
    if (!response.ok) {
      const detail = data && typeof data.detail === "string" ? data.detail : "HTTP " + response.status;
      if (response.status === 401) {
        showError("An admin token is needed", "Enter an admin token under “Access token” at the top. " + detail);
        accessToken.ask();
      } else if (response.status === 403) {
        showError("Not allowed", "This page needs an admin token. " + detail);
      } else {
        showError((data && data.title) || "Request failed (HTTP " + response.status + ")", detail);
      }
      return null;
    }
    $("error").hidden = true;
    return data;
  }

  // ---- index status, sources, files not indexed -----------------------------------------------

  function fact(list, term, value) {
    list.appendChild(el("dt", null, term));
    list.appendChild(el("dd", null, value));
  }

  async function loadStatus() {
    const data = await api("GET", "/v1/admin/status");
    if (!data) return;
    const facts = $("index-facts");
    clear(facts);
    fact(facts, "Documents", data.documents + " indexed, " + data.failed_documents + " failed, " + data.skipped_documents + " skipped");
    fact(facts, "Chunks / vectors", data.chunks + " / " + data.vectors);
    const problems = Object.entries(data.consistency || {}).filter(([, v]) => v && (!Array.isArray(v) || v.length));
    fact(
      facts,
      "Consistency",
      data.consistent ? "consistent" : "INCONSISTENT: " + problems.map(([k, v]) => k + " " + (Array.isArray(v) ? v.length : v)).join(", ") + " — reindex to repair"
    );
    fact(facts, "Pending changes", String(data.pending_changes));
    fact(facts, "Index updated", when(data.index_updated_at));
    fact(facts, "Last reindex", when(data.last_reindex));
    fact(facts, "Embedder", data.embedder);
    (data.warnings || []).forEach((warning) => fact(facts, "Warning", warning));

    const sources = $("sources-list");
    clear(sources);
    (data.sources || []).forEach((source) => {
      sources.appendChild(el("li", null, typeof source === "string" ? source : JSON.stringify(source)));
    });
    if (!sources.firstChild) sources.appendChild(el("li", "help", "No source folder yet: run `appliance ingest FOLDER`."));

    const rows = $("not-indexed-rows");
    clear(rows);
    (data.not_indexed || []).forEach((doc) => {
      const tr = el("tr");
      tr.appendChild(el("td", "path", doc.path));
      tr.appendChild(el("td", null, doc.status));
      tr.appendChild(el("td", null, doc.error || "—"));
      rows.appendChild(tr);
    });
    const none = !(data.not_indexed || []).length;
    $("not-indexed-table").hidden = none;
    $("not-indexed-empty").hidden = !none;
    $("documents-summary").textContent = data.documents + " document(s) indexed from " + (data.sources || []).length + " source(s).";

    const models = $("models-list");
    clear(models);
    (data.models || []).forEach((m) => models.appendChild(el("li", null, m.role + ": " + m.name + (m.source ? " (" + m.source + ")" : ""))));
  }

  $("status-refresh").addEventListener("click", async () => {
    say("Loading the index status…");
    await loadStatus();
    say("Index status loaded.");
  });

  $("reindex").addEventListener("click", async () => {
    const button = $("reindex");
    button.disabled = true;
    $("reindex-result").textContent = "Reindexing… (asks are still answered meanwhile)";
    const report = await api("POST", "/v1/reindex");
    button.disabled = false;
    if (!report) {
      $("reindex-result").textContent = "Reindex did not run.";
      return;
    }
    $("reindex-result").textContent =
      "Reindex done: " + report.added + " added, " + report.updated + " updated, " + report.removed + " removed, " +
      (report.failed || []).length + " failed.";
    await loadStatus();
    button.focus();
  });

  // ---- documents: upload, list, delete --------------------------------------------------------


  async function loadDocuments() {
    const data = await api("GET", "/v1/documents");
    const rows = $("documents-rows");
    clear(rows);
    if (!data) return;
    data.documents.forEach((doc) => {
      const tr = el("tr");
      tr.dataset.documentId = String(doc.id);
      tr.appendChild(el("td", null, doc.id));
      tr.appendChild(el("td", "path", doc.path));
      tr.appendChild(revisionCell(doc.control));
      tr.appendChild(el("td", null, doc.status + (doc.error ? ": " + doc.error : "")));
      tr.appendChild(el("td", null, doc.chunks));
      tr.appendChild(el("td", null, when(doc.indexed_at)));
      tr.appendChild(actionCell("Delete", "Delete document " + doc.path, () => deleteDocument(doc)));
      rows.appendChild(tr);
    });
    $("documents-table").hidden = !data.documents.length;
  }

  /* The revision a document states ("SOP-CL-004 rev 3, effective 2025-05-01"), flagged when past its review date. */
  function revisionCell(control) {
    const cell = el("td", "revision", control && control.label ? String(control.label) : "—");
    if (control && control.review_overdue) {
      const cycle = control.review_from_cycle ? " (by its review cycle)" : "";
      cell.appendChild(el("span", "review-overdue", "Past its review date " + String(control.review || "") + cycle));
    }
    return cell;
  }

  async function deleteDocument(doc) {
    if (!window.confirm("Delete " + doc.path + "? Its file and its index entries are removed.")) return;
    $("documents-result").textContent = "Deleting " + doc.path + "…";
    const data = await api("DELETE", "/v1/documents/" + encodeURIComponent(doc.id));
    $("documents-result").textContent = data
      ? "Deleted " + data.path + " (" + data.outcome + ")."
      : "Not deleted: " + $("error-detail").textContent;
    await loadDocuments();
    await loadStatus();
    $("documents-refresh").focus();
  }

  function problemText(xhr) {
    let data = null;
    try {
      data = JSON.parse(xhr.responseText);
    } catch (e) {
      data = null;
    }
    if (xhr.status >= 200 && xhr.status < 300) return { data: data, text: "" };
    const detail = data && typeof data.detail === "string" ? data.detail : "HTTP " + xhr.status;
    const title = (data && data.title) || "Upload refused (HTTP " + xhr.status + ")";
    return { data: null, text: title + ": " + detail };
  }

  function upload(file, replace) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/v1/documents" + (replace ? "?replace=true" : ""));
      xhr.setRequestHeader("Accept", "application/json");
      const headers = accessToken.withAuth();
      if (headers.Authorization) xhr.setRequestHeader("Authorization", headers.Authorization);
      const bar = $("upload-progress");
      bar.value = 0;
      bar.hidden = false;
      xhr.upload.addEventListener("progress", (event) => {
        if (!event.lengthComputable) return;
        const percent = Math.round((100 * event.loaded) / event.total);
        bar.value = percent;
        $("upload-result").textContent = "Uploading " + file.name + "… " + percent + "%";
      });
      xhr.upload.addEventListener("load", () => {
        bar.value = 100;
        $("upload-result").textContent = "Indexing " + file.name + "…";
      });
      xhr.addEventListener("load", () => resolve(problemText(xhr)));
      xhr.addEventListener("error", () => resolve({ data: null, text: "Cannot reach the appliance: try again." }));
      const form = new FormData();
      form.append("file", file, file.name);
      xhr.send(form);
    });
  }

  $("upload-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("upload-file").files[0];
    if (!file) {
      $("upload-result").textContent = "Choose a file first.";
      $("upload-file").focus();
      return;
    }
    const button = $("upload-button");
    button.disabled = true;
    $("upload-result").textContent = "Uploading " + file.name + "…";
    const outcome = await upload(file, $("upload-replace").checked);
    button.disabled = false;
    $("upload-progress").hidden = true;
    if (outcome.data) {
      const d = outcome.data;
      $("upload-result").textContent =
        file.name + ": " + d.outcome + " as document " + d.document_id + " (" + d.path + ", " + d.status + ", " +
        d.chunks + " chunk(s))" + (d.error ? ": " + d.error : ".");
      $("upload-file").value = "";
      await loadDocuments();
      await loadStatus();
    } else {
      $("upload-result").textContent = file.name + " not uploaded. " + outcome.text;
    }
    button.focus();
  });

  $("documents-refresh").addEventListener("click", async () => {
    await loadDocuments();
    $("documents-result").textContent = "Documents listed.";
  });

  // ---- models and audit verification ----------------------------------------------------------

  function listProblems(target, problems) {
    clear(target);
    problems.forEach((p) => target.appendChild(el("li", null, typeof p === "string" ? p : p.file + ":" + p.line + ": " + p.problem)));
  }

  $("models-verify").addEventListener("click", async () => {
    $("models-result").textContent = "Checking every model file's sha256…";
    const data = await api("POST", "/v1/admin/models/verify");
    if (!data) {
      $("models-result").textContent = "";
      return;
    }
    $("models-result").textContent = data.ok
      ? "All model files intact (" + data.models + " model(s))."
      : data.problems.length + " problem(s) in the model files:";
    listProblems($("models-problems"), data.problems || []);
  });

  $("audit-verify").addEventListener("click", async () => {
    $("audit-result").textContent = "Checking the audit log's hash chain…";
    const data = await api("POST", "/v1/admin/audit/verify");
    if (!data) {
      $("audit-result").textContent = "";
      return;
    }
    $("audit-result").textContent =
      (data.ok ? "Intact: " : data.problems.length + " problem(s): ") +
      data.records + " record(s) in " + data.files + " file(s); head seq " + data.last_seq + " sha256 " + data.last_hash + "." +
      (data.notes && data.notes.length ? " " + data.notes.join(" ") : "");
    listProblems($("audit-problems"), data.problems || []);
  });

  // ---- tokens -----------------------------------------------------------------------------------

  async function loadTokens() {
    const data = await api("GET", "/v1/admin/tokens");
    if (!data) return;
    const rows = $("tokens-rows");
    clear(rows);
    data.tokens.forEach((t) => {
      const tr = el("tr");
      tr.appendChild(el("td", null, t.name));
      tr.appendChild(el("td", "path", t.id));
      tr.appendChild(el("td", null, t.role));
      tr.appendChild(el("td", null, when(t.created_at)));
      tr.appendChild(el("td", null, when(t.last_used_at)));
      tr.appendChild(el("td", null, t.active ? "active" : "revoked " + when(t.revoked_at)));
      tr.appendChild(t.active ? actionCell("Revoke", "Revoke token " + t.name, () => revoke(t)) : el("td"));
      rows.appendChild(tr);
    });
  }

  async function revoke(token) {
    if (!window.confirm("Revoke token " + token.name + "? Requests with it are refused from now on.")) return;
    const data = await api("POST", "/v1/admin/tokens/" + encodeURIComponent(token.id) + "/revoke");
    if (data) say("Revoked token " + data.token.name + ".");
    await loadTokens();
    $("token-create-button").focus();
  }

  $("token-create").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("new-token-name").value.trim();
    const body = { role: $("new-token-role").value };
    if (name) body.name = name;
    const data = await api("POST", "/v1/admin/tokens", body);
    if (!data) return;
    $("new-token-label").textContent = data.token.name + " (" + data.token.role + ")";
    $("new-token-secret").textContent = data.secret;
    $("new-token").hidden = false;
    $("new-token-name").value = "";
    say("Created token " + data.token.name + ": copy its secret now, it is not shown again.");
    await loadTokens();
    $("new-token-secret").focus();
  });

  // ---- gaps and feedback ------------------------------------------------------------------------

  async function loadGaps() {
    const since = $("gaps-since").value;
    $("gaps-summary").textContent = "Grouping the period's questions… (this searches the index again)";
    const data = await api("GET", "/v1/admin/gaps?since=" + encodeURIComponent(since));
    const list = $("gaps-list");
    clear(list);
    if (!data) {
      $("gaps-summary").textContent = "";
      return;
    }
    $("gaps-summary").textContent =
      data.gap_questions + " of " + data.answers + " answer(s) were gaps, in " + data.topics.length + " topic(s): " +
      data.not_covered + " not covered, " + data.covered_but_not_found + " covered but not found.";
    data.topics.forEach((topic) => {
      const li = el("li", "gap " + (topic.label === "not covered" ? "not-covered" : "covered"));
      const head = el("p", "gap-head");
      head.appendChild(el("strong", "gap-label", topic.label));
      const why = Object.entries(topic.why).filter(([, n]) => n).map(([k, n]) => k.replace("_", " ") + " " + n).join(", ");
      head.appendChild(el("span", null, " — asked " + topic.count + "× (" + why + "), coverage " + topic.coverage.toFixed(2)));
      li.appendChild(head);
      if (topic.nearest) {
        const where = topic.nearest.path + (topic.nearest.section ? " › " + topic.nearest.section : "");
        li.appendChild(el("p", "help", "Nearest: " + where));
      }
      const examples = el("ul", "examples");
      topic.examples.forEach((q) => examples.appendChild(el("li", null, q)));
      li.appendChild(examples);
      list.appendChild(li);
    });
  }

  async function loadFeedback() {
    const since = $("feedback-since").value;
    const data = await api("GET", "/v1/admin/feedback?since=" + encodeURIComponent(since));
    const rows = $("feedback-rows");
    clear(rows);
    if (!data) return;
    const reasons = Object.entries(data.down_reasons).filter(([, n]) => n).map(([k, n]) => k + " " + n).join(", ");
    $("feedback-summary").textContent =
      data.rated + " answer(s) rated: " + data.up + " helpful, " + data.down + " not helpful" + (reasons ? " (" + reasons + ")." : ".");
    data.ratings.forEach((r) => {
      const tr = el("tr", r.rating === "down" ? "rated-down" : "rated-up");
      tr.appendChild(el("td", null, when(r.time)));
      tr.appendChild(el("td", null, r.rating === "down" ? "not helpful" : "helpful"));
      tr.appendChild(el("td", null, r.reason || "—"));
      tr.appendChild(el("td", null, r.question || "—"));
      tr.appendChild(el("td", "path", r.refused ? "(refused)" : r.top_source || "—"));
      tr.appendChild(el("td", null, r.comment || ""));
      tr.appendChild(el("td", null, r.principal || "—"));
      rows.appendChild(tr);
    });
    $("feedback-table").hidden = !data.ratings.length;
  }

  $("gaps-form").addEventListener("submit", (event) => {
    event.preventDefault();
    loadGaps();
  });
  $("feedback-form").addEventListener("submit", (event) => {
    event.preventDefault();
    loadFeedback();
  });

  async function loadAll() {
    say("Loading…");
    await loadStatus();
    await loadDocuments();
    await loadTokens();
    await loadFeedback();
    say($("error").hidden ? "Loaded." : "");
  }

  loadAll();
})();
