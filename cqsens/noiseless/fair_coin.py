"""The privacy of one record hidden among ``m`` fair coins.

``delta_m(epsilon)`` is the hockey-stick divergence between ``Bin(m, 1/2) + 1``
and ``Bin(m, 1/2)``: the exact privacy of a record whose count is released
alongside ``m`` fair coins.  It is the building block of the class bound of
:mod:`cqsens.noiseless.classes`, which averages it over the number of records
that behave as fair coins.  :func:`fair_coin_delta` gives one value;
:func:`log_fair_coin_deltas` gives a whole range of ``m`` at the cost of one
direct sum plus one addition per ``m``.

References
----------
.. [1] D. Desfontaines. *Lowering the cost of anonymization*. PhD thesis, ETH
   Zurich, 2020, Section 3.2.1 "Counting queries".
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from cqsens.errors import InputError
from cqsens.noiseless.binomial import (
    EPS_CAP,
    LOG2,
    FloatArray,
    binomial_logpmf_half,
    logsumexp,
)
from cqsens.noiseless.validate import check_epsilon

__all__ = ["fair_coin_delta", "log_fair_coin_delta", "log_fair_coin_deltas"]


def _sigmoid(epsilon: float) -> float:
    return 1.0 / (1.0 + math.exp(-epsilon))


def _first_active(m: NDArray[np.int64] | int, epsilon: float) -> NDArray[np.int64]:
    """``k_m``: least ``s`` where ``Bin(m,1/2)+1`` exceeds ``e^eps`` times ``Bin(m,1/2)``."""
    mm = np.asarray(m, dtype=np.int64)
    k = np.floor((mm + 1).astype(np.float64) * _sigmoid(epsilon)).astype(np.int64) + 1
    return np.minimum(k, mm + 1)


def _log_abs_d(i: NDArray[np.int64], s: NDArray[np.int64], epsilon: float) -> FloatArray:
    """``log |D_i(s)|`` with ``D_i(s) = Q_i(s-1) - e^eps Q_i(s)``, ``Q_i`` the Bin(i,1/2) pmf."""
    i = np.asarray(i, dtype=np.int64)
    s = np.asarray(s, dtype=np.int64)
    out = np.empty(i.shape, dtype=np.float64)
    top = s == i + 1  # Q_i(i+1) = 0: D = Q_i(i) = 2^-i
    bottom = s == 0  # Q_i(-1) = 0: |D| = e^eps 2^-i
    mid = ~(top | bottom)
    out[top] = -i[top] * LOG2
    out[bottom] = epsilon - i[bottom] * LOG2
    if np.any(mid):
        im, sm = i[mid], s[mid]
        x = math.exp(epsilon)
        c = (im - sm + 1).astype(np.float64)
        # D = Q(s) (s/c - x) since Q(s-1)/Q(s) = s/c.
        gap = np.abs(sm.astype(np.float64) - x * c)
        log_q = binomial_logpmf_half(sm, im)
        with np.errstate(divide="ignore"):
            out[mid] = log_q + np.log(gap) - np.log(c)
    return out


def log_fair_coin_delta(m: int, epsilon: float) -> float:
    """``log delta_m(eps)`` by the direct sum of its non-negative terms."""
    if epsilon > EPS_CAP or math.exp(epsilon) > m:
        return -m * LOG2  # only s = m + 1 (where Bin(m,1/2) has no mass) is active
    k = int(_first_active(m, epsilon))
    span = int(math.ceil(12.0 * math.sqrt(m + 1))) + 40
    end = min(m + 1, k + span)
    s = np.arange(k, end + 1, dtype=np.int64)
    terms = _log_abs_d(np.full(s.shape, m, dtype=np.int64), s, epsilon)
    if end < m + 1:
        # Remainder: sum_{s > end} D(s) <= sum_{s > end} Q(s-1) = P[Bin >= end]
        #            <= Q(end) / (1 - r), r = (m-end)/(end+1) bounding later ratios Q(t+1)/Q(t).
        r = (m - end) / (end + 1)
        log_q_end = float(binomial_logpmf_half(np.array([end]), np.array([m]))[0])
        terms = np.append(terms, log_q_end - math.log1p(-r))
    return logsumexp(terms)


def fair_coin_delta(m: int, epsilon: float) -> float:
    """``delta_m(epsilon)`` between ``Bin(m, 1/2) + 1`` and ``Bin(m, 1/2)``.

    Parameters
    ----------
    m : int
        Number of fair coins, ``m >= 0``.
    epsilon : float
        Privacy loss ``>= 0``.

    Returns
    -------
    float
        The hockey-stick divergence (the same in both directions).

    Notes
    -----
    With ``Q`` the ``Bin(m, 1/2)`` pmf, ``P(s) = Q(s-1)`` and
    ``P(s)/Q(s) = s/(m-s+1)``, increasing in ``s``; so the positive part is the
    sum over ``s >= k_m = floor((m+1) e^eps/(1+e^eps)) + 1`` of
    ``D_m(s) = Q(s-1) - e^eps Q(s) >= 0``, which is summed as non-negative terms
    in log space (with a geometric bound on the far tail).  The reverse direction
    is equal: ``s -> m+1-s`` maps ``Q`` onto ``P`` because ``Bin(m,1/2)`` is
    symmetric.  ``delta_m`` is non-increasing in ``m``: adding an independent
    fair coin to both laws of the pair for ``m`` gives the pair for ``m+1``,
    and post-processing cannot increase the divergence.

    Examples
    --------
    >>> fair_coin_delta(0, 2.0)  # no coin: the count reveals the record
    1.0
    >>> round(fair_coin_delta(1, 0.0), 6)
    0.5

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
        raise InputError(f"m must be a non-negative integer, got {m!r}", construct="m")
    eps = check_epsilon(epsilon)
    return min(1.0, math.exp(log_fair_coin_delta(int(m), eps)))


def log_fair_coin_deltas(lo: int, hi: int, epsilon: float) -> FloatArray:
    """``log delta_m(eps)`` for every ``m`` in ``[lo, hi]`` in ``O(hi - lo)`` after one direct sum.

    With ``G_m(k) = sum_{s >= k} D_m(s)`` and ``Q_{m+1}(s) = (Q_m(s) + Q_m(s-1))/2``,
    linearity gives ``G_{m+1}(k) = G_m(k) + D_m(k-1)/2``.  Since ``k_{m+1}`` is ``k_m``
    or ``k_m + 1`` and ``D_m(s)`` is ``<= 0`` below ``k_m`` and ``>= 0`` from it,
    ``delta_{m+1} = delta_m - |D_m(k_{m+1} - 1)| / 2`` in both cases.  Summed from the
    top, ``delta_m = delta_hi + sum_{i=m}^{hi-1} |D_i(k_{i+1}-1)| / 2``: only additions.
    """
    log_top = log_fair_coin_delta(hi, epsilon)
    if hi == lo:
        return np.array([log_top])
    i = np.arange(lo, hi, dtype=np.int64)
    s = _first_active(i + 1, epsilon) - 1
    log_half = _log_abs_d(i, s, epsilon) - LOG2
    logs = np.append(log_half, log_top)
    scale = float(np.max(logs))
    tail = np.cumsum(np.exp(logs - scale)[::-1])[::-1]
    # Cells below 2**-1000 (relative) may have lost precision to underflow: raise them
    # to that floor, which keeps every value an upper bound.
    tail = np.maximum(tail, 2.0**-1000)
    return np.asarray(scale + np.log(tail), dtype=np.float64)
