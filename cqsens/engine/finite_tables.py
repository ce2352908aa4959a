"""Tables with finitely many rows: a key column whose CHECKs admit finitely many values.

A table whose key column (``PRIMARY KEY``, or ``UNIQUE`` and ``NOT NULL``) takes at
most ``N`` values holds at most ``N`` rows, so any column of it takes at most ``N``
values per value of any other: every ``T[i->j]<=N`` holds on every database of the
schema (docs/rules.md, rule finite-tables).  The values are those of an ``IN`` list
(rule finite-domains).  A ``CHECK`` range gives none: SQLite stores ``1.5`` in an
``INT PRIMARY KEY`` column (only ``INTEGER PRIMARY KEY``, its row id, holds integers
only, and the schema reader spells both ``INT``).
"""

from __future__ import annotations

from cqsens.ir.cq import AggregateQuery
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Relation, Schema

__all__ = ["finite_table_dependencies", "finite_table_notes", "table_rows"]


def table_rows(rel: Relation) -> int | None:
    """The most rows ``rel`` can hold by its keys' finite domains, or None.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> s = schema_from_ddl("CREATE TABLE t (k INTEGER PRIMARY KEY CHECK (k IN (1, 2)));"
    ...                     "CREATE TABLE u (k INT PRIMARY KEY CHECK (k BETWEEN 1 AND 2));"
    ...                     "CREATE TABLE v (k TEXT UNIQUE CHECK (k IN ('a', 'b', 'c')));"
    ...                     "CREATE TABLE w (k TEXT UNIQUE NOT NULL CHECK (k IN ('a', 'b')));")
    >>> [table_rows(r) for r in s.relations]
    [2, None, None, 2]
    """
    keys = {*rel.keys, *((rel.primary_key[0],) if len(rel.primary_key) == 1 else ())}
    best: int | None = None
    for column in sorted(keys):
        if rel.nullable(column):
            continue  # NULL may repeat in a UNIQUE column
        domain = rel.domain(column)
        if domain is not None and (best is None or len(domain) < best):
            best = len(domain)
    return best


def finite_table_dependencies(query: AggregateQuery, schema: Schema | None) -> list[Dependency]:
    """``T[i->j]<=N`` for every table ``T`` of the query with at most ``N`` rows.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> from cqsens.frontend.load import load_query
    >>> s = schema_from_ddl("CREATE TABLE t (k INTEGER PRIMARY KEY CHECK (k IN (1, 2)), "
    ...                     "name TEXT)")
    >>> [str(d) for d in finite_table_dependencies(load_query("SELECT COUNT(*) FROM t",
    ...                                                        schema=s), s)]
    ['t[1->2]<=2', 't[2->1]<=2']
    """
    if schema is None:
        return []
    out: list[Dependency] = []
    for relation, arity in sorted(query.cq.relations().items()):
        rel = schema.find(relation)
        rows = table_rows(rel) if rel is not None else None
        if rel is None or rows is None:
            continue
        out += [Dependency(rel.name, i, j, max(rows, 1))
                for i in range(arity) for j in range(arity) if i != j]
    return out


def finite_table_notes(query: AggregateQuery, schema: Schema | None) -> list[str]:
    """One sentence per table of the query that holds finitely many rows."""
    if schema is None:
        return []
    out = []
    for relation in sorted(query.cq.relations()):
        rel = schema.find(relation)
        rows = table_rows(rel) if rel is not None else None
        if rel is not None and rows is not None:
            out.append(f"{rel.name} holds at most {rows} row(s): a key column of it takes "
                       f"the {rows} value(s) of its CHECK, so every column of it has at most "
                       f"{rows} value(s) (docs/rules.md, rule finite-tables)")
    return out
