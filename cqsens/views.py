"""The analysis of a statement with released views (docs/rules.md, rule released-view).

Each view (an aggregate over private tables grouped by, or correlated on, the columns of
a public table) is a grouped release of its own: the statement ``SELECT keys,
aggregate, COUNT(*) … GROUP BY keys``, analysed as any grouped statement (its ℓ1 bounds
the change of the whole histogram).  The rest of the statement, with the views' noisy
rows in their place, either reads public tables only (post-processing, sensitivity 0,
nothing spent) or is a release of its own over private tables, analysed without the
WHERE comparisons with a view (as in rule two-stage).  The releases compose
sequentially: ε (and δ) is split into equal shares, one per release (basic
composition, Dwork and Roth 2014, Thm 3.16).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from cqsens.analysis import Analysis
from cqsens.errors import InputError
from cqsens.frontend.load import read_source
from cqsens.frontend.released_views import Views, split_views
from cqsens.frontend.view_advice import view_advice
from cqsens.ir.exact import text
from cqsens.ir.schema import Schema
from cqsens.settings import Settings
from cqsens.stages import SplitSource, composition_line, shared_settings, split_source

__all__ = ["advise", "analyze_views", "releases", "view_source"]


def view_source(source: str | Path, settings: Settings, schema: Schema | None, *,
                kind: str | None, name: str | None) -> SplitSource[Views] | None:
    """The released views of a SQL source, or None when it has none (or is not SQL)."""
    public = frozenset(settings.public_tables())
    if not public:
        return None
    return split_source(source, lambda body, origin: split_views(
        body, settings.dialect, public=public, schema=schema, source=origin),
        kind=kind, name=name)


def releases(views: Views) -> int:
    """How many releases share ε: one per view, one more when the rest of the statement
    reads private tables."""
    return len(views.views) + (0 if views.public_outer else 1)


def analyze_views(found: SplitSource[Views], settings: Settings,
                  run: Callable[[str, Settings], Analysis]) -> Analysis:
    """The analysis of a statement with released views (``found``); the other
    parameters are those of :func:`cqsens.stages.analyze_stages`.

    Returns
    -------
    Analysis
        The analysis of the last release (the rest of the statement when it reads
        private tables, else the last view), with the user's text as its query and
        every stage's analysis under ``stages`` (the views first, the rest last).
    """
    views = found.parts
    count = releases(views)
    share = shared_settings(settings, count)
    firsts = [run(v.sql, share) for v in views.views]
    outer = run(views.outer, share)
    if outer.stages:
        raise InputError("a statement with both a released view and a two-stage threshold "
                         "is not supported: release them as separate statements",
                         source=found.name or "<sql>", construct="released-view")
    lines = [composition_line("Released views", "released-view", count, settings)]
    for number, (stage, view) in enumerate(zip(firsts, views.views, strict=True), start=1):
        lower = "unknown" if stage.lower is None else text(stage.lower)
        lines.append(
            f"Stage {number}: {view.written} is released as a histogram over the public "
            f"keys of {view.domain_sql} (every key, zeros included, no partition "
            f"selection): {stage.query} (upper {text(stage.upper)}, lower {lower}, ℓ1 "
            f"{text(stage.l1)}; rule {stage.count_derivation.rule.value}).")
    if views.public_outer:
        lines.append(f"Stage {len(firsts) + 1}: the rest of the statement reads public tables "
                     "and the released views only: post-processing of the noisy rows, "
                     "sensitivity 0, nothing spent.")
        last = firsts[-1]
    else:
        lines.append(f"Stage {len(firsts) + 1}: the rest of the statement is released with "
                     "the views' noisy values in place; its WHERE comparisons with them are "
                     "filters, analysed without them, so its bound holds for every released "
                     "value.")
        last = outer
    shares = (*(("view", f"1/{count}") for _ in firsts),
              ("outer", "0" if views.public_outer else f"1/{count}"))
    return replace(last, query=found.text, stages=(*firsts, outer), stage_shares=shares,
                   explanation=(*lines, *last.explanation))


def advise(err: InputError, source: str | Path, settings: Settings, schema: Schema | None, *,
           kind: str | None, name: str | None) -> None:
    """Add to ``err`` (a refused statement) what would make its aggregate over private
    tables a released view, when it has one that is not."""
    body, origin, language = read_source(source, kind=kind, name=name)
    if language != "sql":
        return
    advice = view_advice(body, settings.dialect, public=frozenset(settings.public_tables()),
                         schema=schema, source=origin or "<sql>")
    if advice is not None:
        err.add_reason(advice)
