"""Batch reports over many queries as one self-contained HTML page.

:func:`to_html` renders a batch (see :mod:`cqsens.report.common`) as one HTML
file with inline CSS, inline SVG drawings
(:func:`cqsens.report.drawing.draw_structure`) and a few lines of inline
JavaScript to sort the table; it loads nothing from the network.  Infinity is
``"inf"`` in the batch and ∞ in the page.  The Markdown rendering of the same
batch is :func:`cqsens.report.markdown.to_markdown`, also importable from here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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
    is_log,
    noise_parts,
    noise_text,
    number_of,
    option_pairs,
    overview,
    query_language,
    row_label,
    row_notes,
    row_text,
    row_verdict,
    row_weight,
    shared_notes,
    split_reason,
    top_advice,
)
from cqsens.report.drawing import COLORS, draw_structure
from cqsens.report.html_style import CARD_CSS, highlight_sql
from cqsens.report.html_style import CSS as _CSS
from cqsens.report.html_style import JS as _JS
from cqsens.report.html_style import PAGE_END_CSS as _PAGE_END_CSS
from cqsens.report.html_style import VARS as _VARS
from cqsens.report.html_style import escape as _e
from cqsens.report.html_style import scoped as _scoped
from cqsens.report.markdown import to_markdown

__all__ = ["BOUND_BUCKETS", "CARD_CSS", "card_html", "highlight_sql", "query_card", "to_html",
           "to_markdown"]


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


def _label_html(row: Mapping[str, Any], link: str = "") -> str:
    """A row's label (a log record's id, else its file), the file:line as title and second line."""
    label, where = row_label(row)
    title = f' title="{_e(row.get("file", ""))}"' if where else ""
    name = (f'<a href="{link}"{title}>{_e(label)}</a>' if link
            else f'<span class="mono"{title}>{_e(label)}</span>')
    return name + (f'<span class="where">{_e(where)}</span>' if where else "")


def _steps_html(steps: Sequence[str]) -> str:
    """The steps under a reason, folded (``<details class="steps">``); empty without steps."""
    if not steps:
        return ""
    what = "1 step" if len(steps) == 1 else f"{len(steps)} steps"
    return (f'<details class="steps"><summary>{what}</summary><ol>'
            + "".join(f"<li>{_e(step)}</li>" for step in steps) + "</ol></details>")


def _reason_html(row: Mapping[str, Any]) -> str:
    """The reason's first sentence, its steps folded under it; an error's text as it is."""
    if row_verdict(row) in ("error", "timeout"):
        return f'<span class="error-text">{_e(row_text(row))}</span>'
    headline, steps = split_reason(row_text(row))
    return f'<span class="headline">{_e(headline)}</span>' + _steps_html(steps)


def _row_html(i: int, row: Mapping[str, Any]) -> str:
    verdict = row_verdict(row)
    status = str(row.get("status", "ok"))
    ok = status == "ok"
    file = str(row.get("file", ""))
    label, _ = row_label(row)
    ident = f' data-id="{_e(row["id"])}"' if row.get("id") is not None else ""
    noise = row.get("noise") if ok else None
    cells = [
        f'<td class="num" data-sort="{i}">{i}</td>',
        f'<td class="file" data-sort="{_e(label)}">{_label_html(row, f"#q-{i}")}</td>',
        f'<td class="aggregate">{_e(row.get("aggregate") or "")}</td>',
        f'<td class="verdict" data-sort="{_e(verdict)}">'
        f'<span class="badge {verdict}">{_e(VERDICT_TEXT[verdict])}</span></td>',
        f'<td class="num upper" data-sort="{_sort_value(row.get("upper") if ok else None)}">'
        f'{_e(format_number(row.get("upper")) if ok else "")}</td>',
        f'<td class="num lower" data-sort="{_sort_value(row.get("lower") if ok else None)}">'
        f'{_e(format_number(row.get("lower")) if ok else "")}</td>',
        f'<td class="tight">{_e(("yes" if row.get("tight") else "no") if ok else "")}</td>',
    ]
    cells.append(f'<td class="reason">{_reason_html(row)}</td>')
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
        f'data-verdict="{verdict}" data-file="{_e(file)}"{ident}>' + "".join(cells) + "</tr>"
    )


def _table_html(rows: Sequence[Mapping[str, Any]], *, log: bool = False) -> str:
    head = "".join(
        f'<th data-type="{kind}" scope="col"><button type="button">'
        f'{_e("Record" if log and name == "File" else name)}</button></th>'
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


def _analysis_html(row: Mapping[str, Any], analysis: Mapping[str, Any],
                   shared: Collection[str] = ()) -> str:
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
    notes = [n for n in row_notes(row) if n not in shared]
    if notes:
        facts.append("<h3>Notes</h3>")
        facts.append('<ul class="explanation">' + "".join(f"<li>{_e(s)}</li>" for s in notes)
                     + "</ul>")
    if any(n in shared for n in row_notes(row)):
        facts.append('<p class="meta">Further notes of this query are in '
                     '<a href="#notes">Notes</a>, said once for every query they concern.</p>')
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


def query_card(i: int, row: Mapping[str, Any], *, shared: Collection[str] = (),
               back: bool = True) -> str:
    """The card of one query: its label, verdict, reason with its steps, drawing and facts.

    Parameters
    ----------
    i : int
        The row's number: the card is ``<section class="query" id="q-i">``.
    row : mapping
        A report row (see :mod:`cqsens.report.common`).
    shared : collection of str
        Notes said once in the report's Notes section, left out of the card.
    back : bool
        Whether to link back to the report's table (not in a notebook).

    Returns
    -------
    str
        One HTML ``<section>`` element, all text escaped.
    """
    verdict = row_verdict(row)
    head = (
        f"<summary>{_label_html(row)}"
        f'<span class="badge {verdict}">{_e(VERDICT_TEXT[verdict])}</span></summary>'
    )
    analysis = row.get("analysis")
    body = _shape_html(row)
    if verdict in ("error", "timeout"):
        body += f'<pre class="error-text">{_e(row_text(row))}</pre>' + "".join(_query_html(row))
    else:
        headline, steps = split_reason(row_text(row))
        body += (f'<p class="reason"><span class="headline">{_e(headline)}</span></p>'
                 + _steps_html(steps))
        body += (_analysis_html(row, analysis, shared) if isinstance(analysis, Mapping)
                 else "".join(_query_html(row)))
    link = f'<p class="back"><a href="#row-{i}">back to the table</a></p>' if back else ""
    return (
        f'<section class="query {verdict}" id="q-{i}" data-index="{i}" '
        f'data-status="{_e(row.get("status", "ok"))}"><details open>{head}{body}'
        f"{link}</details></section>"
    )




def card_html(row: Mapping[str, Any]) -> str:
    """One query's card (:func:`query_card`) standing alone, with its style scoped to it.

    This is what ``Analysis._repr_html_`` shows in Jupyter: the card of the
    HTML report, inside ``<div class="cqsens-card">`` whose ``<style>`` applies
    to nothing outside it.
    """
    style = (f".cqsens-card {{ {_VARS} color: var(--fg); font: 14px/1.45 system-ui, "
             "-apple-system, \"Segoe UI\", Helvetica, Arial, sans-serif; }\n"
             + _scoped(CARD_CSS, ".cqsens-card"))
    return (f'<div class="cqsens-card"><style>{style}</style>'
            f"{query_card(1, row, back=False)}</div>")


def _notes_html(rows: Sequence[Mapping[str, Any]], shared: Mapping[str, list[int]],
                noun: str = "queries") -> str:
    """The Notes section: each note several queries share, once, with the queries it concerns."""
    if not shared:
        return ""
    items = []
    for note, found in shared.items():
        links = ", ".join(f'<a href="#q-{i}">{_e(row_label(rows[i - 1])[0])}</a>' for i in found)
        many = sum(row_weight(rows[i - 1]) for i in found)
        items.append(f'<li>{_e(note)} <span class="meta">({many} {noun}: {links})</span></li>')
    return ('<h2 id="notes">Notes</h2><p class="meta">Notes that several queries share, said '
            f'once.</p><ul class="notes">{"".join(items)}</ul>')


def _overview_html(batch: Mapping[str, Any]) -> str:
    """The first lines of the page: the counts and the top advice, with its queries."""
    rows: Sequence[Mapping[str, Any]] = batch.get("rows") or []
    top = top_advice(rows)
    queries = ""
    if top is not None:
        named = "Records" if is_log(batch) else "Queries"
        queries = (f'<span class="meta"> {named}: ' + ", ".join(
            f'<a href="#q-{i}">{_e(row_label(rows[i - 1])[0])}</a>' for i in top[2])
            + ".</span>")
    return f'<p class="overview" id="overview">{_e(overview(batch))}{queries}</p>'



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
    shared = shared_notes(rows)
    sections = "\n".join(query_card(i, row, shared=shared) for i, row in enumerate(rows, start=1))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="cqsens">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}{CARD_CSS}{_PAGE_END_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{_e(title)}</h1>",
        _overview_html(batch),
        f'<p class="meta">{" ".join(meta)}</p>' if meta else "",
        f'<ul class="options">{option_items}</ul>' if option_items else "",
        _inputs_html(rows),
        "<h2>Summary</h2>",
        _summary_html(summary),
        "<h2>Queries</h2>",
        '<p class="meta">Click a column header to sort. Bounds sort numerically, ∞ last; '
        "a file name leads to its drawing and explanation.</p>",
        _table_html(rows, log=is_log(batch)),
        _notes_html(rows, shared, "records" if is_log(batch) else "queries"),
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
