"""Tests of cqsens.release.noise: Laplace and (analytic) Gaussian calibration.

The analytic σ is checked against its definition rather than against numbers
copied from elsewhere: at the returned σ the privacy profile equals δ (to 1e-9,
relative), at 0.99σ it exceeds δ, and the profile formula itself is checked
against a direct numerical integration of ``max(0, p(x) − e^ε q(x))`` over the
two output densities and against values tabulated with 60-digit arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cqsens.errors import InputError
from cqsens.release.noise import (
    NoiseCalibration,
    _log_ndtr,
    _log_profile,
    analytic_gaussian_sigma,
    calibrate,
    classical_gaussian_sigma,
    gaussian_delta,
    gaussian_halfwidth,
    laplace_halfwidth,
    laplace_scale,
)

# ----------------------------------------------------------------------------- Laplace


def test_laplace_scale() -> None:
    """Laplace scale is Δ1/ε, with 0 and ∞ passed through."""
    assert laplace_scale(1, 1.0) == 1.0
    assert laplace_scale(3, 0.5) == 6.0
    assert laplace_scale(0, 0.1) == 0.0
    assert laplace_scale(math.inf, 2.0) == math.inf


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_laplace_halfwidth_has_its_coverage(confidence: float) -> None:
    """P(|X| ≤ t) equals the confidence for Laplace noise."""
    b = 2.5
    t = laplace_halfwidth(b, confidence)
    assert math.isclose(1 - math.exp(-t / b), confidence, rel_tol=1e-12)


def test_laplace_halfwidth_95() -> None:
    """The 95 % half-width is b·ln 20."""
    assert math.isclose(laplace_halfwidth(1.0), math.log(20), rel_tol=1e-15)
    assert laplace_halfwidth(0.0) == 0.0
    assert laplace_halfwidth(math.inf) == math.inf


# ----------------------------------------------------------------------------- Gaussian


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_gaussian_halfwidth_has_its_coverage(confidence: float) -> None:
    """P(|X| ≤ t) equals the confidence for normal noise."""
    sigma = 3.0
    t = gaussian_halfwidth(sigma, confidence)
    normal = NormalDist(0, sigma)
    assert math.isclose(normal.cdf(t) - normal.cdf(-t), confidence, rel_tol=1e-12)


def test_gaussian_halfwidth_95() -> None:
    """The 95 % half-width is 1.959964·σ."""
    assert math.isclose(gaussian_halfwidth(1.0), 1.959964, rel_tol=1e-6)
    assert gaussian_halfwidth(0.0) == 0.0
    assert gaussian_halfwidth(math.inf) == math.inf


@pytest.mark.parametrize("x", [-60.0, -40.0, -37.0, -36.9, -20.0, -3.0, -0.5, 0.0, 0.5, 3.0, 9.0])
def test_log_ndtr(x: float) -> None:
    """Log Φ agrees with erfc wherever erfc is representable, and is increasing."""
    if x > -37:  # where erfc of the positive argument is still a normal float
        expect = math.log(0.5 * math.erfc(-x / math.sqrt(2)))
        if x > 0:
            expect = math.log1p(-0.5 * math.erfc(x / math.sqrt(2)))
        assert math.isclose(_log_ndtr(x), expect, rel_tol=1e-14, abs_tol=1e-300)
    else:  # asymptotic series; compare with erfc while it is still representable
        y = x / math.sqrt(2)
        erfc = math.erfc(-y)
        if erfc > 0:
            assert math.isclose(_log_ndtr(x), math.log(0.5 * erfc), rel_tol=1e-13)
        assert _log_ndtr(x) < _log_ndtr(x + 1e-3)


def test_log_ndtr_is_continuous_at_the_switch() -> None:
    """No jump where log Φ switches from erfc to the asymptotic series."""
    # across the switch from erfc to the series the step must match the slope
    # d/dx log Φ(x) = φ(x)/Φ(x) ≈ |x|/(1 − 1/x² + 3/x⁴) at x = −37
    h = 1e-7
    lo, hi = _log_ndtr(-37.0 - h), _log_ndtr(-37.0 + h)
    slope = 37.0 / (1 - 1 / 37.0**2 + 3 / 37.0**4)
    assert math.isclose((hi - lo) / (2 * h), slope, rel_tol=1e-6)


def _simpson(f: Callable[[float], float], a: float, b: float, n: int = 20000) -> float:
    h = (b - a) / n
    total = f(a) + f(b)
    for i in range(1, n):
        total += (4 if i % 2 else 2) * f(a + i * h)
    return total * h / 3


def _profile_by_integration(sigma: float, sens: float, eps: float) -> float:
    """δ(ε) = ∫ max(0, p(x) − e^ε q(x)) dx for p = N(0, σ²), q = N(Δ, σ²)."""
    p, q = NormalDist(0, sigma), NormalDist(sens, sigma)

    def f(x: float) -> float:
        return max(0.0, p.pdf(x) - math.exp(eps) * q.pdf(x))

    # the integrand has a kink where p = e^ε q; split there and integrate each side
    kink = sens / 2 - eps * sigma * sigma / sens
    return _simpson(f, kink - 12 * sigma, kink) + _simpson(f, kink, kink + 12 * sigma)


@pytest.mark.parametrize(
    ("sigma", "sens", "eps"), [(1.0, 1.0, 0.5), (3.0, 1.0, 1.0), (2.0, 3.0, 0.2), (0.7, 1.0, 3.0)]
)
def test_profile_formula_matches_integration(sigma: float, sens: float, eps: float) -> None:
    """The closed-form profile equals ∫ max(0, p − e^ε q), integrated numerically."""
    numeric = _profile_by_integration(sigma, sens, eps)
    assert numeric > 1e-9
    assert math.isclose(gaussian_delta(sigma, sens, eps), numeric, rel_tol=1e-6)


# Privacy profile δ(ε; σ) for Δ = 1, tabulated with mpmath at 60 significant digits
# (mp.ncdf(1/(2s) - e*s) - mp.e**e * mp.ncdf(-1/(2s) - e*s)), rounded to 17 digits.
PROFILE_TABLE = [
    (3.73, 1.0, 1.0028149557727746e-5),
    (0.5, 0.01, 0.68110105991648925),
    (30.0, 0.1, 1.3389982928393883e-5),
    (1700.0, 0.001, 1.0762903691059407e-5),
    (41000.0, 0.0001, 1.1136846670805805e-10),
    (100000.0, 1e-06, 3.5093550667078479e-6),
    (0.7, 10.0, 2.9186018665761368e-11),
]
# Below the double range: log δ, same method at 80 digits.
LOG_PROFILE_TABLE = [
    (0.05, 1000.0, -805.70774754528441),
    (2.0, 20.0, -799.02292664378086),
]


@pytest.mark.parametrize(("sigma", "eps", "expect"), PROFILE_TABLE)
def test_profile_matches_tabulated_values(sigma: float, eps: float, expect: float) -> None:
    """Small ε and large σ included: no cancellation between the two Φ terms."""
    assert math.isclose(gaussian_delta(sigma, 1, eps), expect, rel_tol=1e-12)
    assert math.isclose(gaussian_delta(3 * sigma, 3, eps), expect, rel_tol=1e-12)


@pytest.mark.parametrize(("sigma", "eps", "expect"), LOG_PROFILE_TABLE)
def test_log_profile_below_the_double_range(sigma: float, eps: float, expect: float) -> None:
    """Where δ underflows a double, its logarithm is still exact to ~1e-15."""
    assert math.isclose(_log_profile(sigma, eps), expect, rel_tol=1e-14)
    assert gaussian_delta(sigma, 1, eps) == 0.0


GRID = [
    (eps, delta, sens)
    for eps in (0.01, 0.1, 0.5, 1.0, 2.0, 10.0)
    for delta in (0.1, 1e-3, 1e-5, 1e-9, 1e-14)
    for sens in (1.0, 7.0)
]


@pytest.mark.parametrize(("eps", "delta", "sens"), GRID)
def test_analytic_sigma_is_the_smallest_private_sigma(
    eps: float, delta: float, sens: float
) -> None:
    """At σ the profile is δ (to 1e-9); at 0.99σ it exceeds δ; σ ≤ classical."""
    sigma = analytic_gaussian_sigma(sens, eps, delta)
    at = gaussian_delta(sigma, sens, eps)
    assert at <= delta * (1 + 1e-12)
    assert math.isclose(at, delta, rel_tol=1e-9)
    assert gaussian_delta(0.99 * sigma, sens, eps) > delta
    if eps < 1:
        assert sigma <= classical_gaussian_sigma(sens, eps, delta)


def test_analytic_sigma_known_value() -> None:
    """ε = 1, δ = 1e-5, Δ = 1 gives σ ≈ 3.7306, and σ is linear in Δ."""
    # ε = 1, δ = 1e-5, Δ = 1: σ ≈ 3.73 (Balle & Wang's setting); computed, not copied
    sigma = analytic_gaussian_sigma(1, 1.0, 1e-5)
    assert 3.73 < sigma < 3.731
    assert math.isclose(analytic_gaussian_sigma(4, 1.0, 1e-5), 4 * sigma, rel_tol=1e-12)


def test_analytic_sigma_extremes() -> None:
    """Zero/infinite sensitivity; huge ε with tiny δ, and tiny ε, stay finite."""
    assert analytic_gaussian_sigma(0, 1.0, 1e-5) == 0.0
    assert analytic_gaussian_sigma(math.inf, 1.0, 1e-5) == math.inf
    # a huge ε and a tiny δ neither overflow nor underflow
    for eps, delta in ((800.0, 1e-300), (1e-4, 1e-6), (50.0, 0.9)):
        sigma = analytic_gaussian_sigma(1, eps, delta)
        assert 0 < sigma < math.inf
        assert gaussian_delta(0.99 * sigma, 1, eps) > delta


@given(
    eps=st.floats(1e-3, 50.0),
    log_delta=st.floats(-30.0, math.log(0.5)),
)
def test_analytic_sigma_property(eps: float, log_delta: float) -> None:
    """Random (ε, δ): σ is private, 0.999σ is not, σ is monotone in ε and δ."""
    delta = math.exp(log_delta)
    sigma = analytic_gaussian_sigma(1, eps, delta)
    assert gaussian_delta(sigma, 1, eps) <= delta * (1 + 1e-9)
    assert gaussian_delta(0.999 * sigma, 1, eps) > delta
    # monotone: a larger ε or δ never needs more noise
    assert analytic_gaussian_sigma(1, 2 * eps, delta) <= sigma
    assert analytic_gaussian_sigma(1, eps, min(0.99, 2 * delta)) <= sigma


def test_classical_sigma() -> None:
    """The classical formula, refused for ε ≥ 1."""
    expect = 2 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5
    assert math.isclose(classical_gaussian_sigma(2, 0.5, 1e-5), expect, rel_tol=1e-15)
    with pytest.raises(InputError, match="epsilon < 1"):
        classical_gaussian_sigma(1, 1.0, 1e-5)


def test_gaussian_delta_edges() -> None:
    """Profile edge cases: no sensitivity, no noise, infinite noise or sensitivity."""
    assert gaussian_delta(1.0, 0, 1.0) == 0.0
    assert gaussian_delta(0.0, 1, 1.0) == 1.0
    assert gaussian_delta(math.inf, 1, 1.0) == 0.0
    assert gaussian_delta(1.0, math.inf, 1.0) == 1.0


# ----------------------------------------------------------------------------- calibrate


def test_calibrate_laplace_only() -> None:
    """Without δ only the Laplace fields are set."""
    c = calibrate(2, 1.5, epsilon=0.5)
    assert math.isclose(c.laplace_halfwidth_95, 4.0 * math.log(20), rel_tol=1e-14)
    assert c == NoiseCalibration(0.5, None, 4.0, c.laplace_halfwidth_95, None, None, None, None)


def test_calibrate_small_epsilon_reports_classical() -> None:
    """For ε < 1 the classical σ is reported, larger than the analytic σ."""
    c = calibrate(2, math.sqrt(2), epsilon=0.5, delta=1e-6)
    assert c.gaussian_method == "analytic"
    assert c.gaussian_sigma == analytic_gaussian_sigma(math.sqrt(2), 0.5, 1e-6)
    assert c.gaussian_classical_sigma == classical_gaussian_sigma(math.sqrt(2), 0.5, 1e-6)
    assert c.gaussian_sigma < c.gaussian_classical_sigma
    assert c.gaussian_halfwidth_95 is not None
    assert math.isclose(c.gaussian_halfwidth_95, 1.959964 * c.gaussian_sigma, rel_tol=1e-6)


def test_calibrate_large_epsilon_has_no_classical() -> None:
    """For ε ≥ 1 no classical σ is reported."""
    c = calibrate(1, 1, epsilon=2.0, delta=1e-6)
    assert c.gaussian_sigma is not None and c.gaussian_classical_sigma is None


def test_calibrate_infinite_and_zero_sensitivity() -> None:
    """Infinite sensitivities give infinite scales, zero gives zero."""
    c = calibrate(math.inf, math.inf, epsilon=1.0, delta=1e-6)
    assert c.laplace_scale == c.laplace_halfwidth_95 == math.inf
    assert c.gaussian_sigma == c.gaussian_halfwidth_95 == math.inf
    z = calibrate(0, 0, epsilon=0.1, delta=1e-6)
    assert z.laplace_scale == z.gaussian_sigma == z.gaussian_classical_sigma == 0.0


BAD: list[tuple[str, Callable[[], object], str]] = [
    ("epsilon-zero", lambda: calibrate(1, 1, epsilon=0), "epsilon"),
    ("epsilon-negative", lambda: calibrate(1, 1, epsilon=-1.0), "epsilon"),
    ("epsilon-inf", lambda: calibrate(1, 1, epsilon=math.inf), "epsilon"),
    ("epsilon-nan", lambda: laplace_scale(1, math.nan), "epsilon"),
    ("delta-zero", lambda: calibrate(1, 1, epsilon=1.0, delta=0.0), "delta"),
    ("delta-one", lambda: calibrate(1, 1, epsilon=1.0, delta=1.0), "delta"),
    ("delta-nan", lambda: analytic_gaussian_sigma(1, 1.0, math.nan), "delta"),
    ("l1-negative", lambda: calibrate(-1, 1, epsilon=1.0), "l1"),
    ("l2-nan", lambda: calibrate(1, math.nan, epsilon=1.0, delta=1e-5), "l2"),
    ("confidence-one", lambda: laplace_halfwidth(1.0, 1.0), "confidence"),
    ("sigma-negative", lambda: gaussian_halfwidth(-1.0), "sigma"),
]


@pytest.mark.parametrize(
    ("call", "needle"), [(c, n) for _, c, n in BAD], ids=[i for i, _, _ in BAD]
)
def test_bad_parameters_raise_input_error(call: Callable[[], object], needle: str) -> None:
    """Bad ε, δ, sensitivities or confidences raise InputError."""
    with pytest.raises(InputError, match=needle):
        call()
