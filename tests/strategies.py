"""Hypothesis strategies: random CQs, dependencies and databases satisfying them."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from cqsens.ir.cq import CQ, Atom, Const, Term, Var
from cqsens.ir.dependencies import Dependency, Sigma, satisfies

ARITIES = {"R": 2, "S": 2, "T": 1, "U": 3}
COLUMNS = {name: tuple(f"c{i + 1}" for i in range(n)) for name, n in ARITIES.items()}
VARIABLES = [Var(n) for n in ("x", "y", "z", "u", "v")]
CONSTANTS = [Const("a"), Const(1)]
DOMAIN: list[object] = ["a", "b", 1, 2, 3]

# The strategies drawn from, built once: hypothesis validates each new strategy object on
# its first draw, which cost as much as the drawing when they were built per draw.
_TENTH = st.integers(0, 9)
_THIRD = st.integers(0, 2)
_CONSTANT = st.sampled_from(CONSTANTS)
_VARIABLE = st.sampled_from(VARIABLES[:4])


@functools.cache
def _one_of(values: tuple[object, ...]) -> st.SearchStrategy[object]:
    return st.sampled_from(values)


@functools.cache
def _upto(k: int) -> st.SearchStrategy[int]:
    return st.integers(1, k)


@functools.cache
def _rows(arity: int, max_rows: int) -> st.SearchStrategy[list[tuple[object, ...]]]:
    return st.lists(st.tuples(*[st.sampled_from(DOMAIN)] * arity), max_size=max_rows)


@st.composite
def cqs(draw: st.DrawFn, *, max_atoms: int = 4,
        relations: tuple[str, ...] = ("R", "S", "T", "U")) -> CQ:
    """A random safe CQ over R/2, S/2, T/1, U/3 with a few variables and constants."""
    n = draw(st.integers(1, max_atoms))
    atoms: list[Atom] = []
    for _ in range(n):
        rel = draw(_one_of(relations))
        terms: list[Term] = []
        for _ in range(ARITIES[rel]):
            if draw(_TENTH) == 0:
                terms.append(draw(_CONSTANT))
            else:
                terms.append(draw(_VARIABLE))
        atoms.append(Atom(rel, tuple(terms)))
    body_vars = sorted({v for a in atoms for v in a.variables()})
    head = draw(st.lists(st.sampled_from(body_vars), max_size=3, unique=True)) if body_vars else []
    return CQ.of(head, atoms)


@st.composite
def dependencies_for(draw: st.DrawFn, cq: CQ, *, max_k: int = 3) -> Sigma:
    """A random set of FDs/CDs over the query's relations."""
    deps: list[Dependency] = []
    for rel, arity in sorted(cq.relations().items()):
        for i in range(arity):
            for j in range(arity):
                if i != j and draw(_THIRD) == 0:
                    deps.append(Dependency(rel, i, j, draw(_upto(max_k))))
    return Sigma.of(deps)


@st.composite
def databases(
    draw: st.DrawFn, relations: dict[str, int], sigma: Sigma, *, max_rows: int = 8
) -> dict[str, set[tuple[object, ...]]]:
    """A random database over a small domain that satisfies ``sigma`` (rows that
    would break it are skipped)."""
    db: dict[str, set[tuple[object, ...]]] = {r: set() for r in relations}
    for rel, arity in sorted(relations.items()):
        rows = draw(_rows(arity, max_rows))
        for row in rows:
            db[rel].add(row)
            if not satisfies(db, sigma):
                db[rel].discard(row)
    return db
