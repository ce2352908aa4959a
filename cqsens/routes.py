"""Statements analysed by a route of their own before the plan: which route, and its wiring.

Most statements become a plan of conjunctive parts (:mod:`cqsens.frontend.plan`)
analysed by the stages of :mod:`cqsens.pipeline`.  A few forms are recognised on
the statement first, because their sensitivity follows from a rule about the
whole statement:

* a statement that reads only public tables: sensitivity 0, whatever it computes
  (docs/rules.md, rule public-statement).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Protocol

from cqsens.analysis import Analysis
from cqsens.public_statement import find_public_statement, public_analysis, synthetic_sql
from cqsens.settings import Settings

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
    return plain(source, settings, kind=kind, name=name)
