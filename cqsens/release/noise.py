"""Noise calibration for releasing a value of known ℓ1 and ℓ2 sensitivity.

Given the global sensitivity of a query (its ℓ1 bound Δ1 and ℓ2 bound Δ2), the
two standard mechanisms add independent noise to every released coordinate:

- the **Laplace mechanism** adds Laplace noise of scale ``b = Δ1/ε`` and is
  ``ε``-differentially private (Dwork, McSherry, Nissim, Smith 2006);
- the **Gaussian mechanism** adds normal noise of standard deviation ``σ`` and is
  ``(ε, δ)``-differentially private when ``σ`` is large enough for Δ2.

For the Gaussian mechanism this module uses the *analytic* calibration of Balle
and Wang (2018): the mechanism is exactly ``(ε, δ)``-DP iff its privacy profile

    δ(ε; σ) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)

is at most δ (their Theorem 8), and δ(ε; σ) decreases in σ, so the smallest
valid σ is found by bisection. It is valid for every ``ε > 0`` and is never
larger than the classical ``σ = Δ·√(2 ln(1.25/δ))/ε`` of Dwork and Roth
(Theorem A.1), which holds only for ``ε < 1`` and is reported for reference.

Noise is calibrated here, never sampled: cqsens reports scales and error
half-widths so a reader can judge the cost of privacy for a query.
See docs/rules.md, rules ``laplace`` and ``analytic-gaussian``.

References
----------
.. [1] B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential
   Privacy: Analytical Calibration and Optimal Denoising. ICML 2018, Thm 8, Alg. 1.
.. [2] C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy.
   2014, Thm 3.6 (Laplace) and Thm A.1 (Gaussian).

Examples
--------
>>> from cqsens.release.noise import calibrate
>>> c = calibrate(1, 1, epsilon=0.5, delta=1e-6)
>>> c.laplace_scale
2.0
>>> round(c.gaussian_sigma, 3), c.gaussian_method
(8.058, 'analytic')
>>> round(c.gaussian_classical_sigma, 3)
10.598
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

from cqsens.errors import InputError
from cqsens.ir.exact import display

__all__ = [
    "NoiseCalibration",
    "laplace_scale",
    "laplace_halfwidth",
    "gaussian_delta",
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "gaussian_halfwidth",
    "calibrate",
]

_SQRT2 = math.sqrt(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# Below this argument erfc(-x/√2) nears the end of the normal float range; use
# the asymptotic series of log Φ instead (relative error < 1e-17 there).
_LOG_NDTR_ASYMPTOTIC = -37.0


# ----------------------------------------------------------------------------- checks


def _check_sensitivity(value: object, name: str) -> float:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or math.isnan(value)
        or value < 0
    ):
        raise InputError(
            f"{name} sensitivity must be a number >= 0 or math.inf, not {value!r}",
            construct=name,
        )
    return value


def _check_epsilon(epsilon: object) -> float:
    if (
        not isinstance(epsilon, (int, float))
        or isinstance(epsilon, bool)
        or not math.isfinite(epsilon)
        or epsilon <= 0
    ):
        raise InputError(
            f"epsilon must be a finite number > 0, not {epsilon!r}", construct="epsilon"
        )
    return float(epsilon)


def _check_delta(delta: object) -> float:
    if not isinstance(delta, (int, float)) or isinstance(delta, bool) or not 0 < delta < 1:
        raise InputError(
            f"delta must be a number in the open interval (0, 1), not {delta!r}",
            construct="delta",
        )
    return float(delta)


def _check_confidence(confidence: object) -> float:
    if (
        not isinstance(confidence, (int, float))
        or isinstance(confidence, bool)
        or not 0 < confidence < 1
    ):
        raise InputError(
            f"confidence must be in the open interval (0, 1), not {confidence!r}",
            construct="confidence",
        )
    return float(confidence)


def _check_scale(scale: object, name: str) -> float:
    if (
        not isinstance(scale, (int, float))
        or isinstance(scale, bool)
        or math.isnan(scale)
        or scale < 0
    ):
        raise InputError(f"{name} must be a number >= 0, not {scale!r}", construct=name)
    return float(scale)


# ----------------------------------------------------------------------------- Laplace


def laplace_scale(l1: float, epsilon: float) -> float:
    """Scale ``b = Δ1/ε`` of the Laplace noise that makes a release ε-DP.

    Parameters
    ----------
    l1 : float
        ℓ1 sensitivity Δ1 (``math.inf`` when unbounded).
    epsilon : float
        Privacy parameter ε > 0.

    Returns
    -------
    float
        The scale ``b`` (``inf`` for an unbounded sensitivity, 0 for Δ1 = 0).

    Raises
    ------
    InputError
        When ``l1`` is negative or NaN, or ``epsilon`` is not a finite ``> 0``.

    Notes
    -----
    Neighbouring outputs differ by at most Δ1 in ℓ1, so the ratio of the Laplace
    densities ``exp(−‖x − f(D)‖1/b)`` at any point is at most ``exp(Δ1/b) = e^ε``
    (Dwork and Roth, Thm 3.6).

    Examples
    --------
    >>> laplace_scale(2, 0.5)
    4.0
    """
    delta1 = _check_sensitivity(l1, "l1")
    eps = _check_epsilon(epsilon)
    if math.isinf(delta1):
        return math.inf
    return float(display(Fraction(delta1) / Fraction(eps)))  # rounded up, never down


def laplace_halfwidth(scale: float, confidence: float = 0.95) -> float:
    """Half-width ``t`` with ``P(|X| ≤ t) = confidence`` for ``X ~ Laplace(0, b)``.

    Parameters
    ----------
    scale : float
        The Laplace scale ``b ≥ 0``.
    confidence : float, optional
        Coverage in (0, 1), default 0.95.

    Returns
    -------
    float
        ``b·ln(1/(1 − confidence))``: ``b·ln 20 ≈ 2.996·b`` at 95 %.

    Raises
    ------
    InputError
        For a negative or NaN scale, or a confidence outside (0, 1).

    Notes
    -----
    ``P(|X| > t) = exp(−t/b)`` for Laplace noise; solving ``exp(−t/b) = 1 − c``
    gives the formula. It applies to each coordinate of a vector release.

    Examples
    --------
    >>> round(laplace_halfwidth(1.0), 6)
    2.995732
    """
    b = _check_scale(scale, "scale")
    c = _check_confidence(confidence)
    if b == 0:
        return 0.0
    return b * -math.log1p(-c)


# ----------------------------------------------------------------------------- Gaussian


def _log_ndtr(x: float) -> float:
    """``log Φ(x)`` for the standard normal CDF, accurate in both tails."""
    if x > 0:
        # Φ(x) = 1 − Φ(−x); log1p keeps the tiny Φ(−x) instead of rounding 1 − it.
        return math.log1p(-0.5 * math.erfc(x / _SQRT2))
    if x > _LOG_NDTR_ASYMPTOTIC:
        # erfc of a positive argument has full relative accuracy (no 1 − erf).
        return math.log(0.5 * math.erfc(-x / _SQRT2))
    # Asymptotic expansion Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + ...).
    t = 1.0 / (x * x)
    series = 1.0
    term = 1.0
    for n in range(1, 8):
        term *= -(2 * n - 1) * t
        series += term
    return -0.5 * x * x - math.log(-x) - _HALF_LOG_2PI + math.log(series)


_CF_TERMS = 80  # continued fraction of erfcx: full double precision for u >= 2
_CF_FROM = 2.0
_LOG_SQRT_PI = 0.5 * math.log(math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _cf_tail(u: float, k: int) -> float:
    """``t_k = u + ((k+1)/2)/(u + ((k+2)/2)/(u + …))``, so that ``erfcx(u) = 1/(√π·t_0)``.

    Laplace's continued fraction of erfc, evaluated backwards from a fixed
    depth; accurate to double precision for ``u >= 2``.
    """
    t = u
    for n in range(_CF_TERMS, k, -1):
        t = u + 0.5 * n / t
    return t


def _log_erfcx(u: float) -> float:
    """``log erfcx(u) = log(e^{u²} erfc(u))`` without overflow or cancellation."""
    if u < _CF_FROM:
        return u * u + math.log(math.erfc(u))  # erfc(u) >= 0.0046 here: no underflow
    return -_LOG_SQRT_PI - math.log(_cf_tail(u, 0))


def _dlog_erfcx(u: float) -> float:
    """``d/du log erfcx(u) = 2u − 2/(√π erfcx(u))`` (always < 0)."""
    if u >= _CF_FROM:
        return -1.0 / _cf_tail(u, 1)  # 2u − 2·t_0 = −2·(1/2)/t_1: no cancellation
    if u < -26.0:  # e^{u²} erfc(u) overflows; its reciprocal is negligible beside 2u
        return 2.0 * u
    return 2.0 * u - _TWO_OVER_SQRT_PI / (math.exp(u * u) * math.erfc(u))


def _gauss_legendre(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Nodes and weights of the n-point Gauss–Legendre rule on [-1, 1] (Newton on P_n)."""
    nodes: list[float] = []
    weights: list[float] = []
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            step = p1 / dp
            x -= step
            if abs(step) < 1e-16:
                break
        p0, p1 = 1.0, x
        for k in range(2, n + 1):
            p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
        dp = n * (x * p1 - p0) / (x * x - 1)
        nodes.append(x)
        weights.append(2.0 / ((1 - x * x) * dp * dp))
    return tuple(nodes), tuple(weights)


