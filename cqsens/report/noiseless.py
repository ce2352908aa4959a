"""Text and JSON renderings of :func:`cqsens.noiseless.report.noiseless_report`.

The text rendering is a few aligned lines for a terminal; the JSON rendering
writes infinite and NaN values as ``null``.  Renderers return strings; only the
command line prints them.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["render_json", "render_text"]


def _fmt_delta(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4e}"


def _fmt_eps(value: float | None, infinite: str = "n/a") -> str:
    return infinite if value is None else f"{value:.6g}"


def _fmt_gain(value: float | None) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "unbounded (epsilon = 0 suffices)"
    return f"{value:.4g}x" if value < 1e4 else f"{value:.3e}x"


def render_text(report: dict[str, Any]) -> str:
    """Render :func:`cqsens.noiseless.report.noiseless_report` output for a terminal.

    Parameters
    ----------
    report : dict
        As returned by :func:`cqsens.noiseless.report.noiseless_report`.

    Returns
    -------
    str
        Several aligned lines, ending with a newline.

    Notes
    -----
    "n/a" marks a value that does not exist (the closed form outside its
    validity range); an infinite class-bound ``epsilon`` is written "inf".

    Examples
    --------
    >>> from cqsens.noiseless.report import noiseless_report
    >>> text = render_text(noiseless_report(n=1000, lam=0.1, delta=1e-3))
    >>> "epsilon, class bound" in text
    True

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    lam = report["lambda"]
    lines: list[str] = []
    if report["query"] == "histogram":
        lines.append(f"noiseless histogram: {report['categories']} categories, "
                     f"n = {report['n']} records, every category probability >= {lam:g}")
    else:
        lines.append(f"noiseless count: n = {report['n']} records, "
                     f"every p_j in [{lam:g}, {1 - lam:g}]")
    width = 52

    def row(label: str, value: str) -> None:
        lines.append(f"  {label:<{width}} {value}")

    at = report["at_epsilon"]
    if at is not None:
        lines.append(f"at epsilon = {at['epsilon']:g}:")
        if "delta_exact" in at:
            row(f"delta, exact for the given p_j (worst record {at['worst_record']})",
                _fmt_delta(at["delta_exact"]))
        row("delta, class bound (exact mixture bound)", _fmt_delta(at["delta_class_bound"]))
        row("delta, thesis closed form", _fmt_delta(at["delta_closed_form"]))
        row("gain (closed-form delta / class-bound delta)", _fmt_gain(at["delta_gain"]))
        if at["delta_closed_form"] is not None:
            same = f"epsilon at delta = {at['delta_closed_form']:.4e}"
            row(f"{same}, class bound",
                _fmt_eps(at["epsilon_class_bound_at_closed_form_delta"], "inf"))
            row(f"{same}, thesis closed form",
                _fmt_eps(at["epsilon_closed_form_at_closed_form_delta"]))
            row("gain (closed-form epsilon / class-bound epsilon)", _fmt_gain(at["epsilon_gain"]))
    at = report["at_delta"]
    if at is not None:
        lines.append(f"at delta = {at['delta']:g}:")
        if "epsilon_exact" in at:
            row("epsilon, exact for the given p_j", _fmt_eps(at["epsilon_exact"], "inf"))
        row("epsilon, class bound (exact mixture bound)",
            _fmt_eps(at["epsilon_class_bound"], "inf"))
        row("epsilon, thesis closed form", _fmt_eps(at["epsilon_closed_form"]))
        row("gain (closed-form epsilon / class-bound epsilon)", _fmt_gain(at["epsilon_gain"]))
    lines.append(report["proposition_27"]["note"])
    for note in report["notes"]:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def render_json(report: dict[str, Any]) -> str:
    """The report (as for :func:`render_text`) as indented JSON text, no trailing newline,
    with infinite and NaN values written ``null``."""
    return json.dumps(_json_safe(report), indent=2)
