"""Release points and post-processing: HAVING and window functions over the aggregated rows.

An aggregate over private rows is a *release*: its value gets noise calibrated
to its sensitivity.  Whatever the statement computes from the released values
only is *post-processing* and costs no privacy (Dwork and Roth 2014, Prop 2.1):
a ``HAVING`` that filters groups by their aggregates and keys, a window function
over the aggregated rows (``RANK() OVER (ORDER BY COUNT(*) DESC)``), ``ORDER
BY`` and ``LIMIT``.  :func:`split_post_processing` takes these off a SELECT:
the aggregates they read become released items of the statement (so their
sensitivity is bounded with the others), and the statement left is the one
analysed.  ``cqsens release`` computes them on the noisy values.

Anything that reads the rows themselves is refused by name: a window function
whose argument is a column that is not a group key, a subquery in ``HAVING``
(a data-dependent threshold: a two-stage release, not yet supported), or a
window function in a statement that does not aggregate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from cqsens.frontend.select_items import is_aggregate

__all__ = ["PostProcessing", "group_keys", "split_post_processing", "statement_aggregates"]

Reject = Callable[[exp.Expr, str, str], Exception]


@dataclass(frozen=True, slots=True)
class PostProcessing:
    """What :func:`split_post_processing` took off a SELECT, for the notes."""

    having: bool = False
    windows: int = 0
    added: tuple[str, ...] = ()  # the aggregates added to the released items


def statement_aggregates(node: exp.Expr) -> list[exp.Expr]:
    """The aggregates of the statement that ``node`` reads: inside a window function, the
    aggregates under its function (``COUNT(*)`` in ``SUM(COUNT(*)) OVER ()``), not the
    window's own function."""
    out: list[exp.Expr] = []

    def walk(current: exp.Expr, window_function: exp.Expr | None) -> None:
        if is_aggregate(current) and current is not window_function:
            out.append(current)
            return
        if isinstance(current, exp.Window):
            window_function = current.this
        for child in current.iter_expressions():
            walk(child, window_function)

    walk(node, None)
    return out


def group_keys(select: exp.Select) -> list[exp.Expr]:
    """The GROUP BY expressions, a position (``GROUP BY 1``) or a SELECT alias replaced by
    the item it names (an alias only when no table column could be meant: it is not a
    column of the FROM tables as far as the query shows)."""
    group = select.args.get("group")
    if group is None:
        return []
    items = list(select.expressions)
    aliases = {i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias)}
    out: list[exp.Expr] = []
    for g in group.expressions:
        if isinstance(g, exp.Literal) and g.is_int and 1 <= int(g.name) <= len(items):
            item = items[int(g.name) - 1]
            out.append(item.this if isinstance(item, exp.Alias) else item)
        elif isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases:
            out.append(aliases[g.name.lower()])
        else:
            out.append(g)
    return out


def _is_key(column: exp.Column, keys: list[exp.Expr]) -> bool:
    for key in keys:
        if isinstance(key, exp.Column):
            if key.name.lower() == column.name.lower() and (
                    not key.table or not column.table or key.table.lower() == column.table.lower()):
                return True
        elif any(c == column for c in key.find_all(exp.Column)):
            return True
    return False


def _reads_only(node: exp.Expr, keys: list[exp.Expr], aliases: set[str]) -> exp.Expr | None:
    """The first column ``node`` reads outside the statement's aggregates that is neither a
    group key nor a SELECT alias (None: post-processing of released values only)."""
    inside = {id(n) for agg in statement_aggregates(node) for n in agg.walk()}
    for column in node.find_all(exp.Column):
        if id(column) in inside or _is_key(column, keys):
            continue
        if not column.table and column.name.lower() in aliases:
            continue
        return column
    return None


def split_post_processing(select: exp.Select, dialect: str | None,
                          reject: Reject) -> PostProcessing:
    """Take HAVING and the window functions over aggregated rows off ``select`` (in place).

    The aggregates they read that the SELECT list lacks are appended to it, as
    items the release computes and the post-processing reads.

    Raises
    ------
    Exception
        ``reject(node, construct, why)`` for a part that reads the rows themselves.
    """
    having = select.args.get("having")
    windowed = [item for item in select.expressions if any(True for _ in item.find_all(exp.Window))]
    if having is None and not windowed:
        return PostProcessing()
    keys = group_keys(select)
    aliases = {i.alias.lower() for i in select.expressions if isinstance(i, exp.Alias)}
    kept = [i for i in select.expressions if not any(i is w for w in windowed)]
    aggregating = bool(keys) or any(statement_aggregates(i) for i in kept)
    readers: list[exp.Expr] = [*windowed, *([having.this] if having is not None else [])]
    for node in readers:
        if any(True for _ in node.find_all(exp.Select, exp.Subquery)):
            raise reject(node, "subquery in HAVING or a window function",
                         "a threshold computed from private data is a two-stage release, "
                         "which cqsens does not run yet")
        where = "HAVING" if having is not None and node is having.this else "window function"
        if where == "window function" and not aggregating:
            raise reject(node, "window function",
                         "over the rows themselves it is not post-processing of released "
                         "aggregates; aggregate with GROUP BY first")
        column = _reads_only(node, keys, aliases)
        if column is not None:
            raise reject(column, where,
                         f"it reads {column.sql(dialect=dialect)}, which is neither a group key "
                         "nor an aggregate: only released values can be post-processed")
    present = {a.sql(dialect=dialect) for i in kept for a in statement_aggregates(i)}
    added: list[str] = []
    items = list(kept)
    for node in readers:
        for agg in statement_aggregates(node):
            text = agg.sql(dialect=dialect)
            if text not in present:
                present.add(text)
                added.append(text)
                items.append(agg.copy())
    select.set("expressions", items)
    select.set("having", None)
    return PostProcessing(having is not None, len(windowed), tuple(added))
