"""Foreign keys in witnesses: every referenced row present, in both databases.

A witness is two databases that must each satisfy everything declared, foreign
keys included (docs/rules.md, rule foreign-keys).  The constructions build the
query's tables only; :func:`complete` adds, to both databases at once, a row
for every key that a row references and no row holds: the referenced columns
take the key, the other columns fresh values that meet the column's CHECK and
``--bounds`` ranges (a further foreign key reuses a row that is there, or gets
a row of its own in the next round).  The caller evaluates the query again on
the completed pair: the added rows may join.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.expr import Predicate
from cqsens.ir.schema import ForeignKey, Schema
from cqsens.witness.evaluate import Database, Value, affinity_value, count_answers, quote_ident
from cqsens.witness.model import Witness
from cqsens.witness.values import NoValue, Values

__all__ = [
    "MAX_ROUNDS", "Reference", "complete", "declared_clauses", "missing_references",
    "references_hold",
    "schema_references", "with_references",
]

MAX_ROUNDS = 8
"""Rounds of completion (the depth of a chain of foreign keys it follows)."""

Reference = tuple[str, ForeignKey]
"""A foreign key of a relation: (referencing relation, key), spelled as the witness's tables."""


def schema_references(schema: Schema | None) -> tuple[Reference, ...]:
    """Every foreign key of the schema."""
    if schema is None:
        return ()
    return tuple((r.name, fk) for r, fk, _ in schema.foreign_keys())


def missing_references(
    rows: Mapping[str, Iterable[tuple[Value, ...]]], references: Sequence[Reference]
) -> list[tuple[str, tuple[int, ...], tuple[Value, ...]]]:
    """(referenced relation, referenced positions, key) of every key that a row
    references and no row of ``rows`` holds, each once."""
    held: dict[tuple[str, tuple[int, ...]], set[tuple[Value, ...]]] = {}
    out: dict[tuple[str, tuple[int, ...], tuple[Value, ...]], None] = {}
    for relation, fk in references:
        index = (fk.table, fk.referenced)
        if index not in held:
            held[index] = {tuple(r[p] for p in fk.referenced) for r in rows.get(fk.table, ())}
        for row in rows.get(relation, ()):
            key = tuple(row[c] for c in fk.columns)
            if key not in held[index]:
                out[(fk.table, fk.referenced, key)] = None
    return list(out)


def complete(
    database: Database,
    extra: Sequence[tuple[str, tuple[Value, ...]]],
    *,
    schema: Schema,
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
    hidden: Mapping[str, int] | None = None,
) -> Database | None:
    """``database`` with the rows that the foreign keys of it and of the ``extra`` rows
    (the row a neighbour adds) reference, or None when that takes more than
    :data:`MAX_ROUNDS` rounds or no value meets a column's checks.

    A key referenced only by an ``extra`` row is added to ``database`` as well, so
    both databases hold it.  A key that only an ``extra`` row holds is not added:
    the caller checks that ``database`` alone keeps its foreign keys.
    """
    references = schema_references(schema)
    if not references:
        return database
    hidden = dict(hidden or {})
    columns = dict(database.columns)
    types = dict(database.types)
    rows: dict[str, dict[tuple[Value, ...], None]] = {
        r: dict.fromkeys(sorted(rs, key=repr)) for r, rs in database.rows.items()}
    every: dict[str, list[tuple[Value, ...]]] = {r: list(rs) for r, rs in rows.items()}
    for relation, row in extra:
        every.setdefault(relation, []).append(row)
    conn = sqlite3.connect(":memory:")
    try:
        values = Values(CQ((), frozenset()), conn)
        values.used |= {v for rs in every.values() for r in rs for v in r}
        for _ in range(MAX_ROUNDS):
            missing = missing_references(every, references)
            if not missing:
                return Database(columns, {r: frozenset(rs) for r, rs in rows.items()}, types)
            for table, positions, key in missing:
                target = schema.find(table)
                if target is None:
                    return None
                name = next((r for r in columns if r.lower() == table.lower()), target.name)
                if name not in columns:
                    columns[name] = target.columns
                    types[name] = target.types
                new: list[Value | None] = [None] * len(columns[name])
                for p, v in zip(positions, key, strict=True):
                    new[p] = v
                reuse = _reused(name, target.foreign_keys, new, every)
                for p in range(len(new)):
                    if new[p] is not None:
                        continue
                    if p in reuse:
                        new[p] = reuse[p]
                        continue
                    if hidden.get(name) == p:
                        new[p] = values.fresh()
                        continue
                    declared = types[name][p] if p < len(types[name]) else ""
                    checks = column_checks.get((name, p), ())
                    try:
                        fresh = values.fresh(checks)
                    except NoValue:  # a small range used up: a value may repeat here (a
                        # key column that repeats fails the caller's validity check)
                        repeat = values.meeting(checks)
                        if repeat is None:
                            return None
                        fresh = repeat
                    new[p] = affinity_value(_typed(fresh, declared), declared)
                done = tuple(v for v in new if v is not None)
                rows.setdefault(name, {})[done] = None
                every.setdefault(name, []).append(done)
        return None
    finally:
        conn.close()


