"""What every aggregate rule shares (:mod:`cqsens.release.aggregates`): the neighbour
models, the :class:`AggregateBound` value and its derivation, the checks of the rules'
inputs, and the exact arithmetic of value ranges."""

import math
from dataclasses import dataclass
from fractions import Fraction

from cqsens.engine.rules import Derivation, Input, Neighbourhood, Rule
from cqsens.errors import InputError
from cqsens.ir.exact import Exact, exact, mul

__all__ = ["NEIGHBORS", "AggregateBound", "derived"]

NEIGHBORS: tuple[str, ...] = ("add-remove", "substitute")
"""The neighbour models understood by every function of this module."""


@dataclass(frozen=True, slots=True)
class AggregateBound:
    """Sensitivity of one released aggregate (a scalar or a vector).

    Attributes
    ----------
    l1 : int, Fraction or float
        Upper bound on the ℓ1 norm of the change between neighbours: exact (an
        ``int`` or a ``Fraction``), or ``math.inf`` when unbounded.
    l2 : int, Fraction or float
        Upper bound on the ℓ2 norm of the change (a norm, never its square); a
        square root is replaced by a rational upper bound.
    neighbor : str
        The neighbour model, ``"add-remove"`` or ``"substitute"``.
    derivation : Derivation
        The rule of docs/rules.md applied, with its inputs (rendered in words by
        :mod:`cqsens.report.words`).
    """

    l1: Exact
    l2: Exact
    neighbor: str
    derivation: Derivation

    @property
    def rule(self) -> Rule:
        """The rule of docs/rules.md that gives the bound."""
        return self.derivation.rule


def derived(l1: Exact, l2: Exact, neighbor: str, rule: Rule, contributions: int = 1,
            premises: tuple[Derivation, ...] = (), **inputs: Input) -> AggregateBound:
    """An :class:`AggregateBound` whose derivation applies ``rule`` to ``inputs``.

    >>> derived(2, 2, "add-remove", Rule.SUM, delta=1, low=0, high=2).derivation.rule.value
    'sum'
    """
    where = Neighbourhood(model=neighbor, contributions=contributions)
    return AggregateBound(l1, l2, neighbor, Derivation(rule, l1, where, inputs, premises))


# ----------------------------------------------------------------------------- checks


def _check_neighbor(neighbor: object) -> str:
    if neighbor not in NEIGHBORS:
        raise InputError(
            f"unknown neighbour model {neighbor!r}: choose one of "
            + ", ".join(repr(n) for n in NEIGHBORS),
            construct="neighbor",
        )
    return str(neighbor)


def _check_count_delta(count_delta: object) -> Exact:
    if (
        not isinstance(count_delta, (int, float, Fraction))
        or isinstance(count_delta, bool)
        or (isinstance(count_delta, float) and math.isnan(count_delta))
    ):
        raise InputError(
            f"count_delta must be a number >= 0 or math.inf, not {count_delta!r}",
            construct="count_delta",
        )
    if count_delta < 0:
        raise InputError(f"count_delta must be >= 0, not {count_delta!r}", construct="count_delta")
    return exact(count_delta)


def _check_contributions(contributions: object) -> int:
    if not isinstance(contributions, int) or isinstance(contributions, bool):
        raise InputError(
            f"contributions must be an integer >= 1, not {contributions!r}",
            construct="contributions",
        )
    if contributions < 1:
        raise InputError(
            f"contributions must be >= 1 (tuples owned by one individual), not {contributions!r}",
            construct="contributions",
        )
    return contributions


def _check_range(low: Exact, high: Exact) -> tuple[Exact, Exact]:
    checked: list[Exact] = []
    for name, value in (("low", low), ("high", high)):
        if not isinstance(value, (int, float, Fraction)) or isinstance(value, bool) \
                or (isinstance(value, float) and math.isnan(value)):
            raise InputError(
                f"value bound {name} must be a number, not {value!r}", construct="bounds"
            )
        checked.append(exact(value))
    low, high = checked
    if low > high:
        raise InputError(f"empty value range: low {low!r} > high {high!r}", construct="bounds")
    if low == math.inf or high == -math.inf:
        raise InputError(
            f"value range [{low!r}, {high!r}] holds no real number", construct="bounds"
        )
    return low, high


def _check_args(count_delta: object, neighbor: object,
                contributions: object) -> tuple[str, Exact, int]:
    """The checked neighbour model, count bound Δ and contributions k of a rule."""
    return (_check_neighbor(neighbor), _check_count_delta(count_delta),
            _check_contributions(contributions))


def _check_value_args(count_delta: object, low: Exact, high: Exact, neighbor: object,
                      contributions: object) -> tuple[str, Exact, int, Exact, Exact]:
    """:func:`_check_args` and the checked value range ``[low, high]`` of a value rule."""
    neighbor, delta, k = _check_args(count_delta, neighbor, contributions)
    return (neighbor, delta, k, *_check_range(low, high))


# ----------------------------------------------------------------------------- arithmetic


_mul = mul


def _half(value: Exact) -> Exact:
    """``value / 2``, exactly."""
    return mul(value, Fraction(1, 2))


def _span(low: Exact, high: Exact) -> Exact:
    """``M − m`` (0 for a single value, ``inf`` for an unbounded side)."""
    return 0 if low == high else high - low


def _magnitude(low: Exact, high: Exact) -> Exact:
    """``max(|m|, |M|)``: the largest value one row can add to or remove from a sum."""
    a: Exact = -low if low < 0 else low
    b: Exact = -high if high < 0 else high
    return a if a >= b else b


def _signed_span(low: Exact, high: Exact) -> Exact:
    """``max(M, 0) − min(m, 0)``: the largest change of a sum when a row is substituted."""
    top: Exact = high if high > 0 else 0
    bottom: Exact = low if low < 0 else 0
    return top - bottom
