"""The sensitivity of MIN, MAX and MEDIAN (docs/rules.md, rules ``min-max``, ``median`` and
``median-parity-rows``), and of a grouped AVG, MEDIAN, MIN or MAX under substitution
(rule ``grouped-range``); :mod:`cqsens.release.aggregates` has the other rules."""


from cqsens.engine.rules import Rule
from cqsens.errors import InputError
from cqsens.ir.exact import Exact, sqrt_upper
from cqsens.release.aggregate_base import (
    AggregateBound,
    _check_count_delta,
    _check_value_args,
    _half,
    _mul,
    _span,
    derived,
)

__all__ = ["grouped_range_bound", "median_bound", "min_max_bound"]


def min_max_bound(
    count_delta: Exact, low: Exact, high: Exact, *, neighbor: str = "add-remove",
    contributions: int = 1,
) -> AggregateBound:
    """Sensitivity of ``MIN(c)`` or ``MAX(c)`` with the values of ``c`` in ``[low, high]``.

    Parameters and errors are those of :func:`cqsens.release.aggregates.avg_bound`:
    only ``count_delta == 0`` (an unsatisfiable query) and the range ``[low, high]`` of the
    values change the bound.

    Returns
    -------
    AggregateBound
        ``l1 = l2 = M − m`` (0 when ``count_delta == 0``).

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
    neighbor, delta, k, low, high = _check_value_args(count_delta, low, high, neighbor,
                                                      contributions)
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
    count_delta, low, high, neighbor, contributions
        As for :func:`cqsens.release.aggregates.sum_bound`, of the values the median
        is taken over.
    rows : int, optional
        Number ``n ≥ 1`` of rows the median is taken over, when public; only the
        substitute model on one row per neighbour uses it (its parity).

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
    neighbor, delta, k, low, high = _check_value_args(count_delta, low, high, neighbor,
                                                      contributions)
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
    >>> from cqsens.release.aggregates import avg_bound
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
