"""Read the SELECT items of an aggregate query: the aggregates inside an arithmetic
combination, and the items that only repeat the group key.

``100.00 * SUM(a) / SUM(b)`` releases two aggregates: each is its own release
with its own sensitivity, and the arithmetic is post-processing of the noisy
values (post-processing keeps differential privacy: Dwork and Roth, The
Algorithmic Foundations of Differential Privacy, 2014, Prop 2.1).  sqlglot
objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["aggregates_in", "is_aggregate"]

_COMBINERS = (exp.Paren, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Neg, exp.Literal, exp.Cast,
              exp.Abs, exp.Round, exp.Null, exp.Sqrt)


def is_aggregate(node: exp.Expr) -> bool:
    """True for an aggregate call (``SUM(...)``, ``PERCENTILE_CONT(...) WITHIN GROUP``)."""
    return isinstance(node, (exp.AggFunc, exp.WithinGroup))


def aggregates_in(node: exp.Expr) -> list[exp.Expr] | None:
    """The aggregates an arithmetic combination of aggregates and constants releases.

    Returns
    -------
    list of sqlglot expressions or None
        The aggregate calls, left to right, when ``node`` is built from them with
        arithmetic and constants only (``[node]`` for an aggregate itself); None
        otherwise (a column outside every aggregate, a function, no aggregate).
    """
    found: list[exp.Expr] = []
    stack: list[exp.Expr] = [node]
    while stack:
        current = stack.pop()
        if is_aggregate(current):
            found.append(current)
            continue
        if not isinstance(current, _COMBINERS):
            return None
        if isinstance(current, exp.Cast):
            stack.append(current.this)
            continue
        children = [v for v in current.args.values() if isinstance(v, exp.Expr)]
        stack.extend(reversed(children))
    return found or None
