"""Laplace and Gaussian noise scales from OpenDP's privacy maps, and their error half-widths.

The **Laplace mechanism** adds Laplace noise of scale ``b`` and is ε-DP for
``b ≥ Δ1/ε`` (Dwork, McSherry, Nissim, Smith 2006); the **Gaussian mechanism** adds
normal noise of standard deviation ``σ``; it is ρ-zCDP with ``ρ = Δ2²/(2σ²)`` (Bun
and Steinke 2016, Prop 1.6), which gives ``(ε, δ)``-DP through OpenDP's conversion
from zCDP.  Each scale is the smallest one whose map meets the target, found by
bisection (:mod:`cqsens.release.noise`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from statistics import NormalDist
from typing import Any

from cqsens.errors import InputError
from cqsens.ir.exact import display
from cqsens.release.limits import (
    MAX_FLOAT_SCALE,
    MAX_INTEGER_SCALE,
    ReleaseError,
    _check_confidence,
    _check_delta,
    _check_epsilon,
    _check_fits,
    _check_scale,
    _check_sensitivity,
)
from cqsens.release.search import (
    _SLACK,
    _bisect,
    _decimals,
    _dp,
    _float_up,
    _miss,
    _smallest,
    _space,
)

__all__ = ["classical_gaussian_sigma", "gaussian_halfwidth", "gaussian_sigma",
           "laplace_halfwidth", "laplace_scale", "zcdp_epsilon"]


# ----------------------------------------------------------------------------- Laplace


def laplace_scale(l1: float | Fraction, epsilon: float, *, integer: bool = False) -> float:
    """Smallest Laplace scale whose OpenDP privacy map gives ε for sensitivity Δ1.

    Parameters
    ----------
    l1 : float or Fraction
        ℓ1 sensitivity Δ1 (``math.inf`` when unbounded).
    epsilon : float
        Privacy parameter ε > 0.
    integer : bool
        Calibrate the discrete Laplace mechanism on integers (counts), whose
        input distance is the integer ``⌈Δ1⌉``; otherwise OpenDP's float Laplace.

    Returns
    -------
    float
        The scale ``b`` (``inf`` for an unbounded sensitivity, 0 for Δ1 = 0):
        ``Δ1/ε``, checked by OpenDP's map, and searched when the map needs more.

    Raises
    ------
    InputError
        When ``l1`` is negative or NaN, or ``epsilon`` is not a finite ``> 0``.

    Examples
    --------
    >>> laplace_scale(2, 0.5)
    4.0
    >>> laplace_scale(3, 0.5, integer=True)
    6.0
    """
    delta1 = _check_sensitivity(l1, "l1")
    eps = _check_epsilon(epsilon)
    if math.isinf(delta1) or delta1 == 0:
        return delta1
    dp = _dp()
    space = _space(integer, "l1")
    d_in: int | float = math.ceil(delta1) if integer else delta1

    def private(b: float) -> bool:
        return bool(dp.m.make_laplace(*space, scale=b).map(d_in) <= eps)

    exact_guess = Fraction(d_in) / Fraction(eps)
    if exact_guess > (MAX_INTEGER_SCALE if integer else MAX_FLOAT_SCALE):
        _check_fits(math.inf if exact_guess > 1e308 else float(exact_guess), integer,
                    "Laplace scale")
    guess = float(display(exact_guess))  # rounded up, never down
    if private(guess):
        return guess
    return _check_fits(_bisect(private, 2 * guess), integer, "Laplace scale")


def laplace_halfwidth(scale: float, confidence: float = 0.95, *,
                      integer: bool = False) -> float:
    """Half-width ``t``: ``P(|X| ≤ t) ≥ confidence`` for Laplace noise of scale ``b``.

    Parameters
    ----------
    scale : float
        The Laplace scale ``b ≥ 0``.
    confidence : float, optional
        Coverage in (0, 1), default 0.95.
    integer : bool, optional
        The discrete Laplace of a count (OpenDP's ``make_laplace`` on integers),
        ``P(Z = z) ∝ e^{−|z|/b}``: the smallest integer ``h`` that covers.

    Returns
    -------
    float
        Continuous: ``b·ln(1/(1 − confidence))``, ``b·ln 20 ≈ 2.996·b`` at 95 %,
        with coverage exactly ``confidence``.  Discrete: the smallest integer
        ``h`` with ``P(|Z| ≤ h) ≥ confidence``.

    Raises
    ------
    InputError
        For a negative or NaN scale, or a confidence outside (0, 1).

    Notes
    -----
    For the discrete Laplace, with ``t = e^{−1/b}``,
    ``P(|Z| > h) = 2t^{h+1}/(1 + t)`` (Canonne, Kamath, Steinke 2020, Def. 28),
    computed with 60-digit decimals.  The continuous half-width would
    undercover a count: ``b·ln 20`` covers 92.7 % of the discrete Laplace at ``b = 1``.

    Examples
    --------
    >>> round(laplace_halfwidth(1.0), 6)
    2.995732
    >>> laplace_halfwidth(1.0, integer=True), laplace_halfwidth(3.0, integer=True)
    (3.0, 9.0)
    """
    return _halfwidth(scale, "scale", confidence, integer,
                      lambda b, c: b * -math.log1p(-c), _discrete_laplace_halfwidth)


def _halfwidth(scale: float, name: str, confidence: float, integer: bool,
               continuous: Callable[[float, float], float],
               discrete: Callable[[float, float], float]) -> float:
    """The half-width of noise of scale ``scale`` (checked, named ``name``) at
    ``confidence``: 0 or ∞ for a scale of 0 or ∞, else ``continuous(scale, confidence)``,
    or ``discrete(scale, confidence)`` for the noise of a count (``integer``)."""
    checked = _check_scale(scale, name)
    c = _check_confidence(confidence)
    if checked == 0 or math.isinf(checked):
        return checked
    return discrete(checked, c) if integer else continuous(checked, c)


def _discrete_laplace_halfwidth(b: float, c: float) -> float:
    """The smallest integer ``h`` with ``P(|Z| ≤ h) ≥ c`` for the discrete Laplace of
    scale ``b`` (:func:`laplace_halfwidth`)."""
    with _decimals():
        big_b, q = Decimal(b), _miss(c)
        t = (-1 / big_b).exp()

        def covers(h: int) -> bool:  # P(|Z| > h) <= 1 - c, on the safe side of rounding
            return 2 * (-(h + 1) / big_b).exp() / (1 + t) * (1 + _SLACK) <= q

        guess = int((big_b * (2 / (q * (1 + t))).ln()).to_integral_value(ROUND_CEILING)) - 1
        return _float_up(_smallest(covers, guess))


# ----------------------------------------------------------------------------- Gaussian


def _gaussian_chain(sigma: float, space: tuple[Any, Any], delta: float) -> Any:
    dp = _dp()
    return dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(*space, scale=sigma)), delta)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """ε of ρ-zCDP at δ by Bun and Steinke's Prop 1.3: ``ρ + 2√(ρ ln(1/δ))``.

    Examples
    --------
    >>> round(zcdp_epsilon(0.01, 1e-6), 4)
    0.7534
    """
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def gaussian_sigma(l2: float | Fraction, epsilon: float, delta: float, *,
                   integer: bool = False) -> float:
    """Smallest σ whose OpenDP map (Gaussian → zCDP → (ε, δ)) meets ``(ε, δ)``.

    Parameters
    ----------
    l2 : float or Fraction
        ℓ2 sensitivity Δ2 (``math.inf`` when unbounded).
    epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1).
    integer : bool
        Calibrate the discrete Gaussian on integers (counts).

    Returns
    -------
    float
        σ, to a relative 1e-7 (always on the private side).

    Notes
    -----
    The zCDP map of the Gaussian depends on ``Δ2/σ`` only; an integer space
    takes integer distances, so for a count whose Δ2 is not an integer (√2 for
    a histogram under substitution) σ is calibrated at distance 1 and
    multiplied by Δ2.  The search starts from Bun and Steinke's conversion
    ``ε = ρ + 2√(ρ ln(1/δ))``, which is private, and narrows down with OpenDP's
    own (tighter) conversion.

    Examples
    --------
    >>> round(gaussian_sigma(1, 1.0, 1e-5), 3)
    4.045
    """
    delta2 = _check_sensitivity(l2, "l2")
    eps = _check_epsilon(epsilon)
    dlt = _check_delta(delta)
    if math.isinf(delta2) or delta2 == 0:
        return delta2
    return _gaussian_sigma(delta2, eps, dlt, integer)


@functools.lru_cache(maxsize=256)
def _gaussian_sigma(delta2: float, eps: float, dlt: float, integer: bool) -> float:
    space = _space(integer, "l2")
    unit = integer and delta2 != math.floor(delta2)
    d_in: int | float = 1 if unit else (int(delta2) if integer else delta2)

    def private(s: float) -> bool:
        eps_at, _ = _gaussian_chain(s, space, dlt).map(d_in)
        return bool(eps_at <= eps)

    log_term = -math.log(dlt)
    # (√(L + ε) − √L)², written without the cancellation of a small ε
    rho = (eps / (math.sqrt(log_term + eps) + math.sqrt(log_term))) ** 2
    guess = float(d_in) / math.sqrt(2.0 * rho) * (1 + 1e-9)
    if not math.isfinite(guess):  # Δ2 beyond floats: no σ to search for
        _check_fits(guess, integer, "Gaussian σ")
    for _ in range(200):  # only by rounding
        if private(guess):
            break
        guess *= 1.01
    else:
        raise ReleaseError(f"no σ up to {guess:g} meets OpenDP's map for epsilon {eps:g} and "
                           f"delta {dlt:g}", construct="noise")
    sigma = _bisect(private, guess, steps=30)
    return _check_fits(sigma * delta2 if unit else sigma, integer, "Gaussian σ")


def classical_gaussian_sigma(l2: float, epsilon: float, delta: float) -> float:
    """Classical Gaussian calibration ``σ = Δ2·√(2 ln(1.25/δ))/ε``, valid for ε < 1.

    Reported for reference beside OpenDP's σ (Dwork and Roth, Theorem A.1).

    Raises
    ------
    InputError
        For ``epsilon >= 1`` (the theorem does not hold there), or bad values.

    Examples
    --------
    >>> round(classical_gaussian_sigma(1, 0.5, 1e-5), 4)
    9.6896
    """
    delta2 = _check_sensitivity(l2, "l2")
    eps = _check_epsilon(epsilon)
    dlt = _check_delta(delta)
    if eps >= 1:
        raise InputError(
            f"the classical Gaussian calibration needs epsilon < 1, not {epsilon!r}",
            construct="epsilon",
        )
    if delta2 == 0:
        return 0.0
    return delta2 * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


#: Above this σ the discrete Gaussian's sums are bounded by integrals instead.
_SUMMED_SIGMA = 1000.0
#: Relative slack on the float sums and erfc of the discrete Gaussian (their error is
#: below 1e-13 relative: correctly rounded fsum of terms within a few ulps).
_FLOAT_SLACK = 1e-12


def gaussian_halfwidth(sigma: float, confidence: float = 0.95, *,
                       integer: bool = False) -> float:
    """Half-width ``t``: ``P(|X| ≤ t) ≥ confidence`` for Gaussian noise of scale σ.

    Parameters
    ----------
    sigma : float
        σ ≥ 0.
    confidence : float, optional
        Coverage in (0, 1), default 0.95.
    integer : bool, optional
        The discrete Gaussian of a count (OpenDP's ``make_gaussian`` on
        integers), ``P(Z = z) ∝ e^{−z²/(2σ²)}``: the smallest integer ``h`` that
        covers.

    Returns
    -------
    float
        Continuous: ``σ·Φ⁻¹((1 + confidence)/2)``, ``1.959964·σ`` at 95 %.
        Discrete: the smallest integer ``h`` with ``P(|Z| ≤ h) ≥ confidence``.

    Notes
    -----
    The discrete Gaussian's pmf is normalised by ``N = Σ_z e^{−z²/(2σ²)}``
    (Canonne, Kamath, Steinke 2020, Def. 1), and ``P(|Z| > h) = 2T(h)/N`` with
    ``T(h) = Σ_{z>h} e^{−z²/(2σ²)}``.  For σ ≤ 1000 both are summed up to
    ``10σ`` and the rest is bounded by the integral ``σ√(π/2)·erfc(M/(σ√2))``;
    above, ``T(h)`` is bounded by ``∫_h^∞`` and ``N`` from below by ``1 + 2∫_1^∞``
    (the terms decrease), which can make ``h`` larger than the smallest by a
    relative ``O(1/σ)``.  Every comparison keeps a relative slack of 1e-12 on
    the safe side.  ``1.96σ`` covers only 88.3 % at σ = 1.

    Examples
    --------
    >>> round(gaussian_halfwidth(1.0), 6)
    1.959964
    >>> gaussian_halfwidth(1.0, integer=True), gaussian_halfwidth(10.0, integer=True)
    (2.0, 20.0)
    """
    return _halfwidth(sigma, "sigma", confidence, integer,
                      lambda sig, c: sig * NormalDist().inv_cdf(0.5 + 0.5 * c),
                      _discrete_gaussian_halfwidth)


def _discrete_gaussian_halfwidth(sig: float, c: float) -> float:
    """The smallest integer ``h`` with ``P(|Z| ≤ h) ≥ c`` for the discrete Gaussian of
    scale ``sig`` (:func:`gaussian_halfwidth`)."""
    q = math.nextafter(float(_miss(c)), 0.0)  # 1 − c, rounded down
    guess = math.floor(sig * NormalDist().inv_cdf(1.0 - q / 2.0))
    beyond = _summed_tail(sig) if sig <= _SUMMED_SIGMA else _integral_tail(sig)
    return _float_up(_smallest(lambda h: beyond(h) <= q, guess))


def _upper_integral(sigma: float, h: float) -> float:
    """``∫_h^∞ e^{−x²/(2σ²)} dx = σ√(π/2)·erfc(h/(σ√2))``."""
    return sigma * math.sqrt(math.pi / 2.0) * math.erfc(h / (sigma * math.sqrt(2.0)))


def _summed_tail(sigma: float) -> Callable[[int], float]:
    """``h ↦`` an upper bound of ``P(|Z| > h)`` for the discrete Gaussian, from exact sums."""
    top = math.ceil(10.0 * sigma) + 1
    terms = [math.exp(-(z * z) / (2.0 * sigma * sigma)) for z in range(1, top + 1)]
    rest = 2.0 * _upper_integral(sigma, float(top))  # Σ_{z>top} ≤ ∫_top^∞ (twice, for safety)
    norm = 1.0 + 2.0 * math.fsum(terms)  # a lower bound of N

    def beyond(h: int) -> float:
        tail = math.fsum(terms[h:]) + rest if h < top else rest
        return 2.0 * tail / norm * (1.0 + _FLOAT_SLACK)

    return beyond


def _integral_tail(sigma: float) -> Callable[[int], float]:
    """``h ↦`` an upper bound of ``P(|Z| > h)`` for the discrete Gaussian, from integrals."""
    norm = (1.0 + 2.0 * _upper_integral(sigma, 1.0)) * (1.0 - _FLOAT_SLACK)

    def beyond(h: int) -> float:
        return 2.0 * _upper_integral(sigma, float(h)) / norm * (1.0 + _FLOAT_SLACK)

    return beyond
