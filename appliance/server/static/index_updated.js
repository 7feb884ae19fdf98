// "Index updated …": when the newest change this server answers from was committed, read from GET /readyz
// (open, no token) on load and every minute, so a server that is behind never looks current.
"use strict";
(function () {
  const REFRESH_MS = 60000;
  const element = document.getElementById("index-updated");
  if (!element) return;

  function ago(date) {
    const minutes = Math.round((Date.now() - date.getTime()) / 60000);
    if (minutes < 1) return "just now";
    if (minutes < 120) return minutes + " min ago";
    const hours = Math.round(minutes / 60);
    return hours < 48 ? hours + " h ago" : Math.round(hours / 24) + " days ago";
  }

  function describe(body) {
    if (!body || typeof body !== "object") return "Index: status unavailable";
    const updated = body.index_updated_at ? new Date(body.index_updated_at) : null;
    let text = updated && !isNaN(updated.getTime())
      ? "Index updated " + updated.toLocaleString() + " (" + ago(updated) + ")"
      : "Index: never updated";
    if (body.pending_changes > 0) text += "; " + body.pending_changes + " newer changes not served yet";
    if (body.ready === false) text += "; not ready: " + (body.detail || "see GET /readyz");
    return text;
  }

  async function refresh() {
    try {
      const response = await fetch("/readyz", { headers: { Accept: "application/json" }, cache: "no-store" });
      const body = await response.json();
      element.textContent = describe(body);
      element.dataset.ready = String(response.ok && body.pending_changes === 0);
    } catch (error) {
      element.textContent = "Index: status unavailable";
      element.dataset.ready = "false";
    }
  }

  refresh();
  setInterval(refresh, REFRESH_MS);
})();
