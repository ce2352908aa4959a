"""Person-local subqueries: a condition whose subqueries read only the outer row's person.

With a privacy unit, ``NOT EXISTS (SELECT * FROM lineitem l3 WHERE l3.l_orderkey =
l1.l_orderkey AND …)`` reads only lines of the outer line's order, so only rows of
the person who owns that order, and the outer line belongs to that person too.
Such a condition is a predicate φ of the outer row that only its own person's
rows can change: when one person is added or removed, an answer whose φ changes
touches that person's rows, and those answers are already all counted by the
person bound of the query without φ (docs/rules.md, rule person-local).  So it is
kept out of the analysed query, whatever the subquery computes (negation,
aggregates, HAVING), and the release runs the statement as written.

A subquery is person-local when every table it reads is public or *anchored*: a
top-level equality of its WHERE ties one of its columns to a column of the outer
query's tables, and both name the same row of an owned table (``owner_key``):
a foreign key that carries ownership into that row's key, or the key itself.
An uncorrelated ``x [NOT] IN (SELECT g … GROUP BY g HAVING …)`` whose groups are
person-local is one too (:mod:`cqsens.frontend.person_groups`).
"""

from __future__ import annotations

from collections.abc import Callable, Set

from sqlglot import exp

from cqsens.frontend.person_groups import person_local_membership, table_of
from cqsens.frontend.public_subqueries import drop_conjuncts
from cqsens.frontend.sql_expr import conjuncts
from cqsens.ir.schema import Schema

__all__ = ["OwnerKey", "drop_person_local_conjuncts", "subquery_is_person_local"]

OwnerKey = Callable[[str, str], tuple[str, str] | None]
"""``(table, column)`` → the owned row it names, as ``(table, key column)`` in lower case."""


def _from_tables(select: exp.Select) -> list[exp.Expr]:
    from_ = select.args.get("from_") or select.args.get("from")
    items = [from_.this, *from_.expressions] if from_ is not None else []
    return items + [j.this for j in select.args.get("joins") or []]


def _inner_alias(column: exp.Column, own: dict[str, str], schema: Schema) -> str | None:
    """The alias of the subquery's table a column belongs to (None: not one of its own)."""
    if column.table:
        return column.table.lower() if column.table.lower() in own else None
    found = [a for a, t in own.items()
             if (rel := schema.find(t)) is not None and rel.index(column.name) is not None]
    return found[0] if len(found) == 1 else None


def drop_person_local_conjuncts(select: exp.Select, owner_key: OwnerKey, public: Set[str],
                                schema: Schema, dialect: str | None) -> list[str]:
    """Take the WHERE conjuncts whose subqueries are all person-local off ``select``.

    Returns
    -------
    list of str
        The conjuncts taken off, as SQL.
    """
    items = _from_tables(select)
    if select.args.get("where") is None or not all(isinstance(i, exp.Table) for i in items):
        return []
    outer = {i.alias_or_name.lower(): i.name for i in items if isinstance(i, exp.Table)}

    def local(cond: exp.Expr) -> bool:
        subqueries = list(cond.find_all(exp.Select))
        return bool(subqueries) and (
            all(_local(s, outer, owner_key, public, schema) for s in subqueries)
            or person_local_membership(cond, outer, owner_key, public, schema))

    return drop_conjuncts(select, local, dialect)


def subquery_is_person_local(sub: exp.Select, outer: dict[str, str], owner_key: OwnerKey,
                             public: Set[str], schema: Schema) -> bool:
    """Whether every table ``sub`` reads is public or anchored on the outer row's person
    (``outer``: the outer query's tables, alias in lower case → table name)."""
    return _local(sub, outer, owner_key, public, schema)


def _local(sub: exp.Select, outer: dict[str, str], owner_key: OwnerKey, public: Set[str],
           schema: Schema) -> bool:
    items = _from_tables(sub)
    if not items or not all(isinstance(i, exp.Table) for i in items):
        return False
    own = {i.alias_or_name.lower(): i.name for i in items if isinstance(i, exp.Table)}
    if set(own) & set(outer):
        return False  # an alias that shadows an outer one: leave it to the refusal
    where = sub.args.get("where")
    anchors: set[str] = set()
    for cond in conjuncts(where.this) if where is not None else []:
        if not isinstance(cond, exp.EQ):
            continue
        left, right = cond.this, cond.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        for mine, theirs in ((left, right), (right, left)):
            alias = _inner_alias(mine, own, schema)
            other = None if _inner_alias(theirs, own, schema) is not None \
                else table_of(theirs, outer, schema)  # SQL resolves the inner scope first
            if alias is None or other is None:
                continue
            key = owner_key(own[alias], mine.name)
            if key is not None and key == owner_key(other, theirs.name):
                anchors.add(alias)
    return all(alias in anchors or table.lower() in public for alias, table in own.items())
