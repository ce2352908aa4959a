"""Public subqueries are constants: a WHERE condition that reads private rows only through the
outer row and public tables through its subqueries.

A subquery that reads only public tables (``--public``) has the same result in
both neighbouring databases, whatever it computes: an aggregate, a ``HAVING``, a
``NOT IN`` or ``NOT EXISTS``, a scalar threshold.  So a WHERE conjunct whose
every subquery is public is a fixed predicate of the outer row (``l_partkey IN
S`` for a fixed set ``S``), a filter like any other: it can only remove answers,
so the bound computed without it is sound (docs/rules.md, rule
public-subqueries).  :func:`drop_public_conjuncts` takes such conjuncts off the
analysed statement and returns them; the release runs the statement as written,
so the database evaluates them, and the witness search, which does not build
public tables, is skipped for the statement.
"""

from __future__ import annotations

from collections.abc import Callable, Set

from sqlglot import exp

from cqsens.frontend.sql_expr import conjuncts

__all__ = ["drop_conjuncts", "drop_public_conjuncts"]


def _public_only(node: exp.Expr, public: Set[str]) -> bool:
    """Whether every subquery under ``node`` reads only public tables (and there is one)."""
    subqueries = [n for n in node.find_all(exp.Select)]
    if not subqueries:
        return False
    ctes = {c.alias_or_name.lower() for c in node.find_all(exp.CTE)}
    for sub in subqueries:
        for table in sub.find_all(exp.Table):
            name = table.name.lower()
            if name not in public and name not in ctes:
                return False
    return True


def drop_public_conjuncts(select: exp.Select, public: Set[str], dialect: str | None
                          ) -> list[str]:
    """Take the WHERE conjuncts whose subqueries are all public off ``select`` (in place).

    Parameters
    ----------
    select : sqlglot Select
        The statement (its outer query).
    public : set of str
        The public tables, in lower case.
    dialect : str or None
        For the texts returned.

    Returns
    -------
    list of str
        The conjuncts taken off, as SQL.
    """
    if not public:
        return []
    return drop_conjuncts(select, lambda cond: _public_only(cond, public), dialect)


def drop_conjuncts(select: exp.Select, fixed: Callable[[exp.Expr], bool],
                   dialect: str | None) -> list[str]:
    """Take the WHERE conjuncts ``fixed`` accepts off ``select`` (in place); their SQL."""
    where = select.args.get("where")
    if where is None:
        return []
    kept: list[exp.Expr] = []
    dropped: list[str] = []
    for cond in conjuncts(where.this):
        if fixed(cond):
            dropped.append(cond.sql(dialect=dialect))
        else:
            kept.append(cond)
    if dropped:
        select.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
    return dropped
