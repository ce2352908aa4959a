"""The paper's bounds read literally: Δ_STR (Prop 7 / Thm 9), Δ±_Σ (Thm 13), Δ+_Σ (Thm 17).

These are reported in the ``paper`` block so a reader sees where, and why,
cqsens's answer differs (docs/rules.md, rule ``paper-values``).  Path minima
are taken over *simple paths from the atom's elements* exactly as equation (1)
defines them, by exhaustive enumeration under a budget; when the budget runs
out the value is unknown (``None`` with a reason), never a guess.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Prop 7, Thm 9, Thm 13, Thm 17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cqsens.engine.core import core
from cqsens.engine.gaifman import components, is_connected
from cqsens.engine.homomorphism import BudgetExceeded, find_homomorphism
from cqsens.engine.paths import Weight, simple_path_cardinalities, step_graph
from cqsens.ir.cq import CQ
from cqsens.ir.dependencies import Sigma

__all__ = ["PaperValue", "delta_str_paper", "fd_bounds_paper", "cd_upper_paper"]


@dataclass(frozen=True, slots=True)
class PaperValue:
    """A literal value of the paper, or ``None`` with the reason it is not given.

    ``applies`` is False when the theorem has nothing to apply to (no dependency
    given): the reason is then not worth a note.
    """

    value: Weight | None
    reason: str = ""
    applies: bool = True


def _connected_delta_str(cq: CQ) -> Weight:
    c = core(cq)
    for atom in c.relation_atoms():
        if any(v not in atom.terms for v in c.free):
            return math.inf
    return 1


def delta_str_paper(cq: CQ) -> PaperValue:
    """Δ_STR of Prop 7 (connected) and Thm 9 (disconnected), literally.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> delta_str_paper(parse_cq("Q(x) :- R(x, y), R(y, x)")).value
    1
    >>> delta_str_paper(parse_cq("Q() :- R(x), S(y)")).value
    inf
    """
    if not cq.satisfiable:
        return PaperValue(None, "the query is unsatisfiable; the paper assumes satisfiable queries")
    if is_connected(cq):
        return PaperValue(_connected_delta_str(cq))
    parts = components(cq)
    free = set(cq.free)
    for k, part in enumerate(parts):
        if set(part.free) != free:
            continue
        rest = [a for j, p in enumerate(parts) if j != k for a in p.atoms]
        if find_homomorphism(rest, part.atoms) is not None:
            return PaperValue(_connected_delta_str(part))
    return PaperValue(math.inf)


def _per_atom(cq: CQ, sigma: Sigma, combine: str, budget: int) -> list[tuple[str, Weight]]:
    out: list[tuple[str, Weight]] = []
    graph = step_graph(cq, sigma)
    for atom in cq.relation_atoms():
        found = simple_path_cardinalities(cq, sigma, atom, cq.free, budget=budget, graph=graph)
        values = [found[x] for x in cq.free]
        if not values:
            term: Weight = 1
        elif combine == "max":
            term = max(values)
        else:
            term = 1
            for v in values:
                term = term * v
        out.append((atom.relation, term))
    return out


def _sum_max(pairs: list[tuple[str, Weight]]) -> Weight:
    totals: dict[str, Weight] = {}
    for relation, v in pairs:
        totals[relation] = totals.get(relation, 0) + v
    return max(totals.values(), default=0)


def fd_bounds_paper(
    chased_core: CQ, fds: Sigma, *, in_cq_core: bool, budget: int = 50_000
) -> tuple[PaperValue, PaperValue]:
    """Δ+_Σ and Δ−_Σ of Thm 13 on core(chase_Σ(Q)), with the FDs of ``fds``.

    ``Δ−`` is returned only for queries in CQ_core (the theorem's condition).
    """
    if not chased_core.satisfiable:
        reason = "the chase derives ⊥ (two different constants): the count is always 0"
        return PaperValue(None, reason), PaperValue(None, reason)
    if not is_connected(chased_core):
        reason = "Thm 13 is stated for connected queries"
        return PaperValue(None, reason), PaperValue(None, reason)
    try:
        pairs = _per_atom(chased_core, fds.fds(), "max", budget)
    except BudgetExceeded:
        reason = f"the simple-path enumeration exceeded its budget ({budget} steps)"
        return PaperValue(None, reason), PaperValue(None, reason)
    upper = PaperValue(_sum_max(pairs))
    if not in_cq_core:
        reason = "the query is not in CQ_core, so Thm 13 gives no lower bound"
        return upper, PaperValue(None, reason)
    return upper, PaperValue(max((v for _, v in pairs), default=1))


def cd_upper_paper(query_core: CQ, sigma: Sigma, *, budget: int = 50_000) -> PaperValue:
    """Δ+_Σ of Thm 17 on core(Q) (no chase), per atom the product over free variables."""
    if not query_core.satisfiable:
        return PaperValue(None, "the query is unsatisfiable")
    if not is_connected(query_core):
        return PaperValue(None, "Thm 17 is stated for connected queries")
    try:
        return PaperValue(_sum_max(_per_atom(query_core, sigma, "product", budget)))
    except BudgetExceeded:
        return PaperValue(None, f"the simple-path enumeration exceeded its budget ({budget} steps)")
