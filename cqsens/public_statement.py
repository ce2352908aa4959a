"""The analysis of a statement that reads only public tables (docs/rules.md, rule public-statement).

Such a statement gives the same answer in both neighbouring databases, so every
output column has sensitivity 0, and 0 is also a lower bound (a sensitivity is
never negative), so no witness is needed.  The analysis keeps the shape of any
other: its CQ is the cross product of the tables the statement reads (analysed
by the ordinary pipeline, where the public-tables rule bounds it by 0), its
aggregates are the statement's own, each with ℓ1 = ℓ2 = 0, and its explanation
names the public tables.  ``cqsens release`` runs such a statement as written
and returns its exact answer, spending no ε (:mod:`cqsens.releasing.public`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cqsens.analysis import AggregateRecord, Analysis
from cqsens.engine.paper import PaperValue
from cqsens.engine.rules import Derivation, Rule
from cqsens.frontend.load import read_source
from cqsens.frontend.public_statement import PublicStatement, public_statement
from cqsens.settings import Settings

__all__ = ["PublicSource", "find_public_statement", "is_public_statement", "public_analysis"]

PublicSource = tuple[str, str | None, PublicStatement]
"""The statement's text, its source name and what :func:`public_statement` found."""


def find_public_statement(source: str | Path, settings: Settings, *, kind: str | None,
                          name: str | None) -> PublicSource | None:
    """The SQL statement of ``source`` when every table it reads is public, else None.

    A conjunctive query, a statement that does not parse, or one with a private
    table anywhere (a subquery, a CTE, a derived table, a set-operation branch)
    gives None: the ordinary analysis then reads it (and reports its errors).
    """
    public = settings.public_tables()
    if not public:
        return None
    text, origin, language = read_source(source, kind=kind, name=name)
    if language != "sql":
        return None
    found = public_statement(text, dialect=settings.dialect, public=set(public),
                             source=origin or "<sql>")
    return None if found is None else (text, origin, found)


def synthetic_sql(found: PublicStatement) -> str:
    """The counting query whose analysis gives the shape of the result: a COUNT over the
    cross product of the tables the statement reads."""
    return f"SELECT COUNT(*) FROM {found.from_sql}"


def public_analysis(base: Analysis, text: str, origin: str | None,
                    found: PublicStatement) -> Analysis:
    """The analysis of the public statement ``text``, from ``base``, the analysis of
    :func:`synthetic_sql` (which fixes Σ, the CQ of the tables read and the neighbourhood).

    Every output column gets sensitivity 0 by the rule public-statement, with 0 as its
    proven lower bound.
    """
    tables = ", ".join(found.tables)
    derivation = Derivation(Rule.PUBLIC_STATEMENT, 0, base.nb, {"tables": tables})
    records = tuple(AggregateRecord(c.label, c.kind, 0, 0, 0, derivation, None)
                    for c in found.aggregates)
    explanation = (
        f"The statement reads only public tables: {tables} (the same in both neighbours).",
        "Both neighbouring databases give it the same answer, whatever it computes: "
        "sensitivity 0 for every output column (docs/rules.md, rule public-statement).",
    )
    source = origin or "<sql>"
    return replace(
        base, query=text.strip(), source=source,
        query_obj=replace(base.query_obj, sql=text, text=text, source=source),
        delta_str=0, paper={k: PaperValue(None, "not applied: the statement reads only "
                                          "public tables", applies=False)
                             for k in base.paper},
        upper=0, lower=0, l1=0, l2=0, explanation=explanation,
        notes=(f"computed from public tables only ({tables}): `cqsens release` returns its "
               "exact answer and spends no ε",),
        suggestion=(), witness=None,
        lower_note="0 needs no witness: a sensitivity is never negative",
        aggregates=records, derivation=derivation)


def is_public_statement(analysis: Analysis) -> bool:
    """Whether ``analysis`` is that of a statement that reads only public tables."""
    return analysis.derivation is not None \
        and analysis.derivation.rule is Rule.PUBLIC_STATEMENT
