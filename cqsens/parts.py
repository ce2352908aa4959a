"""The analysis of a statement with released subqueries (docs/rules.md, rule
released-subquery).

Each aggregating derived table or ``WITH`` table over private tables (a *part*,
:mod:`cqsens.frontend.released_parts`) is a release of its own, analysed as a statement
(its group keys as a statement's are).  The rest of the statement reads public tables
and the parts' released rows only: post-processing, sensitivity 0, nothing spent.  The
releases compose sequentially: ε (and δ) is split into equal shares, one per part
(basic composition, Dwork and Roth 2014, Thm 3.16).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from cqsens.analysis import Analysis
from cqsens.engine.neighbourhood import Unit
from cqsens.engine.person import owner_key
from cqsens.errors import InputError
from cqsens.frontend.load import read_source
from cqsens.frontend.released_parts import Parts, split_parts
from cqsens.frontend.released_views import ROWS_MARKER
from cqsens.ir.exact import text
from cqsens.ir.schema import Schema
from cqsens.settings import Settings
from cqsens.stages import composition_line, shared_settings

__all__ = ["PART_ROLE", "PartsSource", "analyze_parts", "is_parts", "parts_source"]

PART_ROLE = "part"
"""The role of a released subquery in :attr:`Analysis.stage_shares`."""


@dataclass(frozen=True, slots=True)
class PartsSource:
    """A SQL source with released subqueries, with its text and name."""

    parts: Parts
    text: str
    name: str | None


def parts_source(source: str | Path, settings: Settings, schema: Schema | None,
                 unit: Unit | None, *, kind: str | None, name: str | None
                 ) -> PartsSource | None:
    """The released subqueries of a SQL source, or None when it has none (or is not SQL,
    or, with a privacy ``unit``, one of them groups by the person's key: a per-person
    table, docs/rules.md, rule person-groups).

    Raises
    ------
    InputError
        It has some, but the rest of the statement reads private tables outside them.
    """
    body, origin, language = read_source(source, kind=kind, name=name)
    if language != "sql":
        return None
    names_person = None
    if unit is not None and schema is not None and len(unit.key) == 1:
        relation = schema.find(unit.table)
        if relation is None:
            return None
        person = (relation.name.lower(), relation.columns[unit.key[0]].lower())
        owned = owner_key(schema, unit)

        def names_person(table: str, column: str) -> bool:
            return owned(table, column) == person

    found = split_parts(body, settings.dialect, public=frozenset(settings.public_tables()),
                        source=origin or "<sql>", schema=schema, names_person=names_person)
    return None if found is None else PartsSource(found, body, origin)


def is_parts(analysis: Analysis) -> bool:
    """Whether ``analysis`` is that of a statement with released subqueries."""
    return bool(analysis.stage_shares) and analysis.stage_shares[0][0] == PART_ROLE


def analyze_parts(found: PartsSource, settings: Settings,
                  run: Callable[[str, Settings], Analysis]) -> Analysis:
    """The analysis of a statement with released subqueries.

    Parameters
    ----------
    found : PartsSource
        The statement's parts.
    settings : Settings
        The analysis settings (each part gets ε/n, δ/n and its share of the witness time).
    run : callable
        Analyses one part's statement with the given settings.

    Returns
    -------
    Analysis
        The analysis of the part with the largest upper bound (the last of them on a tie),
        with the user's text as its query and every part's analysis under ``stages``.
    """
    count = len(found.parts.parts)
    share = shared_settings(settings, count)
    done = [run(p.sql, share) for p in found.parts.parts]
    if any(a.stages for a in done):
        raise InputError("a released subquery that is itself a plan of several releases is not "
                         "supported: release it as a statement of its own",
                         source=found.name or "<sql>", construct="released-subquery")
    lines = [composition_line("Released subqueries", "released-subquery", count, settings)]
    for number, (stage, part) in enumerate(zip(done, found.parts.parts, strict=True), start=1):
        lower = "unknown" if stage.lower is None else text(stage.lower)
        lines.append(f"Release {number}: {_short(_shown(part.written))} is released as a "
                     f"statement of its own (upper {text(stage.upper)}, lower {lower}, "
                     f"ℓ1 {text(stage.l1)}; rule {stage.count_derivation.rule.value})"
                     f"{_ROLES.get(part.role, '')}.")
    lines.append("The rest of the statement reads public tables and the released rows only: "
                 "post-processing of the noisy rows, sensitivity 0, nothing spent.")
    widest = max(range(count), key=lambda i: (_order(done[i]), i))
    return replace(done[widest], query=found.text, stages=tuple(done),
                   stage_shares=tuple((PART_ROLE, f"1/{count}") for _ in done),
                   explanation=(*lines, *done[widest].explanation))


_ROLES = {
    "scalar": "; a scalar subquery: its noisy value takes its place",
    "having": "; without its HAVING comparison with released values, which is applied to "
              "its noisy rows",
}
_MARKED = re.compile(rf"\(SELECT {ROWS_MARKER}\((\d+), \d+\) AS [^()]*\)", re.IGNORECASE)


def _shown(sql: str) -> str:
    """``sql`` with each released scalar in it written as ``(release n)``."""
    return _MARKED.sub(lambda m: f"(release {m.group(1)})", sql)


def _order(analysis: Analysis) -> float:
    return float(analysis.upper)


def _short(sql: str) -> str:
    flat = " ".join(sql.split())
    return flat if len(flat) <= 120 else flat[:117] + "..."
