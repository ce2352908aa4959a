"""Split ``GROUP BY ROLLUP``, ``CUBE`` and ``GROUPING SETS`` into one histogram per set.

``GROUP BY ROLLUP (a, b)`` releases the histograms grouped by ``(a, b)``, by
``(a)`` and over all rows: three releases side by side, so ℓ1 adds and ℓ2 is the
root of the sum of squares (docs/rules.md, rule grouping-sets).  Each grouping
set becomes its own statement: the same SELECT grouped by that set, without
the items that are NULL in its rows (a column outside the set), with each
``GROUPING(…)`` replaced by its value in that set (:mod:`grouping_values`).
The MySQL and T-SQL spellings ``GROUP BY a, b WITH ROLLUP`` / ``WITH CUBE`` are
read too.  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from sqlglot import exp

from cqsens.frontend.grouping_values import substitute_grouping
from cqsens.frontend.select_items import is_aggregate
from cqsens.frontend.set_operations import SetSplit

__all__ = ["MAX_GROUPING_SETS", "split_grouping_sets"]

Reject = Callable[[exp.Expr, str, str], Exception]
MAX_GROUPING_SETS = 64
"""The most grouping sets one GROUP BY may make (CUBE of 6 columns makes 64)."""

GroupingSet = list[exp.Expr]


def _elements(node: exp.Expr) -> list[exp.Expr]:
    """A ROLLUP or CUBE element: a column or expression, or a parenthesised list of them."""
    return list(node.expressions) if isinstance(node, exp.Tuple) else [node]


def _sets(item: exp.Expr, reject: Reject) -> list[GroupingSet]:
    """The grouping sets one GROUP BY item stands for."""
    if isinstance(item, exp.Rollup):
        parts = [_elements(e) for e in item.expressions]
        return [[e for p in parts[:n] for e in p] for n in range(len(parts), -1, -1)]
    if isinstance(item, exp.Cube):
        parts = [_elements(e) for e in item.expressions]
        if 2 ** len(parts) > MAX_GROUPING_SETS:
            raise reject(item, "CUBE", f"it makes {2 ** len(parts)} grouping sets; cqsens reads "
                         f"at most {MAX_GROUPING_SETS}")
        return [[e for p, keep in zip(parts, mask, strict=True) if keep for e in p]
                for mask in itertools.product((True, False), repeat=len(parts))]
    if isinstance(item, exp.GroupingSets):
        out: list[GroupingSet] = []
        for e in item.expressions:
            if isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                out.extend(_sets(e, reject))
            else:
                out.append(_elements(e))
        return out
    return [[item]]


def _grouping_sets(group: exp.Group, reject: Reject) -> tuple[str, list[GroupingSet]] | None:
    items = list(group.expressions)
    trailing = next((key for key in ("rollup", "cube") if group.args.get(key)), None)
    if trailing is not None:  # GROUP BY a, b WITH ROLLUP
        node: exp.Expr = exp.Rollup(expressions=items) if trailing == "rollup" \
            else exp.Cube(expressions=items)
        items = [node]
    special = [i for i in items if isinstance(i, (exp.Rollup, exp.Cube, exp.GroupingSets))]
    if not special:
        return None
    if group.args.get("totals"):
        raise reject(group, "WITH TOTALS", "write the grand total as GROUPING SETS")
    sets: list[GroupingSet] = [[]]
    for item in items:
        sets = [[*a, *b] for a in sets for b in _sets(item, reject)]
        if len(sets) > MAX_GROUPING_SETS:
            raise reject(group, "GROUP BY grouping sets", f"they are more than "
                         f"{MAX_GROUPING_SETS}; cqsens reads at most {MAX_GROUPING_SETS}")
    name = {exp.Rollup: "ROLLUP", exp.Cube: "CUBE", exp.GroupingSets: "GROUPING SETS"}
    return " and ".join(dict.fromkeys(name[type(i)] for i in special)), sets


def _shown(item: exp.Expr, keys: GroupingSet) -> bool:
    """Whether a SELECT item without aggregate is a value (not NULL) in this set's rows."""
    value = item.this if isinstance(item, exp.Alias) else item
    if any(True for _ in value.find_all(exp.Grouping, exp.GroupingId)):
        return False
    key_sql = {k.sql().lower() for k in keys}
    key_columns = {c.sql().lower() for k in keys for c in k.find_all(exp.Column)}
    columns = [c.sql().lower() for c in value.find_all(exp.Column)]
    return value.sql().lower() in key_sql or (bool(columns)
                                              and all(c in key_columns for c in columns))


def _aggregates(item: exp.Expr) -> bool:
    """Whether a SELECT item holds an aggregate (``GROUPING(…)`` is not one)."""
    return any(is_aggregate(n) and not isinstance(n, (exp.Grouping, exp.GroupingId))
               for n in item.find_all(exp.AggFunc, exp.WithinGroup))


def _described(keys: GroupingSet, dialect: str | None) -> str:
    return "(" + ", ".join(k.sql(dialect=dialect) for k in keys) + ")"


def split_grouping_sets(tree: exp.Select, reject: Reject, dialect: str | None) -> SetSplit | None:
    """One statement per grouping set of ``tree``'s GROUP BY, or None without ROLLUP,
    CUBE or GROUPING SETS.

    The parameters are those of :func:`cqsens.frontend.plan.build_plan`; ``tree`` is not changed.
    """
    group = tree.args.get("group")
    if not isinstance(group, exp.Group):
        return None
    found = _grouping_sets(group, reject)
    if found is None:
        return None
    operator, sets = found
    notes: list[str] = []
    whole = tree.copy()
    cut = [key for key in ("order", "limit", "offset") if whole.args.get(key) is not None]
    for key in cut:
        whole.set(key, None)
    if cut:
        notes.append("ORDER BY, LIMIT and OFFSET act on the released result: cqsens analyses "
                     "every histogram in full, and they must be applied to the noisy result")
    parts: list[exp.Select] = []
    for keys in sets:
        part = whole.copy()
        substituted = [substitute_grouping(e, keys) for e in part.expressions]
        items = [e for e in substituted if _aggregates(e) or _shown(e, keys)]
        part.set("expressions", items)
        if isinstance(part.args.get("having"), exp.Having):
            part.set("having", substitute_grouping(part.args["having"], keys))
        part.set("group", exp.Group(expressions=[k.copy() for k in keys]) if keys else None)
        parts.append(part)
    shown = ", ".join(_described(k, dialect) for k in sets)
    notes.append(
        f"GROUP BY {operator} releases {len(sets)} histograms, one per grouping set ({shown}): "
        "they are released side by side, so ℓ1 adds and ℓ2 is the root of the sum of squares "
        "(docs/rules.md, rule grouping-sets)")
    split = SetSplit("concat", operator, parts, [False] * len(parts),
                     whole.sql(dialect=dialect), notes)
    split.names = [f"grouping set {_described(k, dialect)}" for k in sets]
    return split
