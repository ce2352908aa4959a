"""What a release relies on, checked in the database before any noise is drawn.

A sensitivity bound is only as good as the constraints it used: a patient with
45 visits where ``visits[patient_id->*]<=40`` was declared is protected by
noise calibrated for 40, which is not differentially private for that
patient.  :func:`broken_constraints` runs, inside the release's own read-only
transaction and before the query, one check per constraint the analysis may
have used over the tables the query reads:

* every declared dependency ``R[i->j]<=k`` (``GROUP BY i HAVING COUNT(DISTINCT
  j) > k``, ``COUNT(*)`` for ``R[i->*]<=k``), one GROUP BY for all the dependencies
  and keys of a table with the same source columns;
* every key: no two rows share a PRIMARY KEY or non-NULL UNIQUE value (skipped
  where the database enforces the same key itself);
* every foreign key of those tables and of the tables they reference;
* every ``NOT NULL`` column (the primary key's included: SQLite stores NULL in a
  PRIMARY KEY column that is not ``INTEGER PRIMARY KEY``), every ``CHECK`` (as
  written, ``IN`` lists included) and every ``--bounds`` range (one scan per table
  for all three; in SQLite a range compares the values as numbers, as SUM reads
  them, not as the text a TEXT column may hold);
* in SQLite, whose columns may mix storage classes: no column that a dependency or
  a key groups on holds values of two types (``1`` and ``'1'`` are two groups to a
  GROUP BY but one person to a join), and no foreign key joins two types.

Only the names of the broken constraints leave this module: no count, no
value, nothing of the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cqsens.db.catalogue import BoundTable, Catalogue
from cqsens.db.check import ROWS_TARGET, _check_foreign_key, dependency_label
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


def _row_checks(table: BoundTable, t: sa.TableClause, ranges: Mapping[int, tuple[Exact, Exact]],
                *, numeric: bool = False) -> list[tuple[str, sa.ColumnElement[bool]]]:
    """The per-row checks of one table: NOT NULL (primary key included), ranges, CHECKs;
    ``numeric`` compares a range's values as numbers (SQLite)."""
    rel = table.relation
    out: list[tuple[str, sa.ColumnElement[bool]]] = []
    for position in sorted(set(rel.not_null) | set(rel.primary_key)):
        column = t.c[table.db_columns[position]]
        out.append((f"{rel.name}.{rel.columns[position]} NOT NULL", column.is_(None)))
    for position, (low, high) in sorted(ranges.items()):
        raw = t.c[table.db_columns[position]]
        value: sa.ColumnElement[Any] = sa.cast(raw, sa.Numeric) if numeric else raw
        outside = []
        if low != float("-inf"):
            outside.append(value < _literal(low, 1))
        if high != float("inf"):
            outside.append(value > _literal(high, -1))
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


def _key_checks(rel: Relation, enforced: set[tuple[str, ...]]) -> list[tuple[int, ...]]:
    """The keys to check: the primary key and each UNIQUE key that the database does not
    enforce itself (a PRIMARY KEY or UNIQUE constraint on the same columns)."""
    keys: list[tuple[int, ...]] = []
    if rel.primary_key:
        keys.append(rel.primary_key)
    keys += [(k,) for k in rel.keys] + list(rel.composite_keys)
    return [key for key in dict.fromkeys(keys)
            if tuple(sorted(rel.columns[p].lower() for p in key)) not in enforced]


def _enforced_keys(catalogue: Catalogue, table: BoundTable) -> set[tuple[str, ...]]:
    """The column sets on which the database itself enforces uniqueness."""
    inspector = catalogue.inspector
    out: set[tuple[str, ...]] = set()
    try:
        pk = inspector.get_pk_constraint(table.db_name).get("constrained_columns") or []
        uniques = [u.get("column_names") or [] for u in
                   inspector.get_unique_constraints(table.db_name)]
        indexes = [i.get("column_names") or [] for i in inspector.get_indexes(table.db_name)
                   if i.get("unique")]
    except (NotImplementedError, sa.exc.SQLAlchemyError):
        return out
    found: list[list[Any]] = [list(pk), *(list(u) for u in uniques),
                              *(list(i) for i in indexes)]
    for columns in found:
        if columns and all(isinstance(c, str) for c in columns):
            out.add(tuple(sorted(str(c).lower() for c in columns)))
    return out


