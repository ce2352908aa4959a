"""Scalar subqueries over private data as released parts (docs/rules.md, rule
released-subquery).

An uncorrelated scalar subquery that aggregates private rows, such as
``(SELECT COUNT(*) FROM sales WHERE price > 5)`` in a ``CASE`` of the SELECT list, is a
release of its own: its value is one released number, and every use of it is
post-processing.  :mod:`cqsens.frontend.released_parts` takes one as a part where what
holds it is post-processing:

* it sits in a SELECT that reads no private rows in FROM/JOIN (public tables, released
  rows, or no FROM at all), in any clause (SELECT, WHERE, HAVING, CASE, ...); or
* it sits in a top-level conjunct of the HAVING of an aggregating derived table or
  ``WITH`` table over private rows (``HAVING AVG(x) > 0.9 * (SELECT AVG(x) ...)``): that
  table is then released without those conjuncts (:func:`split_having`), and they are
  applied to its noisy rows, comparing released values with released values.

A scalar subquery in the WHERE of a SELECT over private rows is a threshold on the rows
a release reads: the two-stage route (:mod:`cqsens.frontend.two_stage`) handles it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from cqsens.frontend.released_views import sources
from cqsens.frontend.sql_expr import conjuncts
from cqsens.ir.schema import Schema

__all__ = ["HavingSplit", "in_having", "scalar_release", "scalar_subqueries", "split_having"]

_NOT_SCALAR = (exp.From, exp.Join, exp.In, exp.SetOperation, exp.Lateral, exp.Subquery,
               exp.CTE)
_UNSPLIT = ("order", "limit", "offset", "qualify", "distinct")
HIDDEN = "cqsens_having_"
"""The prefix of a column a part releases only for the HAVING applied to its rows."""


def scalar_subqueries(tree: exp.Expr) -> list[exp.Subquery]:
    """The subqueries of ``tree`` in an expression position (not a FROM/JOIN item, an
    ``IN`` list or a set operation's branch) whose body is one SELECT of one item,
    deepest first."""
    found = [s for s in tree.find_all(exp.Subquery)
             if isinstance(s.this, exp.Select) and not isinstance(s.parent, _NOT_SCALAR)
             and len(s.this.expressions) == 1]
    found.sort(key=lambda s: -s.depth)
    return found


def _names(table: exp.Table, ctes: Mapping[str, exp.CTE], schema: Schema | None) -> set[str]:
    """The column names of ``table`` (lower case): a ``WITH`` table's items or column list,
    else the schema's columns (none without a schema)."""
    name = table.name.lower()
    if name in ctes and not table.args.get("db"):
        cte = ctes[name]
        alias = cte.args.get("alias")
        listed = alias.columns if isinstance(alias, exp.TableAlias) else []
        if listed:
            return {c.name.lower() for c in listed}
        body = cte.this
        while isinstance(body, (exp.SetOperation, exp.Subquery)):
            body = body.this
        if not isinstance(body, exp.Select):
            return set()
        return {e.alias_or_name.lower() for e in body.expressions}
    relation = schema.find(table.name) if schema is not None else None
    return {c.lower() for c in relation.columns} if relation is not None else set()


def _uncorrelated(select: exp.Select, ctes: Mapping[str, exp.CTE],
                  schema: Schema | None) -> bool:
    """Whether every column of ``select`` belongs to one of its own FROM/JOIN tables (an
    unqualified one: to a table whose columns are known to hold it)."""
    items = sources(select)
    if items is None:
        return False
    known = {alias: _names(table, ctes, schema) for alias, table in items.items()}
    for column in select.find_all(exp.Column):
        if column.table:
            if column.table.lower() not in items:
                return False
        elif not any(column.name.lower() in names for names in known.values()):
            return False
    return True


def _fixed(key: exp.Expr, where: exp.Expr | None) -> bool:
    """Whether a top-level ``WHERE`` conjunct equates the column ``key`` with a literal."""
    if not isinstance(key, exp.Column) or where is None:
        return False
    for part in conjuncts(where.this):
        if not isinstance(part, exp.EQ):
            continue
        for side, other in ((part.this, part.expression), (part.expression, part.this)):
            if isinstance(side, exp.Column) and isinstance(other, exp.Literal) \
                    and side.name.lower() == key.name.lower() \
                    and (not side.table or not key.table
                         or side.table.lower() == key.table.lower()):
                return True
    return False


def scalar_release(select: exp.Select, ctes: Mapping[str, exp.CTE],
                   schema: Schema | None) -> exp.Select | None:
    """The statement that releases the scalar subquery ``select``, or None when it is not
    one uncorrelated aggregate over named tables.

    A ``GROUP BY`` whose every key a ``WHERE`` conjunct fixes to a literal has at most one
    group: it is dropped (the same value, NULL when no row is left, for every aggregate but
    COUNT, which is then refused).
    """
    item = select.expressions[0]
    if any(select.args.get(k) for k in (*_UNSPLIT, "having", "with_", "with")):
        return None
    if item.find(exp.AggFunc) is None or item.find(exp.Window) is not None \
            or isinstance(item.unalias(), exp.Star):
        return None
    if any(n is not select for n in select.find_all(exp.Select)):
        return None  # a subquery inside: not a single release
    if not _uncorrelated(select, ctes, schema):
        return None
    body = select.copy()
    group = select.args.get("group")
    if group is not None:
        where = select.args.get("where")
        if group.args.get("rollup") or group.args.get("cube") \
                or group.args.get("grouping_sets") \
                or not all(_fixed(k, where) for k in group.expressions) \
                or item.find(exp.Count) is not None:
            return None
        body.set("group", None)
    return body


def in_having(sub: exp.Subquery, select: exp.Select) -> bool:
    """Whether ``sub`` is inside the HAVING of ``select`` (not of a subquery of it)."""
    having = select.args.get("having")
    return having is not None and sub.find_ancestor(exp.Having) is having


@dataclass(frozen=True, slots=True)
class HavingSplit:
    """An aggregating SELECT split into its release and the HAVING applied to its rows.

    Attributes
    ----------
    released : exp.Select
        The SELECT without the moved conjuncts, with a hidden item (``cqsens_having_i``)
        for each aggregate or group column they read that it does not select.
    columns : tuple of str
        The names of ``released``'s items (the written ones, then the hidden ones).
    visible : tuple of str
        The names of the written items.
    condition : exp.Expr
        The moved conjuncts, over ``columns``.
    """

    released: exp.Select
    columns: tuple[str, ...]
    visible: tuple[str, ...]
    condition: exp.Expr


def split_having(select: exp.Select, columns: Sequence[str],
                 moved: Callable[[exp.Expr], bool]) -> HavingSplit | None:
    """``select`` (its items named ``columns``) without the conjuncts of its HAVING that
    ``moved`` picks, and those conjuncts over its released columns; None when there are
    none, or when the SELECT computes after its HAVING (a window, ORDER BY, LIMIT,
    DISTINCT), or a moved conjunct reads a column it neither selects nor groups by."""
    having = select.args.get("having")
    if having is None or any(select.args.get(k) for k in _UNSPLIT) \
            or any(e.find(exp.Window) is not None for e in select.expressions) \
            or len({c.lower() for c in columns}) != len(columns):
        return None
    parts = conjuncts(having.this)
    out = [p.copy() for p in parts if moved(p)]
    kept = [p.copy() for p in parts if not moved(p)]
    if not out:
        return None
    released = select.copy()
    released.set("having", exp.Having(this=exp.and_(*kept)) if kept else None)
    names = list(columns)
    for condition in out:
        for node in _reads(condition):
            name = _column_for(node, select, names, released)
            if name is None:
                return None
            node.replace(exp.Column(this=exp.to_identifier(name)))
    condition = exp.and_(*out) if len(out) > 1 else out[0]
    return HavingSplit(released, tuple(names), tuple(columns), condition)


def _reads(condition: exp.Expr) -> list[exp.Expr]:
    """The outermost aggregates of ``condition`` and its columns outside them (not those
    of a subquery in it, which reads its own rows)."""
    found: list[exp.Expr] = []
    for node in condition.find_all(exp.AggFunc, exp.Column):
        if not any(isinstance(a, (exp.AggFunc, exp.Select)) for a in _ancestors(node, condition)):
            found.append(node)
    return found


def _ancestors(node: exp.Expr, top: exp.Expr) -> list[exp.Expr]:
    out = []
    parent = node.parent
    while parent is not None and parent is not top.parent:
        out.append(parent)
        parent = parent.parent
    return out


def _column_for(node: exp.Expr, select: exp.Select, names: list[str],
                released: exp.Select) -> str | None:
    """The released column that holds ``node`` (an aggregate or a group column), a hidden
    one added to ``released`` (and ``names``) when no item selects it."""
    text = node.sql().lower()
    for item, name in zip(select.expressions, names, strict=False):
        value = item.unalias()
        if value.sql().lower() == text or (
                isinstance(node, exp.Column) and isinstance(value, exp.Column)
                and value.name.lower() == node.name.lower()
                and (not node.table or value.table.lower() == node.table.lower())):
            return name
    if isinstance(node, exp.Column):
        group = select.args.get("group")
        keys = {g.sql().lower() for g in group.expressions} if group is not None else set()
        if text not in keys and node.name.lower() not in keys:
            return None
    for item in released.expressions[len(select.expressions):]:
        if item.unalias().sql().lower() == text:
            return str(item.alias)
    name = f"{HIDDEN}{len(names) - len(select.expressions) + 1}"
    released.append("expressions", exp.alias_(node.copy(), exp.to_identifier(name)))
    names.append(name)
    return name
