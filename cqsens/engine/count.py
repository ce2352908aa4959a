"""The count bound of one CQ under Σ: chase, core, and the smaller of two sound bounds.

The chase uses only dependencies every database of C_Σ satisfies, so the bound
of the chased core and the bound of the unchased core are both sound; the
smaller one is kept.  This is the one place that chases and takes cores for a
bound: the main analysis, the bounds of other heads over the same body
(aggregates) and the confirmation of suggested dependencies all call it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cqsens.engine.chase import chase
from cqsens.engine.core import core_result
from cqsens.engine.upper import References, UpperBound, upper_bound
from cqsens.ir.cq import CQ
from cqsens.ir.dependencies import Sigma

__all__ = ["CORE_BUDGET", "CountBound", "count_bound"]

CORE_BUDGET = 200_000


@dataclass(frozen=True, slots=True)
class CountBound:
    """The bound of ``#cq`` with the cores it came from.

    ``core`` is the chased query's core (``minimal`` is False when its search
    hit the budget); ``plain`` the unchased query's core; ``bound`` the smaller
    of the two cores' bounds under Σ.
    """

    core: CQ
    minimal: bool
    plain: CQ
    bound: UpperBound


def count_bound(
    cq: CQ, sigma: Sigma, *, budget: int = CORE_BUDGET, public: frozenset[str] = frozenset(),
    references: References = (),
) -> CountBound:
    """Chase ``cq`` with the FDs of Σ, take cores, and bound its add/remove sensitivity.

    ``public`` and ``references`` are passed to :func:`upper_bound` (public tables;
    foreign keys kept by both neighbours).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.dependencies import Dependency
    >>> b = count_bound(parse_cq("Q(x) :- R(x, y), S(y, z)"),
    ...                 Sigma.of([Dependency("S", 0, 1, 1), Dependency("R", 1, 0, 1)]))
    >>> b.bound.value, str(b.core)
    (1, 'Q(x) :- R(x, y), S(y, z).')
    """
    fds = sigma.fds()
    chased = core_result(chase(cq, fds), budget=budget)
    bound = upper_bound(chased.cq, sigma, public=public, references=references)
    if not fds:
        return CountBound(chased.cq, chased.minimal, chased.cq, bound)
    plain = core_result(cq, budget=budget).cq
    if chased.cq.satisfiable:
        unchased = upper_bound(plain, sigma, public=public, references=references)
        if unchased.value < bound.value:
            bound = unchased
    return CountBound(chased.cq, chased.minimal, plain, bound)
