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
from dataclasses import dataclass
from fractions import Fraction

from cqsens.engine.rules import Derivation, Input, Neighbourhood, Rule
from cqsens.errors import InputError
from cqsens.ir.exact import Exact, exact, mul, sqrt_upper

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

NEIGHBORS: tuple[str, ...] = ("add-remove", "substitute")
"""The neighbour models understood by every function of this module."""



@dataclass(frozen=True, slots=True)
class AggregateBound:
    """Sensitivity of one released aggregate (a scalar or a vector).

    Attributes
    ----------
    l1 : int, Fraction or float
        Upper bound on the ℓ1 norm of the change between neighbours: exact (an
        ``int`` or a ``Fraction``), or ``math.inf`` when unbounded.
    l2 : int, Fraction or float
        Upper bound on the ℓ2 norm of the change (a norm, never its square); a
        square root is replaced by a rational upper bound.
    neighbor : str
        The neighbour model, ``"add-remove"`` or ``"substitute"``.
    derivation : Derivation
        The rule of docs/rules.md applied, with its inputs (rendered in words by
        :mod:`cqsens.report.words`).
    """

    l1: Exact
    l2: Exact
    neighbor: str
    derivation: Derivation

    @property
    def rule(self) -> Rule:
        """The rule of docs/rules.md that gives the bound."""
        return self.derivation.rule


def derived(l1: Exact, l2: Exact, neighbor: str, rule: Rule, contributions: int = 1,
            premises: tuple[Derivation, ...] = (), **inputs: Input) -> AggregateBound:
    """An :class:`AggregateBound` whose derivation applies ``rule`` to ``inputs``.

    >>> derived(2, 2, "add-remove", Rule.SUM, delta=1, low=0, high=2).derivation.rule.value
    'sum'
    """
    where = Neighbourhood(model=neighbor, contributions=contributions)
    return AggregateBound(l1, l2, neighbor, Derivation(rule, l1, where, inputs, premises))


# ----------------------------------------------------------------------------- checks


def _check_neighbor(neighbor: object) -> str:
    if neighbor not in NEIGHBORS:
        raise InputError(
            f"unknown neighbour model {neighbor!r}: choose one of "
            + ", ".join(repr(n) for n in NEIGHBORS),
            construct="neighbor",
        )
    return str(neighbor)


def _check_count_delta(count_delta: object) -> Exact:
    if (
        not isinstance(count_delta, (int, float, Fraction))
        or isinstance(count_delta, bool)
        or (isinstance(count_delta, float) and math.isnan(count_delta))
    ):
        raise InputError(
            f"count_delta must be a number >= 0 or math.inf, not {count_delta!r}",
            construct="count_delta",
        )
    if count_delta < 0:
        raise InputError(f"count_delta must be >= 0, not {count_delta!r}", construct="count_delta")
    return exact(count_delta)


def _check_contributions(contributions: object) -> int:
    if not isinstance(contributions, int) or isinstance(contributions, bool):
        raise InputError(
            f"contributions must be an integer >= 1, not {contributions!r}",
            construct="contributions",
        )
    if contributions < 1:
        raise InputError(
            f"contributions must be >= 1 (tuples owned by one individual), not {contributions!r}",
            construct="contributions",
        )
    return contributions


def _check_range(low: Exact, high: Exact) -> tuple[Exact, Exact]:
    checked: list[Exact] = []
    for name, value in (("low", low), ("high", high)):
        if not isinstance(value, (int, float, Fraction)) or isinstance(value, bool) \
                or (isinstance(value, float) and math.isnan(value)):
            raise InputError(
                f"value bound {name} must be a number, not {value!r}", construct="bounds"
            )
        checked.append(exact(value))
    low, high = checked
    if low > high:
        raise InputError(f"empty value range: low {low!r} > high {high!r}", construct="bounds")
    if low == math.inf or high == -math.inf:
        raise InputError(
            f"value range [{low!r}, {high!r}] holds no real number", construct="bounds"
        )
    return low, high


# ----------------------------------------------------------------------------- arithmetic


_mul = mul


