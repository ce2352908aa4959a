"""Derived tables' column lists written as aliases, for databases that lack them.

``FROM (SELECT c_custkey, COUNT(o_orderkey) FROM …) AS c_orders (c_custkey, c_count)``
(TPC-H q13) names the derived table's columns in its alias.  SQLite does not accept
that form; naming each projection instead, ``SELECT c_custkey AS c_custkey,
COUNT(o_orderkey) AS c_count``, is the same table in every database.  sqlglot objects
never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["inline_column_lists"]


def _first_select(node: exp.Expr) -> exp.Select | None:
    while isinstance(node, exp.SetOperation):
        node = node.this
    return node if isinstance(node, exp.Select) else None


def inline_column_lists(tree: exp.Expr) -> exp.Expr:
    """``tree`` with each derived table's column list moved into its projections' aliases.

    A set operation takes its column names from its first branch, so that branch is
    the one renamed.  A derived table whose projections do not match its list one to
    one (``SELECT *``, a different count) is left as written: the database then names
    the error.  ``tree`` is changed in place and returned.

    Examples
    --------
    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT n FROM (SELECT a, COUNT(*) FROM t GROUP BY a) AS s (k, n)")
    >>> inline_column_lists(q).sql()
    'SELECT n FROM (SELECT a AS k, COUNT(*) AS n FROM t GROUP BY a) AS s'
    """
    for sub in list(tree.find_all(exp.Subquery)):
        alias = sub.args.get("alias")
        if not isinstance(alias, exp.TableAlias) or not alias.columns:
            continue
        select = _first_select(sub.this)
        if select is None:
            continue
        names = list(alias.columns)
        projections = select.expressions
        if len(projections) != len(names) or any(isinstance(p, exp.Star) or p.is_star
                                                 for p in projections):
            continue
        select.set("expressions", [exp.alias_(p.unalias(), name.name, quoted=name.quoted)
                                   for p, name in zip(projections, names, strict=True)])
        alias.set("columns", None)
    return tree
