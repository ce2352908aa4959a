"""Input checks of the noiseless accountants, and the reader of probability files.

Every public function of :mod:`cqsens.noiseless` validates its arguments with
the checks below, which raise :class:`~cqsens.errors.InputError` naming the
offending parameter (``construct``), so ``cqsens noiseless`` can report a bad
value as a usage error.  :func:`parse_probabilities` reads the ``--p`` file of
known record probabilities.

References
----------
.. [1] D. Desfontaines. *Lowering the cost of anonymization*. PhD thesis, ETH
   Zurich, 2020, Section 3.2.1 "Counting queries".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from cqsens.errors import InputError

__all__ = [
    "MAX_RECORDS",
    "check_n",
    "check_lambda",
    "check_epsilon",
    "check_delta",
    "check_probabilities",
    "check_categories",
    "parse_probabilities",
]

#: Largest number of records the class bounds accept.
MAX_RECORDS = 10**9


def check_n(n: object, *, name: str = "n", upper: int = MAX_RECORDS) -> int:
    """``n`` as an ``int`` in ``[2, upper]``: the record itself and at least one other."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InputError(f"{name} must be an integer, got {n!r}", construct=name)
    if n < 2:
        raise InputError(f"{name} must be at least 2 (the record itself and one other), "
                         f"got {n}", construct=name)
    if n > upper:
        raise InputError(f"{name} must be at most {upper}, got {n}", construct=name)
    return int(n)


def _number(value: object, name: str) -> float:
    """``value`` as a ``float``, or an error that names the parameter ``name``."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}", construct=name) from None


def check_lambda(lam: object, upper: float = 0.5, what: str = "1/2") -> float:
    """``lambda`` as a ``float`` in ``(0, upper]`` (``what`` names ``upper`` in the message)."""
    value = _number(lam, "lambda")
    if not (0.0 < value <= upper):
        raise InputError(f"lambda must be in (0, {what}], got {lam!r}", construct="lambda")
    return value


def check_epsilon(epsilon: object) -> float:
    """``epsilon`` as a ``float >= 0`` (``math.inf`` allowed, NaN refused)."""
    value = _number(epsilon, "epsilon")
    if math.isnan(value) or value < 0.0:
        raise InputError(f"epsilon must be >= 0, got {epsilon!r}", construct="epsilon")
    return value


def check_delta(delta: object) -> float:
    """``delta`` as a ``float`` in ``(0, 1)``."""
    value = _number(delta, "delta")
    if not (0.0 < value < 1.0):
        raise InputError(f"delta must be in (0, 1), got {delta!r}", construct="delta")
    return value


def check_probabilities(ps: ArrayLike) -> NDArray[np.float64]:
    """The probabilities as a flat float array: at least 2 records, each in ``[0, 1]``."""
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


def check_categories(k: object, lam: float) -> int:
    """The number of categories ``K >= 2``, with ``lambda <= 1/K`` (up to rounding)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise InputError(f"the number of categories must be an integer >= 2, got {k!r}",
                         construct="categories")
    if lam * int(k) > 1.0 + 1e-12:
        raise InputError(f"lambda must be at most 1/K = {1 / int(k):.6g} with K = {k} "
                         f"categories (the K probabilities of a record sum to 1), got {lam}",
                         construct="lambda")
    return int(k)


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
