"""Walk cardinalities against the paper's simple paths, and the joint tree bound."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

from cqsens.engine.chase import chase
from cqsens.engine.core import core
from cqsens.engine.count import count_bound
from cqsens.engine.derivation import Hyperedge, cheapest_derivation, hyperedges
from cqsens.engine.paths import (
    Weight,
    arborescence_bound,
    least_cardinalities,
    simple_path_cardinality,
    step_graph,
)
from cqsens.engine.upper import upper_bound
from cqsens.frontend.parse_cq import parse_cq
from cqsens.ir.cq import CQ, Atom, Term, Var
from cqsens.ir.dependencies import AnyDependency, Dependency, MultiDependency, Sigma
from tests.conftest import soundness_examples
from tests.strategies import ARITIES, cqs, dependencies_for


def monotone_examples() -> int:
    """Examples of the monotonicity property: as many as a soundness property's."""
    return soundness_examples()


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


# --- the cheapest derivation (docs/rules.md, rule cheapest-derivation) ---------------------

DEPENDENCY_KINDS = ("single", "composite", "rows")


@st.composite
def any_dependency(draw: st.DrawFn, relations: dict[str, int]) -> AnyDependency:
    """One random dependency over ``relations``: R[i->j]<=k, U[i,j->l]<=k or R[i->*]<=k."""
    rel = draw(st.sampled_from(sorted(relations)))
    arity = relations[rel]
    kind = draw(st.sampled_from(DEPENDENCY_KINDS if arity >= 3 else ("single", "rows")))
    k = draw(st.integers(1, 3))
    if kind == "rows" or arity == 1:
        return Dependency(rel, draw(st.integers(0, arity - 1)), -1, k)
    if kind == "single":
        i, j = draw(st.permutations(range(arity)))[:2]
        return Dependency(rel, i, j, k)
    a, b, j = draw(st.permutations(range(arity)))[:3]
    return MultiDependency(rel, tuple(sorted((a, b))), j, k)


@st.composite
def random_sigma(draw: st.DrawFn, cq: CQ, *, size: int = 6) -> Sigma:
    """Up to ``size`` random dependencies of every kind over the query's relations, and
    often a composite key of U (positions 1, 2) with a fan-out into it (U[1->2]<=k)."""
    relations = cq.relations()
    deps: list[AnyDependency] = draw(st.lists(any_dependency(relations), max_size=size))
    if "U" in relations and draw(st.integers(0, 3)) > 0:
        deps.append(MultiDependency("U", (0, 1), 2))
        if draw(st.integers(0, 3)) > 0:
            deps.append(Dependency("U", 0, 1, draw(st.integers(2, 3))))
    return Sigma.of(deps)


def implied_dependencies(sigma: Sigma, relations: dict[str, int]) -> list[Dependency]:
    """Every ``R[i->j]<=k`` that every database of C_Σ satisfies with k > 1 the cost of
    deriving position j from position i inside one atom: the per-column fan-outs FLEX's
    max-frequency metrics state beside the fan-out and the key they follow from."""
    implied: list[Dependency] = []
    for rel, arity in sorted(relations.items()):
        atom = parse_cq(f"Q() :- {rel}({', '.join(f'p{n}' for n in range(arity))})")
        edges = hyperedges(atom, sigma)
        for i, j in itertools.permutations(range(arity), 2):
            found = cheapest_derivation(edges, [Var(f"p{i}")], [Var(f"p{j}")])
            if found is not None and found.cost > 1:
                implied.append(Dependency(rel, i, j, int(found.cost)))
    return implied


@st.composite
def joined_queries(draw: st.DrawFn) -> CQ:
    """Up to three atoms over U/3, R/2 and T/1, each position a fresh variable or one
    already used (a join, most often on the first position, where the fan-outs start),
    counting every variable half the time (COUNT(*))."""
    used: list[Var] = []
    atoms = []
    for _ in range(draw(st.integers(2, 3))):
        rel = draw(st.sampled_from(("U", "U", "R", "T")))
        terms = []
        for p in range(ARITIES[rel]):
            if used and draw(st.integers(0, 3)) < (3 if p == 0 else 1):
                terms.append(draw(st.sampled_from(used)))
            else:
                used.append(Var(f"v{len(used)}"))
                terms.append(used[-1])
        atoms.append(Atom(rel, tuple(terms)))
    every = draw(st.booleans())
    head = used if every else draw(st.lists(st.sampled_from(used), max_size=3, unique=True))
    return CQ.of(head, atoms)


