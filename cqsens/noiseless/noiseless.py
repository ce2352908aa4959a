"""Noiseless counting queries under partial knowledge.

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
for that record.  Three accountants are provided:

* the **exact accountant** for known ``p_j`` (:func:`exact_delta`,
  :func:`exact_epsilon`): ``S_{-j}`` is Poisson-binomial, its pmf is computed
  exactly with non-negative arithmetic, and the worst record is reported;
* the **class bound** for every distribution whose ``p_j`` all lie in
  ``[lambda, 1 - lambda]`` (:func:`class_delta`, :func:`class_epsilon`): a
  mixture ("randomized response") decomposition turns the count into a
  post-processing of fair coins, and joint convexity of the hockey-stick
  divergence gives an upper bound that is computed exactly;
* the **histogram class bound** for ``K`` categories with every category
  probability at least ``lambda`` (:func:`histogram_class_delta`), which reduces
  to the binary class bound.

Two published reference values are provided for comparison: the closed form
quoted for Theorem 3 of [1]_ (:func:`closed_form_epsilon`,
:func:`closed_form_delta`) and Proposition 27 of [1]_ (Grining & Klonowski),
whose formula could not be recovered from the available text
(:data:`PROPOSITION_27_NOTE`).

Numerics.  Binomial probabilities are evaluated in log space with Loader's
saddle-point expansion [3]_, accurate to a few units in the last place even for
``n = 10**9``; the other sums are sums of non-negative terms.  Every truncation
of an infinite or long sum is replaced by an explicit upper bound of what was
cut, so the class bounds stay upper bounds.

References
----------
.. [1] D. Desfontaines. *Lowering the cost of anonymization*. PhD thesis, ETH
   Zurich, 2020, Section 3.2.1 "Counting queries" (Theorem 3, Proposition 27,
   Corollary 1).
.. [2] B. Balle, J. Bell, A. Gascon, K. Nissim. The privacy blanket of the
   shuffle model. CRYPTO 2019.
.. [3] C. Loader. Fast and accurate computation of binomial probabilities.
   Technical note, 2000.
.. [4] G. Barthe, F. Olmedo. Beyond differential privacy: composition theorems
   and relational logic for f-divergences between probabilistic programs.
   ICALP 2013 (joint convexity of the hockey-stick divergence).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cqsens.errors import InputError

__all__ = [
    "MAX_RECORDS",
    "PROPOSITION_27_NOTE",
    "binomial_logpmf",
    "poisson_binomial_pmf",
    "pmf_delta",
    "pmf_epsilon",
    "exact_delta",
    "exact_delta_by_record",
    "exact_epsilon",
    "fair_coin_delta",
    "class_delta",
    "class_epsilon",
    "histogram_class_delta",
    "histogram_class_epsilon",
    "closed_form_epsilon",
    "closed_form_delta",
    "parse_probabilities",
]

#: Largest number of records the class bounds accept.
MAX_RECORDS = 10**9

#: What can be said about Proposition 27 of the thesis from the available text.
PROPOSITION_27_NOTE = (
    "Proposition 27 (Grining & Klonowski, as printed in the thesis): not computed; its "
    "formula did not survive the extraction of the thesis text, which only names its "
    "ingredients (the average second moment and average absolute third moment of the X_i)."
)

_LOG2 = math.log(2.0)
_LOG_2PI = math.log(2.0 * math.pi)
# Bisection stops once the bracket is this small (relative to its upper end).
_EPS_RTOL = 1e-10
# Above this, exp(epsilon) is capped (a pmf ratio beyond e**700 does not occur in doubles).
_EPS_CAP = 700.0
# Widths of the explicit windows over Bin(n-1, 2 lambda), in standard deviations: the
# second leaves an outer mass below e**(-800), i.e. below the smallest double.
_WINDOWS = (12.0, 40.0)
# A truncation bound below exp(_NEGLIGIBLE) times the result is accepted as it is.
_NEGLIGIBLE = math.log(1e-12)

FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------- validation


def _check_n(n: object, *, name: str = "n", upper: int = MAX_RECORDS) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {n!r}", construct=name)
    if n < 2:
        raise InputError(f"{name} must be at least 2 (the record itself and one other), "
                         f"got {n}", construct=name)
    if n > upper:
        raise InputError(f"{name} must be at most {upper}, got {n}", construct=name)
    return int(n)


def _check_lambda(lam: object, upper: float = 0.5, what: str = "1/2") -> float:
    try:
        value = float(lam)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"lambda must be a number, got {lam!r}", construct="lambda") from None
    if not (0.0 < value <= upper):
        raise InputError(f"lambda must be in (0, {what}], got {lam!r}", construct="lambda")
    return value


def _check_epsilon(epsilon: object) -> float:
    try:
        value = float(epsilon)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"epsilon must be a number, got {epsilon!r}",
                         construct="epsilon") from None
    if math.isnan(value) or value < 0.0:
        raise InputError(f"epsilon must be >= 0, got {epsilon!r}", construct="epsilon")
    return value


def _check_delta(delta: object) -> float:
    try:
        value = float(delta)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"delta must be a number, got {delta!r}", construct="delta") from None
    if not (0.0 < value < 1.0):
        raise InputError(f"delta must be in (0, 1), got {delta!r}", construct="delta")
    return value


def _check_probabilities(ps: ArrayLike) -> FloatArray:
    try:
        arr = np.asarray(ps, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("probabilities must be numbers", construct="p") from None
    if arr.size < 2:
        raise InputError(f"need at least 2 records (the record itself and one other), "
                         f"got {arr.size}", construct="p")
    bad = np.flatnonzero(~((arr >= 0.0) & (arr <= 1.0)))
    if bad.size:
        j = int(bad[0])
        raise InputError(f"probability of record {j + 1} must be in [0, 1], got {arr[j]!r}",
                         construct="p")
    return arr


# --------------------------------------------------------------------------- binomial pmf


def _stirlerr(x: FloatArray) -> FloatArray:
    """``log(x!) - ((x + 1/2) log x - x + log(2 pi)/2)`` for integers ``x >= 1``."""
    out = np.empty_like(x)
    small = x <= 15
    if np.any(small):
        out[small] = [_STIRLERR_TABLE[int(v)] for v in x[small]]
    big = ~small
    if np.any(big):
        xb = x[big]
        x2 = xb * xb
        out[big] = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * x2)) / x2) / x2)
                    / x2) / xb
    return out


_STIRLERR_TABLE = [math.nan] + [
    math.log(math.factorial(k)) - ((k + 0.5) * math.log(k) - k + 0.5 * _LOG_2PI)
    for k in range(1, 16)
]


def _bd0(x: FloatArray, mu: FloatArray) -> FloatArray:
    """Deviance term ``x log(x/mu) + mu - x`` (``mu > 0``), stable when ``x ~ mu``."""
    out = np.empty_like(x)
    diff = x - mu
    close = np.abs(diff) < 0.1 * (x + mu)
    far = ~close
    if np.any(far):
        xf, mf = x[far], mu[far]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            ratio = xf / mf
            log_ratio = np.where((ratio > 0) & np.isfinite(ratio), np.log(ratio),
                                 np.log(xf) - np.log(mf))
            out[far] = np.where(xf > 0, xf * log_ratio, 0.0) + mf - xf
    if np.any(close):
        xc, dc = x[close], diff[close]
        v = dc / (x[close] + mu[close])
        total = dc * v
        ej = 2.0 * xc * v
        v2 = v * v
        for j in range(1, 40):
            ej = ej * v2
            term = ej / (2 * j + 1)
            total = total + term
            if np.all(np.abs(term) <= 1e-17 * np.abs(total)):
                break
        out[close] = total
    return out


def binomial_logpmf(k: ArrayLike, n: int, p: float, q: float | None = None) -> FloatArray:
    """Natural log of the binomial pmf ``P[Bin(n, p) = k]``, accurately.

    Parameters
    ----------
    k : array_like of int
        Numbers of successes (values outside ``[0, n]`` give ``-inf``).
    n : int
        Number of trials, ``n >= 0``.
    p : float
        Success probability in ``[0, 1]``.
    q : float, optional
        ``1 - p`` when it is known more precisely than ``1 - p`` evaluates.

    Returns
    -------
    numpy.ndarray
        ``log P[Bin(n, p) = k]`` with the shape of ``k`` (``-inf`` for impossible
        values).

    Notes
    -----
    Loader's saddle-point form [1]_ avoids the cancellation of
    ``lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1)`` (whose absolute error grows
    like ``n log n`` ulps).  With Stirling's remainder
    ``e(x) = log x! - (x + 1/2) log x + x - log(2 pi)/2`` and the deviance
    ``D(x, mu) = x log(x/mu) + mu - x``, for ``0 < k < n``

    .. math::

        \\log P[Bin(n,p)=k] = e(n) - e(k) - e(n-k) - D(k, np) - D(n-k, nq)
                              - \\tfrac12 \\log\\big(2\\pi k (n-k)/n\\big),

    which is exact; ``e`` uses a 5-term asymptotic series above 15 and a table
    below, and ``D`` uses a series in ``v = (x-mu)/(x+mu)`` when ``|v| < 0.1``.
    The relative error of the pmf stays at a few ulps for any ``n``.

    Examples
    --------
    >>> import math
    >>> round(math.exp(binomial_logpmf(2, 4, 0.5)), 12)
    0.375
    >>> float(binomial_logpmf(5, 4, 0.5))
    -inf

    References
    ----------
    .. [1] C. Loader. Fast and accurate computation of binomial probabilities, 2000.
    """
    kk = np.asarray(k, dtype=np.float64)
    shape = kk.shape
    kk = kk.reshape(-1)
    nf = float(n)
    pf = float(p)
    qf = 1.0 - pf if q is None else float(q)
    out = np.full(kk.shape, -np.inf)
    inside = (kk >= 0) & (kk <= nf)
    if pf == 0.0 or qf == 0.0:
        target = 0.0 if pf == 0.0 else nf
        out[kk == target] = 0.0
        return out.reshape(shape)
    lo = inside & (kk == 0)
    hi = inside & (kk == nf)
    out[lo] = nf * math.log(qf) if qf < 0.5 else nf * math.log1p(-pf)
    out[hi] = nf * math.log(pf) if pf < 0.5 else nf * math.log1p(-qf)
    mid = inside & (kk > 0) & (kk < nf)
    if np.any(mid):
        x = kk[mid]
        rest = nf - x
        n_arr = np.full_like(x, nf)
        lc = (_stirlerr(n_arr) - _stirlerr(x) - _stirlerr(rest)
              - _bd0(x, nf * pf + 0 * x) - _bd0(rest, nf * qf + 0 * x))
        lf = _LOG_2PI + np.log(x) + np.log1p(-x / nf)
        out[mid] = lc - 0.5 * lf
    return out.reshape(shape)


def _logsumexp(values: FloatArray) -> float:
    if values.size == 0:
        return -math.inf
    top = float(np.max(values))
    if top == -math.inf:
        return -math.inf
    return top + math.log(float(np.sum(np.exp(values - top))))


# --------------------------------------------------------------------------- pmfs with offsets


@dataclass(frozen=True, slots=True)
class _Pmf:
    """A pmf on the integers: ``values[i]`` is the probability of ``offset + i``."""

    offset: int
    values: FloatArray

    @staticmethod
    def trimmed(offset: int, values: FloatArray) -> _Pmf:
        nz = np.flatnonzero(values)
        if nz.size == 0:  # cannot happen for a pmf; keep one cell to stay well-formed
            return _Pmf(offset, values[:1])
        return _Pmf(offset + int(nz[0]), values[nz[0]: nz[-1] + 1])

    def convolve(self, other: _Pmf) -> _Pmf:
        # numpy.convolve is the direct (non-FFT) method: every output cell is a sum of
        # non-negative products, so it keeps a small *relative* error even in the tails.
        return _Pmf.trimmed(self.offset + other.offset, np.convolve(self.values, other.values))


_UNIT = _Pmf(0, np.ones(1))


def _binomial_pmf(count: int, p: float) -> _Pmf:
    if count == 0:
        return _UNIT
    logs = binomial_logpmf(np.arange(count + 1), count, p)
    return _Pmf.trimmed(0, np.exp(logs))


def _product(pmfs: Sequence[_Pmf]) -> _Pmf:
    """Convolution of all the pmfs, as a balanced tree (short operands meet first)."""
    items = list(pmfs)
    if not items:
        return _UNIT
    while len(items) > 1:
        nxt = [items[i].convolve(items[i + 1]) for i in range(0, len(items) - 1, 2)]
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0]


def poisson_binomial_pmf(ps: ArrayLike) -> FloatArray:
    """Exact pmf of the number of successes among independent Bernoulli trials.

    Parameters
    ----------
    ps : array_like of float
        Success probabilities ``p_1, ..., p_n`` in ``[0, 1]`` (``n >= 0``).

    Returns
    -------
    numpy.ndarray
        Array of length ``n + 1``: entry ``s`` is ``P[X_1 + ... + X_n = s]``.

    Notes
    -----
    The pmf of a sum of independent variables is the convolution of their pmfs.
    Equal probabilities are grouped into one binomial pmf (evaluated with
    :func:`binomial_logpmf`), and the groups are multiplied in a balanced
    convolution tree.  Convolutions are *direct*: each cell is a sum of
    non-negative products, so every probability, however small, keeps a
    relative error of order ``n`` ulps (an FFT would only guarantee an
    *absolute* error of order ``1e-16``, useless in the tails that decide small
    ``delta``).  Cells below the smallest double underflow to 0 and are trimmed.
    Cost: ``O(n * L * log n)`` for a support of effective length ``L <= n + 1``.

    Examples
    --------
    >>> poisson_binomial_pmf([0.5, 0.5]).round(6).tolist()
    [0.25, 0.5, 0.25]
    >>> poisson_binomial_pmf([1.0, 0.0, 0.25]).round(6).tolist()
    [0.0, 0.75, 0.25, 0.0]

    References
    ----------
    .. [1] Y. H. Wang. On the number of successes in independent trials.
       Statistica Sinica 3 (1993).
    """
    arr = np.asarray(ps, dtype=np.float64).reshape(-1)
    if arr.size and not np.all((arr >= 0.0) & (arr <= 1.0)):
        raise InputError("probabilities must be in [0, 1]", construct="p")
    values, counts = np.unique(arr, return_counts=True)
    pmf = _product([_binomial_pmf(int(c), float(v)) for v, c in zip(values, counts, strict=True)])
    out = np.zeros(arr.size + 1)
    out[pmf.offset: pmf.offset + pmf.values.size] = pmf.values
    return out


# --------------------------------------------------------------------------- delta of a shift pair


def _shift_pairs(r: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(a, b)`` with ``a[s] = R(s-1)`` and ``b[s] = R(s)`` over the support of the pair."""
    padded = np.concatenate(([0.0], np.asarray(r, dtype=np.float64), [0.0]))
    return padded[:-1], padded[1:]


