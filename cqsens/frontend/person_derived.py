"""Aggregates over per-person groups: ``SELECT … FROM (SELECT key, AGG(…) … GROUP BY key) d``.

With a privacy unit, TPC-H q13's derived table ``SELECT c_custkey, COUNT(o_orderkey) FROM
customer LEFT JOIN orders ON c_custkey = o_custkey AND … GROUP BY c_custkey`` has one row
per person: its group key names the person, and every table it reads is tied to that key
(or public), so a group holds only that person's rows.  Adding or removing one person
adds or removes at most one row of the derived table and changes no other row, so the
outer query is a query over a table ``d`` whose neighbours differ by one row
(docs/rules.md, rule person-groups).  Its sensitivity is that of the outer statement over
``d``, with each aggregate column of ``d`` in a range bounded by one person's rows.

:func:`per_person_statement` recognises the form and returns a :class:`PerPerson`: the
outer statement over ``d``, and for each column of ``d`` the SQL whose person bound
bounds it.  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass

from sqlglot import exp

from cqsens.errors import InputError
from cqsens.frontend.person_groups import person_key_tie
from cqsens.frontend.statements import parse_statement
from cqsens.ir.schema import Schema

__all__ = ["DerivedColumn", "PerPerson", "per_person_statement"]

Owner = Callable[[str, str], tuple[str, str] | None]


@dataclass(frozen=True)
class DerivedColumn:
    """One column of the per-person table.

    Attributes
    ----------
    name : str
        Its name in the outer statement.
    kind : {"key", "count", "sum"}
        A group column (a column of the person's own row), a COUNT, or a SUM.
    bound_sql : str or None
        For a count or a sum: ``SELECT COUNT(*)``/``SELECT SUM(e)`` over the derived
        table's rows without grouping (outer joins as inner joins); its person bound
        bounds the value of one group.
    type : str
        The SQL type of a group column (its table's).
    """

    name: str
    kind: str
    bound_sql: str | None = None
    type: str = "NUMERIC"


@dataclass(frozen=True)
class PerPerson:
    """A statement whose only FROM item is a table of one row per person.

    Attributes
    ----------
    table : str
        The name of the per-person table in ``outer_sql`` (the derived table's alias).
    columns : tuple of DerivedColumn
        Its columns, the person key first.
    outer_sql : str
        The statement with the derived table replaced by ``table``.
    inner_sql : str
        The derived table's SELECT, as written.
    left_join : bool
        Whether the derived table has an outer join (a person without matches keeps a
        row, and a COUNT(*) of it is 1).
    """

    table: str
    columns: tuple[DerivedColumn, ...]
    outer_sql: str
    inner_sql: str
    left_join: bool


def _refuse(node: exp.Expr, what: str, why: str, source: str) -> InputError:
    return InputError(f"{what} is not supported: {why}", source=source, construct=what)


def per_person_statement(sql: str, schema: Schema, owner_key: Owner,
                         person: tuple[str, str], public: Set[str], dialect: str | None,
                         source: str = "<sql>") -> PerPerson | None:
    """The per-person reading of ``sql``, or None when it is not an aggregate over one
    derived table that groups.

    Parameters
    ----------
    sql : str
        The statement.
    schema : Schema
        The tables.
    owner_key : callable
        ``(table, column)`` → the owned row it names
        (:func:`cqsens.engine.person.owner_key`).
    person : (str, str)
        The unit's table and key column, in lower case.
    public : set of str
        Public tables, in lower case.
    dialect : str or None
        sqlglot dialect.
    source : str
        For messages.

    Raises
    ------
    InputError
        The statement has the form but its groups are not one per person (with why).
    """
    tree = parse_statement(sql, dialect, source)
    if not isinstance(tree, exp.Select):
        return None
    from_ = tree.args.get("from_") or tree.args.get("from")
    if from_ is None or from_.expressions or tree.args.get("joins") or tree.args.get("with_") \
            or tree.args.get("with"):
        return None
    derived = from_.this
    if not isinstance(derived, exp.Subquery) or not isinstance(derived.this, exp.Select):
        return None
    inner = derived.this
    if inner.args.get("group") is None:
        return None
    if any(s is not inner for s in derived.find_all(exp.Select)) or any(
            s is not inner and s is not tree for s in tree.find_all(exp.Select)):
        raise _refuse(inner, "aggregating subquery with nested subqueries",
                      "a per-person group must read only its person's rows", source)
    alias = derived.alias_or_name or "d"
    columns = _columns(inner, derived, schema, owner_key, person, public, source, dialect)
    outer = tree.copy()
    outer_from = outer.args.get("from_") or outer.args.get("from")
    assert outer_from is not None  # a copy of ``tree``, which has one
    outer_from.set("this", exp.to_table(alias))
    left = any(j.args.get("side") for j in inner.args.get("joins") or [])
    return PerPerson(alias, columns, outer.sql(dialect=dialect), inner.sql(dialect=dialect),
                     left)


def _columns(inner: exp.Select, derived: exp.Subquery, schema: Schema, owner_key: Owner,
             person: tuple[str, str], public: Set[str], source: str,
             dialect: str | None) -> tuple[DerivedColumn, ...]:
    tie = person_key_tie(inner, schema, owner_key, public, person, outer_joins=True)
    if isinstance(tie, str):
        raise _refuse(inner, "aggregating subquery", tie + "; with a privacy unit an "
                      "aggregate over per-person groups needs a derived table grouped by the "
                      "person's key whose tables are all tied to it (docs/rules.md, rule "
                      "person-groups)", source)
    alias = derived.args.get("alias")
    names = [c.name for c in alias.columns] if alias is not None else []
    counted = _bound_select(inner)
    out: list[DerivedColumn] = []
    for index, item in enumerate(inner.expressions):
        value = item.this if isinstance(item, exp.Alias) else item
        name = names[index] if index < len(names) else item.alias_or_name
        if not name:
            raise _refuse(item, "unnamed column of a derived table", "name it with AS",
                          source)
        if isinstance(value, exp.Column) and tie.owns(value):
            ref = tie.scope.ref(value)
            relation = schema.find(tie.scope.own[ref[0]]) if ref is not None else None
            position = relation.index(ref[1]) if relation is not None and ref else None
            kind = relation.types[position] if relation is not None and position is not None \
                and position < len(relation.types) else "NUMERIC"
            out.append(DerivedColumn(name, "key", type=kind or "NUMERIC"))
            continue
        if isinstance(value, exp.Count):
            query = counted.copy()
            query.set("expressions", [exp.Count(this=exp.Star())])
            out.append(DerivedColumn(name, "count", query.sql(dialect=dialect)))
            continue
        if isinstance(value, exp.Sum) and not any(
                j.args.get("side") for j in inner.args.get("joins") or []):
            query = counted.copy()
            query.set("expressions", [value.copy()])
            out.append(DerivedColumn(name, "sum", query.sql(dialect=dialect)))
            continue
        raise _refuse(item, f"column {item.sql(dialect=dialect)} of a per-person table",
                      "cqsens bounds a COUNT, a SUM (without outer joins) or a column of the "
                      "person's own row there", source)
    return tuple(out)


def _bound_select(inner: exp.Select) -> exp.Select:
    """``inner`` without grouping, its outer joins made inner: one row per joined row."""
    query = inner.copy()
    for key in ("group", "having", "order", "limit", "offset", "distinct"):
        query.set(key, None)
    for join in query.args.get("joins") or []:
        join.set("side", None)
        join.set("kind", None)
    return query