@pytest.mark.slow
@settings(max_examples=monotone_examples())
@given(data=st.data())
def test_more_knowledge_never_gives_a_worse_bound(data: st.DataObject) -> None:
    """bound(Σ ∪ {d}) ≤ bound(Σ) for random Σ and a random extra dependency d, and
    bound(Σ ∪ every implied per-column fan-out) ≤ bound(Σ): a dependency only adds
    hyperedges, so the least derivation can only get cheaper."""
    cq = data.draw(st.one_of(joined_queries(), cqs(max_atoms=4)))
    sigma = data.draw(random_sigma(cq))
    relations = cq.relations()
    extra = data.draw(any_dependency(relations))
    implied = implied_dependencies(sigma, relations)
    before = count_bound(cq, sigma).bound.value
    after = count_bound(cq, Sigma.of([*sigma, extra])).bound.value
    note(f"{cq}  Σ {sigma}  + {extra}: {before} -> {after}")
    assert after <= before
    flex = count_bound(cq, Sigma.of([*sigma, *implied])).bound.value
    note(f"+ implied {implied}: {flex}")
    assert flex <= before


def _brute_force_minimum(edges: list[Hyperedge], start: set[Term], goal: set[Term]) -> Weight:
    """The least product of weights over every subset of the paid hyperedges that, with
    the free ones, derives the goal (fired repeatedly while any fires)."""
    free = [e for e in edges if e.weight == 1]
    paid = [e for e in edges if e.weight > 1]
    best: Weight = math.inf
    for n in range(len(paid) + 1):
        for subset in itertools.combinations(paid, n):
            derived = set(start)
            changed = True
            while changed:
                changed = False
                for e in (*free, *subset):
                    if set(e.sources) <= derived and not set(e.targets) <= derived:
                        derived |= set(e.targets)
                        changed = True
            if goal <= derived:
                best = min(best, math.prod(e.weight for e in subset))
    return best


@given(data=st.data())
def test_cheapest_derivation_is_the_brute_force_minimum(data: st.DataObject) -> None:
    cq = data.draw(cqs(max_atoms=4, relations=("R", "S", "U", "T")))
    sigma = data.draw(random_sigma(cq, size=8))
    edges = hyperedges(cq, sigma)
    assume(sum(e.weight > 1 for e in edges) <= 10)
    constants = sorted(cq.constants(), key=lambda c: c.sort_key())
    for atom in cq.relation_atoms():
        start = {*atom.terms, *constants}
        found = cheapest_derivation(edges, start, cq.free)
        truth = _brute_force_minimum(edges, start, set(cq.free))
        if found is None:
            assert truth == math.inf
            continue
        assert found.exact
        assert found.cost == truth == math.prod(s.weight for s in found.steps)


def test_composite_key_is_paid_once() -> None:
    """Per-column fan-outs of one fact (FLEX's max-frequency metrics) cost what the
    one fan-out does: pay 7 for the line number, then the key determines the rest."""
    cq = parse_cq("Q(k, n, p, q, a, b, c) :- L(k, n, p, q), L(k, a, b, c)")
    key = [MultiDependency("L", (0, 1), j) for j in (2, 3)]
    minimal = Sigma.of([Dependency("L", 0, 1, 7), *key])
    flex = Sigma.of([*minimal, Dependency("L", 0, 2, 7), Dependency("L", 0, 3, 7)])
    # 7 + 7 − 1: the pair of the row with itself is counted by both atoms (rule new-answers)
    assert count_bound(cq, minimal).bound.value == count_bound(cq, flex).bound.value == 13
    # the walks alone multiply 7 per column: 2 · 7³
    assert upper_bound(cq, flex).relations[0].atoms[0].product == 7 ** 3


def test_rows_per_value_pays_once_for_the_row() -> None:
    """R[1->*]<=3: the rows sharing a value of column 1 hold at most 3 joint values of
    the other columns (not 3 per column)."""
    cq = parse_cq("Q(x, y, z) :- T(x), U(x, y, z)")
    sigma = Sigma.of([Dependency("U", 0, -1, 3)])
    bound = upper_bound(cq, sigma)
    t_atom = next(ab for rel in bound.relations for ab in rel.atoms if ab.atom.relation == "T")
    assert t_atom.value == 3 and t_atom.product == 9
    assert [str(s) for s in t_atom.tree_steps] == ["x -> y, z via U[1->*] (×3)"]
