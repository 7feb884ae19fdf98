/* The DOM helpers of both pages (app.js, admin.js): nodes are built with createElement and filled with
 * textContent only, never innerHTML, so nothing the server sends can become markup. Loaded before the
 * pages' own scripts (deferred scripts run in document order), it defines `window.applianceDom`.
 */
"use strict";

window.applianceDom = (function () {
  /* A new <tag> with an optional class and text. */
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  /* Remove every child of `node`. */
  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  return { el: el, clear: clear };
})();
