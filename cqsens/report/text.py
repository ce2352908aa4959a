"""Rendering of analyses: text for people, JSON for programs.

The library returns :class:`~cqsens.analysis.Analysis` values; this module turns
them into output.  JSON is the object docs/json.md describes under "Output" (∞ as ``"inf"``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from cqsens.analysis import Analysis
from cqsens.ir.exact import text
from cqsens.report.common import json_default, number_of
from cqsens.schemas import versioned

__all__ = ["Format", "fmt", "to_json", "to_text", "witness_json"]


class Format(StrEnum):
    """Output formats of ``cqsens analyze``."""

    text = "text"
    json = "json"


def fmt(value: object) -> str:
    """A bound for people: ∞ for infinity, ``unknown`` for None."""
    if value is None:
        return "unknown"
    if value == math.inf or value == "inf":
        return "∞"
    number = number_of(value)
    if number is not None:
        return text(number)  # rounded up: never below what was proven
    return str(value)


def to_json(
    analyses: Sequence[Analysis], *, witness: bool = False, as_list: bool | None = None
) -> str:
    """One object for one query, a list for several (``as_list`` forces the shape); each
    carries ``schema_version`` (:mod:`cqsens.schemas`)."""
    records: list[dict[str, Any]] = [versioned(a.to_dict(witness=witness)) for a in analyses]
    many = len(records) != 1 if as_list is None else as_list
    payload: Any = records if many else records[0]
    return json.dumps(payload, indent=2, ensure_ascii=False, default=json_default)


def witness_json(analysis: Analysis, output: str, files: Sequence[str]) -> str:
    """``cqsens witness --format json``: the files written, the bounds and the witness.

    Parameters
    ----------
    analysis : Analysis
        An analysis with a witness.
    output : str
        The ``-o`` value.
    files : sequence of str
        Every file written (a database witness is two files).

    Returns
    -------
    str
        One JSON object with ``schema_version`` (:mod:`cqsens.schemas`).
    """
    d = analysis.to_dict(witness=True)
    payload = versioned({"output": output, "files": list(files), "source": analysis.source,
                         "upper": d["sensitivity"]["upper"], "lower": d["sensitivity"]["lower"],
                         "tight": d["sensitivity"]["tight"], "witness": d.get("witness")})
    return json.dumps(payload, indent=2, ensure_ascii=False, default=json_default)


def to_text(analysis: Analysis, *, witness: bool = False) -> str:
    """A readable account: the CQ, its core, connectivity, the bounds and why."""
    d = analysis.to_dict(witness=witness)
    s = d["sensitivity"]
    lines = [f"== {analysis.source}"]
    lines.append(f"  query      {d['cq']}")
    if d["core"] != d["cq"]:
        minimal = "" if analysis.core_minimal else "  (may not be minimal)"
        lines.append(f"  core       {d['core']}" + minimal)
    if analysis.sigma:
        lines.append(f"  Σ          {', '.join(d['dependencies'])}")
    lines.append(
        f"  shape      {'connected' if d['connected'] else 'disconnected'}, "
        f"{'satisfiable' if d['satisfiable'] else 'unsatisfiable'}, "
        f"free: {', '.join(d['free']) or '(none: Boolean)'}"
    )
    verdict = "bounded" if analysis.bounded else "UNBOUNDED"
    lines.append(
        f"  sensitivity upper {fmt(s['upper'])}   lower {fmt(s['lower'])}"
        f"{'   (tight)' if s['tight'] else ''}   [{verdict}; neighbours: {s['neighbor']}"
        f"{' of one person, ' + d['unit'] if d.get('unit') else ''}]"
    )
    if s["l1"] != s["upper"] or s["l2"] != s["upper"] or len(d.get("aggregates", [])) > 1:
        lines.append(f"  ℓ1 {fmt(s['l1'])}   ℓ2 {fmt(s['l2'])}")
    for agg in d.get("aggregates", []):
        if len(d["aggregates"]) > 1 or agg["kind"] not in ("count", "count_distinct") \
                or d.get("contributions", 1) > 1:
            values = f"; {agg['values']}" if agg.get("values") else ""
            lines.append(f"  {agg['label']}: ℓ1 {fmt(agg['l1'])}, ℓ2 {fmt(agg['l2'])}{values}")
    noise = d.get("noise")
    if noise and not analysis.bounded:
        lines.append(f"  noise at ε = {noise['epsilon']}: no finite noise scale (the sensitivity "
                     "is unbounded: no calibrated noise makes this release private)")
    elif noise:
        text = (f"  noise at ε = {noise['epsilon']}: Laplace scale {fmt(noise['laplace_scale'])} "
                f"(95 % of errors within ±{fmt(noise['laplace_halfwidth_95'])})")
        lines.append(text)
        if noise.get("gaussian_sigma") is not None:
            lines.append(
                f"  Gaussian at δ = {noise['delta']}: σ {fmt(noise['gaussian_sigma'])} "
                f"({noise['gaussian_method']}, OpenDP's map; 95 % within "
                f"±{fmt(noise['gaussian_halfwidth_95'])})"
                + (f"; classical σ {fmt(noise['gaussian_classical_sigma'])}"
                   if noise.get("gaussian_classical_sigma") is not None else ""))
    lines.append(f"  without constraints (Δ_STR, corrected): {fmt(d['delta_str'])}")
    paper = ", ".join(f"{k} {fmt(v)}" for k, v in d["paper"].items())
    lines.append(f"  paper's literal values: {paper}")
    for key, reason in d.get("paper_notes", {}).items():
        if reason and (key not in analysis.paper or analysis.paper[key].applies):
            lines.append(f"    ({key}: {reason})")
    lines.append("  why:")
    for sentence in d["explanation"]:
        lines.append(f"    - {sentence}")
    for suggestion in d.get("suggestion", []):
        lines.append(f"  suggestion: {suggestion}")
    if analysis.witness is not None:
        lines.append(f"  lower bound proven by: {analysis.witness.summary()}")
        if witness:
            for rel, rows in analysis.witness.database.as_lists().items():
                shown = ", ".join(repr(r) for r in rows[:12]) + (" ..." if len(rows) > 12 else "")
                lines.append(f"    A.{rel}: {shown or '(empty)'}")
    elif analysis.lower is None and analysis.lower_note:
        lines.append(f"  lower bound: {analysis.lower_note}")
    for note in d["notes"]:
        lines.append(f"  note: {note}")
    return "\n".join(lines)
