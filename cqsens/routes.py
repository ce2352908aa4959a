"""Statements analysed by a route of their own before the plan: which route, and its wiring.

Most statements become a plan of conjunctive parts (:mod:`cqsens.frontend.plan`)
analysed by the stages of :mod:`cqsens.pipeline`.  A few forms are recognised on
the statement first, because their sensitivity follows from a rule about the
whole statement:

* a statement that reads only public tables: sensitivity 0, whatever it computes
  (docs/rules.md, rule public-statement);
* an aggregate over private tables grouped by, or correlated on, the columns of a
  public table: a released view, a histogram over the public keys, released first
  (docs/rules.md, rule released-view);
* a WHERE comparison with a scalar subquery over private tables: a two-stage release,
  the subquery first (docs/rules.md, rule two-stage);
* with a privacy unit, a statement over one derived table grouped by the person's
  key: a table of one row per person (docs/rules.md, rule person-groups);
* a statement that the plan refuses, whose aggregating derived tables and WITH tables
  over private tables, and uncorrelated scalar subqueries over them, can each be
  released on its own, the rest reading public tables and their released rows only
  (docs/rules.md, rule released-subquery).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Protocol

from cqsens.analysis import Analysis
from cqsens.errors import InputError, UnsupportedQueryError
from cqsens.frontend.load import read_source
from cqsens.parts import PartsSource, analyze_parts, parts_source
from cqsens.per_person import analyse_per_person
from cqsens.prepare import options_for
from cqsens.public_statement import find_public_statement, public_analysis, synthetic_sql
from cqsens.settings import Settings
from cqsens.stages import analyze_stages, staged_source
from cqsens.state import Options
from cqsens.views import advise, analyze_views, view_source

__all__ = ["Analyse", "route"]


class Analyse(Protocol):
    """The plan's analysis of a statement (``pipeline._analyze_plan``)."""

    def __call__(self, source: str | Path, settings: Settings, *, kind: str | None,
                 name: str | None) -> Analysis: ...


def route(source: str | Path, settings: Settings, *, kind: str | None, name: str | None,
          plain: Analyse) -> Analysis:
    """The analysis of ``source`` along the first route that recognises it, else ``plain``.

    Parameters
    ----------
    source : str or Path
        The statement (text or file).
    settings : Settings
        The analysis settings.
    kind, name : str or None
        As :func:`cqsens.pipeline.analyze_with` takes them.
    plain : callable
        The plan's analysis, also used by a route for the statement it rewrites.

    Returns
    -------
    Analysis
    """
    public = find_public_statement(source, settings, kind=kind, name=name)
    if public is not None:  # docs/rules.md, rule public-statement
        text, origin, found = public
        inner = plain(synthetic_sql(found), replace(settings, prove_lower=False), kind="sql",
                      name=origin)
        return public_analysis(inner, text, origin, found)
    options = options_for(settings)  # read once for the routes below
    views = view_source(source, settings, options.schema, kind=kind, name=name)
    if views is not None:  # docs/rules.md, rule released-view
        return analyze_views(views, settings, lambda text, s: route(
            text, s, kind="sql", name=views.name, plain=plain))
    staged = staged_source(source, settings, options.schema, kind=kind, name=name)
    if staged is not None:  # a threshold over private data: two releases
        return analyze_stages(staged, settings, lambda text, s: route(
            text, s, kind="sql", name=staged.name, plain=plain))
    try:
        per_person = _per_person(source, settings, options, kind=kind, name=name, plain=plain)
        if per_person is not None:
            return per_person
        return plain(source, settings, kind=kind, name=name)
    except InputError as err:
        parts = _parts(err, source, settings, options, kind=kind, name=name)
        if parts is not None:  # docs/rules.md, rule released-subquery
            return _analyze_parts(err, parts, settings, plain)
        if isinstance(err, UnsupportedQueryError):  # say what would make it a released view
            advise(err, source, settings, options.schema, kind=kind, name=name)
        raise


def _analyze_parts(err: InputError, parts: PartsSource, settings: Settings,
                   plain: Analyse) -> Analysis:
    """The analysis of ``parts``; when a part is refused, its refusal (the construct that
    blocks the statement), with the statement's own refusal ``err`` after it."""
    try:
        return analyze_parts(parts, settings, lambda text, s: route(
            text, s, kind="sql", name=parts.name, plain=plain))
    except InputError as why:
        why.message = (f"{why.message} (in a subquery released as a statement of its own, "
                       f"docs/rules.md, rule released-subquery; the statement as a whole: "
                       f"{err.message})")
        why.args = (why.message,)
        raise why from None


def _parts(err: InputError, source: str | Path, settings: Settings, options: Options, *,
           kind: str | None, name: str | None) -> PartsSource | None:
    """The released subqueries of a statement the plan refused, or None (a statement
    that has some but reads private rows outside them: ``err`` says so)."""
    try:
        return parts_source(source, settings, options.schema, options.nb.unit, kind=kind,
                            name=name)
    except InputError as why:
        err.add_reason(why.message)
        return None


def _per_person(source: str | Path, settings: Settings, options: Options, *, kind: str | None,
                name: str | None, plain: Analyse) -> Analysis | None:
    """The person-groups route (docs/rules.md, rule person-groups), or None."""
    if options.nb.unit is None or options.schema is None:
        return None
    text, origin, language = read_source(source, kind=kind, name=name)
    if language != "sql":
        return None
    return analyse_per_person(text, settings, options.nb.unit, options.schema,
                              lambda sql, s: plain(sql, s, kind="sql", name=origin),
                              origin or "<sql>")
