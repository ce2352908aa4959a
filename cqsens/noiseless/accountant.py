"""The exact accountant of a noiseless count whose record probabilities are known.

A counting query released *without noise* is never differentially private in
the classical sense: an attacker who knows every other record learns the last
one from the exact count.  It can still be private against an attacker whose
background knowledge is *partial*: the other records are random to them.  This
module quantifies that privacy (in the "active/passive partial-knowledge DP"
sense of [1]_, where the attacker knows the data-generating distribution but not
the draw).

Setting.  There are ``n`` independent records; record ``j`` is ``1`` with
probability ``p_j`` and the released value is the exact count
``S = X_1 + ... + X_n``.  The privacy of record ``j`` is the distance between
the two output laws ``S_{-j} + 1`` (``X_j = 1``) and ``S_{-j}`` (``X_j = 0``),
where ``S_{-j}`` is the count of the other ``n - 1`` records.  For a privacy
loss ``epsilon`` this distance is measured by the *hockey-stick divergence*

.. math::

    \\delta(\\varepsilon) = \\max\\Big(\\sum_s [P(s) - e^{\\varepsilon} Q(s)]_+,\\;
                                   \\sum_s [Q(s) - e^{\\varepsilon} P(s)]_+\\Big),

the smallest ``delta`` such that the release is ``(epsilon, delta)``-private
for that record.  :func:`pmf_delta` and :func:`pmf_epsilon` evaluate it (and
its inverse) for a given pmf of ``S_{-j}``; :func:`exact_delta`,
:func:`exact_delta_by_record` and :func:`exact_epsilon` do so for known ``p_j``,
where ``S_{-j}`` is Poisson-binomial (:mod:`cqsens.noiseless.poisson_binomial`),
and report the worst record.  The bound for a whole class of distributions is
in :mod:`cqsens.noiseless.classes`.

References
----------
.. [1] D. Desfontaines. *Lowering the cost of anonymization*. PhD thesis, ETH
   Zurich, 2020, Section 3.2.1 "Counting queries".
.. [2] G. Barthe, F. Olmedo. Beyond differential privacy: composition theorems
   and relational logic for f-divergences between probabilistic programs.
   ICALP 2013 (joint convexity of the hockey-stick divergence).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from cqsens.noiseless.binomial import EPS_CAP, FloatArray
from cqsens.noiseless.poisson_binomial import leave_one_out_pmfs
from cqsens.noiseless.validate import check_delta, check_epsilon, check_probabilities

__all__ = ["pmf_delta", "pmf_epsilon", "exact_delta", "exact_delta_by_record", "exact_epsilon"]


def _shift_pairs(r: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(a, b)`` with ``a[s] = R(s-1)`` and ``b[s] = R(s)`` over the support of the pair."""
    padded = np.concatenate(([0.0], np.asarray(r, dtype=np.float64), [0.0]))
    return padded[:-1], padded[1:]


def _direction_delta(a: FloatArray, b: FloatArray, epsilon: float) -> float:
    if epsilon == math.inf:
        return float(np.sum(a[b == 0.0]))
    x = math.exp(min(epsilon, EPS_CAP))
    return float(np.sum(np.maximum(a - x * b, 0.0)))


def pmf_delta(r: ArrayLike, epsilon: float) -> float:
    """Hockey-stick ``delta(epsilon)`` between ``R + 1`` and ``R`` for a pmf ``R``.

    Parameters
    ----------
    r : array_like of float
        pmf of the count of the *other* records (any offset: only the shape matters).
    epsilon : float
        Privacy loss ``>= 0`` (``math.inf`` allowed).

    Returns
    -------
    float
        ``max(sum_s [R(s-1) - e^eps R(s)]_+, sum_s [R(s) - e^eps R(s-1)]_+)``.

    Notes
    -----
    If the record of interest is 1 the output is ``S + 1``, with pmf ``R(s-1)``; if
    it is 0 the output is ``S``, with pmf ``R(s)``.  The smallest ``delta`` with
    ``P[S+1 in A] <= e^eps P[S in A] + delta`` for every set ``A`` is the positive
    part sum above (take ``A`` the set where the first law exceeds ``e^eps``
    times the second); privacy asks for it in both directions.  Both laws are
    shifted alike by the (unknown) offset, so the offset does not matter.  The
    terms are summed as non-negative numbers.

    Examples
    --------
    >>> pmf_delta([0.5, 0.5], 0.0)  # TV distance between Bin(1,1/2)+1 and Bin(1,1/2)
    0.5
    >>> pmf_delta([1.0], 5.0)  # a known count reveals the record
    1.0

    References
    ----------
    .. [1] G. Barthe, F. Olmedo. Beyond differential privacy, ICALP 2013.
    """
    eps = check_epsilon(epsilon)
    a, b = _shift_pairs(np.asarray(r, dtype=np.float64))
    return max(_direction_delta(a, b, eps), _direction_delta(b, a, eps))


