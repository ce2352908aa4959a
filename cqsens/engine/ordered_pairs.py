"""Two copies of one relation ordered by a strict filter (docs/rules.md, rule ordered-self-join).

``SELECT COUNT(*) FROM R a JOIN R b ON a.k = b.k WHERE a.x < b.x`` counts each
unordered pair of rows once.  The bound of rule new-answers adds the answers of
both atoms of ``R`` (``2k``, the added row in either place); swapping the two
copies maps the answers of one atom onto those of the other with the filter
reversed, so the first atom's bound alone covers both, and the pair of the added
row with itself, which the strict filter rejects, is one answer fewer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cqsens.engine.paths import Weight
from cqsens.ir.cq import CQ, Atom, Term, Var
from cqsens.ir.expr import Compare, Slot

__all__ = ["OrderedPair", "ordered_pair"]

_STRICT = ("<", ">")


@dataclass(frozen=True, slots=True)
class OrderedPair:
    """The bound of one relation's two ordered copies.

    ``filter`` is the strict comparison (as CQ text), ``first`` the bound of one
    atom (both atoms' answers fit in it), ``fixed`` 1 when the answer that sends
    both atoms onto the added row is counted by ``first`` and fails the filter
    (else 0); ``total = first − fixed``.
    """

    filter: str
    first: Weight
    fixed: int

    @property
    def total(self) -> Weight:
        """The relation's bound."""
        return self.first - self.fixed


def _swap(a: Atom, b: Atom) -> dict[Term, Term] | None:
    """The involution exchanging ``a`` and ``b`` position by position (identity elsewhere),
    or None when no such map exists (a constant against another term, or a clash)."""
    out: dict[Term, Term] = {}
    for s, t in zip(a.terms, b.terms, strict=True):
        for x, y in ((s, t), (t, s)):
            if not isinstance(x, Var):
                if x != y:
                    return None
                continue
            if out.setdefault(x, y) != y:
                return None
    return out


def _strict_pair(atom: Atom) -> tuple[Var, Var] | None:
    """``(x, y)`` for a filter atom ``[x < y]`` (``[y > x]``) over two variables."""
    p = atom.predicate
    if not (isinstance(p, Compare) and p.op in _STRICT and isinstance(p.left, Slot)
            and isinstance(p.right, Slot)):
        return None
    x, y = atom.terms[p.left.index], atom.terms[p.right.index]
    if not (isinstance(x, Var) and isinstance(y, Var)) or x == y:
        return None
    return (x, y) if p.op == "<" else (y, x)


def _self_answer(cq: CQ, relation: str) -> bool:
    """Whether the map sending both atoms of ``relation`` onto any row is a homomorphism of
    the relation atoms: nothing but atoms of ``relation``, no constant in them, every
    variable at one position (as in rule new-answers, one shared answer)."""
    if any(a.relation != relation for a in cq.relation_atoms()):
        return False
    position: dict[Term, int] = {}
    for atom in cq.relation_atoms():
        for p, term in enumerate(atom.terms):
            if not isinstance(term, Var) or position.setdefault(term, p) != p:
                return False
    return True


def ordered_pair(cq: CQ, relation: str, bounds: Sequence[tuple[Atom, Weight]]
                 ) -> OrderedPair | None:
    """The bound of ``relation`` when its two atoms are ordered by a strict filter, or None.

    Parameters
    ----------
    cq : CQ
        The query (chased, its core).
    relation : str
        The relation whose added or removed row is bounded.
    bounds : sequence of (Atom, bound)
        Each atom of ``relation`` with its bound N(ā) of rule new-answers (the
        assignments of the free variables extending a homomorphism of the relation
        atoms that sends ā onto the row; filters give no step, so it holds
        without them).

    Returns
    -------
    OrderedPair or None
        When ``relation`` has exactly two atoms ā1, ā2, both finite, and the
        involution σ exchanging them (identity elsewhere) maps the free variables
        onto themselves and every relation atom onto a relation atom of ``cq``, and
        a filter ``[x < y]`` has σx = y, with x and y free or in both atoms: the
        bound is min N(ā), minus 1 when the map sending both atoms onto the row is
        a homomorphism of the relation atoms in every database holding it (other
        filters may be anything; docs/rules.md, rule ordered-self-join).

    Examples
    --------
    >>> p, a, b = Var("p"), Var("a"), Var("b")
    >>> a1, a2 = Atom("R", (p, a)), Atom("R", (p, b))
    >>> order = Atom.filter(Compare("<", Slot(0), Slot(1)), (a, b))
    >>> ordered_pair(CQ.of((p, a, b), (a1, a2, order)), "R", [(a1, 3), (a2, 3)])
    OrderedPair(filter='[a < b]', first=3, fixed=1)
    >>> ordered_pair(CQ.of((p, a), (a1, a2, order)), "R", [(a1, 1), (a2, 3)]) is None
    True
    """
    if len(bounds) != 2 or any(b == math.inf or b < 1 for _, b in bounds):
        return None
    (a1, n1), (a2, n2) = bounds
    if a1.relation != relation or a2.relation != relation or a1.arity != a2.arity:
        return None
    sigma = _swap(a1, a2)
    if sigma is None:
        return None
    free = set(cq.free)
    if {sigma.get(v, v) for v in free} != free:
        return None
    for order in (a for a in cq.atoms if a.is_filter):
        pair = _strict_pair(order)
        if pair is None:
            continue
        x, y = pair
        if sigma.get(x, x) != y or sigma.get(y, y) != x:
            continue
        if not {x, y} <= free | a1.variables() or not {x, y} <= free | a2.variables():
            continue
        if any(a.substitute(sigma) not in cq.atoms for a in cq.relation_atoms()):
            continue
        fixed = 1 if _self_answer(cq, relation) else 0
        return OrderedPair(str(order), min(n1, n2), fixed)
    return None