_GL_NODES, _GL_WEIGHTS = _gauss_legendre(10)
_GL_MAX_WIDTH = 0.25


def _log_profile(s: float, epsilon: float) -> float:
    """``log δ(ε; σ)`` of the Gaussian mechanism with ``s = σ/Δ``; ``-inf`` for 0.

    With ``a = p − q``, ``b = −p − q`` (``p = 1/(2s)``, ``q = εs``) the profile is
    ``Φ(a) − e^ε Φ(b) = Φ(a)·(1 − e^r)``. Writing ``Φ(x) = ½ e^{−x²/2} erfcx(−x/√2)``
    and using ``b² − a² = 2ε`` exactly, ``r = log erfcx(u_b) − log erfcx(u_a)`` with
    ``u = −x/√2``: the ``e^ε`` and the Gaussian tails cancel symbolically instead of
    numerically. When ``u_b − u_a = √2·p`` is small (small ε or large σ), ``r`` is
    the integral of ``d log erfcx/du`` over that short interval (Gauss–Legendre),
    so it keeps full relative precision where a difference of logs would not.
    """
    p = 0.5 / s
    q = epsilon * s
    u_a = (q - p) / _SQRT2
    width = _SQRT2 * p
    if width <= _GL_MAX_WIDTH:
        half = 0.5 * width
        mid = u_a + half
        r = half * math.fsum(
            w * _dlog_erfcx(mid + half * x) for x, w in zip(_GL_NODES, _GL_WEIGHTS, strict=True)
        )
    else:
        r = _log_erfcx((q + p) / _SQRT2) - _log_erfcx(u_a)
    if r >= 0:  # only by rounding: the profile is 0 to working precision
        return -math.inf
    return _log_ndtr(p - q) + math.log(-math.expm1(r))


