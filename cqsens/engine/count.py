"""The count bound of one CQ under Σ: chase, core, and the smaller of two sound bounds.

The chase uses only dependencies every database of C_Σ satisfies, so the bound
of the chased core and the bound of the unchased core are both sound; the
smaller one is kept.  This is the one place that chases and takes cores for a
bound: the main analysis, the bounds of other heads over the same body
(aggregates) and the confirmation of suggested dependencies all call it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cqsens.engine.chase import chase
from cqsens.engine.core import core_result
from cqsens.engine.neighbourhood import Neighbourhood
from cqsens.engine.rules import Derivation, Input, Rule
from cqsens.engine.upper import (
    AtomBound,
    Method,
    References,
    RelationBound,
    UpperBound,
    explaining_steps,
    upper_bound,
)
from cqsens.ir.cq import CQ
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import text

__all__ = ["CORE_BUDGET", "ROW", "CountBound", "atom_derivation", "count_bound",
           "count_derivation", "relation_derivations"]

CORE_BUDGET = 200_000


@dataclass(frozen=True, slots=True)
class CountBound:
    """The bound of ``#cq`` with the cores it came from.

    ``core`` is the chased query's core (``minimal`` is False when its search
    hit the budget); ``plain`` the unchased query's core; ``bound`` the smaller
    of the two cores' bounds under Σ.
    """

    core: CQ
    minimal: bool
    plain: CQ
    bound: UpperBound


def count_bound(
    cq: CQ, sigma: Sigma, *, budget: int = CORE_BUDGET, public: frozenset[str] = frozenset(),
    references: References = (),
) -> CountBound:
    """Chase ``cq`` with the FDs of Σ, take cores, and bound its add/remove sensitivity.

    ``public`` and ``references`` are passed to :func:`upper_bound` (public tables;
    foreign keys kept by both neighbours).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.dependencies import Dependency
    >>> b = count_bound(parse_cq("Q(x) :- R(x, y), S(y, z)"),
    ...                 Sigma.of([Dependency("S", 0, 1, 1), Dependency("R", 1, 0, 1)]))
    >>> b.bound.value, str(b.core)
    (1, 'Q(x) :- R(x, y), S(y, z).')
    """
    fds = sigma.fds()
    chased = core_result(chase(cq, fds), budget=budget)
    bound = upper_bound(chased.cq, sigma, public=public, references=references)
    if not fds:
        return CountBound(chased.cq, chased.minimal, chased.cq, bound)
    plain = core_result(cq, budget=budget).cq
    if chased.cq.satisfiable:
        unchased = upper_bound(plain, sigma, public=public, references=references)
        if unchased.value < bound.value:
            bound = unchased
    return CountBound(chased.cq, chased.minimal, plain, bound)


ROW = Neighbourhood()
"""One row added or removed, one row per individual."""

_METHODS = {
    Method.HOLDS_FREE: Rule.DELTA_STR_SELF_JOIN,
    Method.SAME_ANSWER: Rule.DELTA_STR_SELF_JOIN,
    Method.JOINT_TREE: Rule.JOINT_ASSIGNMENT_TREE,
    Method.WALKS: Rule.WALKS_FROM_CONSTANTS,
    Method.UNBOUNDED: Rule.WALKS_FROM_CONSTANTS,
    Method.REFERENCED: Rule.FOREIGN_KEYS,
}


def atom_derivation(bound: AtomBound, where: Neighbourhood) -> Derivation:
    """The derivation of one atom's bound: the rule of its method, the atom and its steps.

    Inputs: ``atom``; ``route`` (the explaining steps); ``counted`` (0 when an earlier
    atom gives the same answer); ``reference`` (the referencing atom, rule
    foreign-keys); ``missing`` (the free variables no walk reaches, when unbounded);
    ``tree`` and ``product`` (the joint tree and the per-variable product); ``routes``
    (each free variable's least walk).
    """
    rule = Rule.DELTA_STR_SELF_JOIN if bound.pattern is not None else _METHODS[bound.method]
    route = "; ".join(str(step) for step in explaining_steps(bound))
    walks = "; ".join(f"{v.name} ×{text(r.cardinality)} [{r.describe()}]"
                      for v, r in bound.routes if r is not None)
    return Derivation(rule, bound.value, where, {
        "atom": str(bound.atom), "route": route, "counted": int(bound.counted),
        "reference": bound.reference, "missing": ", ".join(v.name for v in bound.unreachable),
        "tree": "; ".join(str(s) for s in bound.tree_steps) or "none",
        "product": bound.product, "routes": walks})


def relation_derivations(bound: UpperBound, where: Neighbourhood = ROW
                         ) -> tuple[Derivation, ...]:
    """Per relation, the new answers one of its rows gives (docs/rules.md, rule new-answers):
    the sum over its atoms, each atom's derivation a premise (counted or not)."""
    return tuple(Derivation(_rule(r), r.total, where, _inputs(r),
                            tuple(atom_derivation(ab, where) for ab in r.atoms))
                 for r in bound.relations)


def _rule(r: RelationBound) -> Rule:
    """New answers summed over the atoms, or the two ordered copies (rule ordered-self-join)."""
    return Rule.ORDERED_SELF_JOIN if r.ordered else Rule.NEW_ANSWERS


def _inputs(r: RelationBound) -> dict[str, Input]:
    """The relation, the answers taken off and, for two ordered copies, their filter."""
    out: dict[str, Input] = {"relation": r.relation, "shared": r.shared}
    if r.ordered:
        out["ordered"] = r.ordered
        out["pairing"] = "swapped" if r.swapped else "both atoms"
    return out


def count_derivation(core: CQ, bound: UpperBound, where: Neighbourhood = ROW) -> Derivation:
    """The derivation of the count bound of ``core``: the relation whose added row gives the
    most new answers (docs/rules.md, rule new-answers), with its counted atoms as premises;
    an unsatisfiable query (rule unsatisfiable-query) and a Boolean one (rule boolean-query)
    have their own rules, an unbounded atom names the variables no walk reaches (rule
    walks-from-constants).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> q = parse_cq("Q(x) :- R(x, y)")
    >>> d = count_derivation(q, upper_bound(q, Sigma.of()))
    >>> d.rule.value, d.value, d["relation"]
    ('new-answers', 1, 'R')
    """
    if not core.satisfiable:
        return Derivation(Rule.UNSATISFIABLE_QUERY, 0, where)
    if core.is_boolean:
        return Derivation(Rule.BOOLEAN_QUERY, bound.value, where)
    worst = max(bound.relations, key=lambda r: r.total, default=None)
    if worst is None:
        return Derivation(Rule.NEW_ANSWERS, 0, where)
    if worst.total == math.inf:
        for ab in worst.atoms:
            if ab.value == math.inf:
                missing = ", ".join(v.name for v in ab.unreachable) or "a free variable"
                return Derivation(Rule.WALKS_FROM_CONSTANTS, math.inf, where,
                                  {"relation": worst.relation, "atom": str(ab.atom),
                                   "missing": missing})
    premises = tuple(atom_derivation(ab, where) for ab in worst.atoms if ab.counted)
    return Derivation(_rule(worst), worst.total, where, _inputs(worst), premises)
