"""Batch reports over many queries as one self-contained HTML page.

:func:`to_html` renders a batch (see :mod:`cqsens.report.common`) as one HTML
file with inline CSS, inline SVG drawings
(:func:`cqsens.report.drawing.draw_structure`) and a few lines of inline
JavaScript to sort the table; it loads nothing from the network.  Infinity is
``"inf"`` in the batch and ∞ in the page.  The Markdown rendering of the same
batch is :func:`cqsens.report.markdown.to_markdown`, also importable from here.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cqsens.report.common import (
    BOUND_BUCKETS,
    COLUMNS,
    COUNTS,
    VERDICT_TEXT,
    batch_summary,
    folder_inputs,
    format_number,
    input_phrases,
    is_inf,
    noise_parts,
    noise_text,
    number_of,
    option_pairs,
    query_language,
    row_text,
    row_verdict,
)
from cqsens.report.drawing import COLORS, draw_structure
from cqsens.report.markdown import to_markdown

__all__ = ["to_html", "to_markdown", "highlight_sql", "BOUND_BUCKETS"]

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
        out.append(_e(text[last:match.start()]))
        out.append(f'<span class="{css}">{_e(piece)}</span>')
        last = match.end()
    out.append(_e(text[last:]))
    return "".join(out)


_PAPER_NAMES: dict[str, str] = {
    "delta_str": "Δ_STR (Prop 7 / Thm 9)",
    "fd_lower": "Δ±_Σ lower, FDs (Thm 13)",
    "fd_upper": "Δ±_Σ upper, FDs (Thm 13)",
    "cd_upper": "Δ+_Σ, CDs (Thm 17)",
}


def _sort_value(value: Any) -> str:
    """The ``data-sort`` text of a bound: a number, ``Infinity``, or empty (sorted last)."""
    if value is None or value == "":
        return ""
    if is_inf(value):
        return "Infinity"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else str(value)
    number = number_of(value)  # an exact non-double ("0.1", "20/3"): sorted by its double
    return "" if number is None else repr(float(number))


_CSS = """
:root { --fg: #0f172a; --muted: #475569; --line: #e2e8f0; --bg: #f8fafc;
  --ok: #047857; --bad: #dc2626; --err: #9a3412; --late: #a16207; --accent: #1d4ed8; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); line-height: 1.45;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1320px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 32px 0 12px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
code, pre, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 12.5px; }
pre { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  white-space: pre-wrap; word-break: break-word; margin: 4px 0 10px; }
.meta { color: var(--muted); margin: 0 0 4px; }
.meta code { color: var(--fg); }
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
table.inputs { border-collapse: collapse; font-size: 12.5px; margin: 8px 0 0; background: #fff; }
table.inputs td, table.inputs th { border: 1px solid var(--line); padding: 3px 8px;
  text-align: left; }
footer { color: var(--muted); font-size: 12px; margin-top: 30px; }
"""

_JS = """
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


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _bounds_chart(bounds: Mapping[str, Any]) -> str:
    """A small horizontal bar chart of the distribution of upper bounds."""
    keys = list(BOUND_BUCKETS) + sorted(k for k in bounds if k not in BOUND_BUCKETS)
    counts = [int(bounds.get(k) or 0) for k in keys]
    top = max(counts + [1])
    bar_w, row_h, label_w = 220.0, 20.0, 64.0
    height = int(row_h * len(keys) + 6)
    width = int(label_w + bar_w + 40)
    parts = [
        f'<svg class="bounds-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'font-family="system-ui, sans-serif" font-size="12">'
        "<title>Number of queries per upper bound</title>"
    ]
    for i, (k, n) in enumerate(zip(keys, counts, strict=True)):
        y = 3 + i * row_h
        label = "∞" if k == "inf" else k
        w = bar_w * n / top
        color = COLORS["unbounded"] if k == "inf" else COLORS["step"]
        parts.append(
            f'<g class="bar" data-bucket="{_e(k)}" data-count="{n}">'
            f'<text x="{label_w - 8:.0f}" y="{y + row_h / 2:.1f}" text-anchor="end" '
            f'dominant-baseline="central" fill="#334155">{_e(label)}</text>'
            f'<rect x="{label_w:.0f}" y="{y + 3:.1f}" width="{max(w, 1.5):.1f}" '
            f'height="{row_h - 6:.1f}" rx="2" fill="{color}" '
            f'fill-opacity="{0.85 if n else 0.25}"/>'
            f'<text x="{label_w + max(w, 1.5) + 6:.1f}" y="{y + row_h / 2:.1f}" '
            f'dominant-baseline="central" fill="#0f172a">{n}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _summary_html(summary: Mapping[str, Any]) -> str:
    cards = "".join(
        f'<div class="card {key}" data-count="{_e(summary.get(key, 0))}">'
        f'<span class="n">{_e(summary.get(key, 0))}</span><span class="k">{_e(label)}</span></div>'
        for key, label in COUNTS
    )
    return (
        '<div class="summary" id="summary">'
        f'<div class="cards">{cards}</div>'
        '<div class="chart"><h3>Upper bounds (queries per bucket)</h3>'
        f'{_bounds_chart(summary.get("bounds") or {})}</div></div>'
    )


def _row_html(i: int, row: Mapping[str, Any]) -> str:
    verdict = row_verdict(row)
    status = str(row.get("status", "ok"))
    ok = status == "ok"
    file = str(row.get("file", ""))
    noise = row.get("noise") if ok else None
    cells = [
        f'<td class="num" data-sort="{i}">{i}</td>',
        f'<td class="file" data-sort="{_e(file)}"><a href="#q-{i}">{_e(file)}</a></td>',
        f'<td class="aggregate">{_e(row.get("aggregate") or "")}</td>',
        f'<td class="verdict" data-sort="{_e(verdict)}">'
        f'<span class="badge {verdict}">{_e(VERDICT_TEXT[verdict])}</span></td>',
        f'<td class="num upper" data-sort="{_sort_value(row.get("upper") if ok else None)}">'
        f'{_e(format_number(row.get("upper")) if ok else "")}</td>',
        f'<td class="num lower" data-sort="{_sort_value(row.get("lower") if ok else None)}">'
        f'{_e(format_number(row.get("lower")) if ok else "")}</td>',
        f'<td class="tight">{_e(("yes" if row.get("tight") else "no") if ok else "")}</td>',
    ]
    if ok:
        cells.append(f'<td class="reason">{_e(row_text(row))}</td>')
    else:
        cells.append(
            f'<td class="reason"><span class="error-text">{_e(row_text(row))}</span></td>'
        )
    cells.append(f'<td class="suggestion">{_e(row.get("suggestion") or "")}</td>')
    scale = noise.get("laplace_scale") if isinstance(noise, Mapping) else None
    cells.append(
        f'<td class="noise" data-sort="{_sort_value(scale)}">'
        + "<br>".join(f'<span class="nw">{_e(p.split(" (±")[0])}</span>'
                      for p in noise_parts(noise))
        + "</td>"
    )
    return (
        f'<tr class="row {verdict}" id="row-{i}" data-index="{i}" data-status="{_e(status)}" '
        f'data-verdict="{verdict}" data-file="{_e(file)}">' + "".join(cells) + "</tr>"
    )


def _table_html(rows: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(
        f'<th data-type="{kind}" scope="col"><button type="button">{_e(name)}</button></th>'
        for name, kind, _ in COLUMNS
    )
    body = "\n".join(_row_html(i, row) for i, row in enumerate(rows, start=1))
    return (
        '<div class="table-wrap"><table class="results" id="results">'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>"
    )


def _kv(pairs: Sequence[tuple[str, str]]) -> str:
    return '<dl class="kv">' + "".join(
        f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in pairs
    ) + "</dl>"


def _analysis_html(row: Mapping[str, Any], analysis: Mapping[str, Any]) -> str:
    sens = analysis.get("sensitivity") or {}
    facts: list[str] = _query_html(row)
    facts.append("<h3>Conjunctive query</h3>")
    facts.append(f'<pre class="cq">{_e(analysis.get("cq", ""))}</pre>')
    if analysis.get("core") and analysis.get("core") != analysis.get("cq"):
        minimal = "" if analysis.get("core_minimal", True) else " (may not be minimal)"
        facts.append(f"<h3>Core{_e(minimal)}</h3>")
        facts.append(f'<pre class="core">{_e(analysis["core"])}</pre>')
    else:
        facts.append('<p class="meta">The query is its own core.</p>')
    free = ", ".join(analysis.get("free") or []) or "(none: a Boolean query)"
    shape = (
        f"{'connected' if analysis.get('connected', True) else 'disconnected'}, "
        f"{'satisfiable' if analysis.get('satisfiable', True) else 'unsatisfiable'}"
    )
    tight = " (tight)" if sens.get("tight") else ""
    pairs = [
        ("sensitivity", f"upper <b>{_e(format_number(sens.get('upper')))}</b>, "
                        f"lower <b>{_e(format_number(sens.get('lower')))}</b>{_e(tight)}"),
        ("neighbours", _e(sens.get("neighbor", ""))),
        ("ℓ1 / ℓ2", f"{_e(format_number(sens.get('l1')))} / {_e(format_number(sens.get('l2')))}"),
        ("no constraints", f"Δ_STR = {_e(format_number(analysis.get('delta_str')))}"),
        ("free variables", _e(free)),
        ("shape", _e(shape)),
        ("aggregate", _e(analysis.get("aggregate", row.get("aggregate", "")))),
    ]
    deps = analysis.get("dependencies") or []
    if deps:
        pairs.append(("dependencies", " ".join(f"<code>{_e(d)}</code>" for d in deps)))
    noise = row.get("noise")
    if noise:
        pairs.append(("noise", _e(noise_text(noise))))
    facts.append(_kv(pairs))
    explanation = analysis.get("explanation") or []
    if explanation:
        facts.append("<h3>Why</h3>")
        facts.append('<ul class="explanation">' + "".join(
            f"<li>{_e(s)}</li>" for s in explanation) + "</ul>")
    suggestions = analysis.get("suggestion") or []
    if suggestions:
        facts.append("<h3>To bound it</h3>")
        facts.append('<ul class="explanation suggest">' + "".join(
            f"<li>{_e(s)}</li>" for s in suggestions) + "</ul>")
    notes = analysis.get("notes") or []
    if notes:
        facts.append("<h3>Notes</h3>")
        facts.append('<ul class="explanation">' + "".join(f"<li>{_e(s)}</li>" for s in notes)
                     + "</ul>")
    paper = analysis.get("paper") or {}
    if paper:
        notes_by_key = analysis.get("paper_notes") or {}
        facts.append("<h3>The paper's values, read literally</h3>")
        any_note = any(notes_by_key.get(k) for k in paper)
        lines = "".join(
            f'<tr><th scope="row">{_e(_PAPER_NAMES.get(k, k))}</th>'
            f'<td class="num">{_e(format_number(v))}</td>'
            + (f'<td>{_e(notes_by_key.get(k) or "")}</td>' if any_note else "")
            + "</tr>"
            for k, v in paper.items()
        )
        facts.append(f'<table class="paper">{lines}</table>')
    drawing = ""
    structure = analysis.get("structure")
    if isinstance(structure, Mapping):
        title = f"Canonical structure of {analysis.get('core', '')}"
        drawing = f"<figure>{draw_structure(structure, title=title)}</figure>"
    return f'<div class="query-body">{drawing}<div class="facts">{"".join(facts)}</div></div>'


def _query_html(row: Mapping[str, Any]) -> list[str]:
    """The user's query (SQL highlighted) and the files that supplied its schema and constraints."""
    out: list[str] = []
    query = row.get("query")
    if isinstance(query, str) and query:
        if query_language(row) == "sql":
            out += ["<h3>SQL</h3>", f'<pre class="sql">{highlight_sql(query)}</pre>']
        else:
            out += ["<h3>Query (CQ file)</h3>", f'<pre class="query">{_e(query)}</pre>']
    inputs = input_phrases(row)
    if inputs:
        out.append('<dl class="kv inputs">' + "".join(
            f"<dt>{_e(label)}</dt><dd><code>{_e(source)}</code></dd>"
            for label, source in inputs) + "</dl>")
    return out


def _inputs_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The table of schema and constraints files used per folder (empty when none recorded)."""
    found = folder_inputs(rows)
    if not found:
        return ""
    lines = "".join(
        f"<tr><td><code>{_e(folder)}</code></td><td><code>{_e(schema)}</code></td>"
        f"<td><code>{_e(constraints)}</code></td></tr>"
        for folder, schema, constraints in found
    )
    return ('<table class="inputs" id="inputs"><caption class="meta">Inputs</caption>'
            '<thead><tr><th scope="col">folder</th><th scope="col">schema</th>'
            f'<th scope="col">constraints</th></tr></thead><tbody>{lines}</tbody></table>')


def _shape_html(row: Mapping[str, Any]) -> str:
    """For a query log grouped by shape: how many records have this shape, and their ids."""
    if "records" not in row:
        return ""
    ids = [str(i) for i in row.get("ids") or []]
    more = int(row["records"]) - len(ids)
    shown = ", ".join(ids) + (f" and {more} more" if more > 0 else "")
    return (f'<p class="shape">{_e(row["records"])} records of this shape '
            f'(the query shown is the first): <span class="mono">{_e(shown)}</span></p>')


def _section_html(i: int, row: Mapping[str, Any]) -> str:
    verdict = row_verdict(row)
    file = str(row.get("file", ""))
    head = (
        f'<summary><span class="mono">{_e(file)}</span>'
        f'<span class="badge {verdict}">{_e(VERDICT_TEXT[verdict])}</span></summary>'
    )
    analysis = row.get("analysis")
    body = _shape_html(row)
    if verdict in ("error", "timeout"):
        body += f'<pre class="error-text">{_e(row_text(row))}</pre>' + "".join(_query_html(row))
    elif isinstance(analysis, Mapping):
        body += f'<p class="reason">{_e(row_text(row))}</p>' + _analysis_html(row, analysis)
    else:
        body += f'<p class="reason">{_e(row_text(row))}</p>' + "".join(_query_html(row))
    return (
        f'<section class="query {verdict}" id="q-{i}" data-index="{i}" '
        f'data-status="{_e(row.get("status", "ok"))}"><details open>{head}{body}'
        f'<p class="back"><a href="#row-{i}">back to the table</a></p></details></section>'
    )


def to_html(batch: Mapping[str, Any]) -> str:
    """One self-contained HTML page for a batch of analyses.

    Parameters
    ----------
    batch : mapping
        The batch dict built by ``cqsens report``: ``title``, ``generated``,
        ``command``, ``options``, ``summary`` and ``rows`` (see
        :mod:`cqsens.report.common`).  Missing summary counts are computed from
        the rows.

    Returns
    -------
    str
        A complete HTML document with inline CSS, inline SVG and a short inline
        script that sorts the table when a header is clicked; it loads nothing
        else.  Table rows are ``<tr class="row ..." data-status=... data-verdict=...>``,
        per-query sections ``<section class="query" id="q-N">`` and drawings
        ``<svg class="drawing">``.  All text from the batch is HTML-escaped;
        the same batch gives the same text.

    Examples
    --------
    >>> page = to_html({"title": "t", "rows": [
    ...     {"file": "a<b.sql", "status": "error", "error": "a<b.sql:1:1: bad [x]"}]})
    >>> page.startswith("<!DOCTYPE html>"), 'data-status="error"' in page, "a<b" in page
    (True, True, False)
    """
    rows: Sequence[Mapping[str, Any]] = batch.get("rows") or []
    title = str(batch.get("title") or "cqsens report")
    summary = batch_summary(batch)
    meta: list[str] = []
    if batch.get("generated"):
        meta.append(f"Generated {_e(batch['generated'])}")
    if batch.get("command"):
        meta.append(f"by <code>{_e(batch['command'])}</code>")
    option_items = "".join(
        f"<li><b>{_e(k)}</b>: {_e(v)}</li>" for k, v in option_pairs(batch)
    )
    sections = "\n".join(_section_html(i, row) for i, row in enumerate(rows, start=1))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="cqsens">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta">{" ".join(meta)}</p>' if meta else "",
        f'<ul class="options">{option_items}</ul>' if option_items else "",
        _inputs_html(rows),
        "<h2>Summary</h2>",
        _summary_html(summary),
        "<h2>Queries</h2>",
        '<p class="meta">Click a column header to sort. Bounds sort numerically, ∞ last; '
        "a file name leads to its drawing and explanation.</p>",
        _table_html(rows),
        "<h2>Details</h2>",
        '<p class="meta">Each drawing is the core\'s canonical structure: free variables as '
        "squares, constants as diamonds, existential variables as circles; binary atoms are "
        "arrows from the first to the second column, other atoms and filters (dashed) are "
        "boxes joined to their columns. Green arrows are the dependency steps behind a finite "
        "bound (×k: at most k values); red marks atoms with an unbounded effect and the free "
        "variables they cannot reach. Δ is each atom's bound.</p>",
        sections,
        '<footer>cqsens: global sensitivity of counting queries (Arapinis, Figueira, '
        "Gaboardi, ICALP 2016).</footer>",
        "</main>",
        f"<script>{_JS}</script>",
        "</body>",
        "</html>",
        "",
    ])
