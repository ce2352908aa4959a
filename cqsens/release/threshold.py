"""DP partition selection: OpenDP's ``make_laplace_threshold`` with a threshold computed here
from the exact tail of the discrete Laplace (OpenDP issue #2922: OpenDP 0.16's map of that
measurement leaves out the mass at the threshold, which the mechanism releases)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from cqsens.release.limits import ReleaseError, _check_delta, _check_epsilon, _check_fits
from cqsens.release.scales import laplace_scale
from cqsens.release.search import _I64, _SLACK, _bisect, _decimals, _dp, _run, _smallest

__all__ = ["ThresholdCalibration", "select_partitions", "threshold_calibration",
           "threshold_tail"]


@dataclass(frozen=True, slots=True)
class ThresholdCalibration:
    """Scale and threshold of the Laplace threshold mechanism for ``(ε, δ)``.

    Attributes
    ----------
    scale : float
        Scale ``b`` of the discrete Laplace noise added to every count.
    threshold : int
        A key is shown when its noisy count is at least this.
    epsilon, delta : float
        The ε and δ asked for.
    tail : float
        The δ the threshold spends, rounded up: ``ℓ0·P(Z ≥ threshold − ℓ∞) ≤ delta``.
    """

    scale: float
    threshold: int
    epsilon: float
    delta: float
    tail: float = 0.0


def _threshold_domain() -> tuple[Any, Any]:
    """OpenDP's map of string keys to i64 counts, under the (ℓ0, ℓ∞, ℓ1) distance."""
    dp = _dp()
    return (dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=_I64)),
            dp.l01inf_distance(dp.absolute_distance(T=_I64)))


def threshold_tail(scale: float, over: int, keys: int = 1) -> Decimal:
    """``keys·P(Z ≥ over)`` for ``Z`` discrete Laplace of scale ``b``, ``over ≥ 1``, to 60 digits.

    ``P(Z ≥ k) = t^k/(1 + t)`` with ``t = e^{−1/b}`` (the pmf is
    ``(1 − t)/(1 + t)·t^{|z|}``; Canonne, Kamath, Steinke 2020, Def. 28).

    Examples
    --------
    >>> float(threshold_tail(1.0, 1))  # e^-1/(1 + e^-1)
    0.2689414213699951
    """
    if over < 1:
        raise ValueError(f"the tail is computed for over >= 1, not {over}")
    with _decimals():
        b = Decimal(scale)
        return keys * (-over / b).exp() / (1 + (-1 / b).exp())


def threshold_calibration(l1: int, epsilon: float, delta: float) -> ThresholdCalibration:
    """Scale for ε and the smallest threshold whose exact tail meets δ (partition selection).

    ``l1`` bounds how many rows one neighbour changes over all groups, so it
    bounds the groups touched (ℓ0), each group's change (ℓ∞) and their sum (ℓ1).

    Parameters
    ----------
    l1 : int
        The count's ℓ1 sensitivity (at least 1 is used).
    epsilon : float
        ε of the selection: the scale is OpenDP's, checked by the map of
        ``make_laplace_threshold`` at distance ``(l1, l1, l1)``.
    delta : float
        δ of the selection.

    Returns
    -------
    ThresholdCalibration

    Notes
    -----
    A key that one neighbour has and the other has not holds at most ``ℓ∞``
    rows, and there are at most ``ℓ0`` such keys; each is shown when
    ``count + Z ≥ threshold``.  The threshold is the smallest ``ℓ∞ + k``
    (``k ≥ 1``) with ``ℓ0·P(Z ≥ k) ≤ δ`` (a union bound), from the exact tail
    :func:`threshold_tail`.  OpenDP 0.16's own map of ``make_laplace_threshold``
    is not used for δ: it leaves out the mass at the threshold, which the
    mechanism releases (OpenDP issue #2922), so at scale 1 and threshold 2 it
    reports δ = 0.0989 for a key of count 1 that is shown with probability 0.269;
    it also cannot report δ below 2⁻⁵³.

    Examples
    --------
    >>> t = threshold_calibration(1, 1.0, 1e-6)
    >>> t.scale, t.threshold
    (1.0, 15)
    """
    eps = _check_epsilon(epsilon)
    dlt = _check_delta(delta)
    l1 = max(int(l1), 1)
    d_in = (l1, l1, l1)
    scale = _threshold_scale(l1, eps, d_in)
    target = Decimal(dlt)

    def meets(k: int) -> bool:
        return threshold_tail(scale, k, l1) * (1 + _SLACK) <= target

    with _decimals():
        b = Decimal(scale)
        guess = b * (l1 / (target * (1 + (-1 / b).exp()))).ln()
        start = int(guess.to_integral_value(ROUND_CEILING))
        over = _smallest(lambda k: k >= 1 and meets(k), start)
    threshold = l1 + over
    if threshold > 2**62:
        raise ReleaseError(f"the partition-selection threshold {threshold} does not fit in a "
                           "64-bit count: raise epsilon or delta", construct="noise")
    spent = float(threshold_tail(scale, over, l1))
    return ThresholdCalibration(scale, threshold, eps, dlt, math.nextafter(spent, math.inf))


def _threshold_scale(l1: int, eps: float, d_in: tuple[int, int, int]) -> float:
    """The discrete Laplace scale for ε, checked by OpenDP's map of the threshold measurement
    (its ε does not depend on the threshold)."""
    dp = _dp()
    domain, metric = _threshold_domain()

    def private(b: float) -> bool:
        e, _ = dp.m.make_laplace_threshold(domain, metric, scale=b,
                                           threshold=2 * l1 + 1).map(d_in)
        return bool(e <= eps)

    scale = laplace_scale(l1, eps, integer=True)
    if private(scale):
        return scale
    return _check_fits(_bisect(private, 2 * scale), True, "Laplace scale")


def select_partitions(counts: Mapping[str, int], calibration: ThresholdCalibration,
                      ) -> dict[str, int]:
    """The groups whose noisy count passes the threshold, with that noisy count."""
    dp = _dp()
    domain, metric = _threshold_domain()
    measurement = dp.m.make_laplace_threshold(domain, metric, scale=calibration.scale,
                                              threshold=calibration.threshold)
    if not counts:
        return {}
    out = _run(measurement, {k: int(v) for k, v in counts.items()})
    return {str(k): int(v) for k, v in out.items()}
