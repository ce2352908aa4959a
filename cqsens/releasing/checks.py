"""The refusals of a release, before any noise: an unbounded sensitivity, data that break a
constraint the bound relies on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cqsens.analysis import Analysis
from cqsens.db.guard import broken_constraints
from cqsens.db.reflect import reflect_schema
from cqsens.frontend.release_sql import ReleasePlan
from cqsens.ir.schema import Schema
from cqsens.passwords import mask_url
from cqsens.release.values import parse_value_bounds
from cqsens.releasing.results import BrokenConstraint, UnboundedRelease


def _refuse_unbounded(analysis: Analysis) -> None:
    if analysis.bounded:
        return
    advice = " ".join(analysis.suggestion) or "no declared dependency bounds it"
    raise UnboundedRelease(
        f"the sensitivity of this query is unbounded: no calibrated noise makes its release "
        f"private, so nothing is released. {analysis.reason()}. Advice: {advice}",
        source=analysis.source, construct="release")


def _refuse_broken(conn: Any, analysis: Analysis, parts_analysis: Analysis, plan: ReleasePlan,
                   *, url: str, schema: Schema | None, bounds: Sequence[str]) -> None:
    """Check, in the release's transaction and before the query, every constraint the bound
    may rely on (:mod:`cqsens.db.guard`); refuse naming the broken ones, nothing else."""
    if schema is None:
        schema = reflect_schema(url)
    deps = {*analysis.sigma, *parts_analysis.sigma}
    broken = broken_constraints(conn, schema, tables=plan.tables,
                                deps=sorted(deps, key=str), value_bounds=parse_value_bounds(bounds),
                                masked=mask_url(url))
    if broken:
        raise BrokenConstraint(
            f"the data break what the sensitivity bound relies on: {'; '.join(broken)}. "
            "Noise calibrated to that bound would not protect every person, so nothing is "
            "released and nothing is charged. Fix the data, or declare the constraints the "
            "data obey (cqsens profile measures them)", source=mask_url(url),
            construct="release")


def _same_parts(plan: ReleasePlan, analysis: Analysis) -> bool:
    """Whether the analysis of the user's query already covers each part, in order."""
    kinds = [a.kind for a in analysis.aggregates]
    return (kinds == [p.kind for p in plan.parts]
            and all(i.formula.op == "part" and i.formula.value == n
                    for n, i in enumerate(plan.items)))
