"""Typed row expressions and predicates: the values a SQL filter or an aggregate argument holds.

A filter of a conjunctive query (``age > 30``, ``name LIKE 'A%'``) is kept as a
*filter atom* (:class:`cqsens.ir.cq.Atom` with a ``predicate``): its terms are the
CQ terms it reads, and the predicate refers to them by position through
:class:`Slot` (``Slot(0)`` is the atom's first term).  Because the predicate
never names a variable, substituting terms (homomorphisms, the chase) leaves it
unchanged, and equal predicates make equal relation symbols.

Everything here is a frozen, hashable value.  Three readings are defined on it:

- :func:`render`: canonical SQL text (what cqsens prints; SQL for a database is
  generated from the same values by :mod:`cqsens.frontend.sqlgen`);
- :func:`evaluate`: SQL's three-valued logic in Python, with SQLite's rules for
  comparing values of different types; what it cannot decide exactly raises
  :class:`Undecided`, and callers then ask SQLite;
- :func:`slot_ranges`: the numeric range a conjunction of comparisons puts on
  each slot (value bounds from WHERE clauses).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum

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
    "Undecided",
    "bind",
    "evaluate",
    "literal_of",
    "literals",
    "render",
    "slot_ranges",
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


class Undecided(Exception):
    """:func:`evaluate` cannot decide this case exactly as SQLite would."""


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


def literal_of(value: int | float | str | None) -> Literal:
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


# -- evaluation (SQLite's semantics, or Undecided) -----------------------------

Value = int | float | str | None


def _rank(value: int | float | str) -> int:
    return 1 if isinstance(value, str) else 0


def _compare(op: str, a: Value, b: Value) -> bool | None:
    if a is None or b is None:
        return None
    ra, rb = _rank(a), _rank(b)
    key_a: tuple[int, int | float | str] = (ra, a)
    key_b: tuple[int, int | float | str] = (rb, b)
    if ra != rb:  # SQLite without affinity: every number sorts before every text
        key_a, key_b = (ra, 0), (rb, 0)
    ops: dict[str, Callable[[object, object], bool]] = {
        "=": lambda x, y: x == y, "<>": lambda x, y: x != y,
        "<": lambda x, y: x < y,  # type: ignore[operator]
        "<=": lambda x, y: x <= y,  # type: ignore[operator]
        ">": lambda x, y: x > y,  # type: ignore[operator]
        ">=": lambda x, y: x >= y,  # type: ignore[operator]
    }
    return ops[op](key_a, key_b)


def _number(value: Value) -> int | float | None:
    if value is None or isinstance(value, (int, float)):
        return value
    raise Undecided("a text operand of arithmetic")


def _value(node: Expr, values: Sequence[Value]) -> Value:
    if isinstance(node, Slot):
        return values[node.index]
    if isinstance(node, Literal):
        if node.kind is Kind.INTEGER and isinstance(node.value, int):
            return node.value
        if node.kind is Kind.DECIMAL and isinstance(node.value, Decimal):
            return float(node.value)
        if node.kind is Kind.TEXT and isinstance(node.value, str):
            return node.value
        if node.kind is Kind.NULL:
            return None
        if node.kind is Kind.BOOLEAN:
            return int(bool(node.value))
        raise Undecided(f"a {node.kind.value} literal")
    if isinstance(node, Arith) and node.op in ("+", "-", "*"):
        a, b = _number(_value(node.left, values)), _number(_value(node.right, values))
        if a is None or b is None:
            return None
        out = a + b if node.op == "+" else a - b if node.op == "-" else a * b
        if isinstance(out, int) and abs(out) >= 1 << 63:
            raise Undecided("integer overflow")
        return out
    if isinstance(node, Negate):
        a = _number(_value(node.operand, values))
        return None if a is None else -a
    if isinstance(node, Abs):
        a = _number(_value(node.operand, values))
        return None if a is None else abs(a)
    if isinstance(node, Coalesce):
        for arg in node.args:
            value = _value(arg, values)
            if value is not None:
                return value
        return None
    if isinstance(node, Case):
        for condition, result in node.whens:
            if _truth(condition, values) is True:
                return _value(result, values)
        return None if node.default is None else _value(node.default, values)
    raise Undecided(type(node).__name__)


def _like(text: str, pattern: str) -> bool:
    if not (text.isascii() and pattern.isascii()):
        raise Undecided("LIKE on non-ASCII text")
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, flags=re.IGNORECASE | re.DOTALL) is not None


def _not(value: bool | None) -> bool | None:
    return None if value is None else not value


def _and(results: Sequence[bool | None]) -> bool | None:
    return False if False in results else None if None in results else True


def _truth(node: Predicate, values: Sequence[Value]) -> bool | None:
    if isinstance(node, And):
        return _and([_truth(p, values) for p in node.parts])
    if isinstance(node, Or):
        results = [_truth(p, values) for p in node.parts]
        return True if True in results else None if None in results else False
    if isinstance(node, Not):
        return _not(_truth(node.operand, values))
    if isinstance(node, Truth):
        value = _value(node.operand, values)
        if isinstance(value, str):
            raise Undecided("a text used as a condition")
        return None if value is None else value != 0
    if isinstance(node, Compare):
        return _compare(node.op, _value(node.left, values), _value(node.right, values))
    if isinstance(node, IsNull):
        return (_value(node.operand, values) is None) != node.negated
    result: bool | None
    if isinstance(node, Between):
        v = _value(node.operand, values)
        low = _compare(">=", v, _value(node.low, values))
        high = _compare("<=", v, _value(node.high, values))
        result = _and([low, high])
    elif isinstance(node, InList):
        v = _value(node.operand, values)
        hits = [_compare("=", v, _value(i, values)) for i in node.items]
        result = True if True in hits else None if None in hits or v is None else False
    else:
        text, pattern = _value(node.operand, values), _value(node.pattern, values)
        if text is None or pattern is None:
            return None
        if not isinstance(text, str) or not isinstance(pattern, str):
            raise Undecided("LIKE on a number")
        result = _like(text, pattern)
    return _not(result) if node.negated else result


def evaluate(predicate: Predicate, values: Sequence[Value]) -> bool | None:
    """SQL's truth value of ``predicate`` with slot ``i`` bound to ``values[i]`` (None is NULL).

    Values are compared as SQLite compares literals: numbers numerically, texts
    by code point, every number below every text.  Anything whose SQLite result
    depends on more (text in arithmetic, division, dates, non-ASCII LIKE, other
    functions) raises :class:`Undecided`.

    >>> p = And((Compare(">=", Slot(0), Literal(18, Kind.INTEGER)),
    ...          Like(Slot(1), Literal("a%", Kind.TEXT))))
    >>> evaluate(p, [20, "Alice"]), evaluate(p, [17, "Alice"]), evaluate(p, [None, "Alice"])
    (True, False, None)
    """
    return _truth(predicate, values)


# -- ranges -------------------------------------------------------------------


def _numeric(node: Expr) -> float | None:
    if isinstance(node, Literal) and node.kind in (Kind.INTEGER, Kind.DECIMAL):
        assert isinstance(node.value, (int, Decimal))
        return float(node.value)
    if isinstance(node, Negate):
        inner = _numeric(node.operand)
        return None if inner is None else -inner
    return None


def slot_ranges(predicate: Predicate) -> dict[int, tuple[float, float]]:
    """The closed range a conjunction of comparisons with numbers puts on each slot.

    Reads ``s BETWEEN a AND b``, ``s >= a``, ``s > a`` (kept closed, which is
    sound), ``a <= s``, ``s = a``, joined by AND; every other part is ignored.

    >>> p = And((Compare(">", Slot(0), Literal(30, Kind.INTEGER)),
    ...          Compare(">=", Literal(60, Kind.INTEGER), Slot(0))))
    >>> slot_ranges(p)
    {0: (30.0, 60.0)}
    """
    out: dict[int, list[float]] = {}

    def put(node: Expr, low: float | None, high: float | None) -> None:
        if not isinstance(node, Slot):
            return
        entry = out.setdefault(node.index, [-math.inf, math.inf])
        if low is not None:
            entry[0] = max(entry[0], low)
        if high is not None:
            entry[1] = min(entry[1], high)

    def visit(node: Predicate) -> None:
        if isinstance(node, And):
            for part in node.parts:
                visit(part)
        elif isinstance(node, Between) and not node.negated:
            put(node.operand, _numeric(node.low), _numeric(node.high))
        elif isinstance(node, Compare) and node.op in ("=", "<", "<=", ">", ">="):
            lnum, rnum = _numeric(node.left), _numeric(node.right)
            if node.op == "=":
                if rnum is not None:
                    put(node.left, rnum, rnum)
                elif lnum is not None:
                    put(node.right, lnum, lnum)
                return
            lower = node.op in (">", ">=")
            if rnum is not None:
                put(node.left, rnum if lower else None, None if lower else rnum)
            elif lnum is not None:
                put(node.right, None if lower else lnum, lnum if lower else None)

    visit(predicate)
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}
