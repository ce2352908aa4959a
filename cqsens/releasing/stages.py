"""Run a two-stage release (docs/rules.md, rule two-stage).

Stage 1 releases each threshold subquery on its own, with its share of ε; its noisy
value, and only that, replaces ``CQSENS_STAGE_VALUE(i)`` as a literal in every SQL
text the outer statement's release runs (stage 2, with the rest of ε).  The true value
of a threshold is never read by stage 2: the database computes the subquery only in
stage 1, whose true answer stays inside :func:`cqsens.releasing.run.release_with`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cqsens.analysis import Analysis
from cqsens.errors import InputError
from cqsens.frontend.two_stage import MARKER, substitute
from cqsens.releasing.options import ReleaseOptions
from cqsens.releasing.results import Number, Release
from cqsens.releasing.run import release_with

__all__ = ["StagedRelease", "release_stages"]


@dataclass(frozen=True, slots=True)
class StagedRelease:
    """The releases of a two-stage statement, in order (the outer statement last)."""

    stages: tuple[Release, ...]
    values: tuple[Number | None, ...]  # the noisy value of each threshold

    @property
    def outer(self) -> Release:
        """The release of the outer statement."""
        return self.stages[-1]


def _value(result: Release, analysis: Analysis) -> Number | None:
    """The one noisy value a threshold stage released."""
    if len(result.groups) != 1 or len(result.groups[0].values) != 1:
        raise InputError("a threshold subquery must release exactly one value",
                         source=analysis.source, construct="two-stage")
    value = result.groups[0].values[0].value
    if isinstance(value, str):
        raise InputError("a threshold subquery must release a number", source=analysis.source,
                         construct="two-stage")
    return value


def release_stages(analysis: Analysis, options: ReleaseOptions) -> StagedRelease:
    """Release the stages of ``analysis`` (``analysis.stages``) in order.

    ``options`` are those of :func:`cqsens.releasing.run.release`.  Each stage
    gets ε/n and δ/n (n stages, sequential composition); ``keys_file`` and
    ``epsilon_parts`` apply to the outer statement.  ``before_query`` is called once,
    with the whole ε and δ, before any stage runs.

    Returns
    -------
    StagedRelease
    """
    count = len(analysis.stages)
    stage_options = options.stage(count)
    options.before_stages(analysis)
    done: list[Release] = []
    values: list[Number | None] = []
    for stage in analysis.stages[:-1]:
        # a threshold needs no δ with Laplace noise; its share is then unspent
        result = release_with(stage, stage_options)
        values.append(_value(result, stage))
        done.append(replace(result, notes=(
            *result.notes, f"stage {len(done) + 1} of {count}: {stage.query}; its noisy "
            f"value replaces {MARKER}({len(done) + 1}) in the outer statement")))
    outer = analysis.stages[-1]
    released = tuple(values)

    def rewrite(sql: str) -> str:
        return substitute(sql, released)

    result = release_with(outer, replace(
        stage_options, keys_file=options.keys_file, epsilon_parts=options.epsilon_parts,
        rewrite=rewrite))
    shown = ", ".join(f"{MARKER}({i}) = {v}" for i, v in enumerate(released, start=1))
    done.append(replace(result, query=rewrite(outer.query), notes=(
        *result.notes, f"stage {count} of {count}: ran with the noisy values of the earlier "
        f"stages as literals ({shown})")))
    return StagedRelease(tuple(done), released)
