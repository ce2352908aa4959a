"""Typed row expressions and predicates: the values a SQL filter or an aggregate argument holds.

A filter of a conjunctive query (``age > 30``, ``name LIKE 'A%'``) is kept as a
*filter atom* (:class:`cqsens.ir.cq.Atom` with a ``predicate``): its terms are the
CQ terms it reads, and the predicate refers to them by position through
:class:`Slot` (``Slot(0)`` is the atom's first term).  Because the predicate
never names a variable, substituting terms (homomorphisms, the chase) leaves it
unchanged, and equal predicates make equal relation symbols.

Everything here is a frozen, hashable value.  :func:`render` gives its
canonical SQL text (what cqsens prints; SQL for a database is generated from
the same values by :mod:`cqsens.frontend.sqlgen`); its meaning is in
:mod:`cqsens.ir.semantics` (evaluation and ranges).
"""

from __future__ import annotations

import calendar
import datetime
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from enum import Enum
from fractions import Fraction

__all__ = [
    "Abs",
    "And",
    "Arith",
    "Between",
    "Case",
    "Cast",
    "Coalesce",
    "Compare",
    "Expr",
    "Function",
    "InList",
    "IsNull",
    "Kind",
    "Like",
    "Literal",
    "Negate",
    "Not",
    "Or",
    "Predicate",
    "Slot",
    "Truth",
    "bind",
    "literal_of",
    "literals",
    "render",
    "shift_date",
    "shifted_date",
    "slots",
]


class Kind(Enum):
    """The type of a literal."""

    INTEGER = "integer"
    DECIMAL = "decimal"
    TEXT = "text"
    DATE = "date"
    TIMESTAMP = "timestamp"
    INTERVAL = "interval"
    BOOLEAN = "boolean"
    NULL = "null"


@dataclass(frozen=True, slots=True)
class Slot:
    """The ``index``-th term of the filter atom (or aggregate) that holds the expression."""

    index: int


@dataclass(frozen=True, slots=True)
class Literal:
    """A typed constant.  ``value`` is an int, a Decimal, text (dates and intervals
    as written), a bool, or None for NULL; ``unit`` is an interval's unit (``YEAR``)."""

    value: int | Decimal | str | bool | None
    kind: Kind
    unit: str = ""


