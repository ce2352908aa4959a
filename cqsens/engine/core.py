"""The core of a query preserving its free variables, and the CQ_core test.

The core is the smallest substructure of the canonical structure that is
homomorphically equivalent to it by maps fixing the free variables (and the
constants).  It is computed by repeatedly looking for an endomorphism fixing
them whose image misses some variable, and replacing the query by that image.
A query is in CQ_core when this core has as many elements as its plain core
(the core fixing nothing but constants).

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Section 3 (Core of CQ's, Example 6).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from cqsens.budget import checkpoint
from cqsens.engine.homomorphism import BudgetExceeded, arc_consistent_domains, find_homomorphism
from cqsens.ir.cq import CQ, Atom, Term, Var

__all__ = ["CoreResult", "core", "core_result", "is_core", "in_cq_core"]

log = logging.getLogger("cqsens")


@dataclass(frozen=True, slots=True)
class CoreResult:
    """A retract of the query; ``minimal`` is False when a budget cut the search."""

    cq: CQ
    minimal: bool = True


def _retract_once(
    atoms: frozenset[Atom], fixed: dict[Var, Term], budget: int | None
) -> frozenset[Atom] | None:
    variables = sorted({v for a in atoms for v in a.variables()} - set(fixed))
    # A variable that arc consistency pins to itself in every endomorphism fixing
    # ``fixed`` can never leave the image: skip its (failing) search.
    domains = arc_consistent_domains(atoms, atoms, fixed=fixed)
    if domains is not None:
        variables = [v for v in variables if domains.get(v) != {v}]
    for v in variables:
        target = [a for a in atoms if v not in a.terms]
        h = find_homomorphism(atoms, target, fixed=fixed, budget=budget)
        if h is not None:
            mapping: dict[Term, Term] = dict(h.items())
            return frozenset(a.substitute(mapping) for a in atoms)
    return None


def core_result(
    cq: CQ, *, preserve: Iterable[Var] | None = None, budget: int | None = None
) -> CoreResult:
    """The core preserving ``preserve`` (default: the free variables), with status.

    With a ``budget`` (search nodes per homomorphism search), a search that runs
    out stops the minimisation: the current retract is returned with
    ``minimal=False``.  Any retract is equivalent to the query, so bounds
    computed on it stay sound (only possibly less tight).  Results are cached
    (queries are immutable values).
    """
    keep = cq.free if preserve is None else tuple(preserve)
    return _core_cached(cq, tuple(sorted(set(keep))), budget)


@functools.lru_cache(maxsize=4096)
def _core_cached(cq: CQ, keep: tuple[Var, ...], budget: int | None) -> CoreResult:
    if not cq.satisfiable:
        return CoreResult(cq)
    fixed: dict[Var, Term] = {v: v for v in keep}
    atoms = cq.atoms
    while True:
        checkpoint("core")
        try:
            smaller = _retract_once(atoms, fixed, budget)
        except BudgetExceeded:
            log.info("core search budget exhausted; the core may not be minimal")
            return CoreResult(cq.with_atoms(atoms), minimal=False)
        if smaller is None:
            return CoreResult(cq.with_atoms(atoms))
        atoms = smaller


def core(cq: CQ, *, preserve: Iterable[Var] | None = None, budget: int | None = None) -> CQ:
    """The core of ``cq`` preserving its free variables (or ``preserve``).

    Parameters
    ----------
    cq : CQ
        The query.
    preserve : iterable of Var, optional
        Variables the retraction must fix; defaults to the free variables.
        ``()`` gives the plain core.
    budget : int, optional
        See :func:`core_result`.

    Returns
    -------
    CQ
        A query equivalent to ``cq`` with a minimal body.

    Notes
    -----
    Each step is one homomorphism search per variable (NP-hard in general).
    Filter atoms take part as atoms of their own relation, so they are kept
    whenever they constrain the answers.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> q = parse_cq("Q(x1, x2) :- S(x1, x1), S(x1, y2), R(x1, y1), R(x2, y1)")
    >>> print(core(q))
    Q(x1, x2) :- R(x1, y1), R(x2, y1), S(x1, x1).

    References
    ----------
    .. [1] Arapinis, Figueira, Gaboardi, ICALP 2016, Example 6.
    """
    return core_result(cq, preserve=preserve, budget=budget).cq


def is_core(cq: CQ) -> bool:
    """True when ``cq`` is its own core preserving its free variables."""
    return len(core(cq).atoms) == len(cq.atoms)


def in_cq_core(cq: CQ) -> bool:
    """True when the core preserving the free variables is the plain core (CQ_core).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> in_cq_core(parse_cq("Q(x1, x2) :- S(x1, x1), S(x1, y2), R(x1, y1), R(x2, y1)"))
    False
    >>> in_cq_core(parse_cq("Q(x) :- R(x, y), S(y)"))
    True
    """
    if not cq.satisfiable:
        return True
    with_free = core(cq)
    plain = core(cq, preserve=())
    def body_elements(q: CQ) -> int:
        return len({t for a in q.atoms for t in a.terms})

    return body_elements(with_free) == body_elements(plain)
