"""Walk cardinalities against the paper's simple paths, and the joint tree bound."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.engine.paths import (
    arborescence_bound,
    least_cardinalities,
    simple_path_cardinality,
    step_graph,
)
from cqsens.engine.upper import upper_bound
from cqsens.frontend.parse_cq import parse_cq
from cqsens.ir.cq import Var
from cqsens.ir.dependencies import Dependency, Sigma
from tests.strategies import cqs, dependencies_for


@given(data=st.data())
def test_walks_never_exceed_simple_paths(data: st.DataObject) -> None:
    cq = data.draw(cqs(max_atoms=5))
    sigma = data.draw(dependencies_for(cq))
    graph = step_graph(cq, sigma)
    sources_constants = sorted(cq.constants(), key=lambda c: c.sort_key())
    for atom in cq.relation_atoms():
        reach = least_cardinalities(graph, [*atom.terms, *sources_constants])
        for x in cq.free:
            walk = reach[x].cardinality if x in reach else math.inf
            assert walk <= simple_path_cardinality(cq, sigma, atom, x)


@given(data=st.data())
def test_tree_bound_never_exceeds_the_per_variable_product(data: st.DataObject) -> None:
    cq = data.draw(cqs(max_atoms=5))
    sigma = data.draw(dependencies_for(cq))
    c = core(chase(cq, sigma.fds()))
    for rel in upper_bound(c, sigma).relations:
        for ab in rel.atoms:
            assert ab.value <= ab.product
            if ab.tree < math.inf:
                product = 1
                for step in ab.tree_steps:
                    product *= step.weight
                assert product == ab.tree and isinstance(ab.tree, int)


def test_walk_from_a_constant_bounds_the_variable() -> None:
    cq = parse_cq("Q(x) :- A(a), E(a, v), F(v, 'k'), G(v, x)")
    sigma = Sigma.of([Dependency("F", 1, 0), Dependency("G", 0, 1)])
    atom = next(a for a in cq.atoms if a.relation == "A")
    assert simple_path_cardinality(cq, sigma, atom, Var("x")) == math.inf
    reach = least_cardinalities(step_graph(cq, sigma), [Var("a"), *cq.constants()])
    route = reach[Var("x")]
    assert route.cardinality == 1
    assert [s.relation for s in route.steps] == ["F", "G"]


def test_arborescence_counts_shared_prefixes_once() -> None:
    # customer(ck, name) ⋈ orders(ok, ck, price): 41 orders per customer, keys everywhere
    cq = parse_cq("Q(ck, n, ok, p) :- C(ck, n), O(ok, ck, p)")
    sigma = Sigma.of([
        Dependency("C", 0, 1), Dependency("O", 0, 1), Dependency("O", 0, 2),
        Dependency("O", 1, 0, 41),
    ])
    graph = step_graph(cq, sigma)
    value, steps = arborescence_bound(graph, [Var("ck"), Var("n")], cq.free)
    assert value == 41
    assert {str(s.target) for s in steps} == {"ok", "p"}


def test_unreachable_target_is_infinite() -> None:
    cq = parse_cq("Q(x) :- R(x, y), S(y, z)")
    value, steps = arborescence_bound(step_graph(cq, Sigma.of()), [Var("y"), Var("z")], [Var("x")])
    assert value == math.inf and steps == ()
