/* The rating buttons under a finished answer: POST /v1/feedback with the answer's request id.
 *
 * app.js announces each answer ("appliance:answered", with its request id) and each new question
 * ("appliance:asking"). "Helpful" is sent at once; "Not helpful" opens a reason and a comment first.
 * Rating again replaces the earlier rating (the newest counts). The token is the page's (token.js);
 * nothing the server says reaches the page except as text.
 */
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const ui = {
    box: $("feedback"),
    up: $("feedback-up"),
    down: $("feedback-down"),
    form: $("feedback-form"),
    reason: $("feedback-reason"),
    comment: $("feedback-comment"),
    cancel: $("feedback-cancel"),
    status: $("feedback-status"),
  };
  if (!ui.box) return;
  let requestId = "";

  function openForm(open) {
    ui.form.hidden = !open;
    ui.down.setAttribute("aria-expanded", open ? "true" : "false");
  }

  function reset() {
    openForm(false);
    ui.form.reset();
    ui.up.setAttribute("aria-pressed", "false");
    ui.down.setAttribute("aria-pressed", "false");
    ui.status.textContent = "";
  }

  async function send(rating, reason, comment) {
    const headers = window.applianceToken.withAuth({ "Content-Type": "application/json" });
    const body = { request_id: requestId, rating: rating };
    if (reason) body.reason = reason;
    if (comment) body.comment = comment;
    ui.status.textContent = "Sending your rating…";
    try {
      const response = await fetch("/v1/feedback", {
        method: "POST",
        headers: headers,
        body: JSON.stringify(body),
        cache: "no-store",
        credentials: "same-origin",
      });
      if (!response.ok) {
        let detail = "HTTP " + response.status;
        try {
          const problem = await response.json();
          if (problem && typeof problem.detail === "string") detail = problem.detail;
        } catch (e) {
          /* not JSON: the status says enough */
        }
        ui.status.textContent = "Your rating was not recorded: " + detail;
        return;
      }
      ui.up.setAttribute("aria-pressed", rating === "up" ? "true" : "false");
      ui.down.setAttribute("aria-pressed", rating === "down" ? "true" : "false");
      openForm(false);
      ui.status.textContent =
        rating === "up" ? "Thank you: rated helpful." : "Thank you: rated not helpful. The SOP owners will see it.";
    } catch (e) {
      ui.status.textContent = "Your rating was not recorded: the appliance cannot be reached.";
    }
  }

  ui.up.addEventListener("click", () => send("up", "", ""));
  ui.down.addEventListener("click", () => {
    openForm(ui.form.hidden);
    if (!ui.form.hidden) ui.reason.focus();
  });
  ui.cancel.addEventListener("click", () => {
    openForm(false);
    ui.down.focus();
  });
  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    send("down", ui.reason.value, ui.comment.value.trim());
  });

  document.addEventListener("appliance:asking", () => {
    requestId = "";
    reset();
    ui.box.hidden = true;
  });
  document.addEventListener("appliance:answered", (event) => {
    requestId = (event.detail && event.detail.requestId) || "";
    reset();
    ui.box.hidden = !requestId;
  });
})();
