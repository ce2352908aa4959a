"""The count stage: chase, cores and the count bound of a query, computed once, and the
count bounds of other heads over the same body that the aggregate rules read.

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries. ICALP 2016.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from cqsens.engine.core import core_result, in_cq_core
from cqsens.engine.count import CountBound, count_bound
from cqsens.engine.domains import domain_cap
from cqsens.engine.paper import PaperValue, cd_upper_paper, delta_str_paper, fd_bounds_paper
from cqsens.engine.paths import Weight
from cqsens.engine.person import PersonBound, person_bound
from cqsens.engine.upper import upper_bound
from cqsens.ir.cq import CQ, Aggregate, Var
from cqsens.ir.dependencies import Sigma
from cqsens.ir.exact import display

if TYPE_CHECKING:
    from cqsens.state import State

__all__ = ["count_upper", "domain_cap_why", "engine_count_upper", "groups_upper", "stage_bound",
           "stage_paper"]


def stage_bound(state: State) -> State:
    """Chase, cores and the count bound, once; Δ_STR without constraints beside it."""
    nb = state.options.nb
    public = nb.public
    counted = count_bound(state.query.cq, state.sigma, budget=state.options.core_budget,
                          public=public, references=nb.kept_references)
    notes = state.notes
    if not counted.minimal:
        notes += ("the core search hit its budget: the core shown may not be minimal "
                  "(bounds stay sound, possibly less tight)",)
    # without constraints: the query as read, not one a foreign key makes equivalent
    plain = counted.plain if state.read is None else core_result(
        state.read.cq, budget=state.options.core_budget).cq
    delta_str = upper_bound(plain, Sigma.of(), public=public).value
    person = _person(state, counted)
    return replace(state, counted=counted, delta_str=delta_str, notes=notes, person=person)


def _person(state: State, counted: CountBound) -> PersonBound | None:
    """The count bound for one person (the smaller over the chased and the plain core)."""
    nb, schema = state.options.nb, state.options.schema
    if nb.unit is None or schema is None:
        return None
    unit = nb.unit
    chased = person_bound(counted.core, state.sigma, unit=unit, schema=schema,
                          public=nb.public)
    if counted.plain == counted.core or not counted.core.satisfiable:
        return chased
    plain = person_bound(counted.plain, state.sigma, unit=unit, schema=schema,
                         public=nb.public)
    return plain if plain.value < chased.value else chased


def stage_paper(state: State) -> State:
    """The paper's literal Δ_STR, Thm 13 and Thm 17 values."""
    cq, counted, sigma = state.query.cq, state.count, state.sigma
    paper: dict[str, PaperValue] = {"delta_str": delta_str_paper((state.read or state.query).cq)}
    fds = sigma.fds()
    if fds:
        upper, lower = fd_bounds_paper(counted.core, fds, in_cq_core=in_cq_core(cq))
        paper["fd_upper"], paper["fd_lower"] = upper, lower
    else:
        paper["fd_upper"] = paper["fd_lower"] = PaperValue(
            None, "no functional dependency given", applies=False)
    paper["cd_upper"] = (cd_upper_paper(counted.plain, sigma) if sigma
                         else PaperValue(None, "no dependency given", applies=False))
    return replace(state, paper=paper)


def count_upper(state: State, cq: CQ, aggregate: Aggregate | None = None) -> Weight:
    """The count bound of another head over the same body (for one person with a unit),
    capped by the finite domains of the head (:func:`_domain_cap`)."""
    return min(engine_count_upper(state, cq), _domain_cap(state, cq, aggregate))


def engine_count_upper(state: State, cq: CQ) -> Weight:
    """The count bound of the engine's rules for a head over the query's body."""
    if cq.head == state.query.cq.head:
        return state.count.bound.value if state.person is None else state.person.value
    other = count_bound(cq, state.sigma, budget=state.options.core_budget,
                        public=state.options.nb.public,
                        references=state.options.nb.kept_references)
    if state.person is None:
        return other.bound.value
    person = _person(state, other)
    assert person is not None
    return person.value


def _domain_cap(state: State, cq: CQ, aggregate: Aggregate | None) -> Weight:
    """The most answers ``cq`` can have when its head terms have finite domains, and with
    GROUP BY the groups one tuple can touch times the answers per group (docs/rules.md,
    rule finite-domains)."""
    return domain_cap_why(state, cq, aggregate)[0]


def domain_cap_why(state: State, cq: CQ,
                    aggregate: Aggregate | None) -> tuple[Weight, str]:
    """:func:`_domain_cap` with the sentence that explains it."""
    schema = state.options.schema
    if schema is None:
        return math.inf, ""
    group = [t for t in state.query.group_by if t in cq.head]
    # COUNT(DISTINCT c) skips a NULL c; with several columns a dialect may count a tuple
    # holding a NULL (a row value is not NULL), so only one column is taken as NULL-free
    counted = set(aggregate.columns) if aggregate is not None \
        and aggregate.kind == "count_distinct" and len(aggregate.columns) == 1 else set()
    non_null = counted - set(group)
    whole = domain_cap(cq, schema, non_null=non_null)
    best, why = whole.value, (f"the answers are tuples of {'; '.join(whole.parts)}"
                              if whole.parts else "")
    rest = tuple(t for t in cq.head if t not in group)
    if group and rest:
        per_group = domain_cap(CQ(rest, cq.atoms, cq.name, cq.satisfiable), schema,
                               non_null=non_null)
        groups = groups_upper(state, cq) if per_group.value < math.inf else None
        if groups is not None and groups * per_group.value < best:
            best = groups * per_group.value
            why = (f"at most {display(groups)} group(s) change, each by at most "
                   f"{display(per_group.value)}, the values of {'; '.join(per_group.parts)}")
    return best, why


def groups_upper(state: State, cq: CQ) -> Weight | None:
    """How many groups one tuple (or person) can touch: the count bound of the query whose
    free variables are the GROUP BY variables (docs/rules.md, rule grouped-value-aggregates);
    None without GROUP BY or when a grouping term is not a variable of the body."""
    group_by = state.query.group_by
    body = {t for a in cq.relation_atoms() for t in a.terms}
    if not group_by or not all(isinstance(g, Var) and g in body for g in group_by):
        return None
    head = tuple(dict.fromkeys(g for g in group_by if isinstance(g, Var)))
    return count_upper(state, CQ(head, cq.atoms, cq.name, cq.satisfiable))