def gaussian_delta(sigma: float, l2: float, epsilon: float) -> float:
    """Compute the privacy profile δ(ε) of the Gaussian mechanism (Balle & Wang, Thm 8).

    Parameters
    ----------
    sigma : float
        Standard deviation σ ≥ 0 of the noise.
    l2 : float
        ℓ2 sensitivity Δ2 of the released value.
    epsilon : float
        ε > 0.

    Returns
    -------
    float
        The least δ for which adding ``N(0, σ²)`` noise is ``(ε, δ)``-DP:
        ``Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)``.

    Raises
    ------
    InputError
        For a negative/NaN σ or sensitivity, or a bad ε.

    Notes
    -----
    Computed in log space as ``Φ(a)·(1 − e^r)`` where ``r`` is obtained from the
    scaled complementary error function ``erfcx``, so that ``e^ε`` and the two
    Gaussian tails cancel symbolically (``b² − a² = 2ε``) rather than by
    subtracting two nearly equal floats; ``log Φ`` uses ``erfc`` and, in the far
    lower tail, its asymptotic series. Checked against 60-digit arithmetic for
    ε in [1e-6, 1e3] and σ/Δ in [1e-3, 1e6]: relative error below 3e-13. It is
    a checker for :func:`analytic_gaussian_sigma`, in the spirit of networkx's
    ``is_*`` functions.

    Examples
    --------
    >>> f"{gaussian_delta(3.73, 1, 1.0):.2e}"
    '1.00e-05'
    """
    sig = _check_scale(sigma, "sigma")
    delta2 = _check_sensitivity(l2, "l2")
    eps = _check_epsilon(epsilon)
    if delta2 == 0:
        return 0.0
    if sig == 0 or delta2 == math.inf:
        return 1.0
    if sig == math.inf:
        return 0.0
    return math.exp(_log_profile(sig / delta2, eps))


