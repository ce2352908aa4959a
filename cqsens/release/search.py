"""OpenDP's prelude and vector spaces, and the searches of the calibrations: the bisection
over scales, the integer gallop, the 60-digit decimal context of the exact tails."""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, localcontext
from typing import Any

from cqsens.release.limits import ReleaseError


def _dp() -> Any:
    """OpenDP's prelude with the ``contrib`` features on (imported on first use)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


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


def _run(measurement: Any, data: Any) -> Any:
    """Invoke an OpenDP measurement; a failure never shows the data."""
    try:
        return measurement(data)
    except Exception as exc:  # noqa: BLE001 - OpenDP's errors may echo their input
        raise ReleaseError(f"OpenDP could not sample the noise ({type(exc).__name__})",
                           construct="noise") from None
