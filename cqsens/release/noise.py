"""Noise for releasing a value of known ℓ1 and ℓ2 sensitivity, calibrated and sampled by OpenDP.

Given the global sensitivity of a query (its ℓ1 bound Δ1 and ℓ2 bound Δ2), the
two standard mechanisms add independent noise to every released coordinate:

- the **Laplace mechanism** adds Laplace noise of scale ``b`` and is ε-DP for
  ``b ≥ Δ1/ε`` (Dwork, McSherry, Nissim, Smith 2006);
- the **Gaussian mechanism** adds normal noise of standard deviation ``σ``; it is
  ρ-zCDP with ``ρ = Δ2²/(2σ²)`` (Bun and Steinke 2016, Prop 1.6), which gives
  ``(ε, δ)``-DP through OpenDP's conversion from zCDP.

Every scale here comes from OpenDP's privacy maps (``opendp.measurements.
make_laplace`` and ``make_gaussian``, the latter chained with
``make_zCDP_to_approxDP`` and ``make_fix_delta``): the scale is the smallest
one whose map meets the target, found by bisection.  Counts are released with
the discrete Laplace and discrete Gaussian mechanisms on integers (Canonne,
Kamath, Steinke 2020) and sums with OpenDP's float versions, which sample on a
lattice and so do not leak through floating-point rounding (Mironov, CCS 2012).
Medians, minima and maxima are released by OpenDP's ``make_private_quantile``,
the exponential mechanism over a grid of candidates.  Partition selection uses
``make_laplace_threshold``.

References
----------
.. [1] C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy.
   2014, Thm 3.6 (Laplace) and Thm A.1 (Gaussian).
.. [2] M. Bun, T. Steinke. Concentrated Differential Privacy: Simplifications,
   Extensions, and Lower Bounds. TCC 2016, Prop 1.3 and 1.6.
.. [3] C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential
   Privacy. NeurIPS 2020.

Examples
--------
>>> from cqsens.release.noise import calibrate
>>> c = calibrate(1, 1, epsilon=0.5, delta=1e-6)
>>> c.laplace_scale
2.0
>>> round(c.gaussian_sigma, 3), c.gaussian_method
(8.677, 'zCDP')
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Any

from cqsens.errors import InputError
from cqsens.ir.exact import display

__all__ = [
    "NoiseCalibration",
    "ReleaseError",
    "calibrate",
    "classical_gaussian_sigma",
    "gaussian_halfwidth",
    "gaussian_sigma",
    "laplace_halfwidth",
    "laplace_scale",
    "quantile_scale",
    "sample_gaussian",
    "sample_laplace",
    "sample_quantile",
    "select_partitions",
    "threshold_calibration",
    "zcdp_epsilon",
]


class ReleaseError(InputError):
    """Noise could not be sampled; the message never holds the data."""


def _dp() -> Any:
    """OpenDP's prelude with the ``contrib`` features on (imported on first use)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


# ----------------------------------------------------------------------------- checks


def _check_sensitivity(value: object, name: str) -> float:
    if (
        not isinstance(value, (int, float, Fraction))
        or isinstance(value, bool)
        or math.isnan(value)
        or value < 0
    ):
        raise InputError(
            f"{name} sensitivity must be a number >= 0 or math.inf, not {value!r}",
            construct=name,
        )
    return float(display(value)) if isinstance(value, Fraction) else float(value)


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


# ----------------------------------------------------------------------------- spaces

_I64 = "i64"


def _space(integer: bool, norm: str) -> tuple[Any, Any]:
    """OpenDP's vector space of integers or floats under the ℓ1 or ℓ2 distance."""
    dp = _dp()
    atom = dp.atom_domain(T=_I64) if integer else dp.atom_domain(T=float, nan=False)
    metric = dp.l1_distance if norm == "l1" else dp.l2_distance
    return dp.vector_domain(atom), metric(T=_I64 if integer else float)