def analytic_gaussian_sigma(l2: float, epsilon: float, delta: float) -> float:
    """Smallest σ for which Gaussian noise is (ε, δ)-DP (analytic Gaussian mechanism).

    Parameters
    ----------
    l2 : float
        ℓ2 sensitivity Δ2 (``math.inf`` when unbounded).
    epsilon : float
        ε > 0 (any size: the analytic calibration needs no ``ε < 1``).
    delta : float
        δ in (0, 1).

    Returns
    -------
    float
        σ, to a relative precision of about 1e-14; ``inf`` when Δ2 is ``inf``,
        0 when Δ2 is 0.

    Raises
    ------
    InputError
        For a negative/NaN sensitivity, ``epsilon <= 0`` or δ outside (0, 1).

    Notes
    -----
    The profile δ(ε; σ) depends on σ only through ``s = σ/Δ2`` and decreases
    from 1 (``s → 0``) to 0 (``s → ∞``), so σ = Δ2·s* where s* is the root of
    ``δ(ε; s) = δ``. The root is bracketed by doubling/halving from ``s = 1`` and
    refined by bisection in log space, always keeping the upper end on the
    private side (``δ(ε; s) ≤ δ``), which is the value returned: it is sound
    up to floating-point error in the profile. This is the bisection of
    Balle and Wang's Algorithm 1, done on σ directly instead of on their
    reparametrisation; the result is the same root.

    Examples
    --------
    >>> round(analytic_gaussian_sigma(1, 1.0, 1e-5), 4)
    3.7306
    """
    delta2 = _check_sensitivity(l2, "l2")
    eps = _check_epsilon(epsilon)
    dlt = _check_delta(delta)
    if delta2 == 0 or delta2 == math.inf:
        return float(delta2)
    target = math.log(dlt)

    def private(s: float) -> bool:
        return _log_profile(s, eps) <= target

    hi = 1.0
    while not private(hi):
        hi *= 2.0
    lo = hi / 2.0
    while private(lo):
        hi = lo
        lo /= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-15 * hi:
            break
        if private(mid):
            hi = mid
        else:
            lo = mid
    return delta2 * hi


