"""Move the conjuncts that every branch of an OR shares out of the OR.

``(A AND B) OR (A AND C)`` is equivalent to ``A AND (B OR C)`` (distributivity,
in SQL's three-valued logic too: AND and OR are the min and max of the truth
order false < unknown < true, a distributive lattice).  Taking ``A`` out lets an
equality ``p_partkey = l_partkey`` repeated in every branch join the tables,
where under the OR it could only filter.  When a branch has nothing left, the
OR is implied by the shared conjuncts and is dropped.  The rewriting keeps the
query's meaning, so it changes no count.  sqlglot objects never leave
:mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp

from cqsens.frontend.sql_expr import flatten as _flatten

__all__ = ["factor_common_conjuncts"]


def _factor(node: exp.Or) -> list[exp.Expr]:
    """The shared conjuncts of ``node``'s branches, then the OR of what is left (if anything)."""
    branches = [_flatten(b, exp.And) for b in _flatten(node, exp.Or)]
    keyed = [{part.sql(): part for part in branch} for branch in branches]
    common = [key for key in keyed[0] if all(key in k for k in keyed[1:])]
    if not common:
        return [node]
    shared = [keyed[0][key] for key in common]
    rests = [[part for part in branch if part.sql() not in common] for branch in branches]
    if any(not rest for rest in rests):
        return shared  # that branch holds whenever the shared conjuncts do
    left = exp.or_(*(exp.and_(*rest, copy=False) for rest in rests), copy=False)
    return [*shared, *factor_common_conjuncts([left])]


def factor_common_conjuncts(conjuncts: list[exp.Expr]) -> list[exp.Expr]:
    """Rewrite each OR conjunct as its branches' shared conjuncts AND the OR of the rest.

    Parameters
    ----------
    conjuncts : list of sqlglot expressions
        The top-level conjuncts of a WHERE clause (and ON conditions).

    Returns
    -------
    list of sqlglot expressions
        An equivalent list of conjuncts; the shared ones come out of their OR.
    """
    out: list[exp.Expr] = []
    for cond in conjuncts:
        inner = cond
        while isinstance(inner, exp.Paren):
            inner = inner.this
        out.extend(_factor(inner) if isinstance(inner, exp.Or) else [cond])
    return out
