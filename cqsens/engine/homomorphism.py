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

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from cqsens.budget import checkpoint
from cqsens.ir.cq import Atom, Const, Term, Var

__all__ = [
    "BudgetExceeded",
    "arc_consistent_domains",
    "find_homomorphism",
    "homomorphisms",
    "is_homomorphism",
]


class BudgetExceeded(Exception):
    """The search visited more nodes than its budget allowed (not an input error)."""


@dataclass(slots=True)
class _Counter:
    left: int | None
    visited: int = 0


def _compatible(atom: Atom, target: Atom, assignment: Mapping[Var, Term]) -> bool:
    if atom.relation != target.relation or atom.arity != target.arity:
        return False
    local: dict[Var, Term] = {}
    for s, t in zip(atom.terms, target.terms, strict=True):
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


def _setup(
    source: Iterable[Atom], target: Iterable[Atom], fixed: Mapping[Var, Term] | None
) -> tuple[list[Atom], list[list[Atom]], dict[Var, set[Term]], dict[Var, list[tuple[int, int]]],
           dict[Var, Term]] | None:
    src = sorted(set(source), key=Atom.sort_key)
    by_relation: dict[tuple[str, int], list[Atom]] = {}
    for t in sorted(set(target), key=Atom.sort_key):
        by_relation.setdefault((t.relation, t.arity), []).append(t)
    start: dict[Var, Term] = dict(fixed or {})
    cands: list[list[Atom]] = []
    for atom in src:
        checkpoint("homomorphism search")
        same = by_relation.get((atom.relation, atom.arity), [])
        c = [t for t in same if _compatible(atom, t, start)]
        if not c:
            return None
        cands.append(c)
    occurrences: dict[Var, list[tuple[int, int]]] = {}
    for i, atom in enumerate(src):
        for p, term in enumerate(atom.terms):
            if isinstance(term, Var):
                occurrences.setdefault(term, []).append((i, p))
    domains: dict[Var, set[Term]] = {v: {start[v]} for v in occurrences if v in start}
    if not _propagate(src, cands, domains, occurrences, set(occurrences)):
        return None
    extra = {v: t for v, t in start.items() if v not in occurrences}
    return src, cands, domains, occurrences, extra


