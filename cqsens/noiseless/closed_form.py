"""Published reference values for the class bound: the thesis's closed form, Proposition 27.

:func:`closed_form_epsilon` and :func:`closed_form_delta` give the closed form
that accompanies Theorem 3 of [1]_ for the class of distributions whose record
probabilities all lie in ``[lambda, 1 - lambda]``; ``cqsens noiseless`` prints
it next to the exact class bound of :mod:`cqsens.noiseless.classes` for
comparison.  Proposition 27 of [1]_ (after Grining & Klonowski) is not
computed; :data:`PROPOSITION_27_NOTE` says so in the report.

References
----------
.. [1] D. Desfontaines, PhD thesis (in full in :mod:`cqsens.noiseless.classes`),
   Section 3.2.1, Theorem 3 and Proposition 27.
.. [2] B. Balle, J. Bell, A. Gascon, K. Nissim, CRYPTO 2019 (likewise).
"""

from __future__ import annotations

import math

from cqsens.noiseless.validate import check_delta, check_epsilon, check_lambda, check_n

__all__ = ["PROPOSITION_27_NOTE", "closed_form_epsilon", "closed_form_delta"]

#: Why ``cqsens noiseless`` reports no value for Proposition 27 of the thesis.
PROPOSITION_27_NOTE = (
    "Proposition 27 (Grining & Klonowski) of D. Desfontaines, Lowering the cost of "
    "anonymization, PhD thesis, ETH Zurich, 2020, Section 3.2.1: not computed. cqsens does "
    "not implement that bound (it is stated in terms of the average second moment and the "
    "average absolute third moment of the X_i); see the thesis for it. The class bound above "
    "holds for every distribution in the class."
)


def closed_form_epsilon(n: int, lam: float, delta: float) -> float | None:
    """The thesis's closed-form ``epsilon`` for the class ``[lam, 1 - lam]``.

    The parameters are those of :func:`cqsens.noiseless.classes.class_epsilon`.

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
    solved for ``eps``.  This is the closed form stated with Theorem 3 of [1]_.

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
    nn = check_n(n)
    lv = check_lambda(lam)
    d = check_delta(delta)
    base = lv * (nn - 1)
    eps = max(math.sqrt(14.0 * math.log(1.0 / d) / base), 27.0 / base)
    return eps if eps <= 1.0 else None


def closed_form_delta(n: int, lam: float, epsilon: float) -> float | None:
    """The ``delta`` the thesis's closed form guarantees at ``epsilon``.

    The parameters are those of :func:`cqsens.noiseless.classes.class_delta`.

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
    nn = check_n(n)
    lv = check_lambda(lam)
    eps = min(check_epsilon(epsilon), 1.0)
    base = lv * (nn - 1)
    if eps < 27.0 / base:
        return None
    return math.exp(-eps * eps * base / 14.0)