def _direction_delta(a: FloatArray, b: FloatArray, epsilon: float) -> float:
    if epsilon == math.inf:
        return float(np.sum(a[b == 0.0]))
    x = math.exp(min(epsilon, _EPS_CAP))
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
    eps = _check_epsilon(epsilon)
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
    d = _check_delta(delta)
    a, b = _shift_pairs(np.asarray(r, dtype=np.float64))
    return max(_direction_epsilon(a, b, d), _direction_epsilon(b, a, d))


# --------------------------------------------------------------------------- exact accountant


@dataclass(slots=True)
class _Node:
    lo: int
    hi: int
    pmf: _Pmf
    left: _Node | None = None
    right: _Node | None = None


def _build_tree(leaves: Sequence[_Pmf], lo: int, hi: int) -> _Node:
    if hi - lo == 1:
        return _Node(lo, hi, leaves[lo])
    mid = (lo + hi) // 2
    left = _build_tree(leaves, lo, mid)
    right = _build_tree(leaves, mid, hi)
    return _Node(lo, hi, left.pmf.convolve(right.pmf), left, right)


def _leave_one_out(values: FloatArray, counts: NDArray[np.int64]) -> Iterator[tuple[int, _Pmf]]:
    """For each group ``g`` of equal probabilities: the pmf of all records but one of ``g``.

    A balanced product tree over the groups holds the pmf of every subtree; walking
    down, the pmf of everything *outside* a node is the parent's outside pmf
    convolved with the sibling's pmf.  At a leaf, the outside pmf convolved with
    ``Bin(count - 1, p)`` is the leave-one-out pmf.
    """
    leaves = [_binomial_pmf(int(c), float(v)) for v, c in zip(values, counts, strict=True)]
    root = _build_tree(leaves, 0, len(leaves))

    def walk(node: _Node, outside: _Pmf) -> Iterator[tuple[int, _Pmf]]:
        if node.left is None or node.right is None:
            g = node.lo
            yield g, outside.convolve(_binomial_pmf(int(counts[g]) - 1, float(values[g])))
            return
        yield from walk(node.left, outside.convolve(node.right.pmf))
        yield from walk(node.right, outside.convolve(node.left.pmf))

    yield from walk(root, _UNIT)


