"""The analysis's fast paths give the same answers as the plain definitions they replace."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cqsens.engine.suggest import _Reach
from cqsens.ir.cq import CQ, Atom, Term
from cqsens.ir.dependencies import (
    Dependency,
    MultiDependency,
    Sigma,
    multi_violations,
    rows_violations,
    satisfies,
    violations,
)
from tests.strategies import cqs

_VALUES = st.one_of(st.none(), st.integers(0, 2))
_ROWS = st.lists(st.tuples(_VALUES, _VALUES, _VALUES), max_size=7)
_SINGLE = st.builds(Dependency, st.just("R"), st.integers(0, 2), st.integers(0, 2),
                    st.integers(1, 3))
_MULTI = st.builds(MultiDependency, st.just("R"),
                   st.sampled_from([(0, 1), (0, 2), (1, 2)]), st.integers(0, 2),
                   st.integers(1, 3))
_ROWS_DEP = st.builds(Dependency, st.just("R"), st.integers(0, 2), st.just(-1),
                      st.integers(1, 3))


@given(rows=_ROWS, deps=st.lists(st.one_of(_SINGLE, _MULTI, _ROWS_DEP), max_size=5),
       as_set=st.booleans())
def test_satisfies_is_the_absence_of_every_violation(
        rows: list[tuple[int | None, ...]], deps: list[Dependency | MultiDependency],
        as_set: bool) -> None:
    db = {"R": frozenset(rows) if as_set else rows}
    sigma = Sigma.of(deps)
    plain = not violations(db, sigma) and not multi_violations(db, sigma) \
        and not rows_violations(db, sigma)
    assert satisfies(db, sigma) is plain


def _plain_bounded(cq: CQ, public: frozenset[str], skip: frozenset[Atom],
                   deps: list[tuple[str, int, int]]) -> bool:
    """The definition: a walk from each atom's terms and the constants, over the steps
    ``deps`` make finite, reaches every free variable (public atoms and atoms holding every
    free variable aside)."""
    atoms = [a for a in cq.relation_atoms() if a not in skip]
    edges: dict[Term, set[Term]] = {}
    for atom in atoms:
        for i, a in enumerate(atom.terms):
            for j, b in enumerate(atom.terms):
                if i != j and a != b and (atom.relation, i, j) in deps:
                    edges.setdefault(a, set()).add(b)
    for atom in atoms:
        if set(cq.free) <= set(atom.terms) or atom.relation in public:
            continue
        seen = set(atom.terms) | set(cq.constants())
        stack = list(seen)
        while stack:
            for v in edges.get(stack.pop(), ()):
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        if not set(cq.free) <= seen:
            return False
    return True


@st.composite
def _reach_cases(draw: st.DrawFn) -> tuple[CQ, frozenset[str], frozenset[Atom],
                                           list[tuple[str, int, int]]]:
    cq = draw(cqs(max_atoms=5))
    keys = sorted({(a.relation, i, j) for a in cq.relation_atoms() for i in range(len(a.terms))
                   for j in range(len(a.terms)) if i != j})
    deps = draw(st.lists(st.sampled_from(keys), max_size=len(keys))) if keys else []
    public = frozenset(draw(st.lists(st.sampled_from(["R", "S", "T", "U"]), max_size=1)))
    atoms = cq.relation_atoms()
    skip = frozenset(draw(st.lists(st.sampled_from(atoms), max_size=1)))
    return cq, public, skip, deps


@given(_reach_cases())
def test_suggest_reachability_is_the_plain_walk(
        case: tuple[CQ, frozenset[str], frozenset[Atom], list[tuple[str, int, int]]]) -> None:
    cq, public, skip, deps = case
    assert _Reach(cq, public, skip).bounded(deps) is _plain_bounded(cq, public, skip, deps)
