"""SQL from the typed IR, at the edge: sqlglot builds the text in any dialect.

Used by the witness stage (SQLite: filters of generated queries, CHECK
constraints of written scripts, predicates probed on single values) and by
displays in the user's dialect.  Operands are parenthesised wherever they are
compound, so the text never depends on a dialect's precedence rules.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from cqsens.frontend.column_lists import inline_column_lists
from cqsens.frontend.dates import fold_date_arithmetic, sqlite_extracts
from cqsens.ir import expr as ir

__all__ = ["ColumnRef", "predicate_sql", "remember_sqlite", "sqlite_query"]

SqlValue = int | float | str | None


@dataclass(frozen=True, slots=True)
class ColumnRef:
    """A column ``table.name`` (quoted), standing for a slot."""

    table: str | None
    name: str


SlotValue = ColumnRef | SqlValue

_COMPARE: dict[str, type[exp.Binary]] = {
    "=": exp.EQ, "<>": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE,
}
_ARITH: dict[str, type[exp.Binary]] = {
    "+": exp.Add, "-": exp.Sub, "*": exp.Mul, "/": exp.Div, "%": exp.Mod, "||": exp.DPipe,
}


def _value(value: SlotValue) -> exp.Expr:
    if isinstance(value, ColumnRef):
        return exp.column(value.name, table=value.table, quoted=True)
    if value is None:
        return exp.null()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = exp.Literal.number(abs(value))
        return exp.Neg(this=number) if value < 0 else number
    return exp.Literal.string(str(value))


def _literal(lit: ir.Literal) -> exp.Expr:
    value = lit.value
    if lit.kind is ir.Kind.NULL:
        return exp.null()
    if lit.kind is ir.Kind.BOOLEAN:
        return exp.Boolean(this=bool(value))
    if lit.kind in (ir.Kind.INTEGER, ir.Kind.DECIMAL):
        assert isinstance(value, (int, Decimal))
        number = exp.Literal.number(str(abs(value)))
        return exp.Neg(this=number) if value < 0 else number
    if lit.kind in (ir.Kind.DATE, ir.Kind.TIMESTAMP):
        return exp.cast(exp.Literal.string(str(value)), lit.kind.value.upper())
    if lit.kind is ir.Kind.INTERVAL:
        return exp.Interval(this=exp.Literal.string(str(value)),
                            unit=exp.var(lit.unit) if lit.unit else None)
    return exp.Literal.string(str(value))


def _wrap(node: exp.Expr) -> exp.Expr:
    leaf = isinstance(node, (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Func, exp.Case,
                             exp.Cast, exp.Paren))
    return node if leaf else exp.Paren(this=node)


def _build(node: ir.Node, slot: Callable[[int], exp.Expr]) -> exp.Expr:
    b = functools.partial(_build, slot=slot)
    if isinstance(node, ir.Slot):
        return slot(node.index)
    if isinstance(node, ir.Literal):
        return _literal(node)
    if isinstance(node, ir.Arith):
        return _ARITH[node.op](this=_wrap(b(node.left)), expression=_wrap(b(node.right)))
    if isinstance(node, ir.Negate):
        return exp.Neg(this=_wrap(b(node.operand)))
    if isinstance(node, ir.Abs):
        return exp.Abs(this=b(node.operand))
    if isinstance(node, ir.Coalesce):
        first, *rest = (b(a) for a in node.args)
        return exp.Coalesce(this=first, expressions=rest)
    if isinstance(node, ir.Cast):
        return exp.Cast(this=b(node.operand), to=exp.DataType.build(node.type))
    if isinstance(node, ir.Function):
        return exp.Anonymous(this=node.name, expressions=[b(a) for a in node.args])
    if isinstance(node, ir.Case):
        ifs = [exp.If(this=_wrap(b(p)), true=b(v)) for p, v in node.whens]
        default = b(node.default) if node.default is not None else None
        return exp.Case(ifs=ifs, default=default)
    return _build_predicate(node, b)


def _build_predicate(node: ir.Predicate, b: Callable[[ir.Node], exp.Expr]) -> exp.Expr:
    out: exp.Expr
    if isinstance(node, ir.Compare):
        return _COMPARE[node.op](this=_wrap(b(node.left)), expression=_wrap(b(node.right)))
    if isinstance(node, ir.And):
        return exp.and_(*(_wrap(b(p)) for p in node.parts), copy=False)
    if isinstance(node, ir.Or):
        return exp.or_(*(_wrap(b(p)) for p in node.parts), copy=False)
    if isinstance(node, ir.Not):
        return exp.Not(this=exp.Paren(this=b(node.operand)))
    if isinstance(node, ir.Truth):
        return b(node.operand)
    if isinstance(node, ir.Between):
        out = exp.Between(this=_wrap(b(node.operand)), low=_wrap(b(node.low)),
                          high=_wrap(b(node.high)))
    elif isinstance(node, ir.InList):
        out = exp.In(this=_wrap(b(node.operand)), expressions=[b(i) for i in node.items])
    elif isinstance(node, ir.Like):
        cls = exp.ILike if node.case_insensitive else exp.Like
        out = cls(this=_wrap(b(node.operand)), expression=_wrap(b(node.pattern)))
    else:
        out = exp.Is(this=_wrap(b(node.operand)), expression=exp.null())
    return exp.Not(this=exp.Paren(this=out)) if node.negated else out


def predicate_sql(node: ir.Node, args: Sequence[SlotValue], *,
                  dialect: str | None = "sqlite") -> str:
    """SQL text of ``node`` with slot ``i`` replaced by ``args[i]`` (a column or a value).

    >>> from cqsens.ir.expr import Compare, Like, Or, Slot, Literal, Kind
    >>> p = Or((Compare(">", Slot(0), Literal(30, Kind.INTEGER)),
    ...         Like(Slot(1), Literal("A%", Kind.TEXT))))
    >>> predicate_sql(p, [ColumnRef("a0", "age"), "Bob"])
    '("a0"."age" > 30) OR (\\'Bob\\' LIKE \\'A%\\')'
    """
    return _build(node, lambda i: _value(args[i])).sql(dialect=dialect)


#: SQLite texts given by :func:`remember_sqlite` (the most recent last).
_GIVEN: OrderedDict[tuple[str, str | None], str] = OrderedDict()


def remember_sqlite(sql: str, dialect: str | None, text: str) -> None:
    """Record that ``text`` is what :func:`sqlite_query` gives for ``sql``: a caller that
    derived it exactly without sqlglot (:mod:`cqsens.logs.transpiled`) saves the later
    callers the transpilation."""
    _GIVEN[(sql, dialect)] = text
    if len(_GIVEN) > 4096:
        _GIVEN.popitem(last=False)


def sqlite_query(sql: str, dialect: str | None) -> str | None:
    """The user's query in SQLite syntax, or None when SQLite cannot express it."""
    given = _GIVEN.get((sql, dialect))
    return given if given is not None else _transpiled(sql, dialect)


@functools.lru_cache(maxsize=4096)
def _transpiled(sql: str, dialect: str | None) -> str | None:
    try:
        tree = sqlglot.parse(sql, read=dialect)[0]
        if tree is None:
            return None
        # SQLite has no EXTRACT: STRFTIME on its ISO date texts gives the same numbers
        return inline_column_lists(sqlite_extracts(fold_date_arithmetic(tree))).sql(
            dialect="sqlite")
    except (SqlglotError, ValueError, IndexError):
        return None


