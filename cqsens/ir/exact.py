"""Exact bound arithmetic: ints and Fractions, infinity as ``math.inf``, never rounded down.

A sensitivity bound is computed exactly: integers stay Python ints (any size)
and rationals are :class:`fractions.Fraction`; the only float a bound may hold
is ``math.inf`` (unbounded).  Square roots (ℓ2 norms) are irrational, so
:func:`sqrt_upper` returns a rational *upper* bound within 10⁻¹⁷ relative.  For
display and JSON, :func:`display` turns a Fraction into the nearest float that
is not below it: what is printed is never smaller than what was proven.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

__all__ = ["Exact", "decimal_text", "display", "exact", "mul", "sqrt_upper", "text"]

Exact = int | Fraction | float
"""A bound: an int, a Fraction, or ``math.inf`` / ``-math.inf``."""

_DIGITS = 17


def _normal(value: Fraction) -> int | Fraction:
    return value.numerator if value.denominator == 1 else value


def exact(value: int | float | Fraction | Decimal | str) -> Exact:
    """The exact value of a number (text and Decimals read exactly; ±inf kept).

    >>> exact("9007199254740993"), exact("2.5"), exact(0.1) == Fraction(1, 10)
    (9007199254740993, Fraction(5, 2), False)
    """
    if isinstance(value, bool):
        raise TypeError("a bound is a number, not a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            raise ValueError("a bound is never NaN")
        return value if math.isinf(value) else _normal(Fraction(value))
    if isinstance(value, str) and value.strip().lower().lstrip("+-") in ("inf", "infinity"):
        return -math.inf if value.strip().startswith("-") else math.inf
    return _normal(Fraction(value))


def mul(a: Exact, b: Exact) -> Exact:
    """``a · b`` with ``0 · ∞ = 0``: a zero bound stays zero whatever it scales."""
    if a == 0 or b == 0:
        return 0
    product = a * b
    return _normal(product) if isinstance(product, Fraction) else product


def sqrt_upper(value: Exact) -> Exact:
    """A rational upper bound on ``√value``, exact when ``value`` is a perfect square.

    >>> sqrt_upper(4), sqrt_upper(Fraction(9, 4))
    (2, Fraction(3, 2))
    >>> sqrt_upper(2) > Fraction(14142135623730950488, 10**19)
    True
    >>> float(sqrt_upper(2)) >= math.sqrt(2)
    True
    """
    if value < 0:
        raise ValueError("no square root of a negative bound")
    if value == math.inf:
        return math.inf
    q = Fraction(value)
    n, d = q.numerator, q.denominator
    product = n * d  # √(n/d) = √(n·d)/d
    root = math.isqrt(product)
    if root * root == product:
        return _normal(Fraction(root, d))
    scale = 10 ** max(0, _DIGITS - len(str(root)))
    scaled = math.isqrt(product * scale * scale)
    return _normal(Fraction(scaled + 1, d * scale))


def display(value: Exact) -> int | float:
    """An int when integral, else the nearest float not below ``value`` (for JSON)."""
    if isinstance(value, int) or isinstance(value, float):
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if value.denominator == 1:
        return value.numerator
    shown = float(value)
    if Fraction(shown) < value:
        shown = math.nextafter(shown, math.inf)
    return shown


def text(value: Exact, digits: int = 6) -> str:
    """Short text of a bound, rounded up to ``digits`` significant digits (``∞``).

    >>> text(Fraction(1, 3)), text(10**30), text(math.inf), text(Fraction(5, 2))
    ('0.333334', '1000000000000000000000000000000', '∞', '2.5')
    """
    if value == math.inf:
        return "∞"
    if value == -math.inf:
        return "-∞"
    if isinstance(value, int) or (isinstance(value, Fraction) and value.denominator == 1):
        return str(int(value))
    q = Fraction(value)
    if q == 0:
        return "0"
    exponent = math.floor(math.log10(abs(float(q)))) - digits + 1
    unit = Fraction(10) ** exponent
    steps = math.ceil(q / unit)  # round up
    rounded = steps * unit
    out = f"{float(rounded):.{digits}g}"
    if Fraction(out) >= q:
        return out
    return f"{math.nextafter(float(rounded), math.inf):.{digits + 2}g}"


def decimal_text(value: Exact, *, toward: int = 0) -> str:
    """A finite ``value`` as SQL decimal digits: exact when it has finitely many, else
    rounded to 18 places up (``toward=1``) or down (``toward=-1``); ``toward=0`` demands
    an exact text.

    >>> decimal_text(Fraction(5, 2)), decimal_text(10**20), decimal_text(Fraction(-1, 8))
    ('2.5', '100000000000000000000', '-0.125')
    >>> decimal_text(Fraction(1, 3), toward=1), decimal_text(Fraction(1, 3), toward=-1)
    ('0.333333333333333334', '0.333333333333333333')

    Raises
    ------
    ValueError
        An infinite value, or one with no exact decimal text when ``toward=0``.
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} has no decimal text")
    q = Fraction(value)
    rest, digits = q.denominator, 0
    for p in (2, 5):
        while rest % p == 0:
            rest //= p
            digits += 1
    if rest != 1:
        if toward == 0:
            raise ValueError(f"{q} has no exact decimal text")
        digits = 18
        scaled = q * 10 ** digits
        whole = math.ceil(scaled) if toward > 0 else math.floor(scaled)
    else:
        whole = int(q * 10 ** digits)
    sign, digits_text = ("-" if whole < 0 else ""), str(abs(whole)).rjust(digits + 1, "0")
    if not digits:
        return f"{sign}{digits_text}"
    shown = f"{digits_text[:-digits]}.{digits_text[-digits:]}".rstrip("0").rstrip(".")
    return f"{sign}{shown}"
