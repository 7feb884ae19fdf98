/* Pipe tables shown as tables. Every loader writes a table (Markdown, HTML, DOCX, PDF) as "| a | b |"
 * rows with a "| --- |" rule under the header row (appliance/text/pipe_tables.py reads them the same way);
 * the page shows them as real <table>s, the header row as <th>, inside a box that scrolls sideways when
 * the table is wider than the screen. Built with createElement and textContent only: a cell's text is
 * text, never markup. A short form (one row under its header) stands in wherever a passage is
 * shortened for display, so no cell or row is ever cut.
 *
 * Loaded before app.js, which uses window.ApplianceTables.
 */
"use strict";

(function () {
  const ROW = /^[ \t]*\|/;
  const RULE = /^[ \t]*\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*$/;

  /* The cells of one row, stripped, escaped pipes (\|) unescaped. */
  function cells(line) {
    let inner = line.trim();
    if (inner.startsWith("|")) inner = inner.slice(1);
    if (inner.endsWith("|") && !inner.endsWith("\\|")) inner = inner.slice(0, -1);
    const parts = [];
    let cell = "";
    for (let i = 0; i < inner.length; i++) {
      if (inner[i] === "\\" && inner[i + 1] === "|") {
        cell += "|";
        i++;
      } else if (inner[i] === "|") {
        parts.push(cell.trim());
        cell = "";
      } else {
        cell += inner[i];
      }
    }
    parts.push(cell.trim());
    return parts;
  }

  function lines(text, start, end) {
    const found = [];
    const re = /[^\n]*/g;
    const part = text.slice(start, end);
    let m;
    while ((m = re.exec(part)) !== null) {
      if (m[0].trim()) found.push({ start: start + m.index, end: start + m.index + m[0].length, text: m[0] });
      if (re.lastIndex === m.index) re.lastIndex++;
    }
    return found;
  }

  /* Whether every non-blank line of `text` is a pipe row (and there is one). */
  function isTable(text) {
    const all = lines(String(text || ""), 0, String(text || "").length);
    return all.length > 0 && all.every((line) => ROW.test(line.text));
  }

  /* `text` cut into runs of whole lines, [{start, end, table}] in order (UTF-16 offsets), covering all of it. */
  function blocks(text) {
    const runs = [];
    const re = /[^\n]*\n?/g;
    let m;
    while ((m = re.exec(text)) !== null && m[0]) {
      const table = ROW.test(m[0]);
      const last = runs[runs.length - 1];
      if (last && last.table === table) last.end = m.index + m[0].length;
      else runs.push({ start: m.index, end: m.index + m[0].length, table: table });
    }
    return runs;
  }

  /* The tables of the pipe lines in text[start:end]: [{header: [..] | null, rows: [{cells, start, end}]}].
   * A row followed by a rule is a header; one that repeats the header before it goes on with that table
   * (an excerpt gives each row it picks under its header). Rows before any header have none (a passage
   * that starts inside a table). */
  function parse(text, start, end) {
    const rows = lines(text, start || 0, end === undefined ? text.length : end).filter((line) => ROW.test(line.text));
    const found = [];
    let current = null;
    rows.forEach((line, i) => {
      if (RULE.test(line.text)) return;
      const heads = i + 1 < rows.length && RULE.test(rows[i + 1].text);
      const row = { cells: cells(line.text), start: line.start, end: line.end };
      if (!heads) {
        if (!current) {
          current = { header: null, rows: [] };
          found.push(current);
        }
        current.rows.push(row);
      } else if (!current || !sameCells(current.header, row.cells)) {
        current = { header: row.cells, rows: [] };
        found.push(current);
      }
    });
    return found;
  }

  function sameCells(a, b) {
    return Array.isArray(a) && a.length === b.length && a.every((cell, i) => cell === b[i]);
  }

  /* The table and body row whose line holds text[offset], as a table of that one row: {header, rows: [row]}. */
  function rowAt(text, offset) {
    const block = blocks(text).find((b) => b.table && b.start <= offset && offset < b.end);
    if (!block) return null;
    for (const table of parse(text, block.start, block.end)) {
      const row = table.rows.find((r) => r.start <= offset && offset < r.end);
      if (row) return { header: table.header, rows: [row] };
    }
    return null;
  }

  /* A table in a box that scrolls sideways. fill(cell, text, row) writes a cell's text (default:
   * textContent); a row for which marked(row) is true is highlighted, its cells' text in <mark>. */
  function build(table, fill, marked) {
    const write = typeof fill === "function" ? fill : (cell, text) => (cell.textContent = text);
    const columns = Math.max(table.header ? table.header.length : 0, ...table.rows.map((r) => r.cells.length));
    const box = document.createElement("div");
    box.className = "table-scroll";
    box.tabIndex = 0; // a box that scrolls must be reachable by keyboard
    const element = document.createElement("table");
    element.className = "pipe-table";
    if (table.header) {
      const head = document.createElement("thead");
      const tr = document.createElement("tr");
      padded(table.header, columns).forEach((text) => {
        const th = document.createElement("th");
        th.scope = "col";
        write(th, text, null);
        tr.appendChild(th);
      });
      head.appendChild(tr);
      element.appendChild(head);
    }
    const body = document.createElement("tbody");
    table.rows.forEach((row) => {
      const tr = document.createElement("tr");
      const mark = typeof marked === "function" && marked(row);
      if (mark) tr.className = "row-match";
      padded(row.cells, columns).forEach((text) => {
        const td = document.createElement("td");
        const target = mark && text ? td.appendChild(document.createElement("mark")) : td;
        write(target, text, row);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    element.appendChild(body);
    box.appendChild(element);
    return box;
  }

  function padded(list, columns) {
    const out = list.slice();
    while (out.length < columns) out.push("");
    return out;
  }

  /* Every table of a pipe-table text (a quoted answer's table step, a quoted line) as built tables. */
  function render(text, fill) {
    const fragment = document.createDocumentFragment();
    parse(String(text || "")).forEach((table) => fragment.appendChild(build(table, fill)));
    return fragment;
  }

  /* Steps with each run of table steps of one source joined into one (an excerpt gives every row it
   * picks as its own step, under the same header: one table reads better, the header shown once). */
  function joinSteps(steps) {
    const joined = [];
    (Array.isArray(steps) ? steps : []).forEach((step) => {
      const last = joined[joined.length - 1];
      const table = step && typeof step === "object" && step.kind === "table";
      if (table && last && last.kind === "table" && last.n === step.n) {
        joined[joined.length - 1] = Object.assign({}, last, {
          text: String(last.text || "") + "\n" + String(step.text || ""),
          matched: Boolean(last.matched || step.matched),
        });
      } else {
        joined.push(step);
      }
    });
    return joined;
  }

  /* A row on one line of text: "Header: cell · Header: cell", empty cells left out. */
  function rowText(header, row) {
    return row.cells
      .map((cell, i) => (!cell ? "" : header && header[i] ? header[i] + ": " + cell : cell))
      .filter(Boolean)
      .join(" · ");
  }

  /* `text` on one line of at most about `limit` characters, "…" where it stops: prose cut between words,
   * a table only between rows, each row with its header (rowText). The first row is kept whole. */
  function oneLine(text, limit) {
    const source = String(text || "");
    const pieces = [];
    blocks(source).forEach((block) => {
      if (!block.table) {
        const prose = source.slice(block.start, block.end).replace(/\s+/g, " ").trim();
        if (prose) pieces.push({ text: prose, cut: true });
        return;
      }
      parse(source, block.start, block.end).forEach((table) => {
        table.rows.forEach((row) => pieces.push({ text: rowText(table.header, row), cut: false }));
        if (!table.rows.length && table.header) pieces.push({ text: table.header.join(" · "), cut: false });
      });
    });
    let shown = "";
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i];
      const separator = !shown ? "" : !pieces[i - 1].cut ? "; " : " ";
      if (shown.length + separator.length + piece.text.length <= limit) {
        shown += separator + piece.text;
      } else if (piece.cut) {
        const words = leadingWords(piece.text, limit - shown.length - separator.length - 1, !shown);
        return shown + (words ? separator + words : "") + "…";
      } else {
        return (shown || piece.text) + "…";
      }
    }
    return shown;
  }

  /* The words of `prose` that fit `room` characters; with nothing before them (`whole`), a first word
   * too long for the room is cut rather than nothing shown. */
  function leadingWords(prose, room, whole) {
    if (room <= 0) return "";
    if (prose.length > room && prose[room] === " ") return prose.slice(0, room);
    const head = prose.slice(0, room);
    const space = head.lastIndexOf(" ");
    const fitting = space > 0 ? head.slice(0, space) : "";
    return fitting || (whole ? head : "");
  }

  window.ApplianceTables = Object.freeze({
    cells: cells,
    isTable: isTable,
    blocks: blocks,
    parse: parse,
    rowAt: rowAt,
    build: build,
    render: render,
    joinSteps: joinSteps,
    rowText: rowText,
    oneLine: oneLine,
  });
})();