def _per_group(ps: ArrayLike, func: Callable[[FloatArray], float]) -> FloatArray:
    arr = _check_probabilities(ps)
    values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True)
    per_group = np.empty(values.size)
    for g, pmf in _leave_one_out(values, counts):
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
    eps = _check_epsilon(epsilon)
    return _per_group(ps, lambda r: pmf_delta(r, eps))


def exact_delta(ps: ArrayLike, epsilon: float) -> float:
    """Exact ``delta(epsilon)`` of a noiseless count with known ``p_j`` (worst record).

    Parameters
    ----------
    ps : array_like of float
        ``p_1, ..., p_n`` in ``[0, 1]``, ``n >= 2``.
    epsilon : float
        Privacy loss ``>= 0``.

    Returns
    -------
    float
        ``max_j delta_j(epsilon)``: the release is ``(epsilon, delta)``-private
        against an attacker who knows the distribution but not the draw exactly
        when ``delta`` is at least this value.

    Notes
    -----
    The count of the other records ``S_{-j}`` is Poisson-binomial; see
    :func:`poisson_binomial_pmf` for its exact pmf, :func:`pmf_delta` for the
    divergence and :func:`exact_delta_by_record` for the leave-one-out scheme.

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

    Parameters
    ----------
    ps : array_like of float
        ``p_1, ..., p_n`` in ``[0, 1]``, ``n >= 2``.
    delta : float
        Target in ``(0, 1)``.

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
    d = _check_delta(delta)
    return float(np.max(_per_group(ps, lambda r: pmf_epsilon(r, d))))


# --------------------------------------------------------------------------- class bound


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
    out[top] = -i[top] * _LOG2
    out[bottom] = epsilon - i[bottom] * _LOG2
    if np.any(mid):
        im, sm = i[mid], s[mid]
        x = math.exp(epsilon)
        c = (im - sm + 1).astype(np.float64)
        # D = Q(s) (s/c - x) since Q(s-1)/Q(s) = s/c.
        gap = np.abs(sm.astype(np.float64) - x * c)
        log_q = _binomial_logpmf_half(sm, im)
        with np.errstate(divide="ignore"):
            out[mid] = log_q + np.log(gap) - np.log(c)
    return out


def _binomial_logpmf_half(s: NDArray[np.int64], m: NDArray[np.int64]) -> FloatArray:
    """``log P[Bin(m, 1/2) = s]`` for arrays ``s`` and ``m`` of equal shape."""
    sf = np.asarray(s, dtype=np.float64)
    mf = np.asarray(m, dtype=np.float64)
    out = np.full(sf.shape, -np.inf)
    edge = (sf == 0) | (sf == mf)
    out[edge] = -mf[edge] * _LOG2
    mid = (sf > 0) & (sf < mf)
    if np.any(mid):
        x, n = sf[mid], mf[mid]
        rest = n - x
        half = 0.5 * n
        lc = (_stirlerr(n) - _stirlerr(x) - _stirlerr(rest) - _bd0(x, half) - _bd0(rest, half))
        lf = _LOG_2PI + np.log(x) + np.log1p(-x / n)
        out[mid] = lc - 0.5 * lf
    return out


def _log_fair_coin_delta(m: int, epsilon: float) -> float:
    """``log delta_m(eps)`` by the direct sum of its non-negative terms."""
    if epsilon > _EPS_CAP or math.exp(epsilon) > m:
        return -m * _LOG2  # only s = m + 1 (where Bin(m,1/2) has no mass) is active
    k = int(_first_active(m, epsilon))
    span = int(math.ceil(12.0 * math.sqrt(m + 1))) + 40
    end = min(m + 1, k + span)
    s = np.arange(k, end + 1, dtype=np.int64)
    terms = _log_abs_d(np.full(s.shape, m, dtype=np.int64), s, epsilon)
    if end < m + 1:
        # Remainder: sum_{s > end} D(s) <= sum_{s > end} Q(s-1) = P[Bin >= end]
        #            <= Q(end) / (1 - r), r = (m-end)/(end+1) bounding later ratios Q(t+1)/Q(t).
        r = (m - end) / (end + 1)
        log_q_end = float(_binomial_logpmf_half(np.array([end]), np.array([m]))[0])
        terms = np.append(terms, log_q_end - math.log1p(-r))
    return _logsumexp(terms)


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
    eps = _check_epsilon(epsilon)
    return min(1.0, math.exp(_log_fair_coin_delta(int(m), eps)))


def _log_fair_coin_deltas(lo: int, hi: int, epsilon: float) -> FloatArray:
    """``log delta_m(eps)`` for every ``m`` in ``[lo, hi]`` in ``O(hi - lo)`` after one direct sum.

    With ``G_m(k) = sum_{s >= k} D_m(s)`` and ``Q_{m+1}(s) = (Q_m(s) + Q_m(s-1))/2``,
    linearity gives ``G_{m+1}(k) = G_m(k) + D_m(k-1)/2``.  Since ``k_{m+1}`` is ``k_m``
    or ``k_m + 1`` and ``D_m(s)`` is ``<= 0`` below ``k_m`` and ``>= 0`` from it,
    ``delta_{m+1} = delta_m - |D_m(k_{m+1} - 1)| / 2`` in both cases.  Summed from the
    top, ``delta_m = delta_hi + sum_{i=m}^{hi-1} |D_i(k_{i+1}-1)| / 2``: only additions.
    """
    log_top = _log_fair_coin_delta(hi, epsilon)
    if hi == lo:
        return np.array([log_top])
    i = np.arange(lo, hi, dtype=np.int64)
    s = _first_active(i + 1, epsilon) - 1
    log_half = _log_abs_d(i, s, epsilon) - _LOG2
    logs = np.append(log_half, log_top)
    scale = float(np.max(logs))
    tail = np.cumsum(np.exp(logs - scale)[::-1])[::-1]
    # Cells below 2**-1000 (relative) may have lost precision to underflow: raise them
    # to that floor, which keeps every value an upper bound.
    tail = np.maximum(tail, 2.0**-1000)
    return np.asarray(scale + np.log(tail), dtype=np.float64)


def _log_geometric_tail(log_first: float, rho: float) -> float:
    """``log`` of ``first / (1 - rho)`` (a tail whose ratios stay below ``rho``), capped at 0."""
    if rho >= 1.0:
        return 0.0
    return min(0.0, log_first - math.log1p(-rho))


def _log_class_delta(others: int, q: float, epsilon: float) -> float:
    """``log sum_m P[Bin(others, q) = m] delta_m(eps)``, truncated with explicit tail bounds."""
    if epsilon > _EPS_CAP or math.exp(epsilon) > others:
        # Only the cell s = m+1 is active for every m <= others: sum_m w_m 2^-m = (1 - q/2)^N.
        return others * math.log1p(-q / 2)
    if q >= 1.0:
        return _log_fair_coin_delta(others, epsilon)
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
        terms.append(log_mass + _log_fair_coin_delta(start, epsilon))
        end = start - 1
        width *= 2
    return _logsumexp(np.array(terms))


def _log_class_delta_window(others: int, q: float, epsilon: float,
                            width: float) -> tuple[float, float]:
    """The windowed sum and the log of its lower-tail bound term (``-inf`` if none)."""
    mean = others * q
    sd = math.sqrt(others * q * (1.0 - q))
    lo = max(0, int(math.floor(mean - width * sd - 20)))
    hi = min(others, int(math.ceil(mean + width * sd + 20)))
    m = np.arange(lo, hi + 1, dtype=np.int64)
    log_w = binomial_logpmf(m, others, q, 1.0 - q)
    log_d = _log_fair_coin_deltas(lo, hi, epsilon)
    parts = [log_w + log_d]
    log_lower = -math.inf
    if lo > 0:
        # Below the window delta_m <= 1, and w_{m-1}/w_m = m(1-q)/((N-m+1)q) shrinks as m
        # decreases: sum_{m < lo} w_m <= w_{lo-1} / (1 - rho).  When that is not negligible
        # next to the window (tiny delta), a staircase bound replaces delta_m <= 1.
        edge = lo - 1
        rho = edge * (1.0 - q) / ((others - edge + 1) * q)
        log_lower = _log_geometric_tail(float(binomial_logpmf(edge, others, q, 1.0 - q)), rho)
        if log_lower >= _logsumexp(np.concatenate(parts)) + _NEGLIGIBLE:
            log_lower = min(log_lower,
                            _log_lower_tail_bound(others, q, epsilon, lo, max(1, int(sd))))
        parts.append(np.array([log_lower]))
    if hi < others:
        # Upper tail: w_{m+1}/w_m shrinks as m grows; delta_m <= delta_hi there.
        edge = hi + 1
        rho = (others - edge) * q / ((edge + 1) * (1.0 - q))
        log_mass = _log_geometric_tail(float(binomial_logpmf(edge, others, q, 1.0 - q)), rho)
        parts.append(np.array([log_mass + float(log_d[-1])]))
    return _logsumexp(np.concatenate(parts)), log_lower


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
        divergence between ``Bin(m,1/2)+1`` and ``Bin(m,1/2)`` (:func:`fair_coin_delta`).
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
    :func:`fair_coin_delta` for ``D`` and ``k``), accumulated from the top so
    that only non-negative numbers are added.  The outer mass outside the window
    is bounded by geometric series (binomial ratios shrink away from the
    mode) and added with ``delta_m <= delta_hi`` above the window and, below
    it, a staircase ``delta_m <= delta_a`` on blocks ``[a, e]`` of doubling
    width, so the result remains an upper bound.
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
    nn = _check_n(n)
    lv = _check_lambda(lam)
    eps = _check_epsilon(epsilon)
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

    Parameters
    ----------
    n : int
        Number of records, ``>= 2``.
    lam : float
        ``lambda`` in ``(0, 1/2]``.
    delta : float
        Target in ``(0, 1)``.

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
    nn = _check_n(n)
    lv = _check_lambda(lam)
    d = _check_delta(delta)
    others = nn - 1
    floor = others * math.log1p(-lv)
    if math.log(d) < floor:
        return math.inf
    ceiling = math.log(others) + 1e-9 if others > 1 else 1.0
    return _bisect_epsilon(lambda e: math.exp(_log_class_delta(others, 2.0 * lv, e)), d, ceiling)


def _check_categories(k: object, lam: float) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise InputError(f"the number of categories must be an integer >= 2, got {k!r}",
                         construct="categories")
    if lam * int(k) > 1.0 + 1e-12:
        raise InputError(f"lambda must be at most 1/K = {1 / int(k):.6g} with K = {k} "
                         f"categories (the K probabilities of a record sum to 1), got {lam}",
                         construct="lambda")
    return int(k)


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
    nn = _check_n(n)
    lv = _check_lambda(lam, upper=1.0, what="1/K")
    _check_categories(k, lv)
    return class_delta(nn, lv, epsilon)


def histogram_class_epsilon(n: int, lam: float, k: int, delta: float) -> float:
    """Smallest ``epsilon`` with :func:`histogram_class_delta` ``<= delta``.

    Parameters
    ----------
    n : int
        Number of records, ``>= 2``.
    lam : float
        Lower bound on every category probability, ``0 < lam <= 1/K``.
    k : int
        Number of categories ``K >= 2``.
    delta : float
        Target in ``(0, 1)``.

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
    nn = _check_n(n)
    lv = _check_lambda(lam, upper=1.0, what="1/K")
    _check_categories(k, lv)
    return class_epsilon(nn, lv, delta)


