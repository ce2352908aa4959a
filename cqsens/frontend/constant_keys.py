"""Constant GROUP BY keys: a key that reads no column is one value in every row.

``GROUP BY channel, d_year`` over ``(SELECT 'store' AS channel, … UNION ALL
SELECT 'web' AS channel, …)`` reaches each branch as ``GROUP BY 'store', d_year``
(TPC-DS q76): the constant is the same in every row, so the groups of
``('store', d_year)`` are exactly the groups of ``(d_year)``, with the same rows
and the same aggregates; the constant column of the result is the same in both
neighbouring databases.  Such a key is dropped from the grouping when another key
remains; a GROUP BY of constants only (whose one group is absent on an empty
input, where an ungrouped aggregate still answers) is left to the caller's
refusal.  sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["constant_keys_note", "drop_constant_keys", "is_constant_key"]


def is_constant_key(key: exp.Expr) -> bool:
    """Whether a GROUP BY item reads no column, aggregate, window, subquery or parameter.

    Parameters
    ----------
    key : sqlglot expression
        One item of a GROUP BY list.
    """
    if isinstance(key, (exp.Placeholder, exp.Parameter, exp.Star)):
        return False
    return not any(True for _ in key.find_all(
        exp.Column, exp.AggFunc, exp.Window, exp.Select, exp.Subquery, exp.Placeholder,
        exp.Parameter, exp.Star, exp.Anonymous))


def drop_constant_keys(keys: list[exp.Expr]) -> tuple[list[exp.Expr], list[exp.Expr]]:
    """The GROUP BY items to group by, and the constant ones dropped.

    Parameters
    ----------
    keys : list of sqlglot expressions
        The GROUP BY list.

    Returns
    -------
    (kept, dropped) : tuple of lists
        ``kept`` is ``keys`` without its constant items when at least one item is
        not constant (the partition of the rows is the same); otherwise ``keys``
        itself, and ``dropped`` is empty.
    """
    dropped = [k for k in keys if is_constant_key(k)]
    if not dropped or len(dropped) == len(keys):
        return keys, []
    return [k for k in keys if not is_constant_key(k)], dropped


def constant_keys_note(dropped: list[exp.Expr], dialect: str | None) -> str:
    """The explanation's note for the constant keys dropped from a GROUP BY."""
    shown = ", ".join(k.sql(dialect=dialect) for k in dropped)
    return (f"GROUP BY {shown}: a constant key, the same in every row, is left out of the "
            "grouping: the groups, their rows and their aggregates are those of the other keys")
