"""The time an analysis may take: one deadline for every stage, checked where work loops.

:func:`analyze` installs the deadline of its ``timeout`` with :func:`deadline`;
the engine's loops (chase, core, homomorphism search, walks, the paper's path
enumeration) and the witness search call :func:`checkpoint`, which raises
:class:`~cqsens.errors.TimeLimitError` once the deadline has passed.  The
deadline lives in a context variable so that the engine's functions stay pure
functions of their arguments (and their caches stay valid): the budget is the
caller's, not part of the query.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from cqsens.errors import TimeLimitError

__all__ = ["HARD_STOP", "HARD_STOP_MARGIN", "checkpoint", "deadline", "remaining", "search_stop",
           "work_units"]

_DEADLINE: ContextVar[tuple[float, float]] = ContextVar("cqsens_deadline",
                                                        default=(math.inf, math.inf))


@contextmanager
def deadline(timeout: float | None) -> Iterator[None]:
    """Run the block under a deadline ``timeout`` seconds from now (None: no limit).

    A nested deadline never extends an enclosing one.

    >>> with deadline(5):
    ...     0 < remaining() <= 5
    True
    """
    at = math.inf if timeout is None or timeout == math.inf else time.monotonic() + timeout
    outer_at, outer_timeout = _DEADLINE.get()
    token = _DEADLINE.set((at, timeout or math.inf) if at < outer_at else (outer_at, outer_timeout))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float:
    """Seconds left before the deadline (``math.inf`` without one)."""
    at, _ = _DEADLINE.get()
    return at - time.monotonic() if at != math.inf else math.inf


def checkpoint(stage: str) -> None:
    """Raise :class:`TimeLimitError` naming ``stage`` when the deadline has passed."""
    at, timeout = _DEADLINE.get()
    if at != math.inf and time.monotonic() > at:
        raise TimeLimitError(stage, timeout)


#: A search given ``seconds`` is stopped by the clock only past ``HARD_STOP * seconds + 1``
#: seconds (and never more than ``HARD_STOP_MARGIN`` seconds past its budget): its own work
#: budget (:func:`work_units`) ends it first on any machine that is not several times
#: slower or busier than a typical core, so its result is the same from run to run.
HARD_STOP = 4
HARD_STOP_MARGIN = 5.0


def work_units(seconds: float, per_second: int) -> int:
    """The steps a search given ``seconds`` may take: ``per_second`` for each second (at
    least one), a budget of work rather than of time, so that a seed and a budget give
    the same result on a loaded machine as on an idle one.

    >>> work_units(0.5, 300), work_units(0.0, 300)
    (150, 1)
    """
    return max(1, math.ceil(max(seconds, 0.0) * per_second))


def search_stop(seconds: float) -> float:
    """The monotonic time at which a search given ``seconds`` is stopped by the clock
    whatever its work budget: ``HARD_STOP * seconds + 1`` from now but at most
    ``seconds + HARD_STOP_MARGIN``, or the analysis's deadline if sooner."""
    seconds = max(seconds, 0.0)
    late = min(HARD_STOP * seconds + 1.0, seconds + HARD_STOP_MARGIN)
    return time.monotonic() + min(late, max(remaining(), 0.0))