# --------------------------------------------------------------------------- reference values


def closed_form_epsilon(n: int, lam: float, delta: float) -> float | None:
    """The thesis's closed-form ``epsilon`` for the class ``[lam, 1 - lam]``.

    Parameters
    ----------
    n : int
        Number of records, ``>= 2``.
    lam : float
        ``lambda`` in ``(0, 1/2]``.
    delta : float
        Target in ``(0, 1)``.

    Returns
    -------
    float or None
        ``max(sqrt(14 ln(1/delta) / (lambda (n-1))), 27 / (lambda (n-1)))``, or
        ``None`` when that value exceeds 1 (the closed form is only valid for
        ``epsilon <= 1``, so it then gives no guarantee).

    Notes
    -----
    The closed form specialises the randomized-response amplification bound of
    the privacy blanket [2]_ (blanket probability ``gamma = 2 lambda``, ``k = 2``):
    the condition ``gamma >= max(14 k ln(1/delta)/((n-1) eps^2), 27 k/((n-1) eps))``
    solved for ``eps``.  The formula is the one quoted in issue 8 for [1]_; the
    extracted thesis text lost its symbols.

    Examples
    --------
    >>> round(closed_form_epsilon(10_000, 0.05, 1e-6), 4)
    0.622
    >>> closed_form_epsilon(100, 0.05, 1e-6) is None
    True

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1, Theorem 3.
    .. [2] B. Balle, J. Bell, A. Gascon, K. Nissim. CRYPTO 2019, Theorem 3.1.
    """
    nn = _check_n(n)
    lv = _check_lambda(lam)
    d = _check_delta(delta)
    base = lv * (nn - 1)
    eps = max(math.sqrt(14.0 * math.log(1.0 / d) / base), 27.0 / base)
    return eps if eps <= 1.0 else None


