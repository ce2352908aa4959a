"""The style, script and SQL highlighting of the HTML reports (:mod:`cqsens.report.html`):
inline CSS for the page and for a card standing alone, the few lines of JavaScript that sort
the table, and SQL text as escaped HTML with its keywords marked."""

from __future__ import annotations

import html
import re

__all__ = ["CARD_CSS", "CSS", "JS", "PAGE_END_CSS", "VARS", "escape", "highlight_sql", "scoped"]

_SQL_KEYWORDS = frozenset("""
    all and as asc avg between by case cast coalesce count cross desc distinct else end
    exists from full group having ilike in inner is join left like limit max median min
    not null on or order outer right select sum then union using when where with
""".split())

_SQL_TOKEN = re.compile(
    r"(?P<comment>--[^\n]*)|(?P<string>'(?:[^']|'')*'?)|(?P<ident>\"[^\"]*\"?)"
    r"|(?P<number>\b\d+(?:\.\d+)?\b)|(?P<word>[A-Za-z_][A-Za-z_0-9]*)"
)


def highlight_sql(text: str) -> str:
    """SQL text as escaped HTML, keywords, strings, numbers and comments in spans.

    Parameters
    ----------
    text : str
        Any text; it need not be valid SQL.

    Returns
    -------
    str
        The text HTML-escaped, with ``<span class="kw">`` around keywords
        (any casing), ``"str"`` around quoted strings, ``"num"`` around
        numbers and ``"com"`` around ``--`` comments.  Removing the spans and
        unescaping gives ``text`` back.

    Examples
    --------
    >>> highlight_sql("SELECT a<1 -- x")
    '<span class="kw">SELECT</span> a&lt;<span class="num">1</span> <span class="com">-- x</span>'
    """
    out: list[str] = []
    last = 0
    for match in _SQL_TOKEN.finditer(text):
        kind = match.lastgroup
        piece = match.group()
        css = {"comment": "com", "string": "str", "number": "num"}.get(kind or "")
        if kind == "word" and piece.lower() in _SQL_KEYWORDS:
            css = "kw"
        if css is None:
            continue
        out.append(escape(text[last:match.start()]))
        out.append(f'<span class="{css}">{escape(piece)}</span>')
        last = match.end()
    out.append(escape(text[last:]))
    return "".join(out)


VARS = ("--fg: #0f172a; --muted: #475569; --line: #e2e8f0; --bg: #f8fafc; --ok: #047857; "
         "--bad: #dc2626; --err: #9a3412; --late: #a16207; --accent: #1d4ed8;")

CSS = ":root { " + VARS + """ }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); line-height: 1.45;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 12px; }
.options { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0 0; padding: 0;
  list-style: none; }
.options li { background: #fff; border: 1px solid var(--line); border-radius: 4px; padding: 1px 8px;
  font-size: 12.5px; }
.summary { display: flex; flex-wrap: wrap; gap: 16px; align-items: stretch; margin-top: 18px; }
.cards { display: grid; grid-template-columns: repeat(3, minmax(110px, 1fr)); gap: 10px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .n { font-size: 26px; font-weight: 650; display: block; }
.card .k { color: var(--muted); font-size: 12.5px; }
.card.bounded .n { color: var(--ok); } .card.unbounded .n { color: var(--bad); }
.card.errors .n { color: var(--err); } .card.timed_out .n { color: var(--late); }
.chart { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.chart h3 { margin: 0 0 6px; font-size: 13px; color: var(--muted); font-weight: 600; }
.table-wrap { overflow-x: auto; background: #fff; border: 1px solid var(--line);
  border-radius: 8px; }
table.results { border-collapse: collapse; width: 100%; font-size: 13px; }
table.results th, table.results td { padding: 6px 9px; border-bottom: 1px solid var(--line);
  text-align: left; vertical-align: top; }
table.results thead th { position: sticky; top: 0; background: #f1f5f9; z-index: 1;
  white-space: nowrap; }
table.results th button { all: unset; cursor: pointer; font-weight: 650; }
table.results th button:focus-visible { outline: 2px solid var(--accent); }
table.results th[aria-sort="ascending"] button::after { content: " ▲"; font-size: 10px; }
table.results th[aria-sort="descending"] button::after { content: " ▼"; font-size: 10px; }
table.results tbody tr:nth-child(even) { background: #fbfdff; }
table.results tbody tr:hover { background: #eff6ff; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.file { min-width: 170px; max-width: 280px; }
td.file a { color: var(--accent); text-decoration: none; overflow-wrap: anywhere; }
td.file a:hover { text-decoration: underline; }
td.reason { min-width: 240px; max-width: 440px; }
td.suggestion { min-width: 180px; max-width: 340px; color: #1e3a8a; }
td.noise { min-width: 130px; font-size: 12px; }
.nw { white-space: nowrap; }
.error-text { color: var(--err); font-family: ui-monospace, Menlo, Consolas, monospace;
  font-size: 12px; word-break: break-word; }
"""

