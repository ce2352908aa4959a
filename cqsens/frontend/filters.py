"""``FILTER (WHERE p)`` on aggregates, rewritten to the CASE forms the analysis reads.

An aggregate with a FILTER clause aggregates the rows where ``p`` is true; a
CASE that maps every other row to NULL gives the same value, because every
aggregate but ``COUNT(*)`` skips NULLs and ``p`` NULL is not true in either form:

* ``COUNT(*) FILTER (WHERE p)`` → ``COUNT(CASE WHEN p THEN 1 END)`` (0 over no row, as
  the original);
* ``COUNT(x) FILTER (WHERE p)`` → ``COUNT(CASE WHEN p THEN x END)``;
* ``SUM``, ``AVG``, ``MIN``, ``MAX``, ``MEDIAN`` of ``x`` likewise (NULL when no row
  qualifies, as the original).

``COUNT(DISTINCT …) FILTER`` and a FILTER on any other aggregate are refused by name.
The rewrite applies to the whole tree (subqueries, HAVING, ORDER BY), in place.
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp

from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.sql_expr import node_position

__all__ = ["rewrite_filters"]

_VALUE = (exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Median)


def rewrite_filters(tree: exp.Expr, *, source: str, dialect: str | None) -> exp.Expr:
    """``tree`` with every ``agg FILTER (WHERE p)`` as its CASE form (in place; returned).

    Parameters
    ----------
    tree : sqlglot expression
        A parsed statement.
    source : str
        File name for errors.
    dialect : str or None
        For the text of errors.

    Raises
    ------
    UnsupportedQueryError
        ``COUNT(DISTINCT …) FILTER`` or a FILTER on another aggregate.

    Examples
    --------
    >>> import sqlglot
    >>> t = sqlglot.parse_one("SELECT COUNT(*) FILTER (WHERE a > 1), SUM(b) FILTER (WHERE c) "
    ...                       "FROM t")
    >>> rewrite_filters(t, source="<sql>", dialect=None).sql()
    'SELECT COUNT(CASE WHEN a > 1 THEN 1 END), SUM(CASE WHEN c THEN b END) FROM t'
    """
    for node in list(tree.find_all(exp.Filter)):
        node.replace(_case_form(node, source, dialect))
    return tree


def _case_form(node: exp.Filter, source: str, dialect: str | None) -> exp.Expr:
    aggregate, where = node.this, node.expression
    condition = where.this if isinstance(where, exp.Where) else where
    if isinstance(aggregate, exp.Count) and not isinstance(aggregate.this, exp.Distinct):
        argument = aggregate.this
        value = exp.Literal.number(1) if argument is None or isinstance(argument, exp.Star) \
            else argument
        return exp.Count(this=_when(condition, value))
    if isinstance(aggregate, _VALUE) and not isinstance(aggregate.this, exp.Distinct):
        rewritten: exp.Expr = type(aggregate)(this=_when(condition, aggregate.this))
        return rewritten
    line, column = node_position(node)
    raise UnsupportedQueryError(
        f"{node.sql(dialect=dialect)}: FILTER (WHERE …) is read on COUNT(*), COUNT(x), SUM, "
        "AVG, MIN, MAX and MEDIAN without DISTINCT only", source=source, line=line,
        column=column, construct="FILTER (WHERE ...)")


def _when(condition: exp.Expr, value: exp.Expr) -> exp.Case:
    """``CASE WHEN condition THEN value END`` (NULL for every other row)."""
    return exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])
