"""The measurements of a release and their share of ε and δ, and what the ledger is charged,
known before any query runs.

**Budget split.**  The release is a composition of ``m`` measurements: one per
released part, plus the partition selection when it is not the release of a
COUNT of the query.  Unless ε is given per part, every measurement gets
``ε/m`` (basic composition, Dwork and Roth 2014, Thm 3.16); δ is split evenly
among the measurements that use it (the Gaussian parts and the selection).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cqsens.analysis import AggregateRecord
from cqsens.errors import InputError
from cqsens.frontend.release_sql import NOISY_KINDS, ReleasePlan
from cqsens.release import noise
from cqsens.release.ledger import Charge


def _split(measurements: int, per_part: Mapping[str, float], labels: Sequence[str],
           epsilon: float) -> tuple[list[float], str]:
    """ε of each measurement: the user's per-part values, the rest split evenly."""
    given = {label: per_part[label] for label in labels if label in per_part}
    unknown = sorted(set(per_part) - set(labels))
    if unknown:
        raise InputError(f"--epsilon-part names {', '.join(unknown)}, which is not a released "
                         f"aggregate (they are: {', '.join(labels)})", construct="--epsilon-part")
    left = epsilon - math.fsum(given.values())
    rest = measurements - len(given)
    if left <= 0 and rest > 0 or left < -1e-12:
        raise InputError(f"the per-part ε add up to {math.fsum(given.values()):g}, more than "
                         f"--epsilon {epsilon:g}", construct="--epsilon-part")
    share = left / rest if rest else 0.0
    out = [given.get(label, share) for label in labels] + [share] * (measurements - len(labels))
    if given:
        rule = (f"ε per part as given; the other {rest} measurement(s) share the remaining "
                f"{left:g} evenly") if rest else "ε per part as given"
    elif measurements == 1:
        rule = "one measurement: all of ε"
    else:
        rule = f"ε split evenly over {measurements} measurements: {share:g} each"
    return out, rule


@dataclass(frozen=True, slots=True)
class _Budget:
    """The measurements of a release and their share of ε and δ (known before any query)."""

    shares: list[float]
    split: str
    delta_each: float
    uses_delta: list[bool]
    select_with: int | None  # the COUNT part that also selects the keys
    extra_selection: bool  # a COUNT(*) measured only to select the keys
    gaussian: list[int]  # the parts released with Gaussian noise


def _budget(plan: ReleasePlan, selection: bool, epsilon_parts: Mapping[str, float],
            eps: float, delta: float | None, mechanism: str) -> _Budget:
    counts = [i for i, p in enumerate(plan.parts) if p.kind == "count"]
    select_with = counts[0] if selection and counts else None
    extra_selection = selection and select_with is None
    labels = [p.sql for p in plan.parts]
    shares, split = _split(len(plan.parts) + int(extra_selection), epsilon_parts, labels, eps)
    uses_delta = [(selection and i == select_with)
                  or (mechanism == "gaussian" and p.kind in NOISY_KINDS)
                  for i, p in enumerate(plan.parts)] + ([True] if extra_selection else [])
    delta_each = (delta / sum(uses_delta)) if delta is not None and any(uses_delta) else 0.0
    gaussian = [i for i, p in enumerate(plan.parts) if mechanism == "gaussian"
                and p.kind in NOISY_KINDS and i != select_with]
    return _Budget(shares, split, delta_each, uses_delta, select_with, extra_selection, gaussian)


def _charge(plan: ReleasePlan, records: Sequence[AggregateRecord], budget: _Budget,
            eps: float, delta: float | None) -> Charge:
    """What the release spends: its ε and δ, and the zCDP ρ of its Gaussian parts.

    ρ = Δ2²/(2σ²) for the σ each Gaussian part is calibrated with (Bun and
    Steinke 2016, Prop 1.6), computed before the query runs.
    """
    spends_delta = delta is not None and any(budget.uses_delta)
    total_delta = delta if delta is not None and spends_delta else 0.0
    rhos = []
    for i in budget.gaussian:
        l2 = records[i].l2
        sigma = noise.gaussian_sigma(l2, budget.shares[i], budget.delta_each,
                                     integer=plan.parts[i].integer)
        if not math.isfinite(sigma) or not math.isfinite(float(l2)):
            raise InputError(f"{plan.parts[i].sql}: its ℓ2 sensitivity is unbounded, so the "
                             "Gaussian mechanism cannot be calibrated", construct="release")
        rhos.append(0.0 if sigma == 0 else float(l2) ** 2 / (2.0 * sigma * sigma))
    if not budget.gaussian:
        return Charge(eps, total_delta)
    every = len(budget.gaussian) == len(budget.shares)  # every measurement is Gaussian
    rho_eps = eps if every else min(eps, math.fsum(budget.shares[i] for i in budget.gaussian))
    rho_delta = total_delta if every else min(total_delta,
                                              budget.delta_each * len(budget.gaussian))
    return Charge(eps, total_delta, math.fsum(rhos), rho_eps, rho_delta)
