"""Reflection: the schema of a live database.

:func:`reflect_schema` reads tables, column order, single-column and
composite keys (``PRIMARY KEY``, ``UNIQUE``, unique indexes), foreign keys and
the value bounds of ``CHECK`` constraints into a :class:`~cqsens.ir.schema.Schema`, so a
query can be analysed against the database it runs on.  The catalogue's SQL
text (types, check constraints) is read by
:func:`cqsens.frontend.ddl.relation_from_catalogue`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cqsens.db.connect import DB_CONSTRUCT, connect
from cqsens.errors import SchemaError
from cqsens.frontend.ddl import relation_from_catalogue
from cqsens.ir.schema import ForeignKey, Relation, Schema
from cqsens.passwords import mask_url

__all__ = ["reflect_schema"]


def _dialect_name(conn: Connection) -> str:
    """The sqlglot dialect of the connection's database."""
    return "postgres" if conn.dialect.name == "postgresql" else conn.dialect.name


def _table_order(conn: Connection) -> dict[str, int]:
    """Creation order of the tables where the catalogue tells it."""
    if conn.dialect.name == "sqlite":
        sql = ("SELECT name FROM sqlite_master WHERE type = 'table' "
               "AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
    elif conn.dialect.name == "postgresql":
        sql = ("SELECT c.relname FROM pg_catalog.pg_class c "
               "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
               "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY c.oid")
    else:  # pragma: no cover - other back ends are refused by the URL check
        return {}
    return {row[0]: n for n, row in enumerate(conn.execute(sa.text(sql)))}


def _type_text(column_type: Any) -> str | None:
    """The SQL text of a reflected column type (None when it has none)."""
    if isinstance(column_type, sa.types.NullType):
        return None
    try:
        return str(column_type)
    except Exception:  # noqa: BLE001 - a type SQLAlchemy cannot render
        return None


def _key_candidates(inspector: Any, table: str) -> list[Sequence[str | None]]:
    """The column lists of the primary key, unique constraints and plain unique indexes."""
    candidates: list[Sequence[str | None]] = []
    pk = inspector.get_pk_constraint(table) or {}
    if pk.get("constrained_columns"):
        candidates.append(pk["constrained_columns"])
    candidates += [u["column_names"] for u in inspector.get_unique_constraints(table)]
    try:
        indexes = inspector.get_indexes(table)
    except NotImplementedError:  # pragma: no cover - both supported back ends have it
        indexes = []
    for ix in indexes:
        options = ix.get("dialect_options") or {}
        partial = any(k.endswith("_where") and v is not None for k, v in options.items())
        if ix.get("unique") and not partial and not ix.get("expressions"):
            candidates.append(ix["column_names"])
    return candidates


def _keys(candidates: list[Sequence[str | None]],
          columns: Sequence[str]) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """Single-column key positions (sorted) and composite keys (first seen first)."""
    lowered = [c.lower() for c in columns]

    def positions(names: Sequence[str | None]) -> tuple[int, ...] | None:
        out = []
        for n in names:
            if n is None or n.lower() not in lowered:
                return None  # an expression index: no column dependency
            out.append(lowered.index(n.lower()))
        return tuple(out)

    keys: set[int] = set()
    composite: list[tuple[int, ...]] = []
    for names in candidates:
        pos = positions(names)
        if pos is None or not pos:
            continue
        if len(pos) == 1:
            keys.add(pos[0])
        elif pos not in composite:
            composite.append(pos)
    return tuple(sorted(keys)), tuple(composite)


def _reflect_relation(inspector: Any, table: str, dialect: str) -> Relation:
    cols = inspector.get_columns(table)
    columns = tuple(str(c["name"]) for c in cols)
    keys, composite = _keys(_key_candidates(inspector, table), columns)
    try:
        checks = [str(c["sqltext"]) for c in inspector.get_check_constraints(table)]
    except NotImplementedError:  # pragma: no cover
        checks = []
    lowered = [c.lower() for c in columns]
    pk = (inspector.get_pk_constraint(table) or {}).get("constrained_columns") or []
    primary = tuple(sorted(lowered.index(str(n).lower()) for n in pk
                           if str(n).lower() in lowered))
    not_null = tuple(i for i, c in enumerate(cols) if not c.get("nullable", True))
    return relation_from_catalogue(
        table,
        columns,
        tuple(_type_text(c["type"]) for c in cols),
        checks,
        keys=keys,
        composite=composite,
        dialect=dialect,
        primary_key=primary,
        not_null=not_null,
    )


def reflect_schema(url: str) -> Schema:
    """Read the schema of a live database.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://user:password@host:port/dbname``.

    Returns
    -------
    Schema
        One relation per table of the default schema (``public`` in
        PostgreSQL), in creation order, with its columns in order, single-column
        keys (``PRIMARY KEY``, ``UNIQUE``, unique indexes that are neither
        partial nor on expressions), composite keys and the value bounds of
        ``CHECK`` constraints.  Its ``source`` is the masked URL.  Names are the
        database's (PostgreSQL's are lower case unless quoted); look them up
        with :meth:`Schema.find`, which ignores case.

    Raises
    ------
    DatabaseError
        Bad URL, unreachable server, failed authentication, unreadable file.
    SchemaError
        The database has no table.
    """
    masked = mask_url(url.strip())
    with connect(url) as conn:
        inspector = sa.inspect(conn)
        names = list(inspector.get_table_names())
        order = _table_order(conn)
        names.sort(key=lambda n: (order.get(n, len(order)), n))
        if not names:
            raise SchemaError("the database has no table", source=masked, construct=DB_CONSTRUCT)
        dialect = _dialect_name(conn)
        relations = tuple(_reflect_relation(inspector, n, dialect) for n in names)
        relations = _with_foreign_keys(inspector, relations)
    return Schema(relations, masked)


def _with_foreign_keys(inspector: Any, relations: tuple[Relation, ...]) -> tuple[Relation, ...]:
    """Each relation with the foreign keys the catalogue declares (one that references a
    table outside the default schema, or columns that are not a key there, is left out:
    SQLite does not check that a referenced column is a key)."""
    by_name = {r.name.lower(): r for r in relations}
    out = []
    for relation in relations:
        found = []
        for fk in inspector.get_foreign_keys(relation.name) or []:
            target = by_name.get(str(fk.get("referred_table") or "").lower())
            if target is None or fk.get("referred_schema"):
                continue
            own = [relation.index(str(c)) for c in fk.get("constrained_columns") or []]
            names = fk.get("referred_columns") or [target.columns[p] for p in target.primary_key]
            referenced = [target.index(str(c)) for c in names]
            if not own or None in own or None in referenced or len(own) != len(referenced):
                continue
            key = tuple(p for p in referenced if p is not None)
            if target.is_key(key):
                found.append(ForeignKey(tuple(p for p in own if p is not None), target.name, key))
        out.append(replace(relation, foreign_keys=tuple(found)) if found else relation)
    return tuple(out)
