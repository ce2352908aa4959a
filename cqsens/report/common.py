"""Values shared by the batch report renderers (HTML and Markdown).

A *batch* is the plain, JSON-ready dict that ``cqsens report`` builds from a
folder of queries: ``title``, ``generated``, ``command``, ``options``, a
``summary`` (counts and the distribution of upper bounds) and one ``row`` per
query file (``status`` ``ok``/``error``/``timeout``, the bounds, a one-line
reason, a suggested constraint, noise scales and the full analysis object).
Infinity is ``"inf"`` in the batch; this module turns values of a batch into
text for people (∞, short floats), decides each row's verdict and completes
the summary, so that :mod:`cqsens.report.html` and
:mod:`cqsens.report.markdown` say the same things.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import PurePath
from typing import Any

from cqsens.ir.exact import Exact, exact, json_number, text
from cqsens.rows import summarise

__all__ = [
    "BOUND_BUCKETS",
    "COLUMNS",
    "COUNTS",
    "VERDICT_TEXT",
    "batch_summary",
    "folder_inputs",
    "format_number",
    "input_phrases",
    "is_inf",
    "json_default",
    "number_of",
    "noise_parts",
    "noise_text",
    "option_text",
    "option_pairs",
    "query_language",
    "row_text",
    "row_verdict",
]

#: Buckets of the distribution of upper bounds, in display order.
BOUND_BUCKETS: tuple[str, ...] = ("0", "1", "2-10", "11-1000", ">1000", "inf")

#: Summary counts: (key in the summary, label).
COUNTS: tuple[tuple[str, str], ...] = (
    ("total", "queries"),
    ("bounded", "bounded"),
    ("unbounded", "unbounded"),
    ("errors", "errors"),
    ("timed_out", "timed out"),
    ("tight", "tight"),
)

#: Columns of the table of queries: (header, data-type, css class of the cells).
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("#", "num", "num"),
    ("File", "text", "file"),
    ("Aggregate", "text", "aggregate"),
    ("Verdict", "text", "verdict"),
    ("Upper", "num", "num upper"),
    ("Lower", "num", "num lower"),
    ("Tight", "text", "tight"),
    ("Reason", "text", "reason"),
    ("Suggestion", "text", "suggestion"),
    ("Noise", "num", "noise"),
)

#: Text of each verdict of :func:`row_verdict`.
VERDICT_TEXT = {
    "bounded": "bounded",
    "unbounded": "unbounded",
    "error": "error",
    "timeout": "timed out",
}


def is_inf(value: Any) -> bool:
    """Whether a batch value is +∞ (``"inf"`` in JSON, or the float)."""
    return value == "inf" or (isinstance(value, float) and math.isinf(value) and value > 0)


def number_of(value: Any) -> Exact | None:
    """The exact number a JSON value stands for, or None when it is not a number.

    Numbers are read as they are; a string is read as written in JSON output
    (``"inf"``, ``"-inf"``, a decimal ``"0.1"`` or a ratio ``"20/3"``, docs/json.md,
    section Output).

    >>> number_of("20/3"), number_of("0.1"), number_of("inf"), number_of("n/a")
    (Fraction(20, 3), Fraction(1, 10), inf, None)
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float, Fraction, Decimal)):
        return exact(value)
    if isinstance(value, str):
        try:
            return exact(value)
        except (ValueError, ZeroDivisionError):
            return None
    return None


