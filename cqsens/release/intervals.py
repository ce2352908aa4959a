"""Exact interval arithmetic over typed row expressions: the range an aggregated value can take.

Each slot of an expression ranges over a closed interval (from the column's
bounds); :func:`expression_range` returns a closed interval that holds every
value the expression can take on such inputs.  Endpoints are exact (ints and
Fractions, :mod:`cqsens.ir.exact`) or ±∞, and every rule widens rather than
narrows, so the result is sound:

- ``a + b``, ``a − b``, ``−a``: endpoint sums; ``a · b``: the least and greatest
  of the four endpoint products (with ``0 · ∞ = 0``, as every real value is finite);
- ``a / b``: ``a · [1/b_hi, 1/b_lo]`` when ``b`` keeps one sign, widened to
  take in 0 (SQL's integer division truncates towards 0); a divisor whose interval
  contains 0 raises :class:`Unbounded`;
- ``ABS``, ``a % b`` (``|a % b| < |b|`` and ``|a % b| ≤ |a|``), ``CASE`` and
  ``COALESCE`` (the union of their branches), ``CAST`` to a number (widened to
  the integers around it, which covers rounding);
- a NULL (a literal, a missing ELSE) is skipped by every aggregate, so it adds
  nothing to the range.

Reference: R. E. Moore, Interval Analysis, Prentice-Hall 1966, ch. 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from cqsens.ir.exact import Exact, exact, mul, text
from cqsens.ir.expr import (
    Abs,
    Arith,
    Case,
    Cast,
    Coalesce,
    Expr,
    Kind,
    Literal,
    Negate,
    Slot,
    render,
)

__all__ = ["Interval", "Unbounded", "expression_range"]

_NUMERIC_CASTS = ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "DECIMAL", "NUMERIC",
                  "REAL", "FLOAT", "DOUBLE")


@dataclass(frozen=True, slots=True)
class Interval:
    """The closed interval ``[low, high]``; ``low > high`` is empty (no value)."""

    low: Exact
    high: Exact

    @property
    def empty(self) -> bool:
        """True when no value lies in the interval."""
        return self.low > self.high


_Walk = Callable[[Expr], "Interval | None"]


class Unbounded(Exception):
    """The expression's range is not bounded; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _add(a: Exact, b: Exact) -> Exact:
    """A sum of two low (or two high) endpoints: never ∞ − ∞, as intervals are not empty."""
    total = a + b
    return exact(total) if isinstance(total, int) else total


def _union(parts: Sequence[Interval | None]) -> Interval | None:
    found = [p for p in parts if p is not None and not p.empty]
    if not found:
        return None
    return Interval(min(p.low for p in found), max(p.high for p in found))


def _times(a: Interval, b: Interval) -> Interval:
    products = [mul(x, y) for x in (a.low, a.high) for y in (b.low, b.high)]
    return Interval(min(products), max(products))


def _inverse(value: Exact) -> Exact:
    if math.isinf(value):
        return 0
    return exact(1) / exact(value) if isinstance(value, int) else 1 / value


def _divide(a: Interval, b: Interval, divisor: str, truncates: bool) -> Interval:
    if b.low <= 0 <= b.high:
        raise Unbounded(f"the divisor {divisor} can be 0 (it ranges over "
                        f"[{_show(b.low)}, {_show(b.high)}]); bound it away from 0")
    q = _times(a, Interval(_inverse(b.high), _inverse(b.low)))
    if truncates:  # integer division rounds towards 0: the result lies between 0 and q
        q = Interval(min(q.low, 0), max(q.high, 0))
    return q


def _magnitude(a: Interval) -> Exact:
    """The largest absolute value in ``a``."""
    return a.high if a.high >= -a.low else -a.low


def _show(value: Exact) -> str:
    return text(value)