CARD_CSS = """
h3 { font-size: 15px; margin: 16px 0 6px; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 12.5px; }
pre { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  white-space: pre-wrap; word-break: break-word; margin: 4px 0 10px; }
.meta { color: var(--muted); margin: 0 0 4px; }
.meta code { color: var(--fg); }
.badge { display: inline-block; border-radius: 999px; padding: 0 8px; font-size: 12px;
  font-weight: 600; white-space: nowrap; border: 1px solid currentColor; }
.badge.bounded { color: var(--ok); background: #ecfdf5; }
.badge.unbounded { color: var(--bad); background: #fef2f2; }
.badge.error { color: var(--err); background: #fff7ed; }
.badge.timeout { color: var(--late); background: #fefce8; }
section.query { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  margin: 14px 0; padding: 4px 16px 10px; scroll-margin-top: 12px; }
section.query:target { border-color: var(--accent); box-shadow: 0 0 0 2px #bfdbfe; }
section.query > details > summary { cursor: pointer; padding: 8px 0; font-size: 15px;
  font-weight: 600; }
section.query > details > summary .badge { margin-left: 8px; vertical-align: 1px; }
.query-body { display: flex; flex-wrap: wrap; gap: 20px; align-items: flex-start; }
.query-body figure { margin: 0; flex: 0 0 auto; }
.query-body figure svg { border: 1px solid var(--line); border-radius: 6px; max-width: 100%;
  height: auto; }
.query-body .facts { flex: 1 1 420px; min-width: 320px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 4px 0 10px; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; }
table.paper { border-collapse: collapse; font-size: 12.5px; margin: 4px 0 10px; }
table.paper td, table.paper th { border: 1px solid var(--line); padding: 3px 8px;
  text-align: left; }
table.paper td.num { text-align: right; }
ul.explanation { margin: 4px 0 10px; padding-left: 20px; }
ul.explanation li { margin: 2px 0; }
.suggest { color: #1e3a8a; }
.back { font-size: 12px; }
pre.sql .kw { color: #1d4ed8; font-weight: 600; } pre.sql .str { color: #047857; }
pre.sql .num { color: #9a3412; } pre.sql .com { color: #64748b; font-style: italic; }
details.steps { margin: 2px 0 0; font-size: 12.5px; color: var(--muted); }
details.steps > summary { cursor: pointer; }
details.steps ol { margin: 2px 0 4px; padding-left: 20px; color: var(--fg); }
p.reason .headline, td.reason .headline { font-weight: 600; }
.where { display: block; color: var(--muted); font-size: 11.5px; overflow-wrap: anywhere; }
summary .where { display: inline; margin-left: 8px; font-weight: 400; }
"""

PAGE_END_CSS = """
table.inputs { border-collapse: collapse; font-size: 12.5px; margin: 8px 0 0; background: #fff; }
table.inputs td, table.inputs th { border: 1px solid var(--line); padding: 3px 8px;
  text-align: left; }
.overview { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--accent);
  border-radius: 6px; padding: 8px 12px; margin: 10px 0 4px; font-size: 15px; }
ul.notes li { margin: 4px 0; }
footer { color: var(--muted); font-size: 12px; margin-top: 30px; }
"""

JS = """
(function () {
  "use strict";
  var table = document.getElementById("results");
  if (!table) { return; }
  var body = table.tBodies[0];
  function key(row, col, type) {
    var cell = row.cells[col];
    var raw = cell ? cell.getAttribute("data-sort") : null;
    if (raw === null) { raw = cell ? cell.textContent.trim() : ""; }
    if (type === "num") { return raw === "" ? NaN : parseFloat(raw); }
    return raw.toLowerCase();
  }
  function sortBy(th) {
    var col = th.cellIndex, type = th.getAttribute("data-type");
    var asc = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, col, type), y = key(b, col, type), r = 0;
      if (type === "num") {
        var xn = isNaN(x), yn = isNaN(y);
        if (xn || yn) { return xn === yn ? a.dataset.index - b.dataset.index : (xn ? 1 : -1); }
        r = x === y ? 0 : (x < y ? -1 : 1);
      } else {
        r = x.localeCompare(y);
      }
      if (!asc) { r = -r; }
      return r !== 0 ? r : a.dataset.index - b.dataset.index;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(table.querySelectorAll("th[data-type] button"), function (btn) {
    btn.addEventListener("click", function () { sortBy(btn.parentNode); });
  });
})();
"""


def escape(value: object) -> str:
    """``value`` as text, HTML-escaped (quotes too)."""
    return html.escape(str(value), quote=True)


def scoped(css: str, scope: str) -> str:
    """CSS rules with every selector put under ``scope`` (for a card inside another page)."""
    out: list[str] = []
    for rule in css.split("}"):
        if "{" not in rule:
            continue
        selectors, body = rule.split("{", 1)
        scoped = ", ".join(f"{scope} {sel.strip()}" for sel in selectors.split(",")
                           if sel.strip())
        out.append(f"{scoped} {{{body}}}")
    return "\n".join(out)
