"""The aggregates of a SELECT list: COUNT, COUNT(DISTINCT), SUM, AVG, MEDIAN, MIN, MAX.

Each SELECT item becomes an :class:`~cqsens.ir.cq.Aggregate` and the head terms it
counts (every variable for ``COUNT(*)``, the listed columns for ``COUNT(DISTINCT)``).
sqlglot objects never leave :mod:`cqsens.frontend`.
"""

from __future__ import annotations

from typing import Protocol

from sqlglot import exp

from cqsens.frontend.sql_expr import ExprReader
from cqsens.frontend.sql_scope import Translator
from cqsens.frontend.sql_terms import literal_const
from cqsens.ir.cq import Aggregate, Term, Var


class _Query(Protocol):
    """What the aggregates read of the SELECT being translated
    (:class:`cqsens.frontend.parse_sql._Query`)."""

    tr: Translator
    distinct_expressions: bool

    def final(self, t: Term) -> Term: ...

    def term_of(self, col: exp.Column) -> Var: ...

    def column_name(self, col: exp.Column) -> str: ...

    def slot_reader(self) -> tuple[ExprReader, list[Term], list[str]]: ...

__all__ = ["aggregate_of", "limit_name"]


def limit_name(node: exp.Expr, dialect: str | None) -> str:
    """LIMIT, FETCH or TOP, as the statement spells it."""
    if isinstance(node, exp.Fetch):
        return "FETCH"
    return "TOP" if dialect in ("tsql", "teradata") else "LIMIT"


_VALUE_AGGREGATES: dict[type[exp.Expr], str] = {
    exp.Sum: "sum", exp.Avg: "avg", exp.Median: "median", exp.Min: "min", exp.Max: "max",
}


def _count(
    q: _Query, node: exp.Count, label: str, all_vars: tuple[Var, ...]
) -> tuple[Aggregate, tuple[Term, ...]]:
    arg = node.this
    if isinstance(arg, exp.Star) or arg is None or isinstance(arg, exp.Literal):
        return Aggregate("count", label), all_vars
    if isinstance(arg, exp.Distinct):
        cols = arg.expressions
        if q.distinct_expressions:
            return _distinct_rows(q, cols, label)
        if not cols or not all(isinstance(c, exp.Column) for c in cols):
            raise q.tr.unsupported(arg, "COUNT(DISTINCT expression)",
                                   "count distinct plain columns")
        terms = tuple(q.final(q.term_of(c)) for c in cols)
        return Aggregate("count_distinct", label, columns=terms), terms
    if isinstance(arg, exp.Column):
        column = q.final(q.term_of(arg))
        return Aggregate("count", label, column=column, column_name=q.column_name(arg)), all_vars
    # COUNT(CASE WHEN p THEN 1 END) counts the rows where the expression is not NULL: a
    # subset of the rows, which one tuple changes by at most as much as COUNT(*).  The
    # expression is kept: a substitution can move a row out of the subset, and exclusive
    # conditions split the rows among several such counts (rule exclusive-cases).
    found = _expression_aggregate(q, "count", arg, label)
    q.tr.notes.append(f"{label} counts the rows where its expression is not NULL, a subset of "
                      "the rows: it is bounded as COUNT(*)")
    return found, all_vars


def _distinct_rows(
    q: _Query, items: list[exp.Expr], label: str
) -> tuple[Aggregate, tuple[Term, ...]]:
    """The distinct result rows of a part of a set operation, counted by the columns they read.

    A new distinct row of expressions ``f(c)`` comes from a new distinct tuple of the
    columns ``c`` it reads (an old tuple gives an old row), so one tuple changes the
    number of distinct rows by at most as much as the number of distinct ``c``
    (docs/rules.md, rule set-operations).
    """
    terms = tuple(dict.fromkeys(q.final(q.term_of(c)) for item in items
                                for c in item.find_all(exp.Column)))
    return Aggregate("count_distinct", label, columns=terms), terms


def _expression_aggregate(q: _Query, kind: str, arg: exp.Expr, label: str) -> Aggregate:
    """A value aggregate over an expression: the typed expression over the row's terms."""
    reader, terms, names = q.slot_reader()
    expression = reader.expr(arg)
    return Aggregate(kind, label, expression=expression, terms=tuple(terms),
                     term_columns=tuple(names))


def aggregate_of(
    q: _Query, node: exp.Expr, label: str, all_vars: tuple[Var, ...]
) -> tuple[Aggregate, tuple[Term, ...]]:
    """(Aggregate, counted head terms) for one SELECT item."""
    tr = q.tr
    if isinstance(node, exp.Count):
        return _count(q, node, label, all_vars)
    kind = _VALUE_AGGREGATES.get(type(node))
    if kind is not None:
        arg = node.this
        if isinstance(arg, exp.Distinct):
            raise tr.unsupported(node, f"{kind.upper()}(DISTINCT ...)", "aggregate every row")
        if not isinstance(arg, exp.Column):
            return _expression_aggregate(q, kind, arg, label), all_vars
        column = q.final(q.term_of(arg))
        return Aggregate(kind, label, column=column, column_name=q.column_name(arg)), all_vars
    if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
        fraction = literal_const(node.this.this)
        order = node.expression
        cols = [o.this for o in order.expressions] if isinstance(order, exp.Order) else []
        if fraction is None or fraction.value != 0.5 or len(cols) != 1 \
                or not isinstance(cols[0], exp.Column):
            raise tr.unsupported(node, "PERCENTILE_CONT",
                                 "only the median PERCENTILE_CONT(0.5) of one column")
        column = q.final(q.term_of(cols[0]))
        return Aggregate("median", label, column=column,
                         column_name=q.column_name(cols[0])), all_vars
    if isinstance(node, exp.Column):
        raise tr.unsupported(node, f"plain column {node.sql()} in SELECT",
                             "select aggregates only (or GROUP BY the column)")
    if isinstance(node, exp.AggFunc):
        raise tr.unsupported(node, f"aggregate {node.key.upper()}",
                             "supported: COUNT, SUM, AVG, MEDIAN, PERCENTILE_CONT(0.5), MIN, MAX, "
                             "STDDEV and VARIANCE (as sums)")
    raise tr.unsupported(node, f"SELECT expression {node.sql()}",
                         "select aggregates only (COUNT, SUM, AVG, MEDIAN, MIN, MAX)")