def closed_form_delta(n: int, lam: float, epsilon: float) -> float | None:
    """The ``delta`` the thesis's closed form guarantees at ``epsilon``.

    Parameters
    ----------
    n : int
        Number of records, ``>= 2``.
    lam : float
        ``lambda`` in ``(0, 1/2]``.
    epsilon : float
        Privacy loss ``>= 0``.

    Returns
    -------
    float or None
        ``exp(-min(eps, 1)^2 lambda (n-1) / 14)``, or ``None`` when
        ``min(eps, 1) < 27/(lambda (n-1))`` (no ``delta`` satisfies the closed form).

    Notes
    -----
    Inverting ``eps >= sqrt(14 ln(1/delta)/(lambda (n-1)))`` gives
    ``delta = exp(-eps^2 lambda (n-1)/14)``; the second condition
    ``eps >= 27/(lambda (n-1))`` does not involve ``delta``.  The form holds
    for ``eps <= 1``; a guarantee at ``eps = 1`` is also one at any larger
    ``eps``, hence ``min(eps, 1)``.

    Examples
    --------
    >>> f"{closed_form_delta(10_000, 0.05, 0.3):.4e}"
    '4.0197e-02'

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1, Theorem 3.
    """
    nn = _check_n(n)
    lv = _check_lambda(lam)
    eps = min(_check_epsilon(epsilon), 1.0)
    base = lv * (nn - 1)
    if eps < 27.0 / base:
        return None
    return math.exp(-eps * eps * base / 14.0)


