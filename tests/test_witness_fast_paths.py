"""The witness search's fast paths give the same witnesses as the full searches they cut
short (bench/results/tpch_release.md, "Analysis time")."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.engine.upper import upper_bound
from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.dependencies import Sigma
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