def _direction_epsilon(a: FloatArray, b: FloatArray, delta: float) -> float:
    """Smallest ``eps >= 0`` with ``sum [a - e^eps b]_+ <= delta`` (exact, piecewise linear)."""
    constant = float(np.sum(a[(b == 0.0) & (a > 0.0)]))  # mass the other law cannot cover
    if constant > delta:
        return math.inf
    keep = (a > 0.0) & (b > 0.0)
    aa, bb = a[keep], b[keep]
    ratio = aa / bb
    active = ratio > 1.0  # cells that can still be active for some e^eps >= 1
    aa, bb, ratio = aa[active], bb[active], ratio[active]
    if ratio.size == 0:
        return 0.0
    order = np.argsort(-ratio, kind="stable")
    ratio, aa, bb = ratio[order], aa[order], bb[order]
    cum_a = np.cumsum(aa)
    cum_b = np.cumsum(bb)
    # g(x) = constant + sum_{ratio_i > x} (a_i - x b_i) is convex, decreasing, piecewise
    # linear with kinks at the ratios.  At the k-th kink (0-based, descending order) the
    # first k cells are active: value_k = constant + A_{k-1} - ratio_k B_{k-1}.
    prev_a = np.concatenate(([0.0], cum_a[:-1]))
    prev_b = np.concatenate(([0.0], cum_b[:-1]))
    at_kinks = constant + prev_a - ratio * prev_b
    ok = at_kinks <= delta
    count = ratio.size if bool(np.all(ok)) else int(np.argmin(ok))
    # On the segment below kink count-1 the first `count` cells are active.
    big_a, big_b = float(cum_a[count - 1]), float(cum_b[count - 1])
    x = (constant + big_a - delta) / big_b
    upper = float(ratio[count - 1])
    lower = float(ratio[count]) if count < ratio.size else 1.0
    x = min(max(x, lower), upper)
    return max(0.0, math.log(x)) if x > 0 else 0.0


