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
from typing import Generic, TypeVar

from cqsens.analysis import Analysis
from cqsens.frontend.load import read_source
from cqsens.frontend.two_stage import Stages, split_stages
from cqsens.ir.exact import text
from cqsens.ir.schema import Schema
from cqsens.settings import Settings

__all__ = ["SplitSource", "analyze_stages", "shared_settings", "split_source",
           "staged_source"]


Parts = TypeVar("Parts")


@dataclass(frozen=True, slots=True)
class SplitSource(Generic[Parts]):
    """A SQL source split into releases (its stages, or its released views), with its
    text and name."""

    parts: Parts
    text: str
    name: str | None


def split_source(source: str | Path, split: Callable[[str, str], Parts | None], *,
                 kind: str | None, name: str | None) -> SplitSource[Parts] | None:
    """``source`` split by ``split`` (called with its SQL text and name), or None when it
    is not SQL or ``split`` finds nothing to split."""
    text, origin, language = read_source(source, kind=kind, name=name)
    if language != "sql":
        return None
    parts = split(text, origin or "<sql>")
    return None if parts is None else SplitSource(parts, text, origin)


def staged_source(source: str | Path, settings: Settings, schema: Schema | None, *,
                  kind: str | None, name: str | None) -> SplitSource[Stages] | None:
    """The stages of a SQL source, or None when it is one release (or not SQL)."""
    public = frozenset(settings.public_tables())
    return split_source(source, lambda text, origin: split_stages(
        text, settings.dialect, public=public, schema=schema, source=origin),
        kind=kind, name=name)


def _share(value: float | None, count: int) -> float | None:
    return None if value is None else value / count


def shared_settings(settings: Settings, count: int) -> Settings:
    """``settings`` for one of ``count`` releases: an equal share of ε, δ and the witness
    search time."""
    return replace(settings, witness_time=settings.witness_time / count,
                   epsilon=_share(settings.epsilon, count), delta=_share(settings.delta, count))


def composition_line(what: str, rule: str, count: int, settings: Settings) -> str:
    """The explanation's first line for ``count`` releases composed in sequence."""
    return (f"{what} (docs/rules.md, rule {rule}): {count} release{'s' if count > 1 else ''} "
            f"composed in sequence, each with ε/{count}"
            f"{' and δ/' + str(count) if settings.delta else ''}.")


def analyze_stages(staged: SplitSource[Stages], settings: Settings,
                   run: Callable[[str, Settings], Analysis]) -> Analysis:
    """The analysis of a two-stage release: the outer statement's, with every stage.

    Parameters
    ----------
    staged : SplitSource of Stages
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
    count = len(staged.parts.inner) + 1
    share = shared_settings(settings, count)
    firsts = [run(text, share) for text in staged.parts.inner]
    outer = run(staged.parts.outer, share)
    lines = [f"Two-stage release (docs/rules.md, rule two-stage): {count} stages composed in "
             f"sequence, each with ε/{count}{' and δ/' + str(count) if settings.delta else ''}."]
    for number, (stage, condition) in enumerate(zip(firsts, staged.parts.conditions,
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