def arc_consistent_domains(
    source: Iterable[Atom], target: Iterable[Atom], *, fixed: Mapping[Var, Term] | None = None
) -> dict[Var, set[Term]] | None:
    """The values each variable can take in some homomorphism, after arc consistency.

    A superset of the true sets (arc consistency is a relaxation); None when it
    already proves that no homomorphism exists.

    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> q = parse_cq("Q(x) :- E(x, y), E(y, z)")
    >>> domains = arc_consistent_domains(q.atoms, q.atoms, fixed={Var("x"): Var("x")})
    >>> sorted(map(str, domains[Var("z")]))
    ['z']
    """
    setup = _setup(source, target, fixed)
    return None if setup is None else setup[2]


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
    Worst-case exponential (the problem is NP-complete).  Each source atom keeps
    its candidate target atoms and each variable its candidate values; the two
    are pruned against each other to a fixpoint (generalised arc consistency)
    before the search and after every choice, and the search branches on the
    variable with the fewest values left.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> q = parse_cq("Q(x) :- R(x, y), R(x, z)")
    >>> sorted(len(h) for h in homomorphisms(q.atoms, q.atoms, fixed={Var("x"): Var("x")}))
    [3, 3, 3, 3]
    """
    setup = _setup(source, target, fixed)
    if setup is None:
        return
    src, cands, domains, occurrences, extra = setup
    counter = _Counter(budget)
    yield from _search(src, cands, domains, occurrences, counter, extra)


def _propagate(
    src: list[Atom],
    cands: list[list[Atom]],
    domains: dict[Var, set[Term]],
    occurrences: dict[Var, list[tuple[int, int]]],
    dirty: set[Var],
) -> bool:
    """Prune candidates and variable domains against each other to a fixpoint.

    A work queue of atoms (AC-3): an atom whose candidates shrink narrows the
    domains of its variables at once, and only the atoms of a variable whose
    domain shrank are queued again, so a chain settles in one pass instead of
    one round per link.  The fixpoint is the same whatever the order.
    """
    queue: deque[int] = deque()
    queued: set[int] = set()

    def push(v: Var) -> None:
        for i, _ in occurrences[v]:
            if i not in queued:
                queued.add(i)
                queue.append(i)

    for v in sorted(dirty, key=lambda x: x.name):
        values: set[Term] | None = domains.get(v)
        for i, p in occurrences[v]:
            here = {t.terms[p] for t in cands[i]}
            values = here if values is None else values & here
        if not values:
            return False
        domains[v] = values
        push(v)
    steps = 0
    while queue:
        steps += 1
        if steps % 64 == 0:
            checkpoint("homomorphism search")
        i = queue.popleft()
        queued.discard(i)
        atom = src[i]
        keep = [
            t for t in cands[i]
            if all(t.terms[p] in domains[s] for p, s in enumerate(atom.terms)
                   if isinstance(s, Var) and s in domains)
        ]
        if not keep:
            return False
        if len(keep) == len(cands[i]):
            continue
        cands[i] = keep
        for p, s in enumerate(atom.terms):
            if not isinstance(s, Var):
                continue
            here = {t.terms[p] for t in keep}
            narrowed = domains[s] & here if s in domains else here
            if not narrowed:
                return False
            if narrowed != domains.get(s):
                domains[s] = narrowed
                push(s)
    return True


def _search(
    src: list[Atom],
    cands: list[list[Atom]],
    domains: dict[Var, set[Term]],
    occurrences: dict[Var, list[tuple[int, int]]],
    counter: _Counter,
    extra: dict[Var, Term],
) -> Iterator[dict[Var, Term]]:
    counter.visited += 1
    if counter.visited % 1024 == 0:
        checkpoint("homomorphism search")
    if counter.left is not None:
        counter.left -= 1
        if counter.left < 0:
            raise BudgetExceeded
    open_vars = [v for v in occurrences if len(domains[v]) > 1]
    if not open_vars:
        solution = {v: next(iter(d)) for v, d in domains.items()}
        solution.update(extra)
        yield solution
        return
    var = min(open_vars, key=lambda v: (len(domains[v]), v.name))
    for value in sorted(domains[var], key=_term_order):
        new_cands = list(cands)
        new_domains = dict(domains)
        new_domains[var] = {value}
        if _propagate(src, new_cands, new_domains, occurrences, {var}):
            yield from _search(src, new_cands, new_domains, occurrences, counter, extra)


def _term_order(t: Term) -> tuple[int, str]:
    return (1, t.name) if isinstance(t, Var) else (0, repr(t.value))


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
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> a, b = parse_cq("Q() :- R(x, y), R(y, x)"), parse_cq("Q() :- R(u, u)")
    >>> sorted((str(k), str(v)) for k, v in find_homomorphism(a.atoms, b.atoms).items())
    [('x', 'u'), ('y', 'u')]
    """
    for h in homomorphisms(source, target, fixed=fixed, budget=budget):
        return h
    return None


def is_homomorphism(
    mapping: Mapping[Var, Term], source: Iterable[Atom], target: Iterable[Atom]
) -> bool:
    """Certificate check: does ``mapping`` send every source atom into ``target``?

    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> q = parse_cq("Q() :- R(x, y)")
    >>> is_homomorphism({Var("x"): Var("y"), Var("y"): Var("y")}, q.atoms, q.atoms)
    False
    """
    targets = set(target)
    for atom in source:
        image = Atom(
            atom.relation,
            tuple(mapping.get(t, t) if isinstance(t, Var) else t for t in atom.terms),
            atom.predicate,
        )
        if any(isinstance(t, Var) and t not in mapping for t in atom.terms):
            return False
        if image not in targets:
            return False
    return True
