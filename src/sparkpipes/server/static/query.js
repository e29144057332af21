// The query console: a CodeMirror 5 editor over POST /api/query, the tables from
// GET /api/tables, and a history kept in this browser (localStorage). Results and errors
// are written with textContent only: nothing a query returns is parsed as HTML.
(function () {
  "use strict";
  const HISTORY_KEY = "sparkpipes.console.history";
  const DRAFT_KEY = "sparkpipes.console.draft";
  const HISTORY_MAX = 50;
  const NUMERIC = { LONG: true, DOUBLE: true };
  const EXTRA_KEYWORDS =
    "pipeline pipelines load data kafka s3 azure fs hdfs credentials config batch_interval " +
    "max_partitions_per_batch format json csv avro parquet skip parser errors source check " +
    "start stop test foreground offsets earliest latest shard sort key persisted ignore lines " +
    "fields terminated enclosed replace global variables";
  const $ = function (sel) { return document.querySelector(sel); };
  let editor;
  let mark = null;
  let markedLine = null;

  function node(tag, props, children) {
    const el = document.createElement(tag);
    Object.assign(el, props || {});
    (children || []).forEach(function (c) {
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    });
    return el;
  }

  function ident(name) {
    return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : "`" + name.replace(/`/g, "``") + "`";
  }

  function insert(text) {
    editor.replaceSelection(text);
    editor.focus();
  }

  // -- history ---------------------------------------------------------------------------
  function loadHistory() {
    try {
      const h = JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]");
      return Array.isArray(h) ? h.filter(function (x) { return x && typeof x.sql === "string"; }) : [];
    } catch (err) {
      return [];
    }
  }

  function remember(entry) {
    const h = loadHistory().filter(function (x) { return x.sql !== entry.sql; });
    h.unshift(entry);
    try {
      localStorage.setItem(HISTORY_KEY, JSON.stringify(h.slice(0, HISTORY_MAX)));
    } catch (err) { /* storage full or disabled: the history is a convenience */ }
    renderHistory();
  }

  function renderHistory() {
    const list = $("#history");
    const h = loadHistory();
    list.replaceChildren();
    if (!h.length) {
      list.append(node("li", { className: "muted" }, ["No queries yet."]));
      return;
    }
    h.forEach(function (item) {
      const when = new Date(item.at).toLocaleTimeString();
      const rows = item.rows === 1 ? "1 row" : item.rows + " rows";
      const meta = item.ok ? when + " · " + rows + " · " + item.ms + " ms" : when + " · " + item.note;
      const li = node("li", { title: item.sql }, [
        node("code", {}, [item.sql.replace(/\s+/g, " ").trim()]),
        node("span", { className: "meta" + (item.ok ? "" : " failed") }, [meta]),
      ]);
      li.addEventListener("click", function () {
        editor.setValue(item.sql);
        editor.setCursor(editor.lineCount(), 0);
        editor.focus();
      });
      list.append(li);
    });
  }

  // -- tables ----------------------------------------------------------------------------
  async function loadTables() {
    const list = $("#table-list");
    let tables;
    try {
      const r = await fetch("/api/tables", { credentials: "same-origin", headers: { Accept: "application/json" } });
      tables = await r.json();
      if (!r.ok) throw new Error((tables.error && tables.error.message) || "HTTP " + r.status);
    } catch (err) {
      list.replaceChildren(node("li", { className: "error-text" }, ["cannot list tables: " + err.message]));
      return;
    }
    list.replaceChildren();
    if (!tables.length) list.append(node("li", { className: "muted" }, ["No tables yet."]));
    tables.forEach(function (t) {
      const cols = node("ul", { className: "cols", hidden: true });
      t.columns.forEach(function (c) {
        const b = node("button", { type: "button", className: "insert", title: "insert" }, [c.name]);
        b.addEventListener("click", function () { insert(ident(c.name)); });
        cols.append(node("li", {}, [b, node("span", { className: "type" }, [c.type])]));
      });
      const toggle = node("button", { type: "button", className: "toggle", title: "columns" }, ["▸"]);
      toggle.addEventListener("click", function () {
        cols.hidden = !cols.hidden;
        toggle.textContent = cols.hidden ? "▸" : "▾";
      });
      const name = node("button", { type: "button", className: "insert", title: "insert the name" }, [t.name]);
      name.addEventListener("click", function () { insert(ident(t.name)); });
      const preview = node("button", { type: "button", className: "preview", title: "SELECT * … LIMIT 100" }, ["preview"]);
      preview.addEventListener("click", function () {
        editor.setValue("SELECT * FROM " + ident(t.name) + " LIMIT 100");
        run();
      });
      const rows = t.rows == null ? "?" : t.rows.toLocaleString();
      const row = node("div", { className: "table-row" }, [toggle, name, node("span", { className: "rows" }, [rows]), preview]);
      const item = node("li", {}, [row, cols]);
      item.dataset.table = t.name;
      list.append(item);
    });
  }

  // -- running ---------------------------------------------------------------------------
  function clearMarks() {
    if (mark) mark.clear();
    if (markedLine) editor.removeLineClass(markedLine, "background", "error-line");
    mark = markedLine = null;
  }

  function clearOutput() {
    clearMarks();
    $("#query-error").hidden = true;
    $("#messages").hidden = true;
    $("#result").replaceChildren();
  }

  function showInfo(parts) {
    $("#result-info").replaceChildren(...parts);
  }

  function showError(e, where, roundTripMs) {
    const box = $("#query-error");
    const parts = [];
    if (e.code) parts.push(node("strong", {}, [e.code + " "]));
    parts.push(e.message || "error");
    if (where) parts.push(node("div", { className: "where" }, ["at line " + where.line + ", column " + where.column]));
    box.replaceChildren(...parts);
    box.hidden = false;
    box.dataset.line = where ? where.line : "";
    box.dataset.column = where ? where.column : "";
    showInfo([node("span", { className: "error-text" }, ["failed"]), node("span", { className: "muted" }, [Math.round(roundTripMs) + " ms"])]);
    if (where) {
      const line = where.line - 1;
      const ch = Math.max(where.column - 1, 0);
      const word = editor.findWordAt({ line: line, ch: ch });
      const to = word.head.ch > ch ? word.head : { line: line, ch: ch + 1 };
      markedLine = editor.addLineClass(line, "background", "error-line");
      mark = editor.markText({ line: line, ch: ch }, to, { className: "error-mark" });
      editor.setCursor({ line: line, ch: ch });
      editor.focus();
    }
  }

  function cell(value, numeric) {
    if (value === null || value === undefined) return node("td", { className: "null" }, ["NULL"]);
    const text = typeof value === "object" ? JSON.stringify(value) : String(value);
    return node("td", { className: numeric ? "n" : "", title: text.length > 60 ? text : "" }, [text]);
  }

  function showResult(body, roundTripMs) {
    const table = $("#result");
    const n = body.rows.length;
    if (body.columns.length) {
      const head = node("tr", {}, [node("th", { className: "rownum" }, ["#"])]);
      body.columns.forEach(function (c, i) {
        head.append(node("th", {}, [c, node("span", { className: "type" }, [body.types[i] || ""])]));
      });
      const tbody = node("tbody");
      body.rows.forEach(function (r, k) {
        const tr = node("tr", {}, [node("td", { className: "rownum" }, [k + 1])]);
        r.forEach(function (v, i) { tr.append(cell(v, NUMERIC[body.types[i]])); });
        tbody.append(tr);
      });
      table.replaceChildren(node("thead", {}, [head]), tbody);
    }
    if (body.messages && body.messages.length) {
      const list = $("#messages");
      list.replaceChildren(...body.messages.map(function (m) { return node("li", {}, [m]); }));
      list.hidden = false;
    }
    const info = [];
    if (body.columns.length) info.push(node("span", {}, [node("strong", { id: "row-count" }, [n.toLocaleString()]), n === 1 ? " row" : " rows"]));
    else info.push(node("span", {}, ["done"]));
    info.push(node("span", { className: "muted", id: "timing" }, [body.time_ms + " ms on the server · " + Math.round(roundTripMs) + " ms round trip"]));
    if (body.truncated) info.push(node("span", { className: "warn" }, ["more rows exist: showing the first " + n.toLocaleString() + " (raise max rows)"]));
    showInfo(info);
  }

  let running = false;
  async function run() {
    if (running) return;
    let sql = editor.getValue();
    let lineOffset = 0;
    let chOffset = 0;
    if (editor.somethingSelected()) {
      const from = editor.getCursor("from");
      sql = editor.getSelection();
      lineOffset = from.line;
      chOffset = from.ch;
    }
    if (!sql.trim()) return;
    clearOutput();
    running = true;
    $("#run").disabled = true;
    showInfo([node("span", { className: "muted" }, ["running…"])]);
    const started = performance.now();
    let response = null;
    let body = null;
    let failure = null;
    try {
      response = await fetch("/api/query", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ sql: sql, max_rows: parseInt($("#max-rows").value, 10) }),
      });
      body = await response.json().catch(function () { return null; });
    } catch (err) {
      failure = "the server did not answer (" + err.message + ")";
    } finally {
      running = false;
      $("#run").disabled = false;
    }
    const ms = performance.now() - started;
    const entry = { sql: sql, at: Date.now() };
    if (failure || !response.ok || !body || !Array.isArray(body.rows)) {
      const e = (body && body.error) || {
        message: failure || "unexpected answer: HTTP " + response.status + (response.redirected ? " (signed out?)" : ""),
      };
      let where = null;
      if (e.line) {
        where = { line: e.line + lineOffset, column: (e.line === 1 ? chOffset : 0) + (e.column || 1) };
      }
      showError(e, where, ms);
      remember(Object.assign(entry, { ok: false, note: e.code || "failed" }));
      return;
    }
    showResult(body, ms);
    remember(Object.assign(entry, { ok: true, rows: body.rows.length, ms: body.time_ms }));
    if (/^\s*(create|drop|alter)\b/im.test(sql)) loadTables();
  }

  function setup() {
    const base = CodeMirror.resolveMode("text/x-mysql");
    const keywords = Object.assign({}, base.keywords);
    EXTRA_KEYWORDS.split(" ").forEach(function (w) { keywords[w] = true; });
    CodeMirror.defineMIME("text/x-sparkpipes", Object.assign({}, base, { keywords: keywords }));

    const area = $("#sql");
    const given = new URLSearchParams(location.search).get("sql");
    let draft = null;
    try { draft = localStorage.getItem(DRAFT_KEY); } catch (err) { /* disabled */ }
    if (given) area.value = given;
    else if (draft) area.value = draft;
    editor = CodeMirror.fromTextArea(area, {
      mode: "text/x-sparkpipes",
      lineNumbers: true,
      indentUnit: 2,
      extraKeys: { "Ctrl-Enter": run, "Cmd-Enter": run },
    });
    editor.on("change", function () {
      clearMarks();
      try { localStorage.setItem(DRAFT_KEY, editor.getValue()); } catch (err) { /* disabled */ }
    });
    window.sparkpipesEditor = editor;
    $("#run").addEventListener("click", run);
    $("#tables-refresh").addEventListener("click", loadTables);
    $("#history-clear").addEventListener("click", function () {
      try { localStorage.removeItem(HISTORY_KEY); } catch (err) { /* disabled */ }
      renderHistory();
    });
    renderHistory();
    loadTables();
    editor.focus();
    editor.setCursor(editor.lineCount(), 0);
  }

  document.addEventListener("DOMContentLoaded", setup);
})();
