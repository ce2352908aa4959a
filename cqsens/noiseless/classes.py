"""Privacy bounds of a noiseless count for a whole class of record distributions.

When the record probabilities ``p_j`` are not known, but all lie in
``[lambda, 1 - lambda]``, a mixture ("randomized response") decomposition turns
the count into a post-processing of fair coins, and joint convexity of the
hockey-stick divergence [3]_ gives an upper bound that holds for every
distribution of the class and is computed exactly (:func:`class_delta`,
:func:`class_epsilon`).  The histogram class bound, for ``K`` categories with
every category probability at least ``lambda``
(:func:`histogram_class_delta`, :func:`histogram_class_epsilon`), reduces to
the binary class bound.

Every truncation of an infinite or long sum is replaced by an explicit upper
bound of what was cut, so the class bounds stay upper bounds.

References
----------
.. [1] D. Desfontaines. *Lowering the cost of anonymization*. PhD thesis, ETH
   Zurich, 2020, Section 3.2.1 "Counting queries" (Theorem 3, Corollary 1).
.. [2] B. Balle, J. Bell, A. Gascon, K. Nissim. The privacy blanket of the
   shuffle model. CRYPTO 2019.
.. [3] G. Barthe, F. Olmedo. Beyond differential privacy: composition theorems
   and relational logic for f-divergences between probabilistic programs.
   ICALP 2013 (joint convexity of the hockey-stick divergence).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

from cqsens.noiseless.binomial import EPS_CAP, binomial_logpmf, logsumexp
from cqsens.noiseless.fair_coin import log_fair_coin_delta, log_fair_coin_deltas
from cqsens.noiseless.validate import (
    check_categories,
    check_delta,
    check_epsilon,
    check_lambda,
    check_n,
)

__all__ = ["class_delta", "class_epsilon", "histogram_class_delta", "histogram_class_epsilon"]

# Bisection stops once the bracket is this small (relative to its upper end).
_EPS_RTOL = 1e-10
# Widths of the explicit windows over Bin(n-1, 2 lambda), in standard deviations: the
# second leaves an outer mass below e**(-800), i.e. below the smallest double.
_WINDOWS = (12.0, 40.0)
# A truncation bound below exp(_NEGLIGIBLE) times the result is accepted as it is.
_NEGLIGIBLE = math.log(1e-12)


def _log_geometric_tail(log_first: float, rho: float) -> float:
    """``log`` of ``first / (1 - rho)`` (a tail whose ratios stay below ``rho``), capped at 0."""
    if rho >= 1.0:
        return 0.0
    return min(0.0, log_first - math.log1p(-rho))


def _log_class_delta(others: int, q: float, epsilon: float) -> float:
    """``log sum_m P[Bin(others, q) = m] delta_m(eps)``, truncated with explicit tail bounds."""
    if epsilon > EPS_CAP or math.exp(epsilon) > others:
        # Only the cell s = m+1 is active for every m <= others: sum_m w_m 2^-m = (1 - q/2)^N.
        return others * math.log1p(-q / 2)
    if q >= 1.0:
        return log_fair_coin_delta(others, epsilon)
    # A window of 12 standard deviations leaves an outer mass near e^-72; it is added as
    # an upper bound, and when that bound is not negligible (tiny delta) the window widens.
    for width in _WINDOWS:
        total, log_lower = _log_class_delta_window(others, q, epsilon, width)
        if log_lower < total + _NEGLIGIBLE:
            break
    return min(0.0, total)


def _log_lower_tail_bound(others: int, q: float, epsilon: float, lo: int, step: int) -> float:
    """``log`` of an upper bound on ``sum_{m < lo} P[Bin(others, q) = m] delta_m``.

    The range ``[0, lo)`` is cut into blocks ``[a, e]`` whose widths double away from
    ``lo``.  On a block ``delta_m <= delta_a`` (``delta`` is non-increasing in ``m``), and
    the block's mass is at most the whole tail ``sum_{m <= e} w_m <= w_e / (1 - rho_e)``,
    where ``rho_e = w_{e-1}/w_e = e(1-q)/((N-e+1)q)`` bounds every later ratio (the ratios
    shrink as ``m`` decreases).  A staircase instead of ``delta_m <= 1`` keeps the bound
    tight when ``delta`` itself is tiny.
    """
    terms: list[float] = []
    end = lo - 1
    width = step
    while end >= 0:
        start = max(0, end - width + 1)
        rho = end * (1.0 - q) / ((others - end + 1) * q)
        log_mass = _log_geometric_tail(float(binomial_logpmf(end, others, q, 1.0 - q)), rho)
        terms.append(log_mass + log_fair_coin_delta(start, epsilon))
        end = start - 1
        width *= 2
    return logsumexp(np.array(terms))


def _log_class_delta_window(others: int, q: float, epsilon: float,
                            width: float) -> tuple[float, float]:
    """The windowed sum and the log of its lower-tail bound term (``-inf`` if none)."""
    mean = others * q
    sd = math.sqrt(others * q * (1.0 - q))
    lo = max(0, int(math.floor(mean - width * sd - 20)))
    hi = min(others, int(math.ceil(mean + width * sd + 20)))
    m = np.arange(lo, hi + 1, dtype=np.int64)
    log_w = binomial_logpmf(m, others, q, 1.0 - q)
    log_d = log_fair_coin_deltas(lo, hi, epsilon)
    parts = [log_w + log_d]
    log_lower = -math.inf
    if lo > 0:
        # Below the window delta_m <= 1, and w_{m-1}/w_m = m(1-q)/((N-m+1)q) shrinks as m
        # decreases: sum_{m < lo} w_m <= w_{lo-1} / (1 - rho).  When that is not negligible
        # next to the window (tiny delta), a staircase bound replaces delta_m <= 1.
        edge = lo - 1
        rho = edge * (1.0 - q) / ((others - edge + 1) * q)
        log_lower = _log_geometric_tail(float(binomial_logpmf(edge, others, q, 1.0 - q)), rho)
        if log_lower >= logsumexp(np.concatenate(parts)) + _NEGLIGIBLE:
            log_lower = min(log_lower,
                            _log_lower_tail_bound(others, q, epsilon, lo, max(1, int(sd))))
        parts.append(np.array([log_lower]))
    if hi < others:
        # Upper tail: w_{m+1}/w_m shrinks as m grows; delta_m <= delta_hi there.
        edge = hi + 1
        rho = (others - edge) * q / ((edge + 1) * (1.0 - q))
        log_mass = _log_geometric_tail(float(binomial_logpmf(edge, others, q, 1.0 - q)), rho)
        parts.append(np.array([log_mass + float(log_d[-1])]))
    return logsumexp(np.concatenate(parts)), log_lower


def _exp_upper(log_value: float) -> float:
    """``exp(log_value)`` capped at 1, rounded *up* where doubles lose precision (subnormals)."""
    value = math.exp(min(log_value, 0.0))
    if value < sys.float_info.min:
        value = math.nextafter(value, 1.0)
    return min(value, 1.0)


def class_delta(n: int, lam: float, epsilon: float) -> float:
    """Upper bound on ``delta(epsilon)`` for every distribution with ``p_j`` in ``[lam, 1-lam]``.

    Parameters
    ----------
    n : int
        Number of records (``2 <= n <= MAX_RECORDS``).
    lam : float
        ``lambda`` in ``(0, 1/2]``: every record is 1 with a probability between
        ``lambda`` and ``1 - lambda``.
    epsilon : float
        Privacy loss ``>= 0``.

    Returns
    -------
    float
        ``sum_m P[Bin(n-1, 2 lambda) = m] delta_m(epsilon)``, with ``delta_m`` the
        divergence between ``Bin(m,1/2)+1`` and ``Bin(m,1/2)``
        (:func:`~cqsens.noiseless.fair_coin.fair_coin_delta`).
        It is exact when ``lambda = 1/2``.  It is never 0: below the normal
        doubles (``~2.2e-308``) it is rounded up to the next representable value.

    Notes
    -----
    *Mixture.*  For ``p`` in ``[lambda, 1-lambda]`` a ``Bernoulli(p)`` draw is:
    with probability ``2 lambda`` a fair coin, otherwise a
    ``Bernoulli((p - lambda)/(1 - 2 lambda))`` draw (a valid probability
    exactly when ``lambda <= p <= 1 - lambda``; indeed
    ``2 lambda/2 + (1 - 2 lambda)(p - lambda)/(1 - 2 lambda) = p``).  Draw this
    for every record other than ``j``; let ``C`` be the set of records that
    became fair coins and ``T`` the sum of the others.  Given ``(C, T)``, the
    output is ``T + Bin(|C|, 1/2) + X_j``.

    *Joint convexity.*  The hockey-stick divergence
    ``H_eps(P||Q) = sup_A P(A) - e^eps Q(A)`` is jointly convex, so for the two
    laws ``P = sum_c w_c P_c`` and ``Q = sum_c w_c Q_c`` mixed with the same
    weights, ``H_eps(P||Q) <= sum_c w_c H_eps(P_c||Q_c)``.  Conditioned on
    ``(C, T)``, the pair is ``(T + B + 1, T + B)`` with ``B ~ Bin(|C|, 1/2)``;
    shifting both by ``T`` does not change the divergence, so it is ``delta_m``
    with ``m = |C| ~ Bin(n-1, 2 lambda)``.  The same holds in the reverse
    direction, hence ``delta(eps) <= sum_m P[Bin(n-1, 2 lambda) = m] delta_m(eps)``
    for *every* record of *every* distribution of the class.

    *Computation.*  ``delta_m`` is non-increasing in ``m`` (adding a fair coin
    to both laws is post-processing).  All ``delta_m`` of a window
    ``mean +- 40 sd`` of ``Bin(n-1, 2 lambda)`` come from one direct sum and
    the exact recursion ``delta_{m+1} = delta_m - |D_m(k_{m+1}-1)|/2`` (see
    :func:`~cqsens.noiseless.fair_coin.fair_coin_delta` for ``D`` and ``k``),
    accumulated from the top so that only non-negative numbers are added.  The
    outer mass outside the window is bounded by geometric series (binomial
    ratios shrink away from the mode) and added with ``delta_m <= delta_hi``
    above the window and, below it, a staircase ``delta_m <= delta_a`` on
    blocks ``[a, e]`` of doubling width, so the result remains an upper bound.
    For ``e^eps > n - 1`` only the cell ``s = m+1`` is active and the bound is
    ``E[2^-M] = (1 - lambda)^(n-1)`` exactly.  Cost ``O(sqrt(n lambda))``.

    This is the numerical form of Theorem 3 of [1]_ with its two misprints
    corrected: the likelihood ratio is compared with ``e^eps`` (not ``eps``),
    and the number of fair coins is ``Bin(n-1, 2 lambda)``.

    Examples
    --------
    >>> f"{class_delta(10_000, 0.05, 0.3):.3e}"
    '1.853e-08'
    >>> round(class_delta(3, 0.5, 0.0), 6)  # lambda = 1/2: exact, 2 fair coins
    0.5

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1, Theorem 3.
    .. [2] B. Balle, J. Bell, A. Gascon, K. Nissim. The privacy blanket of the
       shuffle model. CRYPTO 2019.
    """
    nn = check_n(n)
    lv = check_lambda(lam)
    eps = check_epsilon(epsilon)
    return _exp_upper(_log_class_delta(nn - 1, 2.0 * lv, eps))


def _bisect_epsilon(delta_of: Callable[[float], float], delta: float, ceiling: float) -> float:
    """Smallest ``eps`` in ``[0, ceiling]`` with ``delta_of(eps) <= delta`` (non-increasing)."""
    if delta_of(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, min(1.0, ceiling)
    while delta_of(hi) > delta:
        if hi >= ceiling:
            return math.inf
        lo, hi = hi, min(2.0 * hi, ceiling)
    while hi - lo > _EPS_RTOL * hi:
        mid = 0.5 * (lo + hi)
        if delta_of(mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def class_epsilon(n: int, lam: float, delta: float) -> float:
    """Smallest ``epsilon`` with :func:`class_delta` ``(n, lam, epsilon) <= delta``.

    ``n`` and ``lam`` are as for :func:`class_delta`, ``delta`` the target in ``(0, 1)``.

    Returns
    -------
    float
        ``epsilon`` (to a relative ``1e-10``, rounded up so the bound holds at it);
        ``math.inf`` when ``delta < (1 - lambda)^(n-1)``, the limit of the bound
        as ``epsilon -> infinity`` (all others may be fair coins showing the same face).

    Notes
    -----
    The bound is continuous and non-increasing in ``epsilon`` and constant from
    ``e^eps > n - 1`` on, so a bisection on ``[0, log(n-1)]`` returns the upper
    end of its final bracket.

    Examples
    --------
    >>> round(class_epsilon(10_000, 0.05, 1e-6), 4)
    0.2447

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1, Theorem 3.
    """
    nn = check_n(n)
    lv = check_lambda(lam)
    d = check_delta(delta)
    others = nn - 1
    floor = others * math.log1p(-lv)
    if math.log(d) < floor:
        return math.inf
    ceiling = math.log(others) + 1e-9 if others > 1 else 1.0
    return _bisect_epsilon(lambda e: math.exp(_log_class_delta(others, 2.0 * lv, e)), d, ceiling)


def histogram_class_delta(n: int, lam: float, k: int, epsilon: float) -> float:
    """Upper bound on ``delta(epsilon)`` of a noiseless ``K``-category histogram.

    Parameters
    ----------
    n : int
        Number of records, ``>= 2``.
    lam : float
        Every record falls in every category with probability ``>= lam``; so
        ``0 < lam <= 1/K``.
    k : int
        Number of categories ``K >= 2``.
    epsilon : float
        Privacy loss ``>= 0``.

    Returns
    -------
    float
        The bound, equal to ``class_delta(n, lam, epsilon)``.

    Notes
    -----
    *Mixture.*  A categorical draw with probabilities ``p_k >= lambda`` is, with
    probability ``K lambda``, uniform over the ``K`` categories, and otherwise
    drawn from ``(p_k - lambda)/(1 - K lambda)``.  As in :func:`class_delta`,
    joint convexity reduces the problem to a known histogram ``c`` of the
    non-uniform records plus ``U ~ Multinomial(M, uniform)``, ``M ~ Bin(n-1, K lambda)``,
    and by shift invariance to the pair ``U + e_a`` versus ``U + e_b`` when record
    ``j`` moves from category ``a`` to ``b``.

    *Two categories.*  Write ``U = (U_a, U_b, U_rest)``.  ``U_rest`` has the same
    law in both cases and is part of the output; it fixes ``R = U_a + U_b``, and
    given ``R = r`` the pair is ``(B + 1, r - B)`` versus ``(B, r - B + 1)`` with
    ``B ~ Bin(r, 1/2)``, which (the sum ``r + 1`` being known) is the pair
    ``B + 1`` versus ``B``.  When the mixing variable is observed the divergence
    of the mixture *equals* the average, so the histogram pair has divergence
    ``sum_r P[R = r] delta_r``.  Given ``M``, ``R ~ Bin(M, 2/K)``, and thinning
    a binomial gives ``R ~ Bin(n-1, K lambda * 2/K) = Bin(n-1, 2 lambda)``: the
    same bound as the binary class with the same ``lambda`` (Corollary 1 of
    [1]_: "the same parameters").

    Examples
    --------
    >>> histogram_class_delta(1000, 0.1, 3, 0.5) == class_delta(1000, 0.1, 0.5)
    True

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1, Corollary 1.
    """
    return class_delta(*_histogram_class(n, lam, k), epsilon)


def _histogram_class(n: int, lam: float, k: int) -> tuple[int, float]:
    """The checked ``n`` and ``lam`` of a ``K``-category histogram (``0 < lam <= 1/K``)."""
    nn = check_n(n)
    lv = check_lambda(lam, upper=1.0, what="1/K")
    check_categories(k, lv)
    return nn, lv


def histogram_class_epsilon(n: int, lam: float, k: int, delta: float) -> float:
    """Smallest ``epsilon`` with :func:`histogram_class_delta` ``<= delta``.

    ``n``, ``lam`` and ``k`` are as for :func:`histogram_class_delta`, ``delta`` the
    target in ``(0, 1)``.

    Returns
    -------
    float
        ``class_epsilon(n, lam, delta)`` (see :func:`histogram_class_delta`).

    Notes
    -----
    The histogram bound coincides with the binary class bound, so is its inverse.

    Examples
    --------
    >>> histogram_class_epsilon(1000, 0.1, 4, 1e-3) == class_epsilon(1000, 0.1, 1e-3)
    True

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1, Corollary 1.
    """
    return class_epsilon(*_histogram_class(n, lam, k), delta)