def _literal(node: Literal) -> Interval | None:
    if node.kind is Kind.NULL:
        return None
    if node.kind in (Kind.INTEGER, Kind.DECIMAL) and isinstance(node.value, (int, Decimal)):
        v = exact(node.value)
        return Interval(v, v)
    if node.kind is Kind.BOOLEAN and isinstance(node.value, bool):
        return Interval(int(node.value), int(node.value))
    raise Unbounded(f"the value {node.value!r} is not a number")


def _decimal(node: Expr) -> bool:
    return isinstance(node, Literal) and node.kind is Kind.DECIMAL


def expression_range(
    node: Expr, slots: Sequence[Interval], names: Sequence[str]
) -> Interval | None:
    """A closed interval holding every value of ``node`` (None: the expression is always NULL).

    Parameters
    ----------
    node : Expr
        The typed expression.
    slots : sequence of Interval
        The range of each slot (``Slot(i)`` ranges over ``slots[i]``).
    names : sequence of str
        The name of each slot, for messages.

    Raises
    ------
    Unbounded
        A divisor that can be 0, a text value, an unsupported function.

    Examples
    --------
    >>> from cqsens.ir.expr import Arith, Kind, Literal, Slot
    >>> e = Arith("*", Slot(0), Arith("-", Literal(1, Kind.INTEGER), Slot(1)))
    >>> from fractions import Fraction
    >>> expression_range(e, [Interval(0, 100), Interval(0, Fraction(1, 10))], ["p", "d"])
    Interval(low=0, high=100)
    """
    def walk(n: Expr) -> Interval | None:
        if isinstance(n, Slot):
            return slots[n.index]
        if isinstance(n, Literal):
            return _literal(n)
        if isinstance(n, Negate):
            inner = walk(n.operand)
            return None if inner is None else Interval(-inner.high, -inner.low)
        if isinstance(n, Abs):
            inner = walk(n.operand)
            if inner is None or inner.low >= 0:
                return inner
            if inner.high <= 0:
                return Interval(-inner.high, -inner.low)
            return Interval(0, max(-inner.low, inner.high))
        if isinstance(n, Arith):
            return _arith(n, walk, names)
        if isinstance(n, (Case, Coalesce)):
            branches = ([v for _, v in n.whens] + ([n.default] if n.default is not None else [])
                        if isinstance(n, Case) else list(n.args))
            return _union([walk(b) for b in branches])
        if isinstance(n, Cast):
            return _cast(n, walk(n.operand))
        raise Unbounded(f"{render(n, names)} is not arithmetic cqsens can bound")

    return walk(node)


def _arith(n: Arith, walk: _Walk, names: Sequence[str]) -> Interval | None:
    a, b = walk(n.left), walk(n.right)
    if a is None or b is None:
        return None  # NULL in, NULL out
    if n.op == "+":
        return Interval(_add(a.low, b.low), _add(a.high, b.high))
    if n.op == "-":
        return Interval(_add(a.low, -b.high), _add(a.high, -b.low))
    if n.op == "*":
        return _times(a, b)
    if n.op == "/":
        exact_division = _decimal(n.left) or _decimal(n.right)
        return _divide(a, b, render(n.right, names), truncates=not exact_division)
    if n.op == "%":
        m: Exact = min(_magnitude(b), _magnitude(a))
        return Interval(0 if a.low >= 0 else -m, m)
    raise Unbounded(f"the operator {n.op} does not give a number")


def _cast(n: Cast, inner: Interval | None) -> Interval | None:
    base = n.type.split("(")[0].strip()
    if base not in _NUMERIC_CASTS and not base.startswith(_NUMERIC_CASTS):
        raise Unbounded(f"CAST to {n.type} is not a number")
    if inner is None or inner.empty:
        return inner
    if math.isinf(inner.low) or math.isinf(inner.high):
        return inner
    low, high = math.floor(inner.low), math.ceil(inner.high)
    if base in ("REAL", "FLOAT", "DOUBLE"):  # binary rounding: a relative 2⁻⁵² more
        low, high = low - abs(low) // (1 << 50) - 1, high + abs(high) // (1 << 50) + 1
    return Interval(low, high)