@dataclass(frozen=True, slots=True)
class Arith:
    """``left op right`` for op in ``+ - * / % ||``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Negate:
    """Unary minus."""

    operand: Expr


@dataclass(frozen=True, slots=True)
class Abs:
    """``ABS(operand)``."""

    operand: Expr


@dataclass(frozen=True, slots=True)
class Case:
    """``CASE WHEN p1 THEN v1 ... ELSE default END`` (a missing ELSE is NULL)."""

    whens: tuple[tuple[Predicate, Expr], ...]
    default: Expr | None = None


@dataclass(frozen=True, slots=True)
class Coalesce:
    """``COALESCE(a, b, ...)``: the first argument that is not NULL."""

    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Cast:
    """``CAST(operand AS type)``; ``type`` is the SQL type name in upper case."""

    operand: Expr
    type: str


@dataclass(frozen=True, slots=True)
class Function:
    """Any other scalar function, by its SQL name in upper case (``SUBSTRING``, ``LOWER``)."""

    name: str
    args: tuple[Expr, ...]


Expr = Slot | Literal | Arith | Negate | Abs | Case | Coalesce | Cast | Function


@dataclass(frozen=True, slots=True)
class Compare:
    """``left op right`` for op in ``= <> < <= > >=``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Between:
    """``operand [NOT] BETWEEN low AND high``."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False


@dataclass(frozen=True, slots=True)
class InList:
    """``operand [NOT] IN (items)``."""

    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Like:
    """``operand [NOT] LIKE pattern`` (``ILIKE`` when ``case_insensitive``)."""

    operand: Expr
    pattern: Expr
    negated: bool = False
    case_insensitive: bool = False


@dataclass(frozen=True, slots=True)
class IsNull:
    """``operand IS [NOT] NULL``."""

    operand: Expr
    negated: bool = False


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction."""

    parts: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction."""

    parts: tuple[Predicate, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """Negation."""

    operand: Predicate


@dataclass(frozen=True, slots=True)
class Truth:
    """An expression used as a condition (``WHERE active``, ``WHERE TRUE``)."""

    operand: Expr


Predicate = Compare | Between | InList | Like | IsNull | And | Or | Not | Truth
Node = Expr | Predicate
_PREDICATES = (Compare, Between, InList, Like, IsNull, And, Or, Not, Truth)


# -- traversal ----------------------------------------------------------------


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, (Slot, Literal)):
        return ()
    if isinstance(node, (Arith, Compare)):
        return (node.left, node.right)
    if isinstance(node, (Negate, Abs, Cast, Not, Truth)):
        return (node.operand,)
    if isinstance(node, Case):
        out: list[Node] = [x for pair in node.whens for x in pair]
        return (*out, node.default) if node.default is not None else tuple(out)
    if isinstance(node, (Coalesce, Function)):
        return node.args
    if isinstance(node, Between):
        return (node.operand, node.low, node.high)
    if isinstance(node, InList):
        return (node.operand, *node.items)
    if isinstance(node, Like):
        return (node.operand, node.pattern)
    if isinstance(node, IsNull):
        return (node.operand,)
    return node.parts


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(_children(current)))


def slots(node: Node) -> tuple[int, ...]:
    """The slot indices a node reads, in order of first appearance.

    >>> slots(Compare("<", Slot(1), Arith("+", Slot(0), Slot(1))))
    (1, 0)
    """
    return tuple(dict.fromkeys(n.index for n in _walk(node) if isinstance(n, Slot)))


def literals(node: Node) -> list[int | float | str]:
    """The numbers and texts written in a node (candidate values for a witness).

    >>> literals(And((Compare(">", Slot(0), Literal(30, Kind.INTEGER)),
    ...               Like(Slot(0), Literal("A%", Kind.TEXT)))))
    [30, 'A%']
    """
    out: list[int | float | str] = []
    for n in _walk(node):
        if isinstance(n, Literal) and n.kind in (Kind.INTEGER, Kind.DECIMAL, Kind.TEXT, Kind.DATE):
            value = n.value
            if isinstance(value, Decimal):
                out.append(float(value))
            elif isinstance(value, (int, str)) and not isinstance(value, bool):
                out.append(value)
    return out


def shift_date(day: datetime.date, amount: int, unit: str) -> datetime.date:
    """``day`` plus ``amount`` units (DAY, WEEK, MONTH or YEAR), as SQL adds an interval.

    Parameters
    ----------
    day : datetime.date
        The date.
    amount : int
        How many units (negative to subtract).
    unit : str
        ``"DAY"``, ``"WEEK"``, ``"MONTH"`` or ``"YEAR"``.

    Returns
    -------
    datetime.date
        The shifted date; months and years clamp the day to the month's length.

    Raises
    ------
    OverflowError
        When the result is outside years 1 to 9999.

    Examples
    --------
    >>> shift_date(datetime.date(1998, 12, 1), -90, "DAY")
    datetime.date(1998, 9, 2)
    >>> shift_date(datetime.date(1993, 1, 31), 1, "MONTH")
    datetime.date(1993, 2, 28)
    """
    if unit in ("DAY", "WEEK"):
        return day + datetime.timedelta(days=amount * (7 if unit == "WEEK" else 1))
    months = day.year * 12 + day.month - 1 + amount * (12 if unit == "YEAR" else 1)
    year, month = divmod(months, 12)
    if not 1 <= year <= 9999:
        raise OverflowError(f"year {year} is out of range")
    last = calendar.monthrange(year, month + 1)[1]
    return datetime.date(year, month + 1, min(day.day, last))


def shifted_date(day: str, amount: int, unit: str) -> str | None:
    """The ISO date ``day`` moved by ``amount`` units as :func:`shift_date` moves it (unit
    names in any case, singular or plural); None for text that is not a date, another
    unit, or a year out of range.

    >>> shifted_date("1993-07-01", 3, "MONTH"), shifted_date("1998-12-01", -90, "DAY")
    ('1993-10-01', '1998-09-02')
    >>> shifted_date("1996-01-31", 1, "MONTH"), shifted_date("1994-01-01", 1, "years")
    ('1996-02-29', '1995-01-01')
    """
    unit = unit.upper().rstrip("S")
    if unit not in ("DAY", "WEEK", "MONTH", "YEAR"):
        return None
    try:
        return shift_date(datetime.date.fromisoformat(day), amount, unit).isoformat()
    except (ValueError, OverflowError):
        return None


def literal_of(value: int | float | Fraction | str | None) -> Literal:
    """The typed literal of a Python value (a float becomes the decimal it prints as).

    >>> literal_of(2.5)
    Literal(value=Decimal('2.5'), kind=<Kind.DECIMAL: 'decimal'>, unit='')
    >>> literal_of("a").kind, literal_of(None).kind
    (<Kind.TEXT: 'text'>, <Kind.NULL: 'null'>)
    """
    if value is None:
        return Literal(None, Kind.NULL)
    if isinstance(value, bool):
        return Literal(value, Kind.BOOLEAN)
    if isinstance(value, int):
        return Literal(value, Kind.INTEGER)
    if isinstance(value, float):
        return Literal(Decimal(repr(value)), Kind.DECIMAL)
    if isinstance(value, Fraction):
        if value.denominator == 1:
            return Literal(value.numerator, Kind.INTEGER)
        with localcontext() as ctx:  # exact for the decimals SQL text can write
            ctx.prec = 200
            decimal = Decimal(value.numerator) / Decimal(value.denominator)
        if Fraction(decimal) != value:
            raise ValueError(f"{value} has no finite decimal form")
        return Literal(decimal, Kind.DECIMAL)
    return Literal(value, Kind.TEXT)


def _map(node: Node, slot: Callable[[Slot], Expr]) -> Node:
    """Rebuild ``node`` with every slot replaced by ``slot(s)``."""
    def m(n: Node) -> Node:
        return _map(n, slot)

    def me(n: Expr) -> Expr:
        out = _map(n, slot)
        assert not isinstance(out, _PREDICATES)
        return out

    def mp(n: Predicate) -> Predicate:
        out = _map(n, slot)
        assert isinstance(out, _PREDICATES)
        return out

    if isinstance(node, Slot):
        return slot(node)
    if isinstance(node, Literal):
        return node
    if isinstance(node, (Arith, Compare)):
        return type(node)(node.op, me(node.left), me(node.right))
    if isinstance(node, (Negate, Abs)):
        return type(node)(me(node.operand))
    if isinstance(node, Cast):
        return Cast(me(node.operand), node.type)
    if isinstance(node, Truth):
        return Truth(me(node.operand))
    if isinstance(node, Not):
        return Not(mp(node.operand))
    if isinstance(node, (And, Or)):
        return type(node)(tuple(mp(p) for p in node.parts))
    if isinstance(node, Coalesce):
        return Coalesce(tuple(me(a) for a in node.args))
    if isinstance(node, Function):
        return Function(node.name, tuple(me(a) for a in node.args))
    if isinstance(node, Case):
        default = me(node.default) if node.default is not None else None
        return Case(tuple((mp(p), me(v)) for p, v in node.whens), default)
    if isinstance(node, Between):
        return Between(me(node.operand), me(node.low), me(node.high), node.negated)
    if isinstance(node, InList):
        return InList(me(node.operand), tuple(me(i) for i in node.items), node.negated)
    if isinstance(node, Like):
        return Like(me(node.operand), me(node.pattern), node.negated, node.case_insensitive)
    assert isinstance(node, IsNull)
    return IsNull(me(node.operand), node.negated)


def bind(predicate: Predicate, slots: Sequence[Expr]) -> Predicate:
    """``predicate`` with slot ``i`` replaced by ``slots[i]`` (a literal, or another slot).

    >>> p = Compare("<", Slot(0), Slot(1))
    >>> render(bind(p, [Slot(0), literal_of(10)]))
    '{0} < 10'
    """
    out = _map(predicate, lambda s: slots[s.index])
    assert isinstance(out, _PREDICATES)
    return out


# -- canonical text -----------------------------------------------------------

_PRECEDENCE = {"||": 6, "*": 5, "/": 5, "%": 5, "+": 4, "-": 4}
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _literal_text(lit: Literal) -> str:
    value = lit.value
    if lit.kind is Kind.NULL:
        return "NULL"
    if lit.kind is Kind.BOOLEAN:
        return "TRUE" if value else "FALSE"
    if lit.kind in (Kind.INTEGER, Kind.DECIMAL):
        return str(value)
    text = "'" + str(value).replace("'", "''") + "'"
    if lit.kind is Kind.DATE:
        return f"DATE {text}"
    if lit.kind is Kind.TIMESTAMP:
        return f"TIMESTAMP {text}"
    if lit.kind is Kind.INTERVAL:
        return f"INTERVAL {text} {lit.unit}".rstrip()
    return text


def _expr_text(node: Expr, names: Sequence[str], parent: int = 0) -> str:
    if isinstance(node, Slot):
        return names[node.index]
    if isinstance(node, Literal):
        return _literal_text(node)
    if isinstance(node, Arith):
        own = _PRECEDENCE[node.op]
        left = _expr_text(node.left, names, own)
        right = _expr_text(node.right, names, own + 1)  # left-associative
        text = f"{left} {node.op} {right}"
        return f"({text})" if own < parent else text
    if isinstance(node, Negate):
        inner = _expr_text(node.operand, names, 7)
        return f"- {inner}" if inner.startswith("-") else f"-{inner}"
    if isinstance(node, Abs):
        return f"ABS({_expr_text(node.operand, names)})"
    if isinstance(node, Coalesce):
        return "COALESCE(" + ", ".join(_expr_text(a, names) for a in node.args) + ")"
    if isinstance(node, Cast):
        return f"CAST({_expr_text(node.operand, names)} AS {node.type})"
    if isinstance(node, Function):
        return f"{node.name}(" + ", ".join(_expr_text(a, names) for a in node.args) + ")"
    whens = " ".join(f"WHEN {_pred_text(p, names)} THEN {_expr_text(v, names)}"
                     for p, v in node.whens)
    default = f" ELSE {_expr_text(node.default, names)}" if node.default is not None else ""
    return f"CASE {whens}{default} END"


def _pred_text(node: Predicate, names: Sequence[str], parent: int = 0) -> str:
    """``parent``: 0 top level, 1 inside OR, 2 inside AND, 3 inside NOT."""
    if isinstance(node, And):
        text = " AND ".join(_pred_text(p, names, 2) for p in node.parts)
        return f"({text})" if parent > 2 else text
    if isinstance(node, Or):
        text = " OR ".join(_pred_text(p, names, 1) for p in node.parts)
        return f"({text})" if parent > 1 else text
    if isinstance(node, Not):
        inner = node.operand
        body = _pred_text(inner, names, 3)
        simple = isinstance(inner, (And, Or, Not))
        return f"NOT {body}" if simple else f"NOT ({body})"
    if isinstance(node, Truth):
        return _expr_text(node.operand, names)
    e = _expr_text
    if isinstance(node, Compare):
        return f"{e(node.left, names)} {node.op} {e(node.right, names)}"
    no = "NOT " if node.negated else ""
    if isinstance(node, Between):
        low, high = e(node.low, names), e(node.high, names)
        return f"{e(node.operand, names)} {no}BETWEEN {low} AND {high}"
    if isinstance(node, InList):
        items = ", ".join(e(i, names) for i in node.items)
        return f"{e(node.operand, names)} {no}IN ({items})"
    if isinstance(node, Like):
        op = "ILIKE" if node.case_insensitive else "LIKE"
        return f"{e(node.operand, names)} {no}{op} {e(node.pattern, names)}"
    return f"{e(node.operand, names)} IS {no}NULL"


def render(node: Node, names: Sequence[str] | None = None) -> str:
    """Canonical SQL text of a node; slot ``i`` prints as ``names[i]`` (``{i}`` without names).

    Parentheses are printed where precedence needs them, and only there.

    >>> p = Or((Compare("<", Slot(0), Literal(25, Kind.INTEGER)),
    ...         Not(IsNull(Arith("*", Arith("+", Slot(0), Slot(1)), Literal(2, Kind.INTEGER))))))
    >>> render(p, ["age", "bonus"])
    'age < 25 OR NOT ((age + bonus) * 2 IS NULL)'
    >>> print(render(And((p, Like(Slot(1), Literal("A%", Kind.TEXT), negated=True)))))
    ({0} < 25 OR NOT (({0} + {1}) * 2 IS NULL)) AND {1} NOT LIKE 'A%'
    """
    if names is None:
        count = max(slots(node), default=-1) + 1
        names = [f"{{{i}}}" for i in range(count)]
    if isinstance(node, _PREDICATES):
        return _pred_text(node, names)
    return _expr_text(node, names)
