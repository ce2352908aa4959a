"""Homomorphisms between canonical structures, found as a constraint search.

A homomorphism from a set of atoms to another maps variables to terms, fixes
constants, and sends every atom to an atom of the target.  The search is a
backtracking CSP: each source atom keeps the target atoms compatible with its
constants, repeated variables and the fixed part of the mapping (candidate
filtering); at every step the atom with the fewest candidates consistent with
the current assignment is tried first (most-constrained first, i.e. forward
checking), so a dead end is found as soon as one atom has no candidate left.

References
----------
.. [1] A. K. Chandra, P. M. Merlin. Optimal implementation of conjunctive queries
   in relational data bases. STOC 1977.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from cqsens.cq import Atom, Const, Term, Var

__all__ = [
    "BudgetExceeded",
    "find_homomorphism",
    "homomorphisms",
    "is_homomorphism",
]


class BudgetExceeded(Exception):
    """The search visited more nodes than its budget allowed (not an input error)."""


@dataclass(slots=True)
class _Counter:
    left: int | None


def _compatible(atom: Atom, target: Atom, assignment: Mapping[Var, Term]) -> bool:
    if atom.relation != target.relation or atom.arity != target.arity:
        return False
    local: dict[Var, Term] = {}
    for s, t in zip(atom.terms, target.terms):
        if isinstance(s, Const):
            if s != t:
                return False
            continue
        bound = assignment.get(s)
        if bound is None:
            bound = local.get(s)
        if bound is None:
            local[s] = t
        elif bound != t:
            return False
    return True


def _extend(atom: Atom, target: Atom, assignment: dict[Var, Term]) -> list[Var]:
    added: list[Var] = []
    for s, t in zip(atom.terms, target.terms):
        if isinstance(s, Var) and s not in assignment:
            assignment[s] = t
            added.append(s)
    return added


def homomorphisms(
    source: Iterable[Atom],
    target: Iterable[Atom],
    *,
    fixed: Mapping[Var, Term] | None = None,
    budget: int | None = None,
) -> Iterator[dict[Var, Term]]:
    """Yield every homomorphism from ``source`` atoms into ``target`` atoms.

    Parameters
    ----------
    source, target : iterables of Atom
        Canonical structures given by their atoms.
    fixed : mapping, optional
        Variables whose image is imposed (free variables fixed to themselves).
    budget : int, optional
        Maximum number of search nodes; :class:`BudgetExceeded` past it.

    Yields
    ------
    dict
        Variable → term, covering the variables of ``source`` and ``fixed``.

    Notes
    -----
    Worst-case exponential (the problem is NP-complete); candidate filtering and
    most-constrained-first ordering keep the queries met in practice fast.

    Examples
    --------
    >>> from cqsens.parse_cq import parse_cq
    >>> q = parse_cq("Q(x) :- R(x, y), R(x, z)")
    >>> sorted(len(h) for h in homomorphisms(q.atoms, q.atoms, fixed={Var("x"): Var("x")}))
    [3, 3, 3, 3]
    """
    src = sorted(set(source), key=Atom.sort_key)
    by_relation: dict[tuple[str, int], list[Atom]] = {}
    for t in sorted(set(target), key=Atom.sort_key):
        by_relation.setdefault((t.relation, t.arity), []).append(t)
    start: dict[Var, Term] = dict(fixed or {})
    static: list[list[Atom]] = []
    for atom in src:
        cands = [t for t in by_relation.get((atom.relation, atom.arity), []) if _compatible(atom, t, start)]
        if not cands:
            return
        static.append(cands)
    counter = _Counter(budget)
    yield from _search(src, static, start, list(range(len(src))), counter)


def _search(
    src: list[Atom],
    static: list[list[Atom]],
    assignment: dict[Var, Term],
    remaining: list[int],
    counter: _Counter,
) -> Iterator[dict[Var, Term]]:
    if counter.left is not None:
        counter.left -= 1
        if counter.left < 0:
            raise BudgetExceeded
    if not remaining:
        yield dict(assignment)
        return
    best_i = -1
    best: list[Atom] | None = None
    for i in remaining:
        cands = [t for t in static[i] if _compatible(src[i], t, assignment)]
        if best is None or len(cands) < len(best):
            best_i, best = i, cands
            if not cands:
                return
    assert best is not None
    rest = [i for i in remaining if i != best_i]
    for target in best:
        added = _extend(src[best_i], target, assignment)
        yield from _search(src, static, assignment, rest, counter)
        for v in added:
            del assignment[v]


def find_homomorphism(
    source: Iterable[Atom],
    target: Iterable[Atom],
    *,
    fixed: Mapping[Var, Term] | None = None,
    budget: int | None = None,
) -> dict[Var, Term] | None:
    """The first homomorphism found from ``source`` into ``target``, or None.

    See :func:`homomorphisms` for the parameters.

    Examples
    --------
    >>> from cqsens.parse_cq import parse_cq
    >>> a, b = parse_cq("Q() :- R(x, y), R(y, x)"), parse_cq("Q() :- R(u, u)")
    >>> find_homomorphism(a.atoms, b.atoms)
    {Var(name='x'): Var(name='u'), Var(name='y'): Var(name='u')}
    """
    for h in homomorphisms(source, target, fixed=fixed, budget=budget):
        return h
    return None


def is_homomorphism(
    mapping: Mapping[Var, Term], source: Iterable[Atom], target: Iterable[Atom]
) -> bool:
    """Certificate check: does ``mapping`` send every source atom into ``target``?

    >>> from cqsens.parse_cq import parse_cq
    >>> q = parse_cq("Q() :- R(x, y)")
    >>> is_homomorphism({Var("x"): Var("y"), Var("y"): Var("y")}, q.atoms, q.atoms)
    False
    """
    targets = set(target)
    for atom in source:
        image = Atom(
            atom.relation,
            tuple(mapping.get(t, t) if isinstance(t, Var) else t for t in atom.terms),
        )
        if any(isinstance(t, Var) and t not in mapping for t in atom.terms):
            return False
        if image not in targets:
            return False
    return True
