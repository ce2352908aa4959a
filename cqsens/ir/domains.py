"""Finite value domains that a column's CHECK gives: ``CHECK (kind IN ('a', 'b'))``.

A CHECK passes when its condition is TRUE or NULL, so a column admits NULL and
the values for which the condition is TRUE.  :func:`domain_of` returns those
values when they are finitely many and can be read off the predicate (an
``IN`` list of literals, ``=`` a literal, and their ``AND``/``OR``), and None
otherwise.  A list that holds NULL gives no domain: ``x IN ('a', NULL)`` is NULL,
so passes, for every other ``x``.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from cqsens.ir.expr import And, Compare, InList, Literal, Or, Predicate, Slot

__all__ = ["Domain", "domain_of"]

Domain = tuple[int | Decimal | str | bool, ...]
"""The values of a finite domain, each once, in the order first written."""


def _key(value: int | Decimal | str | bool) -> object:
    """Values SQL compares as equal get one key: ``1`` and ``1.0``."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, Decimal)):
        return Fraction(value)
    return value


def _values(items: list[int | Decimal | str | bool | None]) -> Domain | None:
    """The values once each (by SQL equality); None when one is NULL."""
    seen: dict[object, int | Decimal | str | bool] = {}
    for value in items:
        if value is None:
            return None
        seen.setdefault(_key(value), value)
    return tuple(seen.values())


def domain_of(check: Predicate) -> Domain | None:
    """The values a CHECK over ``Slot(0)`` admits besides NULL, when finitely many.

    ``AND`` keeps the smallest finite part (its values include every admitted
    one); ``OR`` the union of its parts, when all are finite.

    Examples
    --------
    >>> from cqsens.ir.expr import literal_of
    >>> domain_of(InList(Slot(0), (literal_of("a"), literal_of("b"), literal_of("a"))))
    ('a', 'b')
    >>> domain_of(InList(Slot(0), (literal_of(0), literal_of(None)))) is None
    True
    """
    if isinstance(check, InList):
        if check.negated or check.operand != Slot(0):
            return None
        if not all(isinstance(i, Literal) for i in check.items):
            return None
        return _values([i.value for i in check.items if isinstance(i, Literal)])
    if isinstance(check, Compare) and check.op == "=":
        sides = (check.left, check.right)
        if Slot(0) in sides:
            other = check.right if check.left == Slot(0) else check.left
            if isinstance(other, Literal):
                return _values([other.value])
        return None
    if isinstance(check, And):
        found = [d for d in (domain_of(p) for p in check.parts) if d is not None]
        return min(found, key=len) if found else None
    if isinstance(check, Or):
        parts = [domain_of(p) for p in check.parts]
        if any(d is None for d in parts):
            return None
        return _values([v for d in parts if d is not None for v in d])
    return None
