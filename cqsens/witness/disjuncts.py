"""One disjunct of each OR: the filters a constructed witness meets instead of the OR.

A filter ``A1 AND A2 OR B1 AND B2`` over several variables (TPC-H q19: three
conjunctions of a brand, containers, a quantity range and sizes) is met by
meeting one disjunct: values chosen for ``A1`` and ``A2`` satisfy the OR.
Choosing variables one at a time against the OR alone does not find them (the
first variable takes a value no disjunct allows).  :func:`disjunct_variants`
gives the query with each such OR replaced by the conjuncts of one of its
disjuncts, each a filter atom over the variables it reads (a conjunct over one
variable becomes a filter on that variable alone).  The variants serve only to
choose values: the rows built are those of the query's own relation atoms, and
the witness is checked on the user's SQL as always.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from cqsens.ir.cq import CQ, Atom, Term
from cqsens.ir.expr import And, Expr, Kind, Literal, Or, Predicate, Slot, bind, slots

__all__ = ["MAX_VARIANTS", "disjunct_variants"]

MAX_VARIANTS = 8
"""Variants tried at most (combinations of one disjunct per OR)."""


def disjunct_variants(cq: CQ) -> Iterator[CQ]:
    """``cq`` itself when no filter over several variables is an OR, else ``cq`` with
    each such OR replaced by the conjuncts of one disjunct, disjuncts in their written
    order, at most :data:`MAX_VARIANTS` combinations.

    Examples
    --------
    >>> from cqsens.ir.cq import Var
    >>> from cqsens.ir.expr import Compare
    >>> def eq(i, n): return Compare("=", Slot(i), Literal(n, Kind.INTEGER))
    >>> either = Or((And((eq(0, 1), eq(1, 2))), And((eq(0, 3), eq(1, 4)))))
    >>> x, y = Var("x"), Var("y")
    >>> q = CQ.of([], [Atom("R", (x, y)), Atom.filter(either, [x, y])])
    >>> [sorted(a.template for a in v.atoms if a.is_filter) for v in disjunct_variants(q)]
    [['{0} = 1', '{0} = 2'], ['{0} = 3', '{0} = 4']]
    """
    ors = [a for a in cq.sorted_atoms() if isinstance(a.predicate, Or)
           and len(a.variables()) > 1]
    if not ors:
        yield cq
        return
    choices = [a.predicate.parts for a in ors if isinstance(a.predicate, Or)]
    for picked in itertools.islice(itertools.product(*choices), MAX_VARIANTS):
        atoms = set(cq.atoms) - set(ors)
        for atom, part in zip(ors, picked, strict=True):
            atoms.update(_conjunct_atoms(atom.terms, part))
        yield CQ(cq.head, frozenset(atoms), cq.name, cq.satisfiable)


def _conjunct_atoms(terms: tuple[Term, ...], part: Predicate) -> list[Atom]:
    """A filter atom per conjunct of ``part``, over the terms it reads."""
    conjuncts = part.parts if isinstance(part, And) else (part,)
    out: list[Atom] = []
    for conjunct in conjuncts:
        used = sorted(set(slots(conjunct)))
        if not used:  # a condition on constants alone: the OR's own atom decides it
            continue
        placed: list[Expr] = [Slot(used.index(i)) if i in used else Literal(None, Kind.NULL)
                              for i in range(len(terms))]
        out.append(Atom.filter(bind(conjunct, placed), [terms[i] for i in used]))
    return out
