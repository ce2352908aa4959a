"""SQLite aggregate functions for the witness checks: MEDIAN and ``PERCENTILE_CONT`` (SQLite
has neither), and SUM, TOTAL, AVG, MEDIAN and PERCENTILE_CONT computed exactly from each
value's decimal text, the replacing aggregates of an exact pass
(:func:`cqsens.witness.aggregate.released_values`)."""

from __future__ import annotations

import functools
import math
import statistics
import threading
from fractions import Fraction
from typing import Any

__all__ = ["CURRENT", "EXACT_AGGREGATES", "Ambiguous", "ExactAvg", "ExactPercentile",
           "ExactResults", "ExactSum", "ExactTotal", "Median", "Percentile", "sql_value"]


class Median:
    """SQLite aggregate: the median of the non-NULL values (NULL when there are none)."""

    def __init__(self) -> None:
        self.values: list[float | int] = []

    def step(self, value: Any) -> None:
        if isinstance(value, (int, float)):
            self.values.append(value)

    def finalize(self) -> float | int | None:
        return statistics.median(self.values) if self.values else None


class Percentile(Median):
    """SQLite aggregate ``PERCENTILE_CONT(x, q)`` (linear interpolation; the median at
    ``q = 0.5``), the form MEDIAN takes in SQLite syntax."""

    def __init__(self) -> None:
        super().__init__()
        self.q = 0.5

    def step(self, value: Any, q: Any = 0.5) -> None:
        super().step(value)
        self.q = float(q)

    def finalize(self) -> float | int | None:
        if not self.values:
            return None
        xs = sorted(self.values)
        if self.q == 0.5:
            return statistics.median(xs)
        pos = self.q * (len(xs) - 1)
        low = int(pos)
        high = min(low + 1, len(xs) - 1)
        return xs[low] + (xs[high] - xs[low]) * (pos - low)


