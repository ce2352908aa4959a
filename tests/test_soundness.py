"""Brute force against the bounds: no observed change may exceed a reported upper bound.

Random small CQs (self-joins, constants, Boolean heads), random Σ (FDs and
CDs), random databases satisfying Σ, every single-row move evaluated in SQLite.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.engine.count import count_bound
from cqsens.engine.upper import upper_bound
from cqsens.ir.cq import CQ
from cqsens.ir.dependencies import Dependency, MultiDependency, Sigma
from cqsens.pipeline import analyze
from tests.conftest import soundness_examples
from tests.oracle import local_sensitivity
from tests.strategies import ARITIES, COLUMNS, cqs, databases, dependencies_for

TRIALS = {"no_constraints": 0, "constraints": 0, "moves": 0}


def _check(cq, sigma, db, upper):  # type: ignore[no-untyped-def]
    relations = {r: ARITIES[r] for r in cq.relations()}
    observed, moves = local_sensitivity(cq, relations, COLUMNS, db, sigma)
    TRIALS["moves"] += moves
    note(f"query {cq}  Σ {sigma}  db {db}  observed {observed}  upper {upper}")
    assert observed <= upper


@pytest.mark.slow
@settings(max_examples=soundness_examples())
@given(data=st.data())
def test_delta_str_is_sound(data: st.DataObject) -> None:
    cq = data.draw(cqs())
    sigma = Sigma.of()
    db = data.draw(databases({r: ARITIES[r] for r in cq.relations()}, sigma))
    a = analyze(str(cq), prove_lower=False)
    TRIALS["no_constraints"] += 1
    _check(cq, sigma, db, a.upper)
    assert a.delta_str == a.upper


@pytest.mark.slow
@settings(max_examples=soundness_examples())
@given(data=st.data())
def test_upper_bound_with_dependencies_is_sound(data: st.DataObject) -> None:
    cq = data.draw(cqs())
    sigma = data.draw(dependencies_for(cq))
    db = data.draw(databases({r: ARITIES[r] for r in cq.relations()}, sigma))
    a = analyze(str(cq), fds=[d for d in sigma if d.k == 1], cds=[d for d in sigma if d.k > 1],
                prove_lower=False)
    TRIALS["constraints"] += 1
    _check(cq, sigma, db, a.upper)
    # the bound never exceeds the one computed without the chase or without Σ
    assert a.upper <= upper_bound(core(cq), sigma).value
    assert a.upper <= a.delta_str


@pytest.mark.slow
@settings(max_examples=soundness_examples())
@given(data=st.data())
def test_self_join_heavy_queries_are_sound(data: st.DataObject) -> None:
    """One relation only: many self-joins, where position patterns matter (rule delta-str-self-join)."""
    cq = data.draw(cqs(max_atoms=4, relations=("R",)))
    sigma = data.draw(dependencies_for(cq, max_k=2))
    db = data.draw(databases({"R": 2}, sigma, max_rows=10))
    bound = upper_bound(core(chase(cq, sigma.fds())), sigma).value
    TRIALS["constraints"] += 1
    _check(cq, sigma, db, bound)


def test_report_trial_counts() -> None:
    """Prints the number of trials (run with -s to see it)."""
    print(f"\nsoundness trials: {TRIALS}")
    assert math.isfinite(sum(TRIALS.values()))


def test_oracle_sees_the_self_join_erratum() -> None:
    """The oracle is strong enough to refute Prop 7's Δ_STR = 1 (rule delta-str-self-join)."""
    from cqsens.frontend.parse_cq import parse_cq

    cq = parse_cq("Q(x) :- R(x, y), R(y, x)")
    observed, _ = local_sensitivity(cq, {"R": 2}, COLUMNS, {"R": {("b", "a")}}, Sigma.of())
    assert observed == 2


def test_oracle_sees_growth_of_an_unbounded_query() -> None:
    from cqsens.frontend.parse_cq import parse_cq

    cq = parse_cq("Q(x) :- R(x, y), T(y)")
    db = {"R": {(v, 1) for v in ("a", "b", 2, 3)}, "T": set()}
    observed, _ = local_sensitivity(cq, {"R": 2, "T": 1}, COLUMNS, db, Sigma.of())
    assert observed == 4


@st.composite
def composite_dependencies(draw: st.DrawFn, cq: CQ) -> Sigma:
    """Random single-column dependencies plus composite ones on the ternary relation U."""
    base = draw(dependencies_for(cq))
    multi = []
    if "U" in cq.relations():
        for sources, target in (((0, 1), 2), ((0, 2), 1), ((1, 2), 0)):
            if draw(st.booleans()):
                multi.append(MultiDependency("U", sources, target, draw(st.integers(1, 2))))
    return Sigma.of([*base, *multi])


@pytest.mark.slow
@settings(max_examples=soundness_examples() // 2)
@given(data=st.data())
def test_composite_dependencies_are_sound(data: st.DataObject) -> None:
    """Composite keys and CDs (U[1,2->3]<=k): chase, Knuth's walks and the joint product."""
    cq = data.draw(cqs(relations=("R", "U", "T")))
    sigma = data.draw(composite_dependencies(cq))
    db = data.draw(databases({r: ARITIES[r] for r in cq.relations()}, sigma))
    deps = list(sigma)
    a = analyze(str(cq), fds=[str(d) for d in deps if d.k == 1],
                cds=[str(d) for d in deps if d.k > 1], prove_lower=False)
    TRIALS["constraints"] += 1
    _check(cq, sigma, db, a.upper)


@st.composite
def rows_and_keys(draw: st.DrawFn, cq: CQ) -> Sigma:
    """Random FDs/CDs plus rows-per-value bounds ``R[i->*]<=k`` and composite keys of U:
    the hyperedges of the cheapest derivation (docs/rules.md, rule cheapest-derivation)."""
    base = list(draw(composite_dependencies(cq)))
    for rel, arity in sorted(cq.relations().items()):
        for i in range(arity):
            if draw(st.integers(0, 3)) == 0:
                base.append(Dependency(rel, i, -1, draw(st.integers(1, 3))))
    return Sigma.of(base)


@pytest.mark.slow
@settings(max_examples=soundness_examples() // 2)
@given(data=st.data())
def test_cheapest_derivation_is_sound(data: st.DataObject) -> None:
    """Rows-per-value bounds paid once per row, composite keys followed for free, every
    per-column fan-out a database satisfies: no observed change exceeds the bound."""
    cq = data.draw(cqs(relations=("R", "U", "T")))
    sigma = data.draw(rows_and_keys(cq))
    db = data.draw(databases({r: ARITIES[r] for r in cq.relations()}, sigma))
    bound = count_bound(cq, sigma).bound.value
    TRIALS["constraints"] += 1
    _check(cq, sigma, db, bound)
