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
from decimal import MAX_EMAX, MIN_EMIN, ROUND_CEILING, Context, Decimal, localcontext
from fractions import Fraction
from statistics import NormalDist
from typing import Any, TypeGuard

from cqsens.errors import InputError
from cqsens.ir.exact import display

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


class ReleaseError(InputError):
    """Noise could not be sampled; the message never holds the data."""


def _dp() -> Any:
    """OpenDP's prelude with the ``contrib`` features on (imported on first use)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


# ----------------------------------------------------------------------------- limits

#: Smallest ε a user may ask for.  Below it the noise is more than 10⁹ times the
#: sensitivity (the answer carries nothing), and ε near the subnormal floats
#: (< 2.2e-308) overflowed Δ/ε and OpenDP's maps.
EPSILON_MIN = 1e-9
#: Largest ε a user may ask for.  ``e^ε`` (the likelihood ratio ε bounds) overflows a
#: double beyond ε ≈ 709, and the Gaussian calibration's starting σ underflowed at
#: ε = 1e308; ε = 1000 promises nothing a person could rely on anyway.
EPSILON_MAX = 1e3
#: Smallest δ a user may ask for: ``ln(1/δ) ≤ 231`` keeps the Gaussian conversion in
#: normal floats (a subnormal δ such as 1e-320 made OpenDP's σ NaN).
DELTA_MIN = 1e-100
#: Largest scale (or σ) of noise on 64-bit integers: noise beyond 2⁶² has
#: probability below ``e^(-4611)``, so ``count + noise`` never saturates at ±(2⁶³ − 1).
MAX_INTEGER_SCALE = 1e15
#: Largest scale (or σ) of float noise: the noise stays finite (below 1.8e308)
#: except with probability below ``e^(-10⁸)``.
MAX_FLOAT_SCALE = 1e300


# ----------------------------------------------------------------------------- checks


def _number(value: object) -> TypeGuard[int | float]:
    """True for an int or a float (a bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_sensitivity(value: object, name: str) -> float:
    if not isinstance(value, (int, float, Fraction)) or isinstance(value, bool) \
            or value != value or value < 0:  # value != value: NaN (math.isnan overflows on 10**400)
        raise InputError(
            f"{name} sensitivity must be a number >= 0 or math.inf, not {value!r}",
            construct=name,
        )
    try:
        return float(display(value)) if isinstance(value, Fraction) else float(value)
    except OverflowError:  # an exact bound beyond the largest double
        raise InputError(
            f"the {name} sensitivity is beyond the largest float (1.8e308), so no noise can "
            "be calibrated to it: tighten the value bounds", construct=name,
        ) from None


def _check_epsilon(epsilon: object) -> float:
    """An ε of a measurement (a share of the user's ε): a finite number > 0."""
    if not _number(epsilon) or not math.isfinite(epsilon) or epsilon <= 0:
        raise InputError(
            f"epsilon must be a finite number > 0, not {epsilon!r}", construct="epsilon"
        )
    return float(epsilon)


def _check_delta(delta: object) -> float:
    if not _number(delta) or not 0 < delta < 1:
        raise InputError(
            f"delta must be a number in the open interval (0, 1), not {delta!r}",
            construct="delta",
        )
    return float(delta)


def check_privacy(epsilon: object, delta: object = None) -> float:
    """The user's ε (and δ, when given) within cqsens's limits, or an InputError.

    Parameters
    ----------
    epsilon : float
        ε in ``[EPSILON_MIN, EPSILON_MAX]`` = [1e-9, 1000].
    delta : float, optional
        δ in ``[DELTA_MIN, 1)`` = [1e-100, 1).

    Returns
    -------
    float
        ε as a float.

    Raises
    ------
    InputError
        A value that is not a number, or outside the limits (docs/model.md, Limits and safety).

    Examples
    --------
    >>> check_privacy(0.5, 1e-6)
    0.5
    >>> try:
    ...     check_privacy(1e-320)
    ... except InputError as err:
    ...     print(err.message.split(" (")[0])
    epsilon must be a number in [1e-09, 1000], not 1e-320
    """
    if not _number(epsilon) or not EPSILON_MIN <= epsilon <= EPSILON_MAX:
        raise InputError(f"epsilon must be a number in [{EPSILON_MIN:g}, {EPSILON_MAX:g}], "
                         f"not {epsilon!r} (cqsens's limits: docs/model.md, Limits and safety)",
                         construct="epsilon")
    if delta is not None and (not _number(delta) or not DELTA_MIN <= delta < 1):
        raise InputError(f"delta must be a number in [{DELTA_MIN:g}, 1), not {delta!r} "
                         "(cqsens's limits: docs/model.md, Limits and safety)", construct="delta")
    return float(epsilon)


def _check_fits(scale: float, integer: bool, what: str) -> float:
    """``scale`` when OpenDP can sample noise of it (finite, within the limit), else an error."""
    limit = MAX_INTEGER_SCALE if integer else MAX_FLOAT_SCALE
    if math.isnan(scale) or not scale <= limit:
        kind = "64-bit integers" if integer else "floats"
        raise ReleaseError(
            f"the {what} {scale:g} is over {limit:g}, the largest noise cqsens samples on "
            f"{kind} (docs/model.md, Limits and safety): raise epsilon or tighten the sensitivity "
            "bound", construct="noise")
    return scale


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


#: Digits of the decimal arithmetic of the exact tails; exp and ln are correctly rounded
#: there, so a relative slack of 1e-40 on every comparison covers their rounding.
_DIGITS = 60
_SLACK = Decimal("1e-40")


def _decimals() -> Any:
    """A 60-digit decimal context whose exponents never overflow or underflow in practice."""
    return localcontext(Context(prec=_DIGITS, Emin=MIN_EMIN, Emax=MAX_EMAX))


def _smallest(ok: Callable[[int], bool], guess: int) -> int:
    """The smallest integer ``h >= 0`` with ``ok(h)`` (``ok`` monotone), searched from ``guess``."""
    hi, step = max(guess, 0), 1
    lo = hi - 1
    while not ok(hi):  # gallop up: ok(hi) at the end, not ok(lo)
        lo, hi, step = hi, hi + step, 2 * step
    step = 1
    while lo >= 0 and ok(lo):  # gallop down: not ok(lo) (or lo < 0) at the end
        hi, lo, step = lo, lo - step, 2 * step
    lo = max(lo, -1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _float_up(n: int) -> float:
    """``n`` as a float, rounded up when it is not exact."""
    shown = float(n)
    return shown if shown >= n else math.nextafter(shown, math.inf)


def _miss(confidence: float) -> Decimal:
    """``1 − confidence`` exactly, the confidence read as the decimal it prints as."""
    return 1 - Decimal(repr(confidence))


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

    exact_guess = Fraction(d_in) / Fraction(eps)
    if exact_guess > (MAX_INTEGER_SCALE if integer else MAX_FLOAT_SCALE):
        _check_fits(math.inf if exact_guess > 1e308 else float(exact_guess), integer,
                    "Laplace scale")
    guess = float(display(exact_guess))  # rounded up, never down
    if private(guess):
        return guess
    return _check_fits(_bisect(private, 2 * guess), integer, "Laplace scale")


def laplace_halfwidth(scale: float, confidence: float = 0.95, *,
                      integer: bool = False) -> float:
    """Half-width ``t``: ``P(|X| ≤ t) ≥ confidence`` for Laplace noise of scale ``b``.

    Parameters
    ----------
    scale : float
        The Laplace scale ``b ≥ 0``.
    confidence : float, optional
        Coverage in (0, 1), default 0.95.
    integer : bool, optional
        The discrete Laplace of a count (OpenDP's ``make_laplace`` on integers),
        ``P(Z = z) ∝ e^{−|z|/b}``: the smallest integer ``h`` that covers.

    Returns
    -------
    float
        Continuous: ``b·ln(1/(1 − confidence))``, ``b·ln 20 ≈ 2.996·b`` at 95 %,
        with coverage exactly ``confidence``.  Discrete: the smallest integer
        ``h`` with ``P(|Z| ≤ h) ≥ confidence``.

    Raises
    ------
    InputError
        For a negative or NaN scale, or a confidence outside (0, 1).

    Notes
    -----
    For the discrete Laplace, with ``t = e^{−1/b}``,
    ``P(|Z| > h) = 2t^{h+1}/(1 + t)`` (Canonne, Kamath, Steinke 2020, Def. 28),
    computed with 60-digit decimals.  The continuous half-width would
    undercover a count: ``b·ln 20`` covers 92.7 % of the discrete Laplace at ``b = 1``.

    Examples
    --------
    >>> round(laplace_halfwidth(1.0), 6)
    2.995732
    >>> laplace_halfwidth(1.0, integer=True), laplace_halfwidth(3.0, integer=True)
    (3.0, 9.0)
    """
    b = _check_scale(scale, "scale")
    c = _check_confidence(confidence)
    if b == 0 or math.isinf(b):
        return b
    if not integer:
        return b * -math.log1p(-c)
    with _decimals():
        big_b, q = Decimal(b), _miss(c)
        t = (-1 / big_b).exp()

        def covers(h: int) -> bool:  # P(|Z| > h) <= 1 - c, on the safe side of rounding
            return 2 * (-(h + 1) / big_b).exp() / (1 + t) * (1 + _SLACK) <= q

        guess = int((big_b * (2 / (q * (1 + t))).ln()).to_integral_value(ROUND_CEILING)) - 1
        return _float_up(_smallest(covers, guess))


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

    log_term = -math.log(dlt)
    # (√(L + ε) − √L)², written without the cancellation of a small ε
    rho = (eps / (math.sqrt(log_term + eps) + math.sqrt(log_term))) ** 2
    guess = float(d_in) / math.sqrt(2.0 * rho) * (1 + 1e-9)
    if not math.isfinite(guess):  # Δ2 beyond floats: no σ to search for
        _check_fits(guess, integer, "Gaussian σ")
    for _ in range(200):  # only by rounding
        if private(guess):
            break
        guess *= 1.01
    else:
        raise ReleaseError(f"no σ up to {guess:g} meets OpenDP's map for epsilon {eps:g} and "
                           f"delta {dlt:g}", construct="noise")
    sigma = _bisect(private, guess, steps=30)
    return _check_fits(sigma * delta2 if unit else sigma, integer, "Gaussian σ")


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


#: Above this σ the discrete Gaussian's sums are bounded by integrals instead.
_SUMMED_SIGMA = 1000.0
#: Relative slack on the float sums and erfc of the discrete Gaussian (their error is
#: below 1e-13 relative: correctly rounded fsum of terms within a few ulps).
_FLOAT_SLACK = 1e-12


def gaussian_halfwidth(sigma: float, confidence: float = 0.95, *,
                       integer: bool = False) -> float:
    """Half-width ``t``: ``P(|X| ≤ t) ≥ confidence`` for Gaussian noise of scale σ.

    Parameters
    ----------
    sigma : float
        σ ≥ 0.
    confidence : float, optional
        Coverage in (0, 1), default 0.95.
    integer : bool, optional
        The discrete Gaussian of a count (OpenDP's ``make_gaussian`` on
        integers), ``P(Z = z) ∝ e^{−z²/(2σ²)}``: the smallest integer ``h`` that
        covers.

    Returns
    -------
    float
        Continuous: ``σ·Φ⁻¹((1 + confidence)/2)``, ``1.959964·σ`` at 95 %.
        Discrete: the smallest integer ``h`` with ``P(|Z| ≤ h) ≥ confidence``.

    Notes
    -----
    The discrete Gaussian's pmf is normalised by ``N = Σ_z e^{−z²/(2σ²)}``
    (Canonne, Kamath, Steinke 2020, Def. 1), and ``P(|Z| > h) = 2T(h)/N`` with
    ``T(h) = Σ_{z>h} e^{−z²/(2σ²)}``.  For σ ≤ 1000 both are summed up to
    ``10σ`` and the rest is bounded by the integral ``σ√(π/2)·erfc(M/(σ√2))``;
    above, ``T(h)`` is bounded by ``∫_h^∞`` and ``N`` from below by ``1 + 2∫_1^∞``
    (the terms decrease), which can make ``h`` larger than the smallest by a
    relative ``O(1/σ)``.  Every comparison keeps a relative slack of 1e-12 on
    the safe side.  ``1.96σ`` covers only 88.3 % at σ = 1.

    Examples
    --------
    >>> round(gaussian_halfwidth(1.0), 6)
    1.959964
    >>> gaussian_halfwidth(1.0, integer=True), gaussian_halfwidth(10.0, integer=True)
    (2.0, 20.0)
    """
    sig = _check_scale(sigma, "sigma")
    c = _check_confidence(confidence)
    if sig == 0 or math.isinf(sig):
        return sig
    if not integer:
        return sig * NormalDist().inv_cdf(0.5 + 0.5 * c)
    q = math.nextafter(float(_miss(c)), 0.0)  # 1 − c, rounded down
    guess = math.floor(sig * NormalDist().inv_cdf(1.0 - q / 2.0))
    beyond = _summed_tail(sig) if sig <= _SUMMED_SIGMA else _integral_tail(sig)
    return _float_up(_smallest(lambda h: beyond(h) <= q, guess))


def _upper_integral(sigma: float, h: float) -> float:
    """``∫_h^∞ e^{−x²/(2σ²)} dx = σ√(π/2)·erfc(h/(σ√2))``."""
    return sigma * math.sqrt(math.pi / 2.0) * math.erfc(h / (sigma * math.sqrt(2.0)))


def _summed_tail(sigma: float) -> Callable[[int], float]:
    """``h ↦`` an upper bound of ``P(|Z| > h)`` for the discrete Gaussian, from exact sums."""
    top = math.ceil(10.0 * sigma) + 1
    terms = [math.exp(-(z * z) / (2.0 * sigma * sigma)) for z in range(1, top + 1)]
    rest = 2.0 * _upper_integral(sigma, float(top))  # Σ_{z>top} ≤ ∫_top^∞ (twice, for safety)
    norm = 1.0 + 2.0 * math.fsum(terms)  # a lower bound of N

    def beyond(h: int) -> float:
        tail = math.fsum(terms[h:]) + rest if h < top else rest
        return 2.0 * tail / norm * (1.0 + _FLOAT_SLACK)

    return beyond


def _integral_tail(sigma: float) -> Callable[[int], float]:
    """``h ↦`` an upper bound of ``P(|Z| > h)`` for the discrete Gaussian, from integrals."""
    norm = (1.0 + 2.0 * _upper_integral(sigma, 1.0)) * (1.0 - _FLOAT_SLACK)

    def beyond(h: int) -> float:
        return 2.0 * _upper_integral(sigma, float(h)) / norm * (1.0 + _FLOAT_SLACK)

    return beyond


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
