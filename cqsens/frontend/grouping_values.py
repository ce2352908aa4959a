"""``GROUPING(…)`` as the constant it is in each grouping set.

``GROUPING(c1, …, cn)`` is a bit mask that depends only on the grouping set a
result row belongs to: bit ``n - i`` is 1 when ``ci`` is not a key of that set
(ISO SQL; PostgreSQL, DuckDB, SQL Server, Spark and Oracle agree, and
``GROUPING_ID`` is the same mask).  It reads no row, so it is the same in both
neighbouring databases (docs/rules.md, rule grouping-sets).  Once a statement
with ``ROLLUP``, ``CUBE`` or ``GROUPING SETS`` is split into one statement per
grouping set, each ``GROUPING(…)`` is replaced by its value for that set, and
the constant ``CASE`` conditions and arithmetic it leaves are folded, so that an
item such as TPC-DS q86's ``RANK() OVER (PARTITION BY GROUPING(a) +
GROUPING(b), CASE WHEN GROUPING(b) = 0 THEN a END ORDER BY SUM(x) DESC)``
reads only the set's keys and its aggregates: a window over aggregated rows,
post-processing (rule post-processing).  sqlglot objects never leave
:mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

__all__ = ["grouping_mask", "substitute_grouping"]


def grouping_mask(arguments: list[exp.Expr], keys: list[exp.Expr]) -> int:
    """The value of ``GROUPING(arguments…)`` in the rows of the grouping set ``keys``.

    Parameters
    ----------
    arguments : list of sqlglot expressions
        The arguments of ``GROUPING`` (or ``GROUPING_ID``), in order.
    keys : list of sqlglot expressions
        The grouping set's keys.

    Returns
    -------
    int
        The mask: for the i-th of n arguments, bit ``n - 1 - i`` is 1 when the
        argument is not a key of the set (``GROUPING(a, b)`` is 2 when only
        ``b`` is a key).
    """
    mask = 0
    for argument in arguments:
        mask = 2 * mask + (0 if any(_same(argument, k) for k in keys) else 1)
    return mask


def _same(argument: exp.Expr, key: exp.Expr) -> bool:
    """Whether a GROUPING argument names a key: the same text, or the same column
    with a table qualifier on one side only (``GROUPING(i_category)``, key
    ``item.i_category``)."""
    if argument.sql().lower() == key.sql().lower():
        return True
    return (isinstance(argument, exp.Column) and isinstance(key, exp.Column)
            and (not argument.table or not key.table)
            and argument.name.lower() == key.name.lower())


def _arguments(node: exp.Expr) -> list[exp.Expr]:
    """The arguments of a ``GROUPING`` / ``GROUPING_ID`` node, in order."""
    return [node.this, *node.expressions] if node.this is not None else list(node.expressions)


def _constant(node: exp.Expr) -> bool:
    """Whether ``node`` reads no column, aggregate, window or subquery."""
    return not any(True for _ in node.find_all(exp.Column, exp.AggFunc, exp.Window,
                                                exp.Subquery, exp.Select, exp.Star))


def _fold_cases(item: exp.Expr) -> exp.Expr:
    """Fold the ``CASE`` branches whose condition reads no column (deepest first)."""
    for case in reversed(list(item.find_all(exp.Case))):
        if case.this is not None:  # CASE x WHEN …: left as written
            continue
        kept: list[exp.Expr] = []
        chosen: exp.Expr | None = None
        for branch in case.args.get("ifs") or []:
            condition = branch.this
            if not _constant(condition):
                kept.append(branch)
                continue
            value = simplify(condition.copy())
            if isinstance(value, exp.Boolean) and not value.this:
                continue  # never taken
            if isinstance(value, exp.Boolean) and value.this and not kept:
                chosen = branch.args["true"]
                break
            kept.append(branch)
        if chosen is None and not kept:
            chosen = case.args.get("default") or exp.null()
        if chosen is not None:
            replacement = chosen.copy()
            if case is item:
                return replacement
            case.replace(replacement)
        else:
            case.set("ifs", kept)
    return item


def _fold_arithmetic(item: exp.Expr) -> exp.Expr:
    """Fold ``+``, ``-`` and ``*`` between integer literals (deepest first)."""
    for node in reversed(list(item.find_all(exp.Add, exp.Sub, exp.Mul))):
        left, right = node.left, node.right
        if not (isinstance(left, exp.Literal) and isinstance(right, exp.Literal)
                and not left.is_string and not right.is_string):
            continue
        try:
            a, b = int(left.this), int(right.this)
        except ValueError:
            continue
        value = a + b if isinstance(node, exp.Add) else (
            a - b if isinstance(node, exp.Sub) else a * b)
        replacement = exp.Literal.number(value)
        if node is item:
            return replacement
        node.replace(replacement)
    return item


def substitute_grouping(item: exp.Expr, keys: list[exp.Expr]) -> exp.Expr:
    """A copy of ``item`` with every ``GROUPING(…)`` replaced by its value for ``keys``.

    Parameters
    ----------
    item : sqlglot expression
        A SELECT item (or ORDER BY / HAVING expression) of one grouping set's statement.
    keys : list of sqlglot expressions
        That grouping set's keys.

    Returns
    -------
    sqlglot expression
        The item with ``GROUPING(…)`` and ``GROUPING_ID(…)`` as integer literals, then
        the integer arithmetic and the ``CASE`` conditions over constants folded; ``item``
        itself when it has no ``GROUPING``.
    """
    if not any(True for _ in item.find_all(exp.Grouping, exp.GroupingId)):
        return item
    copy = item.copy()
    for node in list(copy.find_all(exp.Grouping, exp.GroupingId)):
        literal = exp.Literal.number(grouping_mask(_arguments(node), keys))
        if node is copy:
            return literal
        node.replace(literal)
    return _fold_cases(_fold_arithmetic(copy))
