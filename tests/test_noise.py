"""Tests of cqsens.release.noise: Laplace and Gaussian calibration through OpenDP's maps.

OpenDP's σ is checked against definitions rather than numbers copied from
elsewhere: it is private by the exact Gaussian privacy profile (Balle and Wang
2018, Thm 8, computed here), 0.999σ fails OpenDP's own map, and it lies between
the exact σ and the classical one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import pytest

from cqsens.errors import InputError
from cqsens.release.noise import (
    NoiseCalibration,
    calibrate,
    classical_gaussian_sigma,
    gaussian_halfwidth,
    gaussian_sigma,
    laplace_halfwidth,
    laplace_scale,
    zcdp_epsilon,
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


def _exact_profile(sigma: float, sens: float, eps: float) -> float:
    """δ(ε) of Gaussian noise (Balle and Wang 2018, Thm 8), for moderate arguments."""
    phi = NormalDist().cdf
    a, b = sens / (2 * sigma), eps * sigma / sens
    return phi(a - b) - math.exp(eps) * phi(-a - b)


@pytest.mark.parametrize(("sens", "eps", "delta"), [
    (1, 0.1, 1e-5), (1, 0.5, 1e-6), (1, 1.0, 1e-5), (3, 2.0, 1e-8), (120, 0.5, 1e-6),
    (math.sqrt(2), 0.25, 1e-7),
])
def test_gaussian_sigma_is_private_and_opendp_minimal(sens: float, eps: float,
                                                      delta: float) -> None:
    """OpenDP's zCDP σ meets (ε, δ) by the exact Gaussian profile (an independent check),
    is the smallest σ OpenDP's map accepts (0.999σ fails it), and lies between the
    exact (analytic) σ and the classical one."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    sigma = gaussian_sigma(sens, eps, delta)
    assert _exact_profile(sigma, sens, eps) <= delta
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)

    def opendp_eps(s: float) -> float:
        chain = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(
            dp.m.make_gaussian(*space, scale=s)), delta)
        return float(chain.map(float(sens))[0])

    assert opendp_eps(sigma) <= eps < opendp_eps(0.999 * sigma)
    assert _exact_profile(0.8 * sigma, sens, eps) > delta  # not far from the exact σ
    if eps < 1:
        assert sigma < classical_gaussian_sigma(sens, eps, delta)


def test_gaussian_sigma_scales_with_sensitivity() -> None:
    """σ is proportional to Δ2; integer calibration at a non-integer Δ2 stays private."""
    one = gaussian_sigma(1, 1.0, 1e-5)
    assert math.isclose(gaussian_sigma(4, 1.0, 1e-5), 4 * one, rel_tol=1e-6)
    assert math.isclose(gaussian_sigma(math.sqrt(2), 1.0, 1e-5, integer=True),
                        math.sqrt(2) * gaussian_sigma(1, 1.0, 1e-5, integer=True), rel_tol=1e-9)
    assert gaussian_sigma(0, 1.0, 1e-5) == 0.0
    assert gaussian_sigma(math.inf, 1.0, 1e-5) == math.inf
    assert gaussian_sigma(1, 2.0, 1e-5) < one and gaussian_sigma(1, 1.0, 1e-3) < one


def test_classical_sigma() -> None:
    """The classical σ of Dwork and Roth, Thm A.1, and its ε < 1 condition."""
    assert math.isclose(classical_gaussian_sigma(1, 0.5, 1e-5),
                        math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5, rel_tol=1e-15)
    with pytest.raises(InputError, match="epsilon < 1"):
        classical_gaussian_sigma(1, 1.0, 1e-5)


def test_zcdp_epsilon() -> None:
    """Bun and Steinke's conversion ρ + 2√(ρ ln(1/δ))."""
    assert math.isclose(zcdp_epsilon(0.5, math.exp(-2)), 0.5 + 2 * math.sqrt(1.0), rel_tol=1e-15)


# ----------------------------------------------------------------------------- calibrate


def test_calibrate_laplace_only() -> None:
    """Without δ only the Laplace fields are set."""
    c = calibrate(2, 1.5, epsilon=0.5)
    assert math.isclose(c.laplace_halfwidth_95, 4.0 * math.log(20), rel_tol=1e-14)
    assert c == NoiseCalibration(0.5, None, 4.0, c.laplace_halfwidth_95, None, None, None, None)


def test_calibrate_small_epsilon_reports_classical() -> None:
    """For ε < 1 the classical σ is reported, larger than OpenDP's zCDP σ."""
    c = calibrate(2, math.sqrt(2), epsilon=0.5, delta=1e-6)
    assert c.gaussian_method == "zCDP"
    assert c.gaussian_sigma == gaussian_sigma(math.sqrt(2), 0.5, 1e-6)
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
    ("delta-nan", lambda: gaussian_sigma(1, 1.0, math.nan), "delta"),
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