def pmf_epsilon(r: ArrayLike, delta: float) -> float:
    """Smallest ``epsilon >= 0`` with :func:`pmf_delta` ``(r, epsilon) <= delta``.

    Parameters
    ----------
    r : array_like of float
        pmf of the count of the other records.
    delta : float
        Target ``delta`` in ``(0, 1)``.

    Returns
    -------
    float
        The smallest ``epsilon``; ``math.inf`` when no finite one exists (the
        extreme counts carry more than ``delta`` of mass on their own).

    Notes
    -----
    For ``x = e^eps``, ``g(x) = sum_s [a_s - x b_s]_+`` is convex, non-increasing
    and piecewise linear with kinks at the likelihood ratios ``a_s / b_s``.
    Sorting the ratios and accumulating ``a`` and ``b`` gives ``g`` at every
    kink; the segment containing the target is solved in closed form,
    ``x = (A - delta) / B``.  No bisection and no log-concavity assumption is
    needed; the answer is the larger of the two directions.

    Examples
    --------
    >>> pmf_epsilon([0.5, 0.5], 0.6)
    0.0
    >>> round(pmf_epsilon([0.25, 0.5, 0.25], 0.3), 6)  # 0.25 + (0.5 - 0.25 x) = 0.3
    0.587787

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    d = check_delta(delta)
    a, b = _shift_pairs(np.asarray(r, dtype=np.float64))
    return max(_direction_epsilon(a, b, d), _direction_epsilon(b, a, d))


def _per_group(ps: ArrayLike, func: Callable[[FloatArray], float]) -> FloatArray:
    arr = check_probabilities(ps)
    values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True)
    per_group = np.empty(values.size)
    for g, pmf in leave_one_out_pmfs(values, counts):
        per_group[g] = func(pmf.values)
    return per_group[inverse]


def exact_delta_by_record(ps: ArrayLike, epsilon: float) -> FloatArray:
    """Exact ``delta(epsilon)`` of every record, for known probabilities ``p_j``.

    Parameters
    ----------
    ps : array_like of float
        ``p_1, ..., p_n`` in ``[0, 1]``, ``n >= 2``.
    epsilon : float
        Privacy loss ``>= 0``.

    Returns
    -------
    numpy.ndarray
        Entry ``j`` is the hockey-stick ``delta(epsilon)`` between ``S_{-j} + 1``
        and ``S_{-j}`` (both directions, maximum), ``S_{-j}`` the count of the
        records other than ``j``.

    Notes
    -----
    ``delta_j`` depends on record ``j`` only through the multiset of the *other*
    probabilities, so records with equal ``p_j`` share it: the work is per group
    of equal probabilities.  The leave-one-out pmfs of all groups come from one
    balanced product tree (each group's pmf is a binomial), which costs
    ``O(n L log d)`` for ``d`` groups and an effective support length ``L``
    instead of the ``O(n^3)`` of recomputing a Poisson-binomial pmf for each
    record.  No record is singled out as "the worst" a priori: the worst record
    is not the one closest to 1/2 in general, because the pair ``(S+1, S)`` is
    not symmetric unless ``S`` is.

    Examples
    --------
    >>> exact_delta_by_record([0.5, 0.5, 0.5], 0.0).round(6).tolist()
    [0.5, 0.5, 0.5]

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    eps = check_epsilon(epsilon)
    return _per_group(ps, lambda r: pmf_delta(r, eps))


def exact_delta(ps: ArrayLike, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of a noiseless count with known ``p_j`` (worst record).

    The parameters are those of :func:`exact_delta_by_record`.

    Returns
    -------
    float
        ``max_j delta_j(epsilon)``: the release is ``(epsilon, delta)``-private
        against an attacker who knows the distribution but not the draw exactly
        when ``delta`` is at least this value.

    Notes
    -----
    The count of the other records ``S_{-j}`` is Poisson-binomial; see
    :func:`~cqsens.noiseless.poisson_binomial.poisson_binomial_pmf` for its
    exact pmf, :func:`pmf_delta` for the divergence and
    :func:`exact_delta_by_record` for the leave-one-out scheme.

    Examples
    --------
    >>> round(exact_delta([0.5] * 10, 1.0), 6)
    0.036752
    >>> exact_delta([1.0, 1.0], 3.0)  # nothing random: the count reveals the record
    1.0

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    return float(np.max(exact_delta_by_record(ps, epsilon)))


def exact_epsilon(ps: ArrayLike, delta: float) -> float:
    """Smallest ``epsilon`` with :func:`exact_delta` ``(ps, epsilon) <= delta``.

    ``ps`` is as for :func:`exact_delta_by_record`, ``delta`` the target in ``(0, 1)``.

    Returns
    -------
    float
        ``max_j epsilon_j(delta)``; ``math.inf`` if some record cannot reach
        ``delta`` at any finite ``epsilon``.

    Notes
    -----
    ``delta_j(eps)`` is non-increasing in ``eps``, so the smallest ``eps`` that
    works for every record is the maximum of the per-record smallest values;
    each is found exactly by :func:`pmf_epsilon` (a closed-form solve on the
    piecewise-linear profile, which is what a bisection would converge to).

    Examples
    --------
    >>> round(exact_epsilon([0.5] * 10, 0.036753), 3)
    1.0

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    d = check_delta(delta)
    return float(np.max(_per_group(ps, lambda r: pmf_epsilon(r, d))))