def classical_gaussian_sigma(l2: float, epsilon: float, delta: float) -> float:
    """Classical Gaussian calibration ``σ = Δ2·√(2 ln(1.25/δ))/ε``, valid for ε < 1.

    Parameters
    ----------
    l2 : float
        ℓ2 sensitivity Δ2.
    epsilon : float
        ε in (0, 1).
    delta : float
        δ in (0, 1).

    Returns
    -------
    float
        σ (``inf`` for an unbounded sensitivity).

    Raises
    ------
    InputError
        For ``epsilon >= 1`` (the theorem does not hold there), or bad values.

    Notes
    -----
    Dwork and Roth, Theorem A.1: for ε ∈ (0, 1) and ``c² > 2 ln(1.25/δ)``,
    σ = cΔ2/ε gives (ε, δ)-DP. It is reported only for comparison: the analytic
    σ is never larger.

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
            f"the classical Gaussian calibration needs epsilon < 1, not {epsilon!r}; "
            "use analytic_gaussian_sigma",
            construct="epsilon",
        )
    if delta2 == 0:
        return 0.0
    return delta2 * math.sqrt(2.0 * math.log(1.25 / dlt)) / eps


def gaussian_halfwidth(sigma: float, confidence: float = 0.95) -> float:
    """Half-width ``t`` with ``P(|X| ≤ t) = confidence`` for ``X ~ N(0, σ²)``.

    Parameters
    ----------
    sigma : float
        Standard deviation σ ≥ 0.
    confidence : float, optional
        Coverage in (0, 1), default 0.95.

    Returns
    -------
    float
        ``σ·Φ⁻¹((1 + confidence)/2)``: ``1.959964·σ`` at 95 %.

    Raises
    ------
    InputError
        For a negative or NaN σ, or a confidence outside (0, 1).

    Notes
    -----
    Two-sided normal quantile, from :class:`statistics.NormalDist`; it applies
    to each coordinate of a vector release.

    Examples
    --------
    >>> round(gaussian_halfwidth(1.0), 6)
    1.959964
    """
    sig = _check_scale(sigma, "sigma")
    c = _check_confidence(confidence)
    if sig == 0:
        return 0.0
    return sig * NormalDist().inv_cdf(0.5 + 0.5 * c)


# ----------------------------------------------------------------------------- summary


@dataclass(frozen=True, slots=True)
class NoiseCalibration:
    """Noise scales for one release, as reported with ``--epsilon``/``--delta``.

    Attributes
    ----------
    epsilon : float
        The ε asked for.
    delta : float or None
        The δ asked for (None: no Gaussian calibration).
    laplace_scale : float
        Laplace scale ``Δ1/ε``.
    laplace_halfwidth_95 : float
        95 % error half-width of the Laplace noise, ``scale·ln 20``.
    gaussian_sigma : float or None
        Analytic Gaussian σ for ``(ε, δ)`` and Δ2 (None without δ).
    gaussian_method : str or None
        ``"analytic"`` (Balle & Wang 2018) when σ is given, else None.
    gaussian_classical_sigma : float or None
        Classical σ for reference, when δ is given and ε < 1; else None.
    gaussian_halfwidth_95 : float or None
        95 % error half-width of the Gaussian noise, ``1.959964·σ``.
    """

    epsilon: float
    delta: float | None
    laplace_scale: float
    laplace_halfwidth_95: float
    gaussian_sigma: float | None
    gaussian_method: str | None
    gaussian_classical_sigma: float | None
    gaussian_halfwidth_95: float | None


def calibrate(
    l1: float, l2: float, *, epsilon: float, delta: float | None = None
) -> NoiseCalibration:
    """Laplace and Gaussian noise for a release of sensitivity (Δ1, Δ2).

    Parameters
    ----------
    l1 : float
        ℓ1 sensitivity (``math.inf`` when unbounded).
    l2 : float
        ℓ2 sensitivity (``math.inf`` when unbounded).
    epsilon : float
        ε > 0.
    delta : float, optional
        δ in (0, 1); without it only the Laplace mechanism is calibrated.

    Returns
    -------
    NoiseCalibration
        Laplace scale and 95 % half-width; with δ, the analytic Gaussian σ, its
        95 % half-width and, for ε < 1, the classical σ for reference. Infinite
        sensitivities give infinite scales.

    Raises
    ------
    InputError
        For negative/NaN sensitivities, ε not a finite ``> 0``, or δ outside (0, 1).

    Notes
    -----
    The analytic Gaussian σ is used always: it is exact for every ε > 0, while
    the classical formula needs ε < 1 and is never smaller.

    Examples
    --------
    >>> c = calibrate(2, 2, epsilon=1.0)
    >>> (c.laplace_scale, c.gaussian_sigma)
    (2.0, None)
    >>> calibrate(float("inf"), float("inf"), epsilon=1.0, delta=1e-6).gaussian_sigma
    inf
    """
    delta1 = _check_sensitivity(l1, "l1")
    delta2 = _check_sensitivity(l2, "l2")
    eps = _check_epsilon(epsilon)
    b = laplace_scale(delta1, eps)
    half_lap = laplace_halfwidth(b)
    if delta is None:
        return NoiseCalibration(eps, None, b, half_lap, None, None, None, None)
    dlt = _check_delta(delta)
    sigma = analytic_gaussian_sigma(delta2, eps, dlt)
    classical = classical_gaussian_sigma(delta2, eps, dlt) if eps < 1 else None
    return NoiseCalibration(
        eps, dlt, b, half_lap, sigma, "analytic", classical, gaussian_halfwidth(sigma)
    )
