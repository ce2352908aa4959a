"""Exact bound arithmetic: huge bounds stay exact, square roots and displays are never below."""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from cqsens.ir.exact import display, exact, sqrt_upper, text
from cqsens.release.aggregates import count_bound, histogram_bound, sum_bound, vector_bound

HUGE = st.integers(0, 10**40)
RATIONALS = st.fractions(min_value=0, max_value=10**30, max_denominator=10**12)


@given(HUGE, HUGE, st.integers(1, 10**30))
def test_huge_sums_are_exact(delta: int, high: int, k: int) -> None:
    b = sum_bound(delta, -high, high, contributions=k)
    assert b.l1 == b.l2 == (k * delta * high if delta and high else 0)
    assert isinstance(b.l1, int)


@given(HUGE, st.integers(1, 10**30))
def test_counts_and_vectors_are_exact(delta: int, k: int) -> None:
    assert count_bound(delta, contributions=k).l1 == k * delta
    v = vector_bound([count_bound(delta, neighbor="substitute"),
                      histogram_bound(delta, neighbor="substitute")])
    assert v.l1 == 3 * delta
    assert v.l2 ** 2 >= 3 * delta**2  # √(Δ² + 2Δ²), never below


@given(RATIONALS)
def test_square_root_is_a_tight_upper_bound(x: Fraction) -> None:
    root = sqrt_upper(x)
    assert root**2 >= x
    assert (root - root / 10**16 - Fraction(1, 10**30)) ** 2 < x or root**2 == x


@given(RATIONALS)
def test_display_and_text_never_round_down(x: Fraction) -> None:
    assert Fraction(display(x)) >= x
    assert Fraction(text(x)) >= x


def test_reproducers_of_the_issue() -> None:
    """A 2^53 + 1 bound, a 23-digit CHECK and 10^30 contributions stay exact."""
    assert sum_bound(1, 0, exact("9007199254740993")).l1 == 9007199254740993
    assert sum_bound(1, 0, exact("99999999999999999999999")).l1 == 99999999999999999999999
    assert count_bound(120, contributions=10**30).l1 == 120 * 10**30
    assert display(exact(math.inf)) == math.inf
