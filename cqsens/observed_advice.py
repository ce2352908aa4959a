"""Advice measured in the data: each proposal with the value ``--db`` shows.

The advice of an unbounded query (docs/rules.md, rule cd-bound and rule
foreign-keys) proposes dependencies by reasoning alone.  With a database at
hand, :func:`observed_advice` adds to each proposal what the data show, as
``cqsens profile`` measures it: the largest number of distinct ``j`` values
seen with one ``i`` value for ``R[i->j]``, and the rows that match no
referenced row for a foreign key.  Those values are **observed in this data,
not guaranteed**: the next insert may break them.
"""

from __future__ import annotations

from dataclasses import replace

from cqsens.analysis import Analysis
from cqsens.db.check import check_foreign_keys
from cqsens.db.profile import OBSERVED_NOTE, measure_fanouts
from cqsens.engine.fk_advice import foreign_key_candidates
from cqsens.errors import CqsensError
from cqsens.explain import Advice, AdviceKind, suggestion
from cqsens.frontend.parse_cq import parse_dependency
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Schema
from cqsens.report.explanation import advice

__all__ = ["observed_advice"]


def _fanout(name: str, url: str, schema: Schema) -> str | None:
    """``R[x->y]: at most 7 distinct y per x`` as measured, or None when unreadable."""
    try:
        dep = parse_dependency(name, schema=schema)
    except CqsensError:
        return None
    if not isinstance(dep, Dependency):
        return None
    rel = schema.find(dep.relation)
    if rel is None or not (0 <= dep.i < len(rel.columns)) or not (0 <= dep.j < len(rel.columns)):
        return None
    for f in measure_fanouts(url, schema, tables=[rel.name]):
        if (f.i, f.j) == (dep.i, dep.j):
            return (f"{name}: at most {f.max_count} distinct {f.columns[1]} per "
                    f"{f.columns[0]} ({f.groups} values of {f.columns[0]})")
    return None


def _dangling(advice_: Advice, url: str, schema: Schema, analysis: Analysis) -> list[str]:
    """For each proposed foreign key, its rows that match no referenced row."""
    out: list[str] = []
    wanted = set(advice_.dependencies[0::2])
    for candidate in foreign_key_candidates(analysis.core, schema):
        rel = schema.find(candidate.relation)
        target = schema.find(candidate.fk.table)
        if candidate.text not in wanted or rel is None or target is None:
            continue
        own = replace(rel, foreign_keys=(candidate.fk,))
        tables = (own,) if rel.name.lower() == target.name.lower() else (own, target)
        for check in check_foreign_keys(url, Schema(tables, schema.source), samples=0):
            out.append(f"{candidate.text}: {check.summary()}")
    return out


def _measured(item: Advice, url: str, schema: Schema, analysis: Analysis) -> list[str]:
    if item.kind is AdviceKind.DECLARE:
        return [m for name in item.dependencies if (m := _fanout(name, url, schema)) is not None]
    if item.kind is AdviceKind.FOREIGN_KEY:
        return _dangling(item, url, schema, analysis)
    return []


def observed_advice(analysis: Analysis, url: str, schema: Schema) -> Analysis:
    """``analysis`` with each proposal of its advice followed by what the data show.

    The advice is computed again from the analysis (as the explanation stage does);
    when it is not the advice shown (a statement split into parts, a person-level
    bound), the analysis is returned unchanged.

    Parameters
    ----------
    analysis : Analysis
        A finished analysis.
    url : str
        The ``--db`` database the schema was reflected from.
    schema : Schema
        That schema.

    Returns
    -------
    Analysis
        With ``suggestion`` lines ending in the measured values, marked
        observed in this data, not guaranteed.
    """
    nb = analysis.neighbourhood
    if not analysis.suggestion or nb.unit is not None:
        return analysis
    found = suggestion(analysis.query_obj, analysis.sigma, analysis.core, schema,
                       public=nb.public, references=nb.kept_references,
                       keeps_references=nb.add_remove and nb.contributions == 1)
    if tuple(advice(s) for s in found) != analysis.suggestion:
        return analysis
    lines = []
    for item in found:
        measured = _measured(item, url, schema, analysis)
        lines.append(advice(item) + (f" In the --db data ({OBSERVED_NOTE}): "
                                     + "; ".join(measured) + "." if measured else ""))
    return replace(analysis, suggestion=tuple(lines))