def _bisect(private: Callable[[float], bool], hi: float, *, steps: int = 40) -> float:
    """The smallest scale in ``(0, hi]`` that is private, to a relative 1e-7; ``hi`` must be."""
    lo = hi / 2.0
    while private(lo):
        hi, lo = lo, lo / 2.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if hi - lo <= 1e-7 * hi:
            break
        if private(mid):
            hi = mid
        else:
            lo = mid
    return hi


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

    guess = float(display(Fraction(d_in) / Fraction(eps)))  # rounded up, never down
    if private(guess):
        return guess
    return _bisect(private, 2 * guess)


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
    ``P(|X| > t) = exp(−t/b)`` for Laplace noise.  For the discrete Laplace
    noise of a count, ``P(|X| > t) = 2e^{−(⌊t⌋+1)/b}/(1 + e^{−1/b}) ≤ e^{−t/b}``,
    so the same half-width covers at least ``confidence``.

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

    log_term = math.log(1.0 / dlt)
    rho = (math.sqrt(log_term + eps) - math.sqrt(log_term)) ** 2
    guess = float(d_in) / math.sqrt(2.0 * rho) * (1 + 1e-9)
    while not private(guess):  # only by rounding
        guess *= 1.01
    sigma = _bisect(private, guess, steps=30)
    return sigma * delta2 if unit else sigma


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


