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
``make_laplace_threshold``, with a threshold computed here from the exact tail
of the discrete Laplace (OpenDP issue #2922: OpenDP 0.16's map of that
measurement leaves out the mass at the threshold, which the mechanism releases).

This module samples the noise and summarises a calibration (:func:`calibrate`);
the scales are computed in :mod:`cqsens.release.scales`, partition selection in
:mod:`cqsens.release.threshold`, the limits on ε, δ and the noise are in
:mod:`cqsens.release.limits`, and every public name of those is importable from
here.

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

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from cqsens.release.limits import (
    DELTA_MIN,
    EPSILON_MAX,
    EPSILON_MIN,
    MAX_FLOAT_SCALE,
    MAX_INTEGER_SCALE,
    ReleaseError,
    _check_delta,
    _check_epsilon,
    _check_sensitivity,
    check_privacy,
)
from cqsens.release.scales import (
    classical_gaussian_sigma,
    gaussian_halfwidth,
    gaussian_sigma,
    laplace_halfwidth,
    laplace_scale,
    zcdp_epsilon,
)
from cqsens.release.search import _bisect, _dp, _run, _space
from cqsens.release.threshold import (
    select_partitions,
    threshold_calibration,
    threshold_tail,
)

__all__ = [
    "DELTA_MIN",
    "EPSILON_MAX",
    "EPSILON_MIN",
    "MAX_FLOAT_SCALE",
    "MAX_INTEGER_SCALE",
    "NoiseCalibration",
    "ReleaseError",
    "calibrate",
    "check_privacy",
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
    "threshold_tail",
    "zcdp_epsilon",
]


# ----------------------------------------------------------------------------- sampling


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
