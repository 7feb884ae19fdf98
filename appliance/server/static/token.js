/* The access token of both pages: the operator page (app.js, feedback.js) and the admin page (admin.js).
 *
 * Kept in sessionStorage only, under one key for both pages (one tab holds one token; closing the tab
 * forgets it) and sent as `Authorization: Bearer …`. Each page has the same token box at its top
 * (#token-box holding #token-form, #token, #token-clear and #token-state). Loaded before the page's own
 * scripts (deferred scripts run in document order), it defines `window.applianceToken`.
 */
"use strict";

window.applianceToken = (function () {
  const KEY = "appliance.token";
  const $ = (id) => document.getElementById(id);

  function saved() {
    try {
      return sessionStorage.getItem(KEY) || "";
    } catch (e) {
      return "";
    }
  }

  function save(value) {
    try {
      if (value) sessionStorage.setItem(KEY, value);
      else sessionStorage.removeItem(KEY);
    } catch (e) {
      /* storage disabled: the token lives in the field only */
    }
  }

  /* The saved token, else what is typed in the box and not saved yet. */
  function current() {
    const field = $("token");
    return saved() || (field ? field.value.trim() : "");
  }

  /* A copy of `headers` with the Authorization header when there is a token. */
  function withAuth(headers) {
    const result = Object.assign({}, headers || {});
    const token = current();
    if (token) result.Authorization = "Bearer " + token;
    return result;
  }

  function showState() {
    const set = Boolean(saved());
    $("token-state").textContent = set ? "set" : "not set";
    $("token-state").classList.toggle("is-set", set);
  }

  /* The server asked for a token (401): open the box and put the cursor in it. */
  function ask() {
    $("token-box").open = true;
    window.setTimeout(() => $("token").focus(), 0);
  }

  /* Wire the page's token box: Save keeps what is typed (then `onSaved`), Clear forgets it (then `onCleared`). */
  function bind(onSaved, onCleared) {
    $("token").value = saved();
    showState();
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      save($("token").value.trim());
      showState();
      $("token-box").open = false;
      if (onSaved) onSaved();
    });
    $("token-clear").addEventListener("click", () => {
      $("token").value = "";
      save("");
      showState();
      if (onCleared) onCleared();
      $("token").focus();
    });
  }

  return { saved: saved, current: current, withAuth: withAuth, ask: ask, bind: bind };
})();
