"""The privacy parameters a user may ask for (ε, δ and cqsens's limits on them and on the
noise), and the checks of every input of a calibration: sensitivities, ε and δ of a
measurement, confidences, scales (docs/model.md, Limits and safety)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TypeGuard

from cqsens.errors import InputError
from cqsens.ir.exact import display

__all__ = ["DELTA_MIN", "EPSILON_MAX", "EPSILON_MIN", "MAX_FLOAT_SCALE", "MAX_INTEGER_SCALE",
           "ReleaseError", "check_privacy"]


class ReleaseError(InputError):
    """Noise could not be sampled; the message never holds the data."""


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
