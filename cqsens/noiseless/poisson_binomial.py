"""Exact pmfs of sums of independent Bernoulli records (Poisson-binomial laws).

The count of ``n`` independent records, record ``j`` being 1 with probability
``p_j``, is Poisson-binomial.  :func:`poisson_binomial_pmf` computes its pmf
exactly with non-negative arithmetic: records with equal ``p_j`` form one
binomial pmf, and the groups are convolved in a balanced tree.
:func:`leave_one_out_pmfs` reuses that tree to give, for every group, the pmf
of the count of all the records but one of the group, which is what the exact
accountant of :mod:`cqsens.noiseless.accountant` needs for every record.

References
----------
.. [1] Y. H. Wang. On the number of successes in independent trials.
   Statistica Sinica 3 (1993).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cqsens.errors import InputError
from cqsens.noiseless.binomial import FloatArray, binomial_logpmf

__all__ = ["Pmf", "poisson_binomial_pmf", "leave_one_out_pmfs"]


@dataclass(frozen=True, slots=True)
class Pmf:
    """A pmf on the integers: ``values[i]`` is the probability of ``offset + i``."""

    offset: int
    values: FloatArray

    @staticmethod
    def trimmed(offset: int, values: FloatArray) -> Pmf:
        nz = np.flatnonzero(values)
        if nz.size == 0:  # cannot happen for a pmf; keep one cell to stay well-formed
            return Pmf(offset, values[:1])
        return Pmf(offset + int(nz[0]), values[nz[0]: nz[-1] + 1])

    def convolve(self, other: Pmf) -> Pmf:
        # numpy.convolve is the direct (non-FFT) method: every output cell is a sum of
        # non-negative products, so it keeps a small *relative* error even in the tails.
        return Pmf.trimmed(self.offset + other.offset, np.convolve(self.values, other.values))


_UNIT = Pmf(0, np.ones(1))


def _binomial_pmf(count: int, p: float) -> Pmf:
    if count == 0:
        return _UNIT
    logs = binomial_logpmf(np.arange(count + 1), count, p)
    return Pmf.trimmed(0, np.exp(logs))


def _product(pmfs: Sequence[Pmf]) -> Pmf:
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


@dataclass(slots=True)
class _Node:
    lo: int
    hi: int
    pmf: Pmf
    left: _Node | None = None
    right: _Node | None = None


def _build_tree(leaves: Sequence[Pmf], lo: int, hi: int) -> _Node:
    if hi - lo == 1:
        return _Node(lo, hi, leaves[lo])
    mid = (lo + hi) // 2
    left = _build_tree(leaves, lo, mid)
    right = _build_tree(leaves, mid, hi)
    return _Node(lo, hi, left.pmf.convolve(right.pmf), left, right)


def leave_one_out_pmfs(
    values: FloatArray, counts: NDArray[np.int64]
) -> Iterator[tuple[int, Pmf]]:
    """For each group ``g`` of equal probabilities: the pmf of all records but one of ``g``.

    A balanced product tree over the groups holds the pmf of every subtree; walking
    down, the pmf of everything *outside* a node is the parent's outside pmf
    convolved with the sibling's pmf.  At a leaf, the outside pmf convolved with
    ``Bin(count - 1, p)`` is the leave-one-out pmf.
    """
    leaves = [_binomial_pmf(int(c), float(v)) for v, c in zip(values, counts, strict=True)]
    root = _build_tree(leaves, 0, len(leaves))

    def walk(node: _Node, outside: Pmf) -> Iterator[tuple[int, Pmf]]:
        if node.left is None or node.right is None:
            g = node.lo
            yield g, outside.convolve(_binomial_pmf(int(counts[g]) - 1, float(values[g])))
            return
        yield from walk(node.left, outside.convolve(node.right.pmf))
        yield from walk(node.right, outside.convolve(node.left.pmf))

    yield from walk(root, _UNIT)
