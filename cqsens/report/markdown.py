"""Batch reports over many queries as Markdown.

:func:`to_markdown` renders a batch (see :mod:`cqsens.report.common`) as
GitHub-flavoured Markdown: the same summary and table as the HTML page of
:func:`cqsens.report.html.to_html`, and a short section per query, without
drawings.  Infinity is ``"inf"`` in the batch and ∞ in the text.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from cqsens.report import common

__all__ = ["to_markdown"]


def _md_text(text: object) -> str:
    """Plain text for a Markdown table cell or paragraph, on one line.

    ``<`` and ``&`` become entities (no HTML gets through); ``|``, backticks,
    ``*`` and backslashes are backslash-escaped.  The text never starts a line
    of the output, so ``#`` and ``>`` need no escape.
    """
    s = " ".join(str(text).split())
    s = s.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;")
    for ch in "`*|":
        s = s.replace(ch, "\\" + ch)
    return s


def _md_code(text: object, *, in_table: bool = False) -> str:
    """An inline code span holding ``text`` literally."""
    s = " ".join(str(text).split())
    run = longest = 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    out = f"{fence}{pad}{s}{pad}{fence}"
    return out.replace("|", "\\|") if in_table else out


def _md_block(text: object, language: str = "text") -> str:
    s = str(text)
    longest = run = 0
    for ch in s:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{s}\n{fence}"


def to_markdown(batch: Mapping[str, Any]) -> str:
    """The batch as Markdown: summary, one table row per query, a short section per query.

    Parameters
    ----------
    batch : mapping
        The batch dict built by ``cqsens report`` (see :mod:`cqsens.report.common`).

    Returns
    -------
    str
        GitHub-flavoured Markdown with the same columns as the HTML table,
        error and timeout rows included, and per query its verdict, reason,
        suggestion or error text; no drawings.  Table cells escape ``|`` and
        HTML; queries are in code spans or fenced blocks.

    Examples
    --------
    >>> md = to_markdown({"rows": [{"file": "q.sql", "status": "ok", "aggregate": "count",
    ...     "upper": "inf", "lower": "inf", "tight": True, "reason": "R can add any number"}]})
    >>> "| 1 | `q.sql` | count | unbounded | ∞ | ∞ | yes |" in md
    True
    """
    rows: Sequence[Mapping[str, Any]] = batch.get("rows") or []
    shared = common.shared_notes(rows)
    out = _md_heading(batch)
    out += _md_summary(common.batch_summary(batch))
    out += _md_table(rows, log=common.is_log(batch))
    out += _md_notes(rows, shared, "records" if common.is_log(batch) else "queries")
    out += ["", "## Details", ""]
    for i, row in enumerate(rows, start=1):
        out += _md_details(i, row, shared)
    return "\n".join(out).rstrip("\n") + "\n"


def _md_heading(batch: Mapping[str, Any]) -> list[str]:
    """Title, generation line and options of the batch."""
    out: list[str] = [f"# {_md_text(batch.get('title') or 'cqsens report')}", "",
                      f"**{_md_text(common.overview(batch))}**", ""]
    meta = []
    if batch.get("generated"):
        meta.append(f"Generated {_md_text(batch['generated'])}")
    if batch.get("command"):
        meta.append(f"by {_md_code(batch['command'])}")
    if meta:
        out += [" ".join(meta) + ".", ""]
    options = common.option_pairs(batch)
    if options:
        out.append("Options: " + ", ".join(
            f"{_md_text(k)} = {_md_code(v)}" for k, v in options) + ".")
        out.append("")
    found = common.folder_inputs(batch.get("rows") or [])
    if found:
        out += ["Inputs:", "", "| folder | schema | constraints |", "|---|---|---|"]
        out += ["| " + " | ".join(_md_code(cell, in_table=True) for cell in cells) + " |"
                for cells in found]
        out.append("")
    return out


def _md_query(row: Mapping[str, Any]) -> list[str]:
    """The user's query in a fenced block, and the files behind its schema and constraints."""
    out: list[str] = []
    query = row.get("query")
    if isinstance(query, str) and query:
        out += [_md_block(query, "sql" if common.query_language(row) == "sql" else "text"), ""]
    inputs = common.input_phrases(row)
    if inputs:
        out += ["Inputs: " + ", ".join(f"{_md_text(label)} {_md_code(source)}"
                                       for label, source in inputs) + ".", ""]
    return out


