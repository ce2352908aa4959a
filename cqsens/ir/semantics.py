"""What typed predicates mean: SQL's truth values in Python, and the ranges they imply.

- :func:`evaluate`: SQL's three-valued logic, with SQLite's rules for comparing
  values of different types; what it cannot decide exactly raises
  :class:`Undecided`, and callers then ask SQLite;
- :func:`slot_ranges`: the numeric range a conjunction of comparisons puts on
  each slot (value bounds from WHERE clauses).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from cqsens.ir.expr import (
    Abs,
    And,
    Arith,
    Between,
    Case,
    Coalesce,
    Compare,
    Expr,
    InList,
    IsNull,
    Kind,
    Literal,
    Negate,
    Not,
    Or,
    Predicate,
    Slot,
    Truth,
)

__all__ = ["Undecided", "Value", "checks_range", "evaluate", "slot_ranges", "value_of"]


class Undecided(Exception):
    """:func:`evaluate` cannot decide this case exactly as SQLite would."""


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


def value_of(expr: Expr, values: Sequence[Value]) -> Value:
    """SQL's value of ``expr`` with slot ``i`` bound to ``values[i]`` (None is NULL);
    raises :class:`Undecided` as :func:`evaluate` does.

    >>> from cqsens.ir.expr import Arith
    >>> value_of(Arith("*", Slot(0), Slot(1)), [3, 4])
    12
    """
    return _value(expr, values)


def evaluate(predicate: Predicate, values: Sequence[Value]) -> bool | None:
    """SQL's truth value of ``predicate`` with slot ``i`` bound to ``values[i]`` (None is NULL).

    Values are compared as SQLite compares literals: numbers numerically, texts
    by code point, every number below every text.  Anything whose SQLite result
    depends on more (text in arithmetic, division, dates, non-ASCII LIKE, other
    functions) raises :class:`Undecided`.

    >>> from cqsens.ir.expr import Like
    >>> p = And((Compare(">=", Slot(0), Literal(18, Kind.INTEGER)),
    ...          Like(Slot(1), Literal("a%", Kind.TEXT))))
    >>> evaluate(p, [20, "Alice"]), evaluate(p, [17, "Alice"]), evaluate(p, [None, "Alice"])
    (True, False, None)
    """
    return _truth(predicate, values)


# -- ranges -------------------------------------------------------------------


Bound = int | Fraction | float  # float only for ±inf


def _normal(value: Fraction) -> int | Fraction:
    return value.numerator if value.denominator == 1 else value


def _folded_number(node: Expr, read: Callable[[int | Decimal], Any]) -> Any:
    """A constant number, ``+ - *`` of constants folded in the arithmetic of the numbers
    ``read`` makes of the literals (Fraction: SQL's DECIMAL; float: SQLite's doubles)."""
    if isinstance(node, Literal) and node.kind in (Kind.INTEGER, Kind.DECIMAL):
        assert isinstance(node.value, (int, Decimal))
        return read(node.value)
    if isinstance(node, Negate):
        inner = _folded_number(node.operand, read)
        return None if inner is None else -inner
    if isinstance(node, Arith) and node.op in ("+", "-", "*"):
        left, right = _folded_number(node.left, read), _folded_number(node.right, read)
        if left is None or right is None:
            return None
        got = left + right if node.op == "+" else left - right if node.op == "-" \
            else left * right
        return None if isinstance(got, float) and not math.isfinite(got) else got
    return None


def _numeric(node: Expr) -> tuple[int | Fraction, int | Fraction] | None:
    """The range of a constant number: a literal's exact value, or for ``+ - *`` of
    constants (TPC-H q6: ``BETWEEN 0.06 - 0.01 AND 0.06 + 0.01``) both the exact result
    (SQL's DECIMAL arithmetic) and the double SQLite computes (``0.06999999999999999``,
    read as its text), so that a bound taken from it holds in either."""
    exact: Fraction | None = _folded_number(node, Fraction)
    double: float | None = _folded_number(node, float)
    if exact is None or double is None:
        return None
    computed = Fraction(repr(double))
    low, high = (exact, computed) if exact <= computed else (computed, exact)
    return _normal(low), _normal(high)


def slot_ranges(predicate: Predicate) -> dict[int, tuple[Bound, Bound]]:
    """The closed range a conjunction of comparisons with numbers puts on each slot.

    Reads ``s BETWEEN a AND b``, ``s >= a``, ``s > a`` (kept closed, which is
    sound), ``a <= s``, ``s = a``, joined by AND, the numbers constants or ``+ - *``
    of constants; every other part is ignored.

    >>> p = And((Compare(">", Slot(0), Literal(30, Kind.INTEGER)),
    ...          Compare(">=", Literal(60, Kind.INTEGER), Slot(0))))
    >>> slot_ranges(p)
    {0: (30, 60)}
    """
    out: dict[int, list[Bound]] = {}

    def put(node: Expr, low: Bound | None, high: Bound | None) -> None:
        if not isinstance(node, Slot):
            return
        entry = out.setdefault(node.index, [-math.inf, math.inf])
        if low is not None and low > entry[0]:
            entry[0] = low
        if high is not None and high < entry[1]:
            entry[1] = high

    def visit(node: Predicate) -> None:
        if isinstance(node, And):
            for part in node.parts:
                visit(part)
        elif isinstance(node, Between) and not node.negated:
            low, high = _numeric(node.low), _numeric(node.high)
            put(node.operand, None if low is None else low[0], None if high is None else high[1])
        elif isinstance(node, Compare) and node.op in ("=", "<", "<=", ">", ">="):
            lnum, rnum = _numeric(node.left), _numeric(node.right)
            if node.op == "=":
                if rnum is not None:
                    put(node.left, *rnum)
                elif lnum is not None:
                    put(node.right, *lnum)
                return
            lower = node.op in (">", ">=")
            if rnum is not None:  # s >= a: a's low; s <= a: a's high
                put(node.left, rnum[0] if lower else None, None if lower else rnum[1])
            elif lnum is not None:  # a >= s: a's high; a <= s: a's low
                put(node.right, None if lower else lnum[0], lnum[1] if lower else None)

    visit(predicate)
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def checks_range(checks: Iterable[Predicate]) -> tuple[Bound, Bound]:
    """The closed range that checks on one column (its slot 0) put on it together: the
    intersection of their :func:`slot_ranges` (``low > high`` when it is empty).

    >>> checks_range([Compare(">=", Slot(0), Literal(3, Kind.INTEGER)),
    ...               Compare("<", Slot(0), Literal(9, Kind.INTEGER))])
    (3, 9)
    """
    low: Bound = -math.inf
    high: Bound = math.inf
    for check in checks:
        found = slot_ranges(check).get(0)
        if found is not None:
            low, high = max(low, found[0]), min(high, found[1])
    return low, high