def _half(value: Exact) -> Exact:
    """``value / 2``, exactly."""
    return mul(value, Fraction(1, 2))


def _span(low: Exact, high: Exact) -> Exact:
    """``M − m`` (0 for a single value, ``inf`` for an unbounded side)."""
    return 0 if low == high else high - low


def _magnitude(low: Exact, high: Exact) -> Exact:
    """``max(|m|, |M|)``: the largest value one row can add to or remove from a sum."""
    a: Exact = -low if low < 0 else low
    b: Exact = -high if high < 0 else high
    return a if a >= b else b


def _signed_span(low: Exact, high: Exact) -> Exact:
    """``max(M, 0) − min(m, 0)``: the largest change of a sum when a row is substituted."""
    top: Exact = high if high > 0 else 0
    bottom: Exact = low if low < 0 else 0
    return top - bottom


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
    neighbor = _check_neighbor(neighbor)
    delta = _check_count_delta(count_delta)
    k = _check_contributions(contributions)
    value = _mul(k, delta)
    rule = Rule.NEW_ANSWERS if neighbor == "add-remove" else Rule.COUNT_SUBSTITUTION
    return derived(value, value, neighbor, rule, k, aggregate="count", delta=delta)


def histogram_bound(
    count_delta: Exact, *, neighbor: str = "add-remove", contributions: int = 1
) -> AggregateBound:
    """Sensitivity of a GROUP BY histogram of disjoint counts.

    Parameters
    ----------
    count_delta : int, Fraction or float
        Add-remove bound Δ of the count with the GROUP BY columns added to the
        free variables (1 for a single table).
    neighbor : {"add-remove", "substitute"}, optional
        Neighbour model (default ``"add-remove"``).
    contributions : int, optional
        Tuples owned by one individual (default 1).

    Returns
    -------
    AggregateBound
        Add-remove: ``l1 = l2 = kΔ``; substitute: ``l1 = 2kΔ``, ``l2 = √2·kΔ``.

    Raises
    ------
    InputError
        For an unknown neighbour model, a negative or NaN ``count_delta`` or
        ``contributions < 1``.

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
    neighbor = _check_neighbor(neighbor)
    delta = _check_count_delta(count_delta)
    k = _check_contributions(contributions)
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
    neighbor : {"add-remove", "substitute"}, optional
        Neighbour model (default ``"add-remove"``).
    contributions : int, optional
        Tuples owned by one individual (default 1).
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
    neighbor = _check_neighbor(neighbor)
    delta = _check_count_delta(count_delta)
    k = _check_contributions(contributions)
    low, high = _check_range(low, high)
    if single_table_unfiltered and delta != 1:
        raise InputError(
            f"single_table_unfiltered=True needs count_delta == 1 (one table, one row "
            f"per tuple), not {count_delta!r}",
            construct="count_delta",
        )
    return _sum_rule(delta, low, high, neighbor, k, single_table_unfiltered)


def avg_bound(
    count_delta: Exact,
    low: Exact,
    high: Exact,
    *,
    neighbor: str = "add-remove",
    contributions: int = 1,
) -> AggregateBound:
    """Sensitivity of ``AVG(c)`` with the values of ``c`` in ``[low, high]``.

    Parameters
    ----------
    count_delta : int, Fraction or float
        Add-remove bound Δ of the COUNT(*) of the query; only ``Δ == 0``
        (unsatisfiable query, result never changes) affects the bound.
    low, high : int, Fraction or float
        Bounds ``m ≤ M`` on the averaged values.
    neighbor : {"add-remove", "substitute"}, optional
        Neighbour model (default ``"add-remove"``).
    contributions : int, optional
        Tuples owned by one individual (default 1); does not change the bound.

    Returns
    -------
    AggregateBound
        Substitution (or Δ = ∞): ``l1 = l2 = M − m``; add-remove with a finite
        Δ: ``D/(D + 1)·(M − m)`` with ``D = kΔ`` (``(M − m)/2`` on a single table);
        0 when ``count_delta == 0``.

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
    ``{M}``). Under add-remove the query is monotone, so the smaller neighbour has
    ``n ≥ 1`` averaged rows with mean ``μ`` and the larger ``d ≤ D = kΔ`` more,
    ``x_1..x_d``; the mean moves by ``|Σ(x_i − μ)|/(n + d) ≤ d(M − m)/(n + d) ≤
    D(M − m)/(D + 1)``, reached by ``{m}`` plus ``D`` rows at ``M`` (docs/rules.md,
    rule ``avg``).

    Examples
    --------
    >>> avg_bound(1, 0, 10).l1
    5
    >>> avg_bound(1, 0, 10, neighbor="substitute").l1
    10
    >>> avg_bound(3, 0, 10).l1
    Fraction(15, 2)
    >>> avg_bound(0, 0, 10).l1
    0
    """
    neighbor = _check_neighbor(neighbor)
    delta = _check_count_delta(count_delta)
    k = _check_contributions(contributions)
    low, high = _check_range(low, high)
    if delta == 0 or neighbor == "substitute" or delta == math.inf or _span(low, high) == 0:
        value = 0 if delta == 0 else _span(low, high)
        return derived(value, value, neighbor, Rule.AVG, k, aggregate="avg", low=low, high=high)
    rows = _mul(k, delta)
    value = _mul(Fraction(rows) / (Fraction(rows) + 1), _span(low, high))
    return derived(value, value, neighbor, Rule.AVG, k, aggregate="avg", low=low, high=high,
                   rows=rows)


def min_max_bound(
    count_delta: Exact,
    low: Exact,
    high: Exact,
    *,
    neighbor: str = "add-remove",
    contributions: int = 1,
) -> AggregateBound:
    """Sensitivity of ``MIN(c)`` or ``MAX(c)`` with the values of ``c`` in ``[low, high]``.

    Parameters
    ----------
    count_delta : int, Fraction or float
        Add-remove bound Δ of the COUNT(*) of the query; only ``Δ == 0``
        (unsatisfiable query, result never changes) affects the bound.
    low, high : int, Fraction or float
        Bounds ``m ≤ M`` on the values.
    neighbor : {"add-remove", "substitute"}, optional
        Neighbour model (default ``"add-remove"``).
    contributions : int, optional
        Tuples owned by one individual (default 1); does not change the bound.

    Returns
    -------
    AggregateBound
        ``l1 = l2 = M − m`` (0 when ``count_delta == 0``).

    Raises
    ------
    InputError
        For an unknown neighbour model, bad ``count_delta``/``contributions`` or
        ``low > high``.

    Notes
    -----
    We assume the result is defined (at least one row) on both neighbours; the
    empty-set result (SQL NULL) is outside the model. MIN and MAX of values in
    ``[m, M]`` lie in ``[m, M]``, so they change by at most ``M − m``; this is
    reached already on a single table (adding ``m`` to ``{M}``) (docs/rules.md,
    rule ``min-max``).

    Examples
    --------
    >>> min_max_bound(1, -1, 1, neighbor="substitute").l2
    2
    """
    neighbor = _check_neighbor(neighbor)
    delta = _check_count_delta(count_delta)
    k = _check_contributions(contributions)
    low, high = _check_range(low, high)
    value = 0 if delta == 0 else _span(low, high)
    return derived(value, value, neighbor, Rule.MIN_MAX, k, aggregate="min/max", low=low,
                   high=high)


def _check_rows(rows: object) -> int | None:
    if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 1):
        raise InputError(
            f"rows must be an integer >= 1 (the median of no rows is undefined), not {rows!r}",
            construct="rows",
        )
    return rows


def _median_rule(
    delta: Exact, low: Exact, high: Exact, neighbor: str, k: int, rows: int | None
) -> AggregateBound:
    """The bound and derivation of :func:`median_bound`, case by case."""
    span = _span(low, high)
    value: Exact
    if delta == 0 or delta > 1 or k > 1:
        value = 0 if delta == 0 else span
        return derived(value, value, neighbor, Rule.MEDIAN, k, aggregate="median", delta=delta,
                       low=low, high=high)
    if neighbor == "add-remove":
        value = _half(span)
        return derived(value, value, neighbor, Rule.MEDIAN, k, aggregate="median", delta=delta,
                       low=low, high=high)
    value = _half(span) if rows is not None and rows % 2 == 0 else span
    if rows is None:
        return derived(value, value, neighbor, Rule.MEDIAN_PARITY_ROWS, k, aggregate="median",
                       low=low, high=high)
    return derived(value, value, neighbor, Rule.MEDIAN_PARITY_ROWS, k, aggregate="median",
                   low=low, high=high, rows=rows)


def median_bound(
    count_delta: Exact,
    low: Exact,
    high: Exact,
    *,
    neighbor: str = "add-remove",
    rows: int | None = None,
    contributions: int = 1,
) -> AggregateBound:
    """Sensitivity of ``MEDIAN(c)`` with the values of ``c`` in ``[low, high]``.

    The median of ``n`` values is the middle value for odd ``n`` and the mean of
    the two middle values for even ``n`` (``(x̃_l + x̃_u)/2`` with
    ``l = ⌊(n+1)/2⌋``, ``u = ⌈(n+1)/2⌉``; the convention of
    :func:`statistics.median`).

    Parameters
    ----------
    count_delta : int, Fraction or float
        Add-remove bound Δ of the COUNT(*) of the query (1 for a single table).
    low, high : int, Fraction or float
        Bounds ``m ≤ M`` on the values.
    neighbor : {"add-remove", "substitute"}, optional
        Neighbour model (default ``"add-remove"``).
    rows : int, optional
        Number ``n ≥ 1`` of rows the median is taken over, when public; only the
        substitute model on one row per neighbour uses it (its parity).
    contributions : int, optional
        Tuples owned by one individual (default 1).

    Returns
    -------
    AggregateBound
        With at most one row changed (``count_delta <= 1`` and
        ``contributions == 1``): substitute ``(M−m)/2`` if ``n`` is even and
        ``M − m`` if ``n`` is odd or unknown; add-remove ``(M−m)/2``. Otherwise
        ``M − m``. ``l2 == l1``; 0 when ``count_delta == 0``.

    Raises
    ------
    InputError
        For an unknown neighbour model, bad ``count_delta``/``contributions``,
        ``low > high`` or ``rows < 1``.

    Notes
    -----
    We assume the median is defined (at least one row) on both neighbours.
    Write ``x̃_1 ≤ … ≤ x̃_n`` for the sorted values, ``x̃_0 = m``, ``x̃_{n+1} = M``.

    *Change one row* (n fixed): the new order statistics satisfy
    ``x̃_{i−1} ≤ x̃'_i ≤ x̃_{i+1}`` and all move in the same direction. For odd
    ``n`` the median is one order statistic and can go from ``m`` to ``M``
    (``M − m``). For even ``n = 2r`` it is ``(x̃_r + x̃_{r+1})/2``; moving up, it
    gains at most ``(x̃_{r+1} − x̃_r + x̃_{r+2} − x̃_{r+1})/2 = (x̃_{r+2} − x̃_r)/2
    ≤ (M − m)/2``, reached by ``r`` values ``m`` and ``r`` values ``M`` with one
    ``m`` changed to ``M``.

    *Add one row* (removal is the reverse): the new order statistics interlace,
    ``x̃_{i−1} ≤ y_i ≤ x̃_i``. From odd ``n = 2r+1`` the median ``x̃_{r+1}``
    becomes ``(y_{r+1} + y_{r+2})/2`` where one of the two equals ``x̃_{r+1}`` and
    the other is in ``[m, M]``: change ``≤ (M − m)/2``. From even ``n = 2r`` it
    becomes ``y_{r+1} ∈ [x̃_r, x̃_{r+1}]``, at most half the gap from the mean of
    the two: ``≤ (M − m)/2``.

    On a join whose count bound is Δ = 1 a substitution removes at most one row
    and adds at most one, so one of the two cases above applies and the bound
    for ``n`` rows still holds (the add/remove bound is never larger). When one
    neighbour can change more than one row (Δ > 1 or ``contributions > 1``) the
    only bound kept is the range ``M − m``. See docs/rules.md, rules ``median``
    and ``median-parity-rows``.

    Examples
    --------
    >>> median_bound(1, 0, 10, neighbor="substitute", rows=4).l1
    5
    >>> median_bound(1, 0, 10, neighbor="substitute", rows=5).l1
    10
    >>> median_bound(1, 0, 10).l1
    5
    >>> median_bound(2, 0, 10).l1
    10
    """
    neighbor = _check_neighbor(neighbor)
    delta = _check_count_delta(count_delta)
    k = _check_contributions(contributions)
    low, high = _check_range(low, high)
    rows = _check_rows(rows)
    return _median_rule(delta, low, high, neighbor, k, rows)


def grouped_range_bound(
    substitute: AggregateBound,
    add_remove: AggregateBound,
    touched: Exact,
    *,
    kind: str,
) -> AggregateBound:
    """Substitution sensitivity of a grouped ``AVG``, ``MEDIAN``, ``MIN`` or ``MAX``.

    Parameters
    ----------
    substitute : AggregateBound
        The scalar bound of the aggregate under substitution (``s``), for the same Δ and k.
    add_remove : AggregateBound
        The scalar bound of the aggregate under add-remove (``a``), for the same Δ and k.
    touched : int, Fraction or float
        ``G``: how many groups the removed (or the added) tuples can touch, ``k·Δ``.
    kind : str
        The aggregate's name (``"avg"``, ``"median"``, ``"min"``, ``"max"``).

    Returns
    -------
    AggregateBound
        ``l1 = G·max(s, 2a)`` and ``l2 = √(G·max(s², 2a²))``.

    Notes
    -----
    Every group is assumed defined (at least one row) on both neighbours. A
    substitution removes tuples, which touch a set ``G1`` of at most ``G`` groups,
    then adds tuples, touching a set ``G2`` of at most ``G`` groups; the
    intermediate database is in the class (closed under removal). A group in
    ``G1`` only keeps, in ``B'``, the rows it has after the removal, so it is
    defined there and its change is one removal: at most ``a``; a group in
    ``G2`` only likewise changes by at most ``a``; a group in both changes by at
    most ``s``. With ``c = |G1 ∩ G2|`` the ℓ1 change is at most
    ``c·s + 2(G − c)·a``, linear in ``c ∈ [0, G]``, so at most ``G·max(s, 2a)``;
    the squared ℓ2 change is at most ``c·s² + 2(G − c)·a²`` ≤ ``G·max(s², 2a²)``.
    Since ``a ≤ s`` this is never above ``2G·s``, the bound that counts every
    touched group at ``s`` (docs/rules.md, rule grouped-value-aggregates).

    Examples
    --------
    >>> s, a = avg_bound(1, 0, 10, neighbor="substitute"), avg_bound(1, 0, 10)
    >>> b = grouped_range_bound(s, a, 1, kind="avg")
    >>> (b.l1, b.l2)
    (10, 10)
    >>> s, a = min_max_bound(1, 0, 10, neighbor="substitute"), min_max_bound(1, 0, 10)
    >>> b = grouped_range_bound(s, a, 1, kind="min")
    >>> (b.l1, float(b.l2))
    (20, 14.142135623730951)
    """
    touched = _check_count_delta(touched)
    k = substitute.derivation.neighbourhood.contributions
    if touched == 0 or (substitute.l1 == 0 and add_remove.l1 == 0):
        return derived(0, 0, "substitute", Rule.GROUPED_VALUE_AGGREGATES, k, aggregate=kind,
                       touched=0)
    both, single = substitute.l1, _mul(2, add_remove.l1)
    per: Exact = both if both >= single else single
    squares_both = _mul(substitute.l2, substitute.l2)
    squares_single = _mul(2, _mul(add_remove.l2, add_remove.l2))
    per2: Exact = squares_both if squares_both >= squares_single else squares_single
    l1 = _mul(touched, per)
    l2 = sqrt_upper(_mul(touched, per2))
    return derived(l1, l2, "substitute", Rule.GROUPED_VALUE_AGGREGATES, k,
                   (substitute.derivation, add_remove.derivation), aggregate=kind,
                   touched=touched, a=add_remove.l1, s=substitute.l1)


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
