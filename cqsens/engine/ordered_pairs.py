"""Two copies of one relation ordered by a strict filter (docs/rules.md, rule ordered-self-join).

``SELECT COUNT(*) FROM R a JOIN R b ON a.k = b.k WHERE a.x < b.x`` counts each
unordered pair of rows once.  The bound of rule new-answers adds the answers of
both atoms of ``R`` (``2k``, the added row in either place); swapping the two
copies maps the answers of one atom onto those of the other with the filter
reversed, so the first atom's bound alone covers both, and the pair of the added
row with itself, which the strict filter rejects, is one answer fewer.  With
``a.x <> b.x`` (no order) that pair is only taken off each atom's bound.
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
_DIFFERENT = ("<", ">", "<>", "!=")


@dataclass(frozen=True, slots=True)
class OrderedPair:
    """The bound of one relation's two ordered copies.

    ``filter`` is the comparison (as CQ text).  With ``swapped`` (a strict order
    that the swap of the two atoms reverses), ``first`` is the bound of one atom
    (both atoms' answers fit in it) and ``fixed`` 1 when the answer that sends both
    atoms onto the added row is counted by it and fails the filter (else 0).
    Without, ``first`` is the sum of the two atoms' bounds and ``fixed`` 2: that
    answer, counted by each, fails the filter.  ``total = first − fixed``.
    """

    filter: str
    first: Weight
    fixed: int
    swapped: bool = True

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


def _strict_pair(atom: Atom, ops: tuple[str, ...] = _STRICT) -> tuple[Var, Var] | None:
    """``(x, y)`` for a filter atom ``[x < y]`` (``[y > x]``; with ``ops``, any comparison
    among them, false when both sides are equal) over two variables."""
    p = atom.predicate
    if not (isinstance(p, Compare) and p.op in ops and isinstance(p.left, Slot)
            and isinstance(p.right, Slot)):
        return None
    x, y = atom.terms[p.left.index], atom.terms[p.right.index]
    if not (isinstance(x, Var) and isinstance(y, Var)) or x == y:
        return None
    return (y, x) if p.op == ">" else (x, y)


def _swapped(cq: CQ, a1: Atom, a2: Atom) -> Atom | None:
    """A strict filter that the swap of ``a1`` and ``a2`` reverses, under the conditions of
    :func:`ordered_pair`; None when there is none."""
    sigma = _swap(a1, a2)
    free = set(cq.free)
    if sigma is None or {sigma.get(v, v) for v in free} != free or any(
            a.substitute(sigma) not in cq.atoms for a in cq.relation_atoms()):
        return None
    for order in sorted((a for a in cq.atoms if a.is_filter), key=Atom.sort_key):
        pair = _strict_pair(order)
        if pair is None:
            continue
        x, y = pair
        if sigma.get(x, x) == y and sigma.get(y, y) == x and _fixed_by(cq, {x, y}, a1, a2):
            return order
    return None


def _fixed_by(cq: CQ, variables: set[Var], *atoms: Atom) -> bool:
    """Whether each variable is free or in every atom of ``atoms`` (so that the answer of a
    homomorphism sending one of them onto the row fixes its value)."""
    free = set(cq.free)
    return all(variables <= free | a.variables() for a in atoms)


def _different(cq: CQ, a1: Atom, a2: Atom) -> Atom | None:
    """A filter ``[x <> y]`` (or ``<``, ``>``) with x and y at one position of ``a1`` and
    ``a2``, each free or in both atoms; None when there is none."""
    for f in sorted((a for a in cq.atoms if a.is_filter), key=Atom.sort_key):
        pair = _strict_pair(f, _DIFFERENT)
        if pair is None or not _fixed_by(cq, set(pair), a1, a2):
            continue
        if any({s, t} == set(pair) for s, t in zip(a1.terms, a2.terms, strict=True)):
            return f
    return None


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
        filters may be anything; docs/rules.md, rule ordered-self-join).  Else, when
        that map is such a homomorphism and a filter ``[x <> y]`` (or ``<``, ``>``)
        has x and y at one position of the two atoms, each free or in both: the sum
        of the two bounds minus 2.

    Examples
    --------
    >>> p, a, b = Var("p"), Var("a"), Var("b")
    >>> a1, a2 = Atom("R", (p, a)), Atom("R", (p, b))
    >>> order = Atom.filter(Compare("<", Slot(0), Slot(1)), (a, b))
    >>> ordered_pair(CQ.of((p, a, b), (a1, a2, order)), "R", [(a1, 3), (a2, 3)])
    OrderedPair(filter='[a < b]', first=3, fixed=1, swapped=True)
    >>> ordered_pair(CQ.of((p, a), (a1, a2, order)), "R", [(a1, 1), (a2, 3)]) is None
    True
    >>> other = Atom.filter(Compare("<>", Slot(0), Slot(1)), (a, b))
    >>> ordered_pair(CQ.of((p, a, b), (a1, a2, other)), "R", [(a1, 3), (a2, 3)]).total
    4
    """
    if len(bounds) != 2 or any(b == math.inf or b < 1 for _, b in bounds):
        return None
    (a1, n1), (a2, n2) = bounds
    if a1.relation != relation or a2.relation != relation or a1.arity != a2.arity:
        return None
    itself = _self_answer(cq, relation)
    order = _swapped(cq, a1, a2)
    if order is not None:
        return OrderedPair(str(order), min(n1, n2), 1 if itself else 0)
    different = _different(cq, a1, a2) if itself else None
    if different is not None:
        return OrderedPair(str(different), n1 + n2, 2, swapped=False)
    return None