def _reused(name: str, keys: Sequence[ForeignKey], row: Sequence[Value | None],
            every: Mapping[str, Sequence[tuple[Value, ...]]]) -> dict[int, Value]:
    """Values for a new row's foreign-key columns that reference a row already there
    (the row itself for a key into its own table), so that completion ends."""
    out: dict[int, Value] = {}
    for fk in keys:
        if any(row[c] is not None or c in out for c in fk.columns):
            continue
        own = tuple(row[p] for p in fk.referenced)
        if fk.table.lower() == name.lower() and None not in own:
            out.update({c: v for c, v in zip(fk.columns, own, strict=True) if v is not None})
            continue
        target = next((rs for r, rs in every.items() if r.lower() == fk.table.lower() and rs),
                      None)
        if target:
            out.update(zip(fk.columns, (target[0][p] for p in fk.referenced), strict=True))
    return out


def with_references(
    witness: Witness,
    query: AggregateQuery,
    *,
    schema: Schema | None,
    valid: Callable[[Database], bool],
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
) -> Witness | None:
    """The witness with every referenced row present in both databases, evaluated
    again; None when the pair cannot keep the foreign keys (the smaller database
    would need a row with the key of the added one) or no longer differs.

    A witness whose databases need no row is returned as it is.
    """
    if schema is None:
        return witness
    references = schema_references(schema)
    if not references:
        return replace(witness, constraints=declared_clauses(witness.database, schema))
    a, t = witness.database, (witness.relation, witness.row)
    completed = complete(a, [t], schema=schema, column_checks=column_checks,
                         hidden=dict(witness.hidden))
    if completed is None:
        return None
    full = completed.with_row(*t)
    if missing_references(completed.rows, references) or missing_references(
            full.rows, references) or not valid(completed) or not valid(full):
        return None
    clauses = declared_clauses(completed, schema)
    if completed == a:
        return replace(witness, constraints=clauses)
    without, with_t = count_answers(query, completed), count_answers(query, full)
    if with_t - without <= 0:
        return None
    return replace(witness, database=completed, count_without=without, count_with=with_t,
                   constraints=clauses,
                   growth=(), unbounded=False,
                   construction=witness.construction + ", with the rows its foreign keys "
                   "reference")


def declared_clauses(db: Database, schema: Schema) -> tuple[tuple[str, str], ...]:
    """``(relation, 'PRIMARY KEY ("id")')``, ``UNIQUE``, every ``CHECK`` of the schema and
    ``(relation, 'FOREIGN KEY ("uid") REFERENCES "users" ("id")')`` for the tables of
    ``db``, for the written witness: it declares what the schema declares."""
    names = {r.lower(): r for r in db.columns}
    out = []
    for name in sorted(db.columns):
        table = schema.find(name)
        if table is None:
            continue

        def cols(positions: Iterable[int], name: str = name) -> str:
            return ", ".join(quote_ident(db.columns[name][p]) for p in positions)

        out += [(name, f"CHECK ({cols((p,))} IS NOT NULL)") for p in table.not_null
                if p not in table.primary_key and p < len(db.columns[name])]
        out += [(name, f"CHECK ({check})") for check in table.checks]
        if table.primary_key:
            out.append((name, f"PRIMARY KEY ({cols(table.primary_key)})"))
        for key in (*((k,) for k in table.keys), *table.composite_keys):
            if sorted(key) != sorted(table.primary_key):
                out.append((name, f"UNIQUE ({cols(key)})"))
    for referencing, fk in schema_references(schema):
        own, target = names.get(referencing.lower()), names.get(fk.table.lower())
        if own is None or target is None:
            continue
        mine = ", ".join(quote_ident(db.columns[own][c]) for c in fk.columns)
        theirs = ", ".join(quote_ident(db.columns[target][p]) for p in fk.referenced)
        out.append((own, f"FOREIGN KEY ({mine}) REFERENCES {quote_ident(target)} ({theirs})"))
    return tuple(out)


def references_hold(db: Database, schema: Schema | None) -> bool:
    """True when every foreign key of ``db``'s rows finds its row."""
    return not missing_references(db.rows, schema_references(schema))


def _typed(value: Value, declared: str) -> Value:
    """A fresh number in a text column becomes text (``1003`` → ``'v1003'``)."""
    kind = declared.upper()
    if isinstance(value, (int, float)) and any(t in kind for t in ("CHAR", "TEXT", "CLOB")):
        return f"v{value}"
    return value