def json_default(value: Any) -> Any:
    """``default=`` of :func:`json.dumps`: Fractions and Decimals in their exact JSON
    form (:func:`cqsens.ir.exact.json_number`); anything else is an error as usual."""
    if isinstance(value, (Fraction, Decimal)):
        return json_number(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def format_number(value: Any) -> str:
    """A number or bound for people: ∞, ``—`` for missing, short floats."""
    if value is None:
        return "—"
    if is_inf(value):
        return "∞"
    if isinstance(value, bool):
        return "yes" if value else "no"
    number = number_of(value)
    if number is not None:
        return text(number, digits=4)  # rounded up: never below what was proven
    return str(value)


def row_verdict(row: Mapping[str, Any]) -> str:
    """``bounded``, ``unbounded``, ``error`` or ``timeout``."""
    status = row.get("status", "ok")
    if status != "ok":
        return "timeout" if status == "timeout" else "error"
    return "unbounded" if is_inf(row.get("upper")) else "bounded"


def batch_summary(batch: Mapping[str, Any]) -> dict[str, Any]:
    """The batch's summary, with any missing count taken from its rows."""
    derived = summarise([{"status": "ok", "tight": False, **r} for r in batch.get("rows") or []])
    given = dict(batch.get("summary") or {})
    out = {**derived, **{k: v for k, v in given.items() if v is not None}}
    bounds = dict(derived["bounds"])
    bounds.update(given.get("bounds") or {})
    out["bounds"] = bounds
    return out


def noise_parts(noise: Mapping[str, Any] | None) -> list[str]:
    """Laplace and Gaussian noise scales, one phrase each."""
    if not noise:
        return []
    parts: list[str] = []
    if "laplace_scale" in noise:
        parts.append(f"Laplace b = {format_number(noise['laplace_scale'])}")
        if noise.get("laplace_halfwidth_95") is not None:
            parts[-1] += f" (±{format_number(noise['laplace_halfwidth_95'])} at 95%)"
    if noise.get("gaussian_sigma") is not None:
        gauss = f"Gaussian σ = {format_number(noise['gaussian_sigma'])}"
        if noise.get("gaussian_halfwidth_95") is not None:
            gauss += f" (±{format_number(noise['gaussian_halfwidth_95'])} at 95%)"
        parts.append(gauss)
    return parts


def noise_text(noise: Mapping[str, Any] | None) -> str:
    """The noise phrases of :func:`noise_parts` on one line (empty without noise)."""
    return "; ".join(noise_parts(noise))


def row_text(row: Mapping[str, Any]) -> str:
    """The one-line reason, or the error text of a failed row."""
    verdict = row_verdict(row)
    if verdict == "error":
        return str(row.get("error") or "error")
    if verdict == "timeout":
        return str(row.get("error") or row.get("reason") or "analysis timed out")
    return str(row.get("reason") or "")


def option_text(value: Any) -> str:
    """An option value of the batch as text: ``—`` for none, lists joined with commas."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return ", ".join(option_text(v) for v in value) or "—"
    return json.dumps(value, ensure_ascii=False, default=json_default)


def input_phrases(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What supplied a row's schema and constraints: (label, source) pairs.

    A row without a record of its inputs (older batches) gives no pairs; a
    missing schema or constraints file is ``none``.
    """
    inputs = row.get("inputs")
    if not isinstance(inputs, Mapping):
        return []
    pairs = [("schema", str(inputs.get("schema") or "none")),
             ("constraints", str(inputs.get("constraints") or "none"))]
    declared = inputs.get("dependencies") or []
    if declared:
        pairs.append(("options", ", ".join(str(d) for d in declared)))
    return pairs


def folder_inputs(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The schema and constraints used per folder of query files, in first-seen order.

    Returns
    -------
    list of (folder, schemas, constraints)
        ``schemas`` and ``constraints`` are the distinct sources of that
        folder's rows joined with commas, ``none`` when no row used one.
        Rows without a record of their inputs are left out.
    """
    seen: dict[str, tuple[list[str], list[str]]] = {}
    for row in rows:
        inputs = row.get("inputs")
        if not isinstance(inputs, Mapping):
            continue
        folder = str(PurePath(str(row.get("file", ""))).parent)
        schemas, constraints = seen.setdefault(folder, ([], []))
        for found, key in ((schemas, "schema"), (constraints, "constraints")):
            value = inputs.get(key)
            if value and str(value) not in found:
                found.append(str(value))
    return [(folder, ", ".join(s) or "none", ", ".join(c) or "none")
            for folder, (s, c) in seen.items()]


def option_pairs(batch: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The batch's options as (name, text); an unset schema or constraints says what was used.

    Without ``--schema``/``--constraints`` each query uses the ``schema.sql`` /
    ``constraints.txt`` beside it: the option then reads "per folder (see
    Inputs)" when some row used one, and "none" otherwise.
    """
    rows: Sequence[Mapping[str, Any]] = batch.get("rows") or []
    used = {key: any(isinstance(r.get("inputs"), Mapping) and r["inputs"].get(key)
                     for r in rows)
            for key in ("schema", "constraints")}
    pairs = []
    for key, value in (batch.get("options") or {}).items():
        if key in used and value is None:
            pairs.append((str(key), "per folder (see Inputs)" if used[key] else "none"))
        else:
            pairs.append((str(key), option_text(value)))
    return pairs


def query_language(row: Mapping[str, Any]) -> str:
    """``cq`` for a ``.cq`` file, else ``sql``."""
    return "cq" if str(row.get("file", "")).lower().endswith(".cq") else "sql"
