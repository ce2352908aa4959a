"""The Σ-chase of a query with functional dependencies.

For every FD ``R[i->j]`` and two atoms of ``R`` that agree at ``i`` but differ at
``j``: a variable at ``j`` is replaced by the other term everywhere (head
included); two different constants make the query unsatisfiable (⊥).  The
result is equivalent to the query on every database satisfying the FDs.
The chase may merge head variables (``Q(x, x)``) or bind one to a constant, so
the head is kept as a tuple of terms (docs/rules.md, rule ``fd-chase``).

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Section 4.
.. [2] D. Maier, A. O. Mendelzon, Y. Sagiv. Testing implications of data
   dependencies. ACM TODS 4(4), 1979.
"""

from __future__ import annotations

from collections.abc import Iterable

from cqsens.budget import checkpoint
from cqsens.ir.cq import CQ, Const, Term, Var
from cqsens.ir.dependencies import Dependency, Sigma

__all__ = ["chase"]


def _keep_first(a: Term, b: Term, free: set[Var]) -> tuple[Term, Term]:
    """Return (kept, replaced): constants win, then free variables, then by name."""

    def rank(t: Term) -> tuple[int, str]:
        if isinstance(t, Const):
            return (0, "")
        return (1 if t in free else 2, t.name)

    return (a, b) if rank(a) <= rank(b) else (b, a)


def chase(cq: CQ, fds: Sigma | Iterable[Dependency]) -> CQ:
    """Chase ``cq`` with the functional dependencies (k = 1) of ``fds``.

    Parameters
    ----------
    cq : CQ
        The query.
    fds : Sigma or iterable of Dependency
        Dependencies; those with k > 1 are ignored.

    Returns
    -------
    CQ
        The chased query, or a query with ``satisfiable=False`` (⊥).

    Notes
    -----
    Terminates after at most one merge per variable; the result is unique up to
    the choice of the surviving variable, chosen here deterministically
    (constants, then free variables, then the smaller name).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> print(chase(parse_cq("Q(x, y) :- R(z, x), R(z, y)"), [Dependency("R", 0, 1)]))
    Q(x, x) :- R(z, x).
    >>> chase(parse_cq("Q() :- R(z, 'a'), R(z, 'b')"), [Dependency("R", 0, 1)]).satisfiable
    False
    """
    deps = [(d.relation, (d.i,) if isinstance(d, Dependency) else d.sources, d.j)
            for d in fds if d.k == 1]  # a composite key fires when all its columns agree
    current = cq
    while current.satisfiable:
        checkpoint("chase")
        merge: tuple[Term, Term] | None = None
        for relation, sources, target in sorted(deps):
            groups: dict[tuple[Term, ...], Term] = {}
            for atom in current.sorted_atoms():
                if atom.relation != relation or atom.arity <= max(*sources, target):
                    continue
                key = tuple(atom.terms[i] for i in sources)
                value = atom.terms[target]
                seen = groups.setdefault(key, value)
                if seen != value:
                    if isinstance(seen, Const) and isinstance(value, Const):
                        if seen.definitely_differs(value):
                            return CQ(current.head, current.atoms, current.name, satisfiable=False)
                        continue  # 5 and '5' may be one value: leave both (sound, less tight)
                    merge = _keep_first(seen, value, set(current.free))
                    break
            if merge:
                break
        if merge is None:
            return current
        kept, replaced = merge
        current = current.substitute({replaced: kept})
    return current