def _grouped_checks(conn: Connection, table: BoundTable, sources: tuple[int, ...],
                    targets: list[tuple[int, int]]) -> list[bool]:
    """For each ``(target, k)`` — a column, or -1 for rows — whether some value of
    ``sources`` (none NULL) has more than ``k`` distinct targets (rows): one GROUP BY."""
    t = table.sql()
    cs = [t.c[table.db_columns[i]] for i in sources]
    counts = [sa.func.count() if j == ROWS_TARGET
              else sa.func.count(sa.distinct(t.c[table.db_columns[j]]))
              for j, _ in targets]
    per_value = (sa.select(*(c.label(f"v{n}") for n, c in enumerate(cs)),
                           *(c.label(f"n{m}") for m, c in enumerate(counts)))
                 .where(sa.and_(*(c.is_not(None) for c in cs))).group_by(*cs).subquery("g"))
    summary = sa.select(*(sa.func.coalesce(sa.func.max(per_value.c[f"n{m}"]), 0)
                          for m in range(len(targets)))).select_from(per_value)
    worst = conn.execute(summary).one()
    return [int(w or 0) > k for w, (_, k) in zip(worst, targets, strict=True)]


def _storage_classes(conn: Connection, table: BoundTable, position: int) -> set[str]:
    """The SQLite storage classes of a column's non-NULL values, ``integer`` and ``real``
    as one (``10`` and ``10.0`` are one group and join each other)."""
    t = table.sql()
    column = t.c[table.db_columns[position]]
    found = conn.execute(sa.select(sa.func.typeof(column)).where(column.is_not(None))
                         .distinct()).scalars().all()
    return {"number" if c in ("integer", "real") else str(c) for c in found}


def _mixed_types(conn: Connection, catalogue: Catalogue, schema: Schema, read: list[Relation],
                 grouped_on: Iterable[tuple[str, tuple[int, ...]]]) -> list[str]:
    """SQLite: the grouped columns that hold two storage classes, and the foreign keys
    that join two (a GROUP BY keeps ``1`` and ``'1'`` apart, a join may not)."""
    classes: dict[tuple[str, int], set[str]] = {}

    def of(rel: Relation, position: int) -> set[str]:
        key = (rel.name, position)
        if key not in classes:
            classes[key] = _storage_classes(conn, catalogue.bind(rel), position)
        return classes[key]

    broken: list[str] = []
    for name, sources in grouped_on:
        rel = schema.find(name)
        assert rel is not None
        for position in sources:
            if len(of(rel, position)) > 1:
                broken.append(f"{rel.name}.{rel.columns[position]} holds values of one type")
    for rel in read:
        for fk in rel.foreign_keys:
            target = schema.find(fk.table)
            if target is None:
                continue
            for own, ref in zip(fk.columns, fk.referenced, strict=True):
                if len(of(rel, own) | of(target, ref)) > 1:
                    broken.append(f"the foreign key {rel.describe_foreign_key(fk, target)} "
                                  "joins values of one type")
                    break
    return list(dict.fromkeys(broken))


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
    sqlite = conn.dialect.name == "sqlite"
    read = referenced_closure(schema, tables)
    read_names = {r.name.lower() for r in read}
    broken: list[str] = []
    implied = set(schema.key_dependencies()) | set(schema.composite_key_dependencies())
    # (table, sources) → [(target, k, label)]: one GROUP BY per source columns
    grouped: dict[tuple[str, tuple[int, ...]], list[tuple[int, int, str]]] = {}
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
        grouped.setdefault((rel.name, tuple(sources)), []).append(
            (j, dep.k, f"the dependency {dependency_label(placed, schema)}"))
    for rel in read:
        table = catalogue.bind(rel)
        for key in _key_checks(rel, _enforced_keys(catalogue, table)):
            shown = ", ".join(rel.columns[p] for p in key)
            grouped.setdefault((rel.name, key), []).append(
                (ROWS_TARGET, 1, f"the key {rel.name}({shown})"))
    for (name, sources), checks in grouped.items():
        rel = schema.find(name)
        assert rel is not None
        failed = _grouped_checks(conn, catalogue.bind(rel), sources,
                                 [(j, k) for j, k, _ in checks])
        broken += [label for (_, _, label), bad in zip(checks, failed, strict=True) if bad]
    if sqlite:
        broken += _mixed_types(conn, catalogue, schema, read, grouped)
    for rel in read:
        table = catalogue.bind(rel)
        clause = table.sql()
        row_checks = _row_checks(table, clause, _ranges(rel, value_bounds), numeric=sqlite)
        if row_checks:
            sums = [sa.func.sum(sa.case((condition, 1), else_=0))
                    for _, condition in row_checks]
            counts = conn.execute(sa.select(*sums).select_from(clause)).one()
            broken += [label for (label, _), n in zip(row_checks, counts, strict=True)
                       if n and int(n) > 0]
        for fk in rel.foreign_keys:
            target = schema.find(fk.table)
            if target is None:
                continue
            found = _check_foreign_key(conn, table, fk, catalogue.bind(target), 0)
            if not found.ok:
                broken.append(f"the foreign key {found.label}")
    return broken
