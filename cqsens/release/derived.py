"""The schema a release reads a per-person table with (docs/rules.md, rule person-groups).

A statement over one derived table grouped by the person's key was analysed over a table
``d`` of one row per person whose COUNT and SUM columns carry the ranges the analysis
proved (:mod:`cqsens.per_person`).  The release runs the statement as written; it reads
those ranges from ``d``'s DDL: a COUNT column's values ``0..K`` are its public group keys,
and a SUM of a column is clamped to that column's range.
"""

from __future__ import annotations

from cqsens.frontend.ddl import schema_from_ddl
from cqsens.ir.schema import Schema

__all__ = ["with_tables"]


def with_tables(schema: Schema, ddl: str) -> Schema:
    """``schema`` with the tables of ``ddl`` added (a table of the same name replaced).

    >>> ddl = "CREATE TABLE d (k INTEGER PRIMARY KEY, c INTEGER CHECK (c IN (0, 1)))"
    >>> with_tables(Schema(), ddl).find("d").domain(1)
    (0, 1)
    """
    added = schema_from_ddl(ddl, source="<per-person table>").relations
    names = {r.name.lower() for r in added}
    kept = tuple(r for r in schema.relations if r.name.lower() not in names)
    return Schema(relations=kept + added, source=schema.source)
