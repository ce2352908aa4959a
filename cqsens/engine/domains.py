"""The count of a query whose counted columns have finite domains is bounded by their size.

A column whose CHECKs admit finitely many values (``CHECK (kind IN ('a', 'b',
'c'))``, :meth:`cqsens.ir.schema.Relation.domain`) holds one of them or NULL.
The answers of a query are distinct head tuples, so when every head term has a
finite domain there are at most the product of the domain sizes of them, on any
database: the count lies in ``[0, N]`` and changes by at most ``N`` between any
two databases (docs/rules.md, rule finite-domains).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

from cqsens.engine.paths import Weight
from cqsens.ir.cq import CQ, Const, Term, Var
from cqsens.ir.schema import Schema

__all__ = ["DomainCap", "domain_cap"]


@dataclass(frozen=True, slots=True)
class DomainCap:
    """``value``: how many distinct head tuples there can be (∞ when a head term has no
    finite domain); ``parts`` says, per head variable, where its values come from."""

    value: Weight
    parts: tuple[str, ...] = ()


def _variable_values(cq: CQ, var: Var, schema: Schema, non_null: bool) -> tuple[Weight, str]:
    """How many values ``var`` can take in an answer, and from which column."""
    places = [(atom.relation, p) for atom in cq.relation_atoms()
              for p, t in enumerate(atom.terms) if t == var]
    best: Weight = math.inf
    where = ""
    for relation, position in places:
        table = schema.find(relation)
        values = table.domain(position) if table is not None else None
        if values is not None and len(values) < best:
            best, where = len(values), f"{table.name}.{table.columns[position]}" \
                if table is not None else relation
    if best == math.inf:
        return best, ""
    # a variable at one place may be NULL there (a CHECK admits NULL); at two it was
    # joined by '=', which NULL never meets
    nullable = not non_null and len(places) == 1 and all(
        (table := schema.find(r)) is None or table.nullable(p) for r, p in places)
    if nullable:
        return best + 1, f"{where} ({best} values or NULL)"
    return best, f"{where} ({best} values)"


def domain_cap(cq: CQ, schema: Schema | None, *, non_null: Collection[Term] = ()) -> DomainCap:
    """The most distinct head tuples ``cq`` can have on any database of the schema.

    Parameters
    ----------
    cq : CQ
        The query as written (before the chase: its variables are the SQL columns).
    schema : Schema or None
        The schema whose CHECKs give finite domains; None gives ∞.
    non_null : collection of Term
        Head terms whose NULLs are not counted (the columns of ``COUNT(DISTINCT ...)``
        outside GROUP BY): they take only their domain's values.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> s = schema_from_ddl("CREATE TABLE R (a INT NOT NULL CHECK (a IN (1, 2, 3)), b INT)")
    >>> domain_cap(parse_cq("Q(a) :- R(a, b)"), s).value
    3
    >>> domain_cap(parse_cq("Q(a, b) :- R(a, b)"), s).value
    inf
    """
    if schema is None or not cq.satisfiable:
        return DomainCap(math.inf if schema is None else 0)
    product: Weight = 1
    parts: list[str] = []
    for term in dict.fromkeys(cq.head):
        if isinstance(term, Const):
            continue
        assert isinstance(term, Var)
        values, where = _variable_values(cq, term, schema, term in non_null)
        if values == math.inf:
            return DomainCap(math.inf)
        product = product * values
        parts.append(where)
    return DomainCap(product, tuple(parts))
