"""ℓ1/ℓ2 sensitivity of SQL aggregates, from the count bound of the CQ engine.

A differentially private release adds noise scaled to the *global sensitivity* of
the released value: the largest change, over all pairs of neighbouring databases,
measured in the ℓ1 norm (Laplace mechanism) or the ℓ2 norm (Gaussian mechanism).
The conjunctive-query engine (Arapinis, Figueira, Gaboardi, ICALP 2016) bounds by
``Δ`` how many answers one added or removed tuple can create or destroy; this
module turns that count bound into the sensitivity of the aggregate computed over
the answers: COUNT, a GROUP BY histogram of disjoint counts, SUM and AVG of a
column with values in ``[m, M]``, MIN/MAX and MEDIAN.

Two neighbour models are supported (docs/rules.md, rule ``setting``):

``"add-remove"``
    the databases differ by one tuple added or removed (the default);
``"substitute"``
    one tuple is changed ("change-one"), i.e. removed and another one added.

With ``contributions=k`` one individual owns up to ``k`` tuples, so a neighbour
adds or removes up to ``k`` tuples (add-remove) or changes up to ``k`` tuples in
place (substitute); it is a chain of ``k`` single-tuple neighbours, so by the
triangle inequality each additive bound (COUNT, histogram, SUM) is multiplied
by ``k`` (Observation 1 of the ICALP paper; docs/rules.md, rule
``contributions``). Range bounds (AVG, MIN/MAX, MEDIAN beyond one row) do not
grow with ``k``.

Every value returned is an upper bound that is never below the truth. ℓ2 is
always a norm, never a squared norm. ``math.inf`` means "unbounded"
and propagates, except that a bound of 0 (an unsatisfiable query, or an empty
range of values) times anything is 0.

The single-table base rules, each stated and proved in docs/rules.md (rules
``count-substitution``, ``group-by-histogram``, ``sum``, ``sum-substitution``,
``median`` and ``median-parity-rows``):

=================  =====================  ===============  ================
query              change-one ℓ1          change-one ℓ2    add/remove ℓ1=ℓ2
=================  =====================  ===============  ================
COUNT              1                      1                1
k disjoint COUNTs  2                      √2               1
SUM                M − m                  M − m            max(|m|, |M|)
MEDIAN, n rows     (M−m)/2 n even,        same as ℓ1       (M−m)/2
                   M − m n odd
=================  =====================  ===============  ================

This module holds the rules of COUNT, histograms, SUM and AVG and the vector of a
SELECT list; MIN, MAX, MEDIAN and grouped ranges are in
:mod:`cqsens.release.order_statistics`, what the rules share (:class:`AggregateBound`,
the input checks, the range arithmetic) in :mod:`cqsens.release.aggregate_base`, and
every public name is importable from here.

Examples
--------
>>> from cqsens.release.aggregates import histogram_bound, sum_bound, vector_bound
>>> histogram_bound(1, neighbor="substitute").l2  # √2, as an exact upper bound
Fraction(14142135623730951, 10000000000000000)
>>> sum_bound(1, 0, 10, neighbor="substitute", single_table_unfiltered=True).l1
10
>>> b = vector_bound([sum_bound(1, 0, 3), sum_bound(1, 0, 4)])
>>> (b.l1, b.l2)
(7, 5)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from cqsens.engine.rules import Rule
from cqsens.errors import InputError
from cqsens.ir.exact import Exact, mul, sqrt_upper
from cqsens.release.aggregate_base import (
    NEIGHBORS,
    AggregateBound,
    _check_args,
    _check_value_args,
    _magnitude,
    _mul,
    _signed_span,
    _span,
    derived,
)
from cqsens.release.order_statistics import grouped_range_bound, median_bound, min_max_bound

__all__ = [
    "NEIGHBORS",
    "AggregateBound",
    "count_bound",
    "histogram_bound",
    "sum_bound",
    "avg_bound",
    "min_max_bound",
    "median_bound",
    "grouped_range_bound",
    "vector_bound",
    "derived",
]


# ----------------------------------------------------------------------------- rules


def count_bound(
    count_delta: Exact, *, neighbor: str = "add-remove", contributions: int = 1
) -> AggregateBound:
    """Sensitivity of a COUNT whose add-remove bound is ``count_delta``.

    Parameters
    ----------
    count_delta : int, Fraction or float
        Bound Δ on how much one added or removed tuple changes the count, as
        computed by the CQ engine (1 for a single table, ``math.inf`` when
        unbounded, 0 for an unsatisfiable query).
    neighbor : {"add-remove", "substitute"}, optional
        Neighbour model (default ``"add-remove"``).
    contributions : int, optional
        Tuples owned by one individual (default 1).

    Returns
    -------
    AggregateBound
        ``l1 == l2 == contributions * count_delta`` under both models.

    Raises
    ------
    InputError
        For an unknown neighbour model, a negative or NaN ``count_delta`` or
        ``contributions < 1``.

    Notes
    -----
    CQ counts are monotone and the classes of databases considered are closed
    under removing tuples, so a substitution (remove ``t``, then add ``t'``)
    first lowers the count by at most Δ, then raises it by at most Δ: the net
    change lies in ``[−Δ, Δ]``, so the substitute bound equals the add-remove
    bound, not twice it (docs/rules.md, rule ``count-substitution``). For a
    scalar ℓ1 and ℓ2 coincide. With ``k`` tuples per individual a neighbour is
    a chain of ``k`` single-tuple steps, hence the factor ``k`` (rule
    ``contributions``).

    Examples
    --------
    >>> b = count_bound(1)
    >>> (b.l1, b.l2, b.neighbor)
    (1, 1, 'add-remove')
    >>> b.rule.value
    'new-answers'
    >>> count_bound(3, neighbor="substitute", contributions=2).l1
    6
    """
    neighbor, delta, k = _check_args(count_delta, neighbor, contributions)
    value = _mul(k, delta)
    rule = Rule.NEW_ANSWERS if neighbor == "add-remove" else Rule.COUNT_SUBSTITUTION
    return derived(value, value, neighbor, rule, k, aggregate="count", delta=delta)


def histogram_bound(
    count_delta: Exact, *, neighbor: str = "add-remove", contributions: int = 1
) -> AggregateBound:
    """Sensitivity of a GROUP BY histogram of disjoint counts.

    The parameters and errors are those of :func:`count_bound`, with ``count_delta``
    the add-remove bound Δ of the count with the GROUP BY columns added to the free
    variables (1 for a single table).

    Returns
    -------
    AggregateBound
        Add-remove: ``l1 = l2 = kΔ``; substitute: ``l1 = 2kΔ``, ``l2 = √2·kΔ``.

    Notes
    -----
    Every answer of the query with the group columns free lands in exactly one
    group, so the group counts add up to that query's count. Adding a tuple
    creates at most Δ answers and, the query being monotone, destroys none:
    every group count moves up, and the moves add up to at most Δ, so
    ``ℓ1 ≤ Δ`` and ``ℓ2 ≤ ℓ1 ≤ Δ``. Removing a tuple is the mirror image.

    A substitution is a removal followed by an addition (the intermediate
    database stays in the class, which is closed under removal), so the change
    is ``r + a`` with ``r ≤ 0``, ``‖r‖1 ≤ Δ`` and ``a ≥ 0``, ``‖a‖1 ≤ Δ``. Hence
    ``‖r + a‖1 ≤ 2Δ``. For ℓ2, a group touched by both parts gets entries of
    opposite signs, so ``(r_i + a_i)² ≤ max(r_i², a_i²) ≤ r_i² + a_i²``; summing,
    ``‖r + a‖2² ≤ ‖r‖2² + ‖a‖2² ≤ ‖r‖1² + ‖a‖1² ≤ 2Δ²``, i.e. ``ℓ2 ≤ √2·Δ``. This
    holds for joins too, where one tuple may change several groups; for a single
    table (Δ = 1) it is tight (one row moves between groups). The change-one ℓ2
    sensitivity is √2, not 2: 2 is the *squared* norm of the change ``(−1, +1)``
    (docs/rules.md, rule ``group-by-histogram``).

    Examples
    --------
    >>> b = histogram_bound(1, neighbor="substitute")
    >>> (b.l1, float(b.l2))
    (2, 1.4142135623730951)
    >>> histogram_bound(4).l1
    4
    """
    neighbor, delta, k = _check_args(count_delta, neighbor, contributions)
    base = _mul(k, delta)
    if neighbor == "add-remove":
        l1: Exact = base
        l2: Exact = base
    else:
        l1 = _mul(2, base)
        l2 = _mul(sqrt_upper(2), base)
    return derived(l1, l2, neighbor, Rule.GROUP_BY_HISTOGRAM, k, aggregate="count", delta=delta)


def _sum_rule(
    delta: Exact, low: Exact, high: Exact, neighbor: str, k: int, single_table_unfiltered: bool
) -> AggregateBound:
    """The bound and derivation of :func:`sum_bound`, case by case."""
    if neighbor == "add-remove":
        value = _mul(_mul(k, delta), _magnitude(low, high))
        return derived(value, value, neighbor, Rule.SUM, k, aggregate="sum", delta=delta,
                       low=low, high=high, magnitude=_magnitude(low, high))
    if single_table_unfiltered:
        value = _mul(k, _span(low, high))
        return derived(value, value, neighbor, Rule.SUM_SUBSTITUTION, k, aggregate="sum",
                       low=low, high=high, span=_span(low, high))
    value = _mul(_mul(k, delta), _signed_span(low, high))
    return derived(value, value, neighbor, Rule.SUM_SUBSTITUTION, k, aggregate="sum", delta=delta,
                   low=low, high=high, signed_span=_signed_span(low, high))


def sum_bound(
    count_delta: Exact,
    low: Exact,
    high: Exact,
    *,
    neighbor: str = "add-remove",
    contributions: int = 1,
    single_table_unfiltered: bool = False,
) -> AggregateBound:
    """Sensitivity of ``SUM(c)`` with the values of ``c`` in ``[low, high]``.

    Parameters
    ----------
    count_delta : int, Fraction or float
        Add-remove bound Δ of the COUNT(*) of the query (1 for a single table).
    low, high : int, Fraction or float
        Bounds ``m ≤ M`` on the summed values (``-inf``/``inf`` when unbounded).
    neighbor, contributions
        As for :func:`count_bound`.
    single_table_unfiltered : bool, optional
        The query reads a single table with no filter, so a substitution changes
        exactly one summed row (then ``count_delta`` must be 1).

    Returns
    -------
    AggregateBound
        Add-remove: ``kΔ·max(|m|, |M|)``. Substitute: ``kΔ·(max(M, 0) − min(m, 0))``,
        or ``k·(M − m)`` for a single unfiltered table. ``l2 == l1``.

    Raises
    ------
    InputError
        For an unknown neighbour model, bad ``count_delta``/``contributions``,
        ``low > high``, or ``single_table_unfiltered`` with ``count_delta != 1``.

    Notes
    -----
    Adding a tuple adds at most Δ answer rows and removes none (monotone query),
    each contributing a value in ``[m, M]``: the sum moves by at most
    ``Δ·max(|m|, |M|)``; removal is symmetric. A substitution removes at most Δ
    rows (change in ``[−Δ·max(M,0), −Δ·min(m,0)]``) and then adds at most Δ rows
    (change in ``[Δ·min(m,0), Δ·max(M,0)]``): the total is at most
    ``Δ·(max(M,0) − min(m,0))`` in absolute value. On a single table with no
    filter the row count is fixed and one value is replaced: exactly ``M − m``.

    ``(M−m)²`` and ``max(m², M²)`` would be squared norms; the ℓ2 sensitivity
    equals ℓ1 for a scalar. The change-one bound ``M − m`` assumes every row is
    summed; with a filter a row can move from "not counted" to "counted at M",
    so the bound is ``max(M,0) − min(m,0)`` (e.g. values in [5, 10]: 10, not 5).
    See docs/rules.md, rules ``sum`` and ``sum-substitution``.

    Examples
    --------
    >>> sum_bound(1, -3, 10).l1
    10
    >>> sum_bound(1, 5, 10, neighbor="substitute").l1
    10
    >>> sum_bound(1, 5, 10, neighbor="substitute", single_table_unfiltered=True).l1
    5
    >>> sum_bound(2, -3, 10, neighbor="substitute").l2
    26
    """
    neighbor, delta, k, low, high = _check_value_args(count_delta, low, high, neighbor,
                                                      contributions)
    if single_table_unfiltered and delta != 1:
        raise InputError(
            f"single_table_unfiltered=True needs count_delta == 1 (one table, one row "
            f"per tuple), not {count_delta!r}",
            construct="count_delta",
        )
    return _sum_rule(delta, low, high, neighbor, k, single_table_unfiltered)


def avg_bound(
    count_delta: Exact, low: Exact, high: Exact, *, neighbor: str = "add-remove",
    contributions: int = 1,
) -> AggregateBound:
    """Sensitivity of ``AVG(c)`` with the values of ``c`` in ``[low, high]``.

    Parameters
    ----------
    count_delta, low, high, neighbor, contributions
        As for :func:`sum_bound`, the values being averaged.

    Returns
    -------
    AggregateBound
        Substitution, ``contributions > 1`` or Δ = ∞: ``l1 = l2 = M − m``; add-remove
        with one row and a finite Δ: ``D/(D + 1)·(M − m)`` with ``D = Δ`` (``(M − m)/2``
        on a single table); 0 when ``count_delta == 0``.

    Raises
    ------
    InputError
        For an unknown neighbour model, bad ``count_delta``/``contributions`` or
        ``low > high``.

    Notes
    -----
    We assume the average is defined (at least one row) on both neighbours; the
    empty-set result (SQL NULL) is outside the model. An average of values in
    ``[m, M]`` lies in ``[m, M]``, so two averages differ by at most ``M − m``,
    whatever the neighbour model; this is reached under substitution (``{m}`` to
    ``{M}``). Under add-remove of one row the query is monotone, so the smaller
    neighbour has ``n ≥ 1`` averaged rows with mean ``μ`` and the larger ``d ≤ D = Δ``
    more, ``x_1..x_d``; the mean moves by ``|Σ(x_i − μ)|/(n + d) ≤ d(M − m)/(n + d) ≤
    D(M − m)/(D + 1)``, reached by ``{m}`` plus ``D`` rows at ``M`` (docs/rules.md,
    rule ``avg``). With ``contributions = k > 1`` neighbours are chains of up to ``k``
    steps, which may remove rows and add others (``{m}``, then ``{m, M}``, then
    ``{M}``): only the range bound holds.

    Examples
    --------
    >>> avg_bound(1, 0, 10).l1
    5
    >>> avg_bound(1, 0, 10, neighbor="substitute").l1
    10
    >>> avg_bound(3, 0, 10).l1
    Fraction(15, 2)
    >>> avg_bound(1, 0, 10, contributions=2).l1
    10
    >>> avg_bound(0, 0, 10).l1
    0
    """
    neighbor, delta, k, low, high = _check_value_args(count_delta, low, high, neighbor,
                                                      contributions)
    if delta == 0 or neighbor == "substitute" or k > 1 or delta == math.inf \
            or _span(low, high) == 0:
        value = 0 if delta == 0 else _span(low, high)
        return derived(value, value, neighbor, Rule.AVG, k, aggregate="avg", low=low, high=high)
    rows = delta
    value = _mul(Fraction(rows) / (Fraction(rows) + 1), _span(low, high))
    return derived(value, value, neighbor, Rule.AVG, k, aggregate="avg", low=low, high=high,
                   rows=rows)


def vector_bound(bounds: Sequence[AggregateBound]) -> AggregateBound:
    """Sensitivity of several aggregates released together (one SELECT list).

    Parameters
    ----------
    bounds : sequence of AggregateBound
        The bound of each aggregate, all under the same neighbour model.

    Returns
    -------
    AggregateBound
        ``l1 = Σ l1_i`` and ``l2 = √(Σ l2_i²)``.

    Raises
    ------
    InputError
        When ``bounds`` is empty or mixes neighbour models.

    Notes
    -----
    The released vector is the concatenation of the aggregates' values, and its
    change between two neighbours is the concatenation of their changes, each
    bounded separately. The ℓ1 norm of a concatenation is the sum of the parts'
    ℓ1 norms, and the squared ℓ2 norm is the sum of their squared ℓ2 norms, so
    both results are sound (not tight when the worst cases of the parts cannot
    occur together).

    Examples
    --------
    >>> b = vector_bound([count_bound(1), count_bound(1)])
    >>> (b.l1, float(b.l2))
    (2, 1.4142135623730951)
    """
    if len(bounds) == 0:
        raise InputError("no aggregate to combine", construct="SELECT")
    neighbors = {b.neighbor for b in bounds}
    if len(neighbors) > 1:
        raise InputError(
            "cannot combine bounds under different neighbour models: "
            + ", ".join(sorted(neighbors)),
            construct="neighbor",
        )
    l1: Exact = 0
    squares: Exact = 0
    for b in bounds:
        l1 = l1 + b.l1
        squares = squares + mul(b.l2, b.l2)
    l2 = sqrt_upper(squares)
    return derived(l1, l2, bounds[0].neighbor, Rule.SEVERAL_AGGREGATES,
                   bounds[0].derivation.neighbourhood.contributions,
                   tuple(b.derivation for b in bounds), aggregates=len(bounds), norm2=l2)