def _md_summary(summary: Mapping[str, Any]) -> list[str]:
    """The summary counts and the distribution of upper bounds, as two tables."""
    out = ["## Summary", ""]
    out.append("| " + " | ".join(label for _, label in common.COUNTS) + " |")
    out.append("|" + "---:|" * len(common.COUNTS))
    out.append("| " + " | ".join(_md_text(summary.get(k, 0)) for k, _ in common.COUNTS) + " |")
    out += ["", "| upper bound | queries |", "|---|---:|"]
    bounds = summary.get("bounds") or {}
    keys = list(common.BOUND_BUCKETS) + sorted(k for k in bounds if k not in common.BOUND_BUCKETS)
    for k in keys:
        out.append(f"| {'∞' if k == 'inf' else _md_text(k)} | {_md_text(bounds.get(k) or 0)} |")
    return out


def _md_table(rows: Sequence[Mapping[str, Any]], *, log: bool = False) -> list[str]:
    """The table of queries, one line per row, with the columns of the HTML table.

    A query log's rows are named by their record's id (header ``Record``); the
    reason column holds the reason's first sentence, its steps are in the
    query's section.
    """
    out = ["", "## Queries", ""]
    out.append("| " + " | ".join("Record" if log and name == "File" else name
                                 for name, _, _ in common.COLUMNS) + " |")
    out.append("|" + "|".join("---:" if kind == "num" and name != "Noise" else "---"
                              for name, kind, _ in common.COLUMNS) + "|")
    for i, row in enumerate(rows, start=1):
        verdict = common.row_verdict(row)
        ok = verdict in ("bounded", "unbounded")
        reason = common.row_text(row)
        text = _md_text(common.split_reason(reason)[0] if ok else reason)
        cells = [
            str(i),
            _md_code(common.row_label(row)[0], in_table=True),
            _md_text(row.get("aggregate") or ""),
            common.VERDICT_TEXT[verdict],
            common.format_number(row.get("upper")) if ok else "",
            common.format_number(row.get("lower")) if ok else "",
            ("yes" if row.get("tight") else "no") if ok else "",
            text if ok else f"**{verdict}:** {text}",
            _md_text(row.get("suggestion") or ""),
            _md_text(common.noise_text(row.get("noise") if ok else None)),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _md_notes(rows: Sequence[Mapping[str, Any]], shared: Mapping[str, list[int]],
              noun: str) -> list[str]:
    """The Notes section: each note several queries share, once, with the queries it concerns."""
    if not shared:
        return []
    out = ["", "## Notes", "", "Notes that several queries share, said once.", ""]
    for note, found in shared.items():
        many = sum(common.row_weight(rows[i - 1]) for i in found)
        named = ", ".join(f"{i}. {_md_code(common.row_label(rows[i - 1])[0])}" for i in found)
        out.append(f"* {_md_text(note)} ({many} {noun}: {named})")
    return out


def _md_details(i: int, row: Mapping[str, Any],
                shared: Collection[str] = ()) -> list[str]:
    """The section of query ``i``: its verdict, bounds, reason with its steps, suggestion,
    noise, notes and core."""
    verdict = common.row_verdict(row)
    label, where = common.row_label(row)
    out = [f"### {i}. {_md_code(label)} ({common.VERDICT_TEXT[verdict]})", ""]
    if where:
        out += [f"Read from {_md_code(where)}.", ""]
    if "records" in row:  # a query log grouped by shape
        ids = [str(x) for x in row.get("ids") or []]
        more = int(row["records"]) - len(ids)
        out += [f"{row['records']} records of this shape (the query shown is the first): "
                + _md_code(", ".join(ids) + (f" and {more} more" if more > 0 else "")), ""]
    if verdict in ("error", "timeout"):
        return out + [_md_block(common.row_text(row)), ""] + _md_query(row)
    headline, steps = common.split_reason(common.row_text(row))
    out.append(
        f"Upper bound {common.format_number(row.get('upper'))}, "
        f"lower bound {common.format_number(row.get('lower'))}"
        f"{' (tight)' if row.get('tight') else ''}. {_md_text(headline)}"
    )
    out.append("")
    if steps:
        out += ["Steps:", ""] + [f"{n}. {_md_text(step)}" for n, step in
                                 enumerate(steps, start=1)] + [""]
    out += _md_query(row)
    if row.get("suggestion"):
        out += [f"Suggestion: {_md_text(row['suggestion'])}", ""]
    if row.get("noise"):
        out += [f"Noise: {_md_text(common.noise_text(row['noise']))}.", ""]
    notes = [n for n in common.row_notes(row) if n not in shared]
    if notes:
        out += ["Notes:", ""] + [f"* {_md_text(n)}" for n in notes] + [""]
    analysis = row.get("analysis")
    if isinstance(analysis, Mapping) and analysis.get("cq"):
        out += ["Conjunctive query:", "", _md_block(analysis["cq"]), ""]
        if analysis.get("core") and analysis["core"] != analysis["cq"]:
            out += ["Core:", "", _md_block(analysis["core"]), ""]
    return out
