"""Exact bound arithmetic: ints and Fractions, infinity as ``math.inf``, never rounded down.

A sensitivity bound is computed exactly: integers stay Python ints (any size)
and rationals are :class:`fractions.Fraction`; the only float a bound may hold
is ``math.inf`` (unbounded).  Square roots (ℓ2 norms) are irrational, so
:func:`sqrt_upper` returns a rational *upper* bound within 10⁻¹⁷ relative.  For
display and JSON, :func:`display` turns a Fraction into the nearest float that
is not below it: what is printed is never smaller than what was proven, and
:func:`json_number` gives the exact JSON form of a number (docs/json.md, section Output).
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

__all__ = ["Exact", "decimal_text", "display", "exact", "json_number", "mul", "sqrt_upper",
           "sql_decimal", "text"]

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


def decimal_text(value: Fraction) -> str | None:
    """The exact decimal digits of ``value`` when its expansion terminates, else None.

    >>> decimal_text(Fraction(1, 10)), decimal_text(Fraction(-30004947, 100))
    ('0.1', '-300049.47')
    >>> decimal_text(Fraction(1, 3)) is None
    True
    """
    d = value.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        return None
    places = max(twos, fives)
    scaled = abs(value.numerator) * 10**places // value.denominator  # exact: 10^places / den
    digits = str(scaled).rjust(places + 1, "0")
    whole, frac = (digits[:-places], digits[-places:]) if places else (digits, "")
    sign = "-" if value < 0 else ""
    return sign + whole + ("." + frac if frac else "")


def json_number(value: int | float | Fraction | Decimal | None) -> int | float | str | None:
    """The exact JSON form of a number (docs/json.md, section Output).

    An integral value is a JSON integer; a float, or a non-integer that is exactly a
    binary64 double, is a JSON number (any JSON reader gets it back exactly); any other
    rational is a string holding its exact value: its decimal digits when they end
    (``"0.1"``, ``"300049.47"``), else ``"p/q"`` (``"20/3"``).  ``fractions.Fraction``
    reads both string forms exactly.  ±∞ is ``"inf"`` / ``"-inf"``; None stays None.

    >>> [json_number(x) for x in (7, Fraction(5, 2), Fraction(1, 10), Fraction(20, 3))]
    [7, 2.5, '0.1', '20/3']
    >>> json_number(Decimal("300049.47")), json_number(math.inf), json_number(Decimal("4.00"))
    ('300049.47', 'inf', 4)
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return int(value) if value.is_integer() and abs(value) < 2**63 else value
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and not value.is_finite():
        return "inf" if value > 0 else "-inf" if value < 0 else str(value)
    q = Fraction(value)
    if q.denominator == 1:
        return q.numerator
    shown = float(q)
    if math.isfinite(shown) and Fraction(shown) == q:
        return shown
    return decimal_text(q) or f"{q.numerator}/{q.denominator}"


def _g_format(steps: int, exponent: int, digits: int) -> str:
    """``steps · 10^exponent`` (at most ``digits`` + 1 significant digits) written as
    ``format(x, f".{digits}g")`` writes a float, but from the exact value."""
    sign = "-" if steps < 0 else ""
    body = str(abs(steps)).rstrip("0")
    exponent += len(str(abs(steps))) - len(body)
    point = len(body) - 1 + exponent  # the decimal exponent of the leading digit
    if -4 <= point < digits:
        if exponent >= 0:
            return sign + body + "0" * exponent
        whole = body[:point + 1] if point >= 0 else "0"
        frac = body[point + 1:] if point >= 0 else "0" * (-point - 1) + body
        return sign + whole + ("." + frac if frac else "")
    mantissa = body[0] + ("." + body[1:] if len(body) > 1 else "")
    return f"{sign}{mantissa}e{'+' if point >= 0 else '-'}{abs(point):02d}"


def text(value: Exact, digits: int = 6) -> str:
    """Short text of a bound, rounded up to ``digits`` significant digits (``∞``).

    The digits are computed from the exact value (no float in between), and a value
    whose decimal expansion ends within 15 significant digits (a bound read from
    CHECK or ``--bounds`` text) is shown exactly, whatever ``digits``.

    >>> text(Fraction(1, 3)), text(10**30), text(math.inf), text(Fraction(5, 2))
    ('0.333334', '1000000000000000000000000000000', '∞', '2.5')
    >>> text(Fraction(10001649, 100), digits=17), text(Fraction(30004947, 100))
    ('100016.49', '300049.47')
    >>> text(2 / 3), text(Fraction(123456789012345678, 10**9))
    ('0.666667', '1.23457e+08')
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
    digits = max(digits, _exact_digits(q))
    exponent = _log10_floor(abs(q)) - digits + 1
    unit = Fraction(10) ** exponent
    steps = math.ceil(q / unit)  # round up
    return _g_format(steps, exponent, digits)


_SHOWN_EXACTLY = 15


def _exact_digits(q: Fraction) -> int:
    """The significant digits of ``q``'s decimal expansion when it ends within
    ``_SHOWN_EXACTLY`` of them, else 0."""
    shown = decimal_text(q)
    if shown is None:
        return 0
    significant = len(shown.lstrip("-").replace(".", "").lstrip("0").rstrip("0"))
    return significant if significant <= _SHOWN_EXACTLY else 0


def _log10_floor(q: Fraction) -> int:
    """``⌊log10 q⌋`` for a positive rational, exactly."""
    guess = len(str(q.numerator)) - len(str(q.denominator))
    while Fraction(10) ** guess > q:
        guess -= 1
    while Fraction(10) ** (guess + 1) <= q:
        guess += 1
    return guess


def sql_decimal(value: Exact, *, toward: int = 0) -> str:
    """A finite ``value`` as SQL decimal digits: exact when it has finitely many, else
    rounded to 18 places up (``toward=1``) or down (``toward=-1``); ``toward=0`` demands
    an exact text.

    >>> sql_decimal(Fraction(5, 2)), sql_decimal(10**20), sql_decimal(Fraction(-1, 8))
    ('2.5', '100000000000000000000', '-0.125')
    >>> sql_decimal(Fraction(1, 3), toward=1), sql_decimal(Fraction(1, 3), toward=-1)
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
