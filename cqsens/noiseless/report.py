"""The privacy of a noiseless count under partial knowledge, as one JSON-ready report.

For ``n`` independent records whose probabilities of being counted all lie in
``[lambda, 1 - lambda]``, :func:`noiseless_report` compares the exact class
bound of :mod:`cqsens.noiseless.classes` with the thesis's closed form,
either at a given ``epsilon`` (which ``delta``?) or at a given ``delta``
(which ``epsilon``?).  With known probabilities the exact accountant is added;
with ``categories`` the release is a histogram.  Rendering is in
:mod:`cqsens.report.noiseless`.

References
----------
.. [1] D. Desfontaines, thesis, Section 3.2.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cqsens.noiseless.accountant import exact_delta_by_record, exact_epsilon
from cqsens.noiseless.classes import class_delta, class_epsilon
from cqsens.noiseless.closed_form import (
    PROPOSITION_27_NOTE,
    closed_form_delta,
    closed_form_epsilon,
)

__all__ = ["noiseless_report"]


def _finite_or_none(value: float | None) -> float | None:
    if value is None or math.isinf(value) or math.isnan(value):
        return None
    return value


def _ratio(top: float | None, bottom: float | None) -> float | None:
    """``top / bottom`` when both are finite and positive (``inf`` if only ``bottom`` is 0)."""
    if top is None or bottom is None or math.isinf(top) or math.isinf(bottom) or top <= 0:
        return None
    if bottom == 0.0:
        return math.inf
    return top / bottom


def noiseless_report(
    *,
    n: int,
    lam: float,
    epsilon: float | None = None,
    delta: float | None = None,
    ps: list[float] | None = None,
    categories: int | None = None,
) -> dict[str, Any]:
    """Compute everything ``cqsens noiseless`` prints, as a JSON-ready dict.

    Parameters
    ----------
    n : int
        Number of records (already validated, ``>= 2``).
    lam : float
        ``lambda`` (already validated).
    epsilon, delta : float, optional
        Compute ``delta`` at ``epsilon`` and/or ``epsilon`` at ``delta``.
    ps : list of float, optional
        Known probabilities (exact accountant), all in ``[lam, 1 - lam]``.
    categories : int, optional
        Number of histogram categories (``None`` for a plain count).

    Returns
    -------
    dict
        Keys ``query``, ``n``, ``lambda``, ``categories``, ``at_epsilon``,
        ``at_delta``, ``proposition_27`` and ``notes``; infinite ``epsilon``
        values are ``None`` with a note.

    Notes
    -----
    The histogram class bound equals the binary one with the same ``lambda``
    (see :func:`cqsens.noiseless.classes.histogram_class_delta`), so both use
    :func:`cqsens.noiseless.classes.class_delta`; the closed form is the same too.

    Examples
    --------
    >>> r = noiseless_report(n=10_000, lam=0.05, epsilon=0.3)
    >>> r["at_epsilon"]["delta_gain"] > 1e5
    True

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    notes: list[str] = []
    report: dict[str, Any] = {
        "query": "histogram" if categories else "count",
        "n": n,
        "lambda": lam,
        "categories": categories,
        "at_epsilon": None,
        "at_delta": None,
        "proposition_27": {"computed": False, "note": PROPOSITION_27_NOTE},
        "notes": notes,
    }
    if epsilon is not None:
        report["at_epsilon"] = _at_epsilon(_Class(n, lam, ps, notes), epsilon)
    if delta is not None:
        report["at_delta"] = _at_delta(_Class(n, lam, ps, notes), delta)
    return report


@dataclass(frozen=True)
class _Class:
    """What each part of the report reads: ``n`` records with every ``p_j`` in
    ``[lam, 1 - lam]``, the known ``p_j`` (None when unknown), and the report's notes,
    to which the part appends its own."""

    n: int
    lam: float
    ps: list[float] | None
    notes: list[str]


def _at_epsilon(c: _Class, epsilon: float) -> dict[str, Any]:
    """The ``at_epsilon`` part of the report."""
    d_class = class_delta(c.n, c.lam, epsilon)
    d_cf = closed_form_delta(c.n, c.lam, epsilon)
    at: dict[str, Any] = {
        "epsilon": epsilon,
        "delta_class_bound": d_class,
        "delta_closed_form": d_cf,
        "delta_gain": _ratio(d_cf, d_class),
        "epsilon_closed_form_at_closed_form_delta": None,
        "epsilon_class_bound_at_closed_form_delta": None,
        "epsilon_gain": None,
    }
    if d_cf is not None and not 0.0 < d_cf < 1.0:
        c.notes.append(f"the closed form's delta at epsilon = {epsilon:g} underflows to "
                     f"{d_cf:g}: no epsilon comparison at that delta")
    elif d_cf is None:
        c.notes.append(f"the closed form gives no delta < 1 at epsilon = {epsilon:g} "
                     f"(it needs 27/(lambda (n-1)) <= epsilon and is stated for epsilon <= 1)")
    else:
        e_cf = closed_form_epsilon(c.n, c.lam, d_cf)
        e_class = class_epsilon(c.n, c.lam, d_cf)
        at["epsilon_closed_form_at_closed_form_delta"] = e_cf
        at["epsilon_class_bound_at_closed_form_delta"] = _finite_or_none(e_class)
        at["epsilon_gain"] = _ratio(e_cf, e_class)
    if c.ps is not None:
        per_record = exact_delta_by_record(c.ps, epsilon)
        worst = int(np.argmax(per_record))
        at["delta_exact"] = float(per_record[worst])
        at["worst_record"] = worst + 1
    return at


def _at_delta(c: _Class, delta: float) -> dict[str, Any]:
    """The ``at_delta`` part of the report."""
    e_class = class_epsilon(c.n, c.lam, delta)
    e_cf = closed_form_epsilon(c.n, c.lam, delta)
    at: dict[str, Any] = {
        "delta": delta,
        "epsilon_class_bound": _finite_or_none(e_class),
        "epsilon_closed_form": e_cf,
        "epsilon_gain": _ratio(e_cf, e_class),
    }
    if math.isinf(e_class):
        floor = (1.0 - c.lam) ** (c.n - 1)
        c.notes.append(f"no finite epsilon reaches delta = {delta:g} for the class: with "
                     f"probability (1 - lambda)^(n-1) = {floor:.4g} every other record "
                     "may be 0, and then the count reveals the record")
    if e_cf is None:
        c.notes.append(f"the closed form gives no epsilon <= 1 at delta = {delta:g}")
    if c.ps is not None:
        e_exact = exact_epsilon(c.ps, delta)
        at["epsilon_exact"] = _finite_or_none(e_exact)
        if math.isinf(e_exact):
            c.notes.append(f"no finite epsilon reaches delta = {delta:g} for the given p_j")
    return at
