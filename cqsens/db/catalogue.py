"""A schema's relations bound to the tables of a live database.

A schema read from a DDL file names tables and columns as the file spells
them; the database may spell them otherwise (PostgreSQL folds unquoted names
to lower case).  :class:`Catalogue` matches them case-insensitively and says
which table or column is missing; :class:`BoundTable` is the result, ready to
build SQLAlchemy queries on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cqsens.db.connect import DB_CONSTRUCT
from cqsens.errors import DependencyError, SchemaError
from cqsens.ir.schema import Relation, Schema

__all__ = ["BoundTable", "Catalogue", "count_distinct"]


@dataclass(frozen=True, slots=True)
class BoundTable:
    """A schema relation bound to the database's spelling of its names."""

    relation: Relation
    db_name: str
    db_columns: tuple[str, ...]  # aligned with relation.columns

    def sql(self) -> sa.TableClause:
        """The table as a SQLAlchemy clause, with the database's names."""
        return sa.table(self.db_name, *(sa.column(c) for c in self.db_columns))


class Catalogue:
    """Maps the relations of a schema to the tables of a database (case-insensitively)."""

    def __init__(self, conn: Connection, schema: Schema, masked: str) -> None:
        self.conn = conn
        self.schema = schema
        self.masked = masked
        self.inspector = sa.inspect(conn)
        self.tables = {n.lower(): n for n in self.inspector.get_table_names()}
        self._cache: dict[str, BoundTable] = {}

    def relation(self, name: str, *, what: str) -> Relation:
        """The schema's relation called ``name`` (any case); ``what`` names the asker.

        Raises
        ------
        DependencyError
            The schema has no such relation.
        """
        rel = self.schema.find(name)
        if rel is None:
            known = ", ".join(self.schema.relation_names()) or "none"
            raise DependencyError(f"{what} names table {name}, which the schema lacks "
                                  f"(it has: {known})", source=self.schema.source,
                                  construct="dependency")
        return rel

    def bind(self, rel: Relation) -> BoundTable:
        """The database's table and columns for ``rel`` (cached).

        Raises
        ------
        SchemaError
            The database lacks the table or one of its columns.
        """
        key = rel.name.lower()
        if key in self._cache:
            return self._cache[key]
        db_name = self.tables.get(key)
        if db_name is None:
            known = ", ".join(sorted(self.tables.values())) or "none"
            raise SchemaError(f"table {rel.name} is not in the database (it has: {known})",
                              source=self.masked, construct=DB_CONSTRUCT)
        actual = [str(c["name"]) for c in self.inspector.get_columns(db_name)]
        by_lower = {c.lower(): c for c in actual}
        db_columns = []
        for c in rel.columns:
            found = by_lower.get(c.lower())
            if found is None:
                raise SchemaError(f"table {db_name} in the database has no column {c} "
                                  f"(it has: {', '.join(actual)})",
                                  source=self.masked, construct=DB_CONSTRUCT)
            db_columns.append(found)
        table = BoundTable(rel, db_name, tuple(db_columns))
        self._cache[key] = table
        return table


def count_distinct(column: sa.ColumnClause[Any]) -> sa.ColumnElement[int]:
    """``COUNT(DISTINCT column)``."""
    return sa.func.count(sa.distinct(column))