# --------------------------------------------------------------------------- input


def parse_probabilities(text: str | Iterable[str], *, source: str | None = None) -> list[float]:
    """Read probabilities ``p_j``, one per line (``#`` starts a comment, blank lines skipped).

    Parameters
    ----------
    text : str or iterable of str
        The file content, or its lines.
    source : str, optional
        File name for error messages.

    Returns
    -------
    list of float
        The probabilities, in file order.

    Notes
    -----
    Each value must parse as a float in ``[0, 1]``; anything else raises
    :class:`~cqsens.errors.InputError` naming the line.

    Examples
    --------
    >>> parse_probabilities("0.1\\n# comment\\n\\n0.9  # last\\n")
    [0.1, 0.9]

    References
    ----------
    .. [1] D. Desfontaines, thesis, Section 3.2.1.
    """
    lines = text.splitlines() if isinstance(text, str) else list(text)
    out: list[float] = []
    for number, raw in enumerate(lines, start=1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        try:
            value = float(body)
        except ValueError:
            raise InputError(f"not a probability: {body!r}", source=source, line=number,
                             construct="p") from None
        if not (0.0 <= value <= 1.0):
            raise InputError(f"probability must be in [0, 1], got {body}", source=source,
                             line=number, construct="p")
        out.append(value)
    return out
