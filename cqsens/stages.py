"""The analysis of a two-stage release: a statement that compares with a scalar
subquery over private data (docs/rules.md, rule two-stage).

Stage 1 releases each such subquery, analysed as a statement of its own; stage 2
releases the outer statement with the released values as constants, analysed without
the comparisons (a filter only removes answers, so its bound holds for every value
stage 1 can release).  The stages compose sequentially: ε (and δ) is split into equal
shares, one per stage (basic composition, Dwork and Roth 2014, Thm 3.16).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from cqsens.analysis import Analysis
from cqsens.frontend.load import read_source
from cqsens.frontend.two_stage import Stages, split_stages
from cqsens.ir.exact import text
from cqsens.ir.schema import Schema
from cqsens.settings import Settings

__all__ = ["StagedSource", "analyze_stages", "shared_settings", "staged_source"]


@dataclass(frozen=True, slots=True)
class StagedSource:
    """A SQL source split into stages, with its text and name."""

    stages: Stages
    text: str
    name: str | None


def staged_source(source: str | Path, settings: Settings, schema: Schema | None, *,
                  kind: str | None, name: str | None) -> StagedSource | None:
    """The stages of a SQL source, or None when it is one release (or not SQL)."""
    text, origin, kind = read_source(source, kind=kind, name=name)
    if kind != "sql":
        return None
    stages = split_stages(text, settings.dialect, public=frozenset(settings.public_tables()),
                          schema=schema, source=origin or "<sql>")
    return None if stages is None else StagedSource(stages, text, origin)


def _share(value: float | None, count: int) -> float | None:
    return None if value is None else value / count


def shared_settings(settings: Settings, count: int) -> Settings:
    """``settings`` for one of ``count`` releases: an equal share of ε, δ and the witness
    search time."""
    return replace(settings, witness_time=settings.witness_time / count,
                   epsilon=_share(settings.epsilon, count), delta=_share(settings.delta, count))


def analyze_stages(staged: StagedSource, settings: Settings,
                   run: Callable[[str, Settings], Analysis]) -> Analysis:
    """The analysis of a two-stage release: the outer statement's, with every stage.

    Parameters
    ----------
    staged : StagedSource
        The statement's stages.
    settings : Settings
        The analysis settings; each stage gets an equal share of ε, δ and the
        witness search time.
    run : callable
        Analyses one SQL statement with the given settings.

    Returns
    -------
    Analysis
        The outer statement's analysis (its bounds are the last stage's), with the
        user's text as its query and every stage's analysis under ``stages``.
    """
    count = len(staged.stages.inner) + 1
    share = shared_settings(settings, count)
    firsts = [run(text, share) for text in staged.stages.inner]
    outer = run(staged.stages.outer, share)
    lines = [f"Two-stage release (docs/rules.md, rule two-stage): {count} stages composed in "
             f"sequence, each with ε/{count}{' and δ/' + str(count) if settings.delta else ''}."]
    for number, (stage, condition) in enumerate(zip(firsts, staged.stages.conditions,
                                                    strict=True), start=1):
        lower = "unknown" if stage.lower is None else text(stage.lower)
        lines.append(f"Stage {number}: {stage.query} is released first (upper "
                     f"{text(stage.upper)}, lower {lower}, ℓ1 {text(stage.l1)}; rule "
                     f"{stage.count_derivation.rule.value}); {condition} then compares with "
                     "its noisy value, a constant.")
    lines.append(f"Stage {count}: the outer statement, released with the noisy values as "
                 "literals; its bound holds for every value they take" + (
                     "; the upper and lower bounds shown are this stage's (its witness runs "
                     "it with concrete values in their place)." if outer.lower is not None
                     else "."))
    return replace(outer, query=staged.text, stages=(*firsts, outer),
                   explanation=(*lines, *outer.explanation))
