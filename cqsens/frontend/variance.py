"""``STDDEV`` and ``VARIANCE`` as post-processing of released sums.

With n = COUNT(x), s = SUM(x) and q = SUM(x * x) over the same rows (NULLs of x
skipped by all three, as by the variance itself),

* ``VAR_SAMP(x)`` = (q − s·s/n) / (n − 1), ``VAR_POP(x)`` = (q − s·s/n) / n,
* ``STDDEV_SAMP(x)`` and ``STDDEV_POP(x)`` are their square roots

(``STDDEV`` and ``VARIANCE`` are the sample forms, as in PostgreSQL).  The
statement is rewritten to this arithmetic before anything reads it: COUNT(x),
SUM(x) and SUM(x * x) are released, each with its own sensitivity (the range of
``x * x`` comes by interval arithmetic from x's bounds), and the arithmetic is
post-processing of their noisy values (docs/rules.md, rule post-processing),
where a square root of a negative noisy variance is 0.  sqlglot objects never
leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from sqlglot import exp

from cqsens.errors import UnsupportedQueryError
from cqsens.frontend.sql_expr import node_position

__all__ = ["rewrite_variance"]

_SAMPLE = (exp.StddevSamp, exp.Stddev, exp.Variance)
_ROOT = (exp.StddevSamp, exp.Stddev, exp.StddevPop)
_KINDS = (exp.StddevSamp, exp.Stddev, exp.StddevPop, exp.Variance, exp.VariancePop)


def _moments(node: exp.Expr) -> exp.Expr:
    """The arithmetic over COUNT, SUM and SUM of squares that ``node`` computes."""
    x = node.this
    count = exp.Count(this=x.copy())
    total = exp.Sum(this=x.copy())
    squares = exp.Sum(this=exp.Mul(this=exp.Paren(this=x.copy()),
                                   expression=exp.Paren(this=x.copy())))
    spread = exp.Sub(this=squares, expression=exp.Div(
        this=exp.Mul(this=exp.Mul(this=total, expression=total.copy()),
                     expression=exp.Literal.number("1.0")),
        expression=count))
    divisor: exp.Expr = count.copy()
    if isinstance(node, _SAMPLE):
        divisor = exp.Paren(this=exp.Sub(this=divisor, expression=exp.Literal.number(1)))
    variance = exp.Div(this=exp.Paren(this=spread), expression=divisor)
    return exp.Sqrt(this=variance) if isinstance(node, _ROOT) else exp.Paren(this=variance)


def rewrite_variance(tree: exp.Expr, *, source: str, dialect: str | None) -> exp.Expr:
    """``tree`` with every STDDEV / VARIANCE aggregate as arithmetic over released sums
    (``tree`` changed in place and returned); the parameters are those of
    :func:`cqsens.frontend.filters.rewrite_filters`.

    Raises
    ------
    UnsupportedQueryError
        For ``STDDEV(DISTINCT …)`` / ``VARIANCE(DISTINCT …)``.

    Examples
    --------
    >>> import sqlglot
    >>> t = sqlglot.parse_one("SELECT g, VAR_POP(x) FROM t GROUP BY g")
    >>> rewrite_variance(t, source="<sql>", dialect=None).sql()
    'SELECT g, ((SUM((x) * (x)) - SUM(x) * SUM(x) * 1.0 / COUNT(x)) / COUNT(x)) FROM t GROUP BY g'
    """
    for node in list(tree.find_all(*_KINDS)):
        if isinstance(node.this, exp.Distinct) or node.this is None:
            line, column = node_position(node)
            raise UnsupportedQueryError(
                f"{node.sql(dialect=dialect)}: STDDEV and VARIANCE are read over one column or "
                "expression without DISTINCT only", source=source, line=line, column=column,
                construct=f"aggregate {node.key.upper()}")
        replacement = _moments(node)
        if node is tree:
            return replacement
        node.replace(replacement)
    return tree
