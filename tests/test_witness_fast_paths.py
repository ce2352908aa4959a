"""The witness search's fast paths give the same witnesses as the full searches they cut
short (bench/results/tpch_release.md, "Analysis time")."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.engine.upper import upper_bound
from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.dependencies import Sigma
from cqsens.witness.aggregate import (
    _CURRENT,
    _Exact,
    _ExactAvg,
    _ExactSum,
    _ExactTotal,
    sql_value,
)
from cqsens.witness.model import Witness
from cqsens.witness.search import find_witness
from tests.strategies import cqs, dependencies_for


def _shown(w: Witness | None) -> object:
    return None if w is None else (w.database, w.relation, w.row, w.count_without,
                                   w.count_with, w.construction)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), cq=cqs(max_atoms=3), slack=st.integers(0, 3))
def test_a_search_stopped_at_the_count_bound_finds_the_same_witness(
        data: st.DataObject, cq: CQ, slack: int) -> None:
    """``reach`` (a proven bound of the counted difference, below the ``upper`` the search
    is given) stops the search at a witness that reaches it: the full search, which keeps
    only a strictly larger difference, ends with that same witness."""
    sigma: Sigma = data.draw(dependencies_for(cq))
    reduced = core(chase(cq, sigma.fds()))
    bound = upper_bound(reduced, sigma)
    if bound.value == math.inf:
        return
    upper = bound.value * 10 + slack + 1  # a bound of something else: never reached
    query = AggregateQuery(cq=cq)
    full = find_witness(query, sigma, reduced, upper=upper, bound=bound, time_budget=0.05)
    cut = find_witness(query, sigma, reduced, upper=upper, bound=bound, time_budget=0.05,
                       reach=bound.value)
    assert _shown(cut) == _shown(full)
    assert full is None or full.difference <= bound.value


def _plain_sum(values: list[object]) -> tuple[Fraction, Fraction, int, bool]:
    """The definition: each value read exactly (sql_value), added up one by one."""
    exact = [sql_value(v) for v in values if v is not None]
    integer = all(isinstance(v, int) for v in values if v is not None)
    return (sum(exact, Fraction(0)), sum((abs(x) for x in exact), Fraction(0)), len(exact),
            integer)


_CELLS = st.one_of(
    st.none(), st.integers(-10**17, 10**17),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
    st.sampled_from([0.1, 0.2, 0.3, 1e-7, -2.5, 123.45, 1e15, -0.0]),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10**6,
                max_value=10**6).map(lambda d: f" {d} "))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_CELLS, max_size=12),
       kind=st.sampled_from([_ExactSum, _ExactTotal, _ExactAvg]))
def test_exact_sums_by_denominator_are_the_exact_sums(values: list[object], kind: type) -> None:
    """SUM, TOTAL and AVG added up by denominator in integers return what adding each
    value's exact Fraction returns, with the same magnitude Σ|x| beside it."""
    total, scale, count, integer = _plain_sum(values)
    registry = _CURRENT.registry = _Exact()
    try:
        aggregate = kind()
        for v in values:
            aggregate.step(v)
        got = aggregate.finalize()
    finally:
        _CURRENT.registry = None
    if kind is _ExactTotal:
        expected: Fraction | None = total
    elif not count:
        expected = None
    else:
        expected = total / count if kind is _ExactAvg else total
    if expected is None:
        assert got is None
        return
    if kind is _ExactSum and integer:
        assert got == expected and isinstance(got, int)
        return
    assert isinstance(got, float) and got == float(expected)
    assert registry.results[got] == {(expected, scale)}