def gaussian_halfwidth(sigma: float, confidence: float = 0.95) -> float:
    """Half-width ``t`` with ``P(|X| ≤ t) = confidence`` for ``X ~ N(0, σ²)``.

    Returns ``σ·Φ⁻¹((1 + confidence)/2)``: ``1.959964·σ`` at 95 %.

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


# ----------------------------------------------------------------------------- sampling


def _run(measurement: Any, data: Any) -> Any:
    """Invoke an OpenDP measurement; a failure never shows the data."""
    try:
        return measurement(data)
    except Exception as exc:  # noqa: BLE001 - OpenDP's errors may echo their input
        raise ReleaseError(f"OpenDP could not sample the noise ({type(exc).__name__})",
                           construct="noise") from None


def sample_laplace(values: Sequence[int | float], *, l1: float | Fraction, epsilon: float,
                   integer: bool) -> tuple[list[int | float], float]:
    """Add Laplace noise for ε to every coordinate of ``values`` (ℓ1 sensitivity ``l1``).

    Returns
    -------
    tuple
        The noisy values and the scale used (discrete Laplace on integers).
    """
    scale = laplace_scale(l1, epsilon, integer=integer)
    if scale == 0 or not values:
        return list(values), scale
    measurement = _dp().m.make_laplace(*_space(integer, "l1"), scale=scale)
    data = [int(v) for v in values] if integer else [float(v) for v in values]
    return list(_run(measurement, data)), scale


def sample_gaussian(values: Sequence[int | float], *, l2: float | Fraction, epsilon: float,
                    delta: float, integer: bool) -> tuple[list[int | float], float, float]:
    """Add Gaussian noise for ``(ε, δ)`` to every coordinate (ℓ2 sensitivity ``l2``).

    Returns
    -------
    tuple
        The noisy values, σ, and the zCDP ρ = Δ2²/(2σ²) spent.
    """
    sigma = gaussian_sigma(l2, epsilon, delta, integer=integer)
    delta2 = _check_sensitivity(l2, "l2")
    if sigma == 0 or not values:
        return list(values), sigma, 0.0
    measurement = _dp().m.make_gaussian(*_space(integer, "l2"), scale=sigma)
    data = [int(v) for v in values] if integer else [float(v) for v in values]
    return list(_run(measurement, data)), sigma, delta2 * delta2 / (2.0 * sigma * sigma)


def _quantile(candidates: Sequence[float], alpha: float, scale: float) -> Any:
    dp = _dp()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    return dp.m.make_private_quantile(domain, dp.symmetric_distance(), dp.max_divergence(),
                                      candidates=list(candidates), alpha=alpha, scale=scale)


def quantile_scale(candidates: Sequence[float], alpha: float, rows: int,
                   epsilon: float) -> float:
    """Smallest scale of OpenDP's quantile mechanism that is ε-DP when ``rows`` rows change.

    ``rows`` is the symmetric distance between the neighbours' multisets of
    values: the count bound (times 2 under substitution).

    Examples
    --------
    >>> quantile_scale([0.0, 1.0, 2.0], 0.5, 1, 1.0)
    1.0
    """
    eps = _check_epsilon(epsilon)

    def private(s: float) -> bool:
        return bool(_quantile(candidates, alpha, s).map(rows) <= eps)

    hi = 1.0
    while not private(hi):
        hi *= 2.0
    return _bisect(private, hi)


def sample_quantile(values: Sequence[float], *, candidates: Sequence[float], alpha: float,
                    rows: int, epsilon: float) -> tuple[float, float]:
    """The α-quantile of ``values`` by the exponential mechanism over ``candidates``.

    Returns
    -------
    tuple
        The released candidate and the scale used.
    """
    scale = quantile_scale(candidates, alpha, rows, epsilon)
    released = _run(_quantile(candidates, alpha, scale), [float(v) for v in values])
    return float(released), scale


@dataclass(frozen=True, slots=True)
class ThresholdCalibration:
    """Scale and threshold of the Laplace threshold mechanism for ``(ε, δ)``."""

    scale: float
    threshold: int
    epsilon: float
    delta: float


def threshold_calibration(l1: int, epsilon: float, delta: float) -> ThresholdCalibration:
    """Scale for ε and the smallest threshold for δ, by OpenDP's map of ``make_laplace_threshold``.

    ``l1`` bounds how many rows one neighbour changes over all groups, so it
    bounds the groups touched (ℓ0), each group's change (ℓ∞) and their sum (ℓ1).

    Examples
    --------
    >>> t = threshold_calibration(1, 1.0, 1e-6)
    >>> t.scale, t.threshold
    (1.0, 14)
    """
    eps = _check_epsilon(epsilon)
    dlt = _check_delta(delta)
    if l1 < 1:
        l1 = 1
    dp = _dp()
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=_I64))
    metric = dp.l01inf_distance(dp.absolute_distance(T=_I64))
    d_in = (l1, l1, l1)
    scale = laplace_scale(l1, eps, integer=True)

    def ok(threshold: int) -> bool:
        e, d = dp.m.make_laplace_threshold(domain, metric, scale=scale,
                                           threshold=threshold).map(d_in)
        return bool(e <= eps and d <= dlt)

    hi = max(1, int(l1))
    while not ok(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return ThresholdCalibration(scale, hi, eps, dlt)


def select_partitions(counts: Mapping[str, int], calibration: ThresholdCalibration,
                      ) -> dict[str, int]:
    """The groups whose noisy count passes the threshold, with that noisy count."""
    dp = _dp()
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=_I64))
    metric = dp.l01inf_distance(dp.absolute_distance(T=_I64))
    measurement = dp.m.make_laplace_threshold(domain, metric, scale=calibration.scale,
                                              threshold=calibration.threshold)
    if not counts:
        return {}
    out = _run(measurement, {k: int(v) for k, v in counts.items()})
    return {str(k): int(v) for k, v in out.items()}


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
        Laplace scale from OpenDP's map (``Δ1/ε``).
    laplace_halfwidth_95 : float
        95 % error half-width of the Laplace noise, ``scale·ln 20``.
    gaussian_sigma : float or None
        Gaussian σ for ``(ε, δ)`` and Δ2 through zCDP (None without δ).
    gaussian_method : str or None
        ``"zCDP"`` (OpenDP's Gaussian map and conversion) when σ is given.
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
    l1: float | Fraction, l2: float | Fraction, *, epsilon: float, delta: float | None = None
) -> NoiseCalibration:
    """Laplace and Gaussian noise for a release of sensitivity (Δ1, Δ2), as ``cqsens release``.

    Parameters
    ----------
    l1, l2 : float or Fraction
        ℓ1 and ℓ2 sensitivity (``math.inf`` when unbounded).
    epsilon : float
        ε > 0.
    delta : float, optional
        δ in (0, 1); without it only the Laplace mechanism is calibrated.

    Returns
    -------
    NoiseCalibration
        The scales of OpenDP's float mechanisms (a count's discrete mechanism
        has the same scale up to rounding: its map is the same function of
        ``Δ/scale``) and their 95 % half-widths.

    Raises
    ------
    InputError
        For negative/NaN sensitivities, ε not a finite ``> 0``, or δ outside (0, 1).

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
    sigma = gaussian_sigma(delta2, eps, dlt)
    classical = classical_gaussian_sigma(delta2, eps, dlt) if eps < 1 else None
    return NoiseCalibration(
        eps, dlt, b, half_lap, sigma, "zCDP", classical, gaussian_halfwidth(sigma)
    )
