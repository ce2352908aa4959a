"""What a release relies on, checked in the database before any noise is drawn.

A sensitivity bound is only as good as the constraints it used: a patient with
45 visits where ``visits[patient_id->*]<=40`` was declared is protected by
noise calibrated for 40, which is not differentially private for that
patient.  :func:`broken_constraints` runs, inside the release's own read-only
transaction and before the query, one check per constraint the analysis may
have used over the tables the query reads:

* every declared dependency ``R[i->j]<=k`` (``GROUP BY i HAVING COUNT(DISTINCT
  j) > k``, ``COUNT(*)`` for ``R[i->*]<=k``);
* every key: no two rows share a PRIMARY KEY or non-NULL UNIQUE value;
* every foreign key of those tables and of the tables they reference;
* every ``NOT NULL`` column, every ``CHECK`` (as written, ``IN`` lists
  included) and every ``--bounds`` range (one scan per table for all three).

Only the names of the broken constraints leave this module: no count, no
value, nothing of the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cqsens.db.catalogue import BoundTable, Catalogue
from cqsens.db.check import ROWS_TARGET, _check_foreign_key, _check_one, dependency_label
from cqsens.ir.dependencies import AnyDependency, Dependency, MultiDependency
from cqsens.ir.exact import Exact, sql_decimal
from cqsens.ir.schema import Relation, Schema

__all__ = ["broken_constraints", "referenced_closure"]


def referenced_closure(schema: Schema, tables: Iterable[str]) -> list[Relation]:
    """``tables`` and every table they reference along foreign keys, in schema order."""
    names = {t.lower() for t in tables}
    changed = True
    while changed:
        changed = False
        for relation in schema.relations:
            if relation.name.lower() not in names:
                continue
            for fk in relation.foreign_keys:
                if fk.table.lower() not in names and schema.find(fk.table) is not None:
                    names.add(fk.table.lower())
                    changed = True
    return [r for r in schema.relations if r.name.lower() in names]


def _literal(value: Exact, toward: int) -> sa.ColumnElement[Any]:
    """``value`` as exact SQL digits (rounded ``toward`` the inside of a range when it has
    no finite decimal text, so the check is never weaker than the bound)."""
    return sa.literal_column(sql_decimal(value, toward=toward))


def _row_checks(table: BoundTable, t: sa.TableClause, ranges: Mapping[int, tuple[Exact, Exact]]
                ) -> list[tuple[str, sa.ColumnElement[bool]]]:
    rel = table.relation
    out: list[tuple[str, sa.ColumnElement[bool]]] = []
    for position in rel.not_null:
        if position in rel.primary_key:
            continue
        column = t.c[table.db_columns[position]]
        out.append((f"{rel.name}.{rel.columns[position]} NOT NULL", column.is_(None)))
    for position, (low, high) in sorted(ranges.items()):
        column = t.c[table.db_columns[position]]
        outside = []
        if low != float("-inf"):
            outside.append(column < _literal(low, 1))
        if high != float("inf"):
            outside.append(column > _literal(high, -1))
        if outside:
            shown = f"{rel.name}.{rel.columns[position]} BETWEEN {low} AND {high}"
            out.append((shown, sa.or_(*outside)))
    for check in rel.checks:  # as written: TRUE or NULL passes, FALSE breaks it
        out.append((f"the CHECK ({check}) of {rel.name}",
                    sa.literal_column(f"NOT ({check})", sa.Boolean)))
    return out


def _ranges(rel: Relation, value_bounds: Mapping[str, tuple[Exact, Exact]]
            ) -> dict[int, tuple[Exact, Exact]]:
    out: dict[int, tuple[Exact, Exact]] = {p: (low, high) for p, low, high in rel.bounds}
    for name, (low, high) in value_bounds.items():
        table, _, column = name.partition(".")
        position = rel.index(column)
        if table.lower() == rel.name.lower() and position is not None:
            if position in out:  # both hold: check each
                old = out[position]
                out[position] = (max(old[0], low), min(old[1], high))
            else:
                out[position] = (low, high)
    return out


def _key_checks(rel: Relation) -> list[AnyDependency]:
    """No two rows share a key: ``R[key->*]<=1`` for the primary key and each UNIQUE key."""
    keys: list[tuple[int, ...]] = []
    if rel.primary_key:
        keys.append(rel.primary_key)
    keys += [(k,) for k in rel.keys] + list(rel.composite_keys)
    out: list[AnyDependency] = []
    for key in dict.fromkeys(keys):
        out.append(Dependency(rel.name, key[0], ROWS_TARGET, 1) if len(key) == 1
                   else MultiDependency(rel.name, key, ROWS_TARGET, 1))
    return out


def broken_constraints(
    conn: Connection,
    schema: Schema,
    *,
    tables: Iterable[str],
    deps: Iterable[AnyDependency],
    value_bounds: Mapping[str, tuple[Exact, Exact]],
    masked: str,
) -> list[str]:
    """The constraints a release relies on that the data break, by name (empty: all hold).

    Parameters
    ----------
    conn : Connection
        The release's connection, inside its read-only transaction.
    schema : Schema
        The declared schema (keys, NOT NULL, CHECK ranges, foreign keys).
    tables : iterable of str
        The tables the query reads.
    deps : iterable of Dependency or MultiDependency
        The dependencies of the analysis (Σ): those of a table the schema does
        not declare, and those a key implies, are not checked on their own.  A
        position past the schema's columns is the hidden row identity of a
        keyless table (``R[a->*]`` targets it).
    value_bounds : mapping
        ``--bounds`` ranges, ``{"table.column": (low, high)}``.
    masked : str
        The database URL with its password masked, for messages.

    Returns
    -------
    list of str
        One line per broken constraint, naming it and nothing of the data.
    """
    catalogue = Catalogue(conn, schema, masked)
    read = referenced_closure(schema, tables)
    read_names = {r.name.lower() for r in read}
    broken: list[str] = []
    implied = set(schema.key_dependencies()) | set(schema.composite_key_dependencies())
    for dep in deps:
        rel = schema.find(dep.relation)
        if rel is None or rel.name.lower() not in read_names or dep in implied:
            continue
        sources = dep.sources if isinstance(dep, MultiDependency) else (dep.i,)
        if any(s >= len(rel.columns) for s in sources):
            continue  # a row identity is a key of its own row
        j = ROWS_TARGET if dep.j >= len(rel.columns) else dep.j
        if j in sources:
            continue
        placed: AnyDependency = (MultiDependency(rel.name, dep.sources, j, dep.k)
                                 if isinstance(dep, MultiDependency)
                                 else Dependency(rel.name, dep.i, j, dep.k))
        if _check_one(conn, catalogue.bind(rel), placed, 0, schema, "").violating:
            broken.append(f"the dependency {dependency_label(placed, schema)}")
    for rel in read:
        table = catalogue.bind(rel)
        for key in _key_checks(rel):
            if _check_one(conn, table, key, 0, schema, "").violating:
                shown = ", ".join(rel.columns[p] for p in
                                  (key.sources if isinstance(key, MultiDependency) else (key.i,)))
                broken.append(f"the key {rel.name}({shown})")
        clause = table.sql()
        checks = _row_checks(table, clause, _ranges(rel, value_bounds))
        if checks:
            sums = [sa.func.sum(sa.case((condition, 1), else_=0)) for _, condition in checks]
            counts = conn.execute(sa.select(*sums).select_from(clause)).one()
            broken += [label for (label, _), n in zip(checks, counts, strict=True)
                       if n and int(n) > 0]
        for fk in rel.foreign_keys:
            target = schema.find(fk.table)
            if target is None:
                continue
            found = _check_foreign_key(conn, table, fk, catalogue.bind(target), 0)
            if not found.ok:
                broken.append(f"the foreign key {found.label}")
    return broken