def sql_value(value: Any) -> Fraction:
    """The exact number a value SQLite hands over stands for: an integer as it is, a REAL
    as the decimal text it is written with (``repr``, the text a witness script inserts:
    ``0.1`` is 1/10, not the nearest double), a numeric text read exactly.

    >>> sql_value(0.1), sql_value(3), sql_value(" 2.50 ")
    (Fraction(1, 10), Fraction(3, 1), Fraction(5, 2))
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return Fraction(repr(value) if isinstance(value, float) else value)


_INT64 = 2**63


class Ambiguous(Exception):
    """Two different exact results share one double: the cell cannot be read exactly."""


class ExactResults:
    """The exact results the replacing aggregates of one connection returned: each
    returned double → the exact values behind it, with the magnitude Σ|x| of their
    inputs (the scale of a float sum's error)."""

    def __init__(self) -> None:
        self.results: dict[float, set[tuple[Fraction, Fraction]]] = {}

    def returned(self, value: Fraction, scale: Fraction, *, integer: bool) -> float | int:
        """What SQLite gets back: an int when SQLite's own function returns one (and an
        integer overflow as SQLite's own SUM), else the nearest double."""
        if integer and value.denominator == 1:
            if abs(value.numerator) >= _INT64:
                raise OverflowError("integer overflow")
            return value.numerator
        shown = float(value)
        self.results.setdefault(shown, set()).add((value, scale))
        return shown

    def read(self, cell: Any) -> Fraction | str | None:
        """The exact value of a result cell; a double no replacing aggregate returned (a
        MIN, a MAX) is a stored value, read from its text (:func:`sql_value`)."""
        if cell is None or isinstance(cell, str):
            return cell
        found = self.results.get(cell) if isinstance(cell, float) else None
        if found is None:
            return sql_value(cell)
        if len({v for v, _ in found}) != 1:
            raise Ambiguous(cell)
        return next(iter(found))[0]

    def scale(self, cell: Any) -> Fraction:
        """Σ|x| behind a result cell (0 for a value no replacing aggregate computed)."""
        found = self.results.get(cell) if isinstance(cell, float) else None
        return max((sc for _, sc in found), default=Fraction(0)) if found else Fraction(0)


CURRENT = threading.local()  # the registry of the exact pass running in this thread


def _registry() -> ExactResults:
    registry: ExactResults = CURRENT.registry
    return registry


@functools.lru_cache(maxsize=65536)
def _float_parts(value: float) -> tuple[int, int]:
    """:func:`sql_value` of a finite double as (numerator, denominator), kept: a witness's
    databases repeat the same few values in every group."""
    exact = sql_value(value)
    return exact.numerator, exact.denominator


class ExactSum:
    """SQLite's SUM computed exactly (:func:`sql_value` of each value): NULL on no
    value, an int when every value is one; TOTAL and AVG are its subclasses.

    The non-integers are added up by denominator (the decimal texts of a column share a
    few powers of ten) in integers: the same Fractions as adding each value's
    :func:`sql_value` one by one, without normalising each partial sum."""

    kind = "sum"

    def __init__(self) -> None:
        self.ints = self.int_scale = self.count = 0
        self.others: dict[int, list[int]] = {}  # denominator → [Σ numerators, Σ |numerators|]

    def step(self, value: Any) -> None:
        if value is None:
            return
        self.count += 1
        if isinstance(value, int) and not isinstance(value, bool):
            self.ints += value
            self.int_scale += abs(value)
            return
        if isinstance(value, float) and math.isfinite(value):
            numerator, denominator = _float_parts(value)
        else:
            exact = sql_value(value)
            numerator, denominator = exact.numerator, exact.denominator
        sums = self.others.setdefault(denominator, [0, 0])
        sums[0] += numerator
        sums[1] += abs(numerator)

    def finalize(self) -> float | int | None:
        total = Fraction(self.ints)
        scale = Fraction(self.int_scale)
        for denominator, (numerator, magnitude) in self.others.items():
            total += Fraction(numerator, denominator)
            scale += Fraction(magnitude, denominator)
        if self.kind == "total":
            return _registry().returned(total, scale, integer=False)
        if not self.count:
            return None
        if self.kind == "avg":
            return _registry().returned(total / self.count, scale, integer=False)
        return _registry().returned(total, scale, integer=not self.others)


class ExactTotal(ExactSum):
    kind = "total"


class ExactAvg(ExactSum):
    kind = "avg"


class ExactPercentile:
    """MEDIAN and ``PERCENTILE_CONT(x, q)`` computed exactly (as :class:`Percentile`)."""

    def __init__(self) -> None:
        self.values: list[Fraction] = []
        self.integer = True
        self.q = Fraction(1, 2)

    def step(self, value: Any, q: Any = 0.5) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.values.append(sql_value(value))
            self.integer = self.integer and isinstance(value, int)
        self.q = sql_value(q)

    def finalize(self) -> float | int | None:
        if not self.values:
            return None
        xs = sorted(self.values)
        pos = self.q * (len(xs) - 1)
        low = math.floor(pos)
        high = min(low + 1, len(xs) - 1)
        value = xs[low] + (xs[high] - xs[low]) * (pos - low)
        scale = sum((abs(v) for v in xs), Fraction(0))
        # statistics.median returns the middle value itself (an int for ints)
        middle = len(xs) % 2 == 1 and self.q == Fraction(1, 2)
        return _registry().returned(value, scale, integer=self.integer and middle)


EXACT_AGGREGATES: dict[tuple[str, int], type] = {
    ("sum", 1): ExactSum, ("total", 1): ExactTotal, ("avg", 1): ExactAvg,
    ("median", 1): ExactPercentile, ("percentile_cont", 2): ExactPercentile}
"""SUM, TOTAL, AVG, MEDIAN and PERCENTILE_CONT computed exactly; they replace SQLite's
own on the connection of an exact pass (:func:`cqsens.witness.aggregate.released_values`)."""
