"""Witnesses for an aggregate over per-person groups (docs/rules.md, rule person-groups).

A statement over a derived table grouped by the person's key (TPC-H q13: customers
by their number of orders) is analysed over a table ``d`` of one row per person;
a witness must still be two databases of the user's schema, one person apart.
:func:`per_person_witness` tries small persons: the unit's row alone (a customer
without orders, whom an outer join still counts), then the unit's row with one
row of each table that references it directly.  Each pair is completed with the
rows the foreign keys reference (:func:`~cqsens.witness.references.complete`,
identical in both databases), checked against everything declared (keys, foreign
keys, CHECKs, Σ), and the user's statement is run on both in SQLite; the change
of the released vector is the lower bound proven.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from cqsens.frontend.sqlgen import sqlite_query
from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.expr import Predicate
from cqsens.ir.schema import Relation, Schema
from cqsens.witness.aggregate import released_pair, show_released
from cqsens.witness.evaluate import Database, Value, affinity_value
from cqsens.witness.person import PersonWitness
from cqsens.witness.references import complete, declared_clauses, references_hold
from cqsens.witness.values import NoValue, Values

__all__ = ["per_person_witness"]

Row = tuple[Value, ...]


def per_person_witness(
    query: AggregateQuery, sql: str, dialect: str | None, *, schema: Schema, unit: str,
    unit_text: str, column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
    valid: Callable[[Database], bool],
) -> PersonWitness | None:
    """Two databases one small person apart on which ``sql`` releases different values,
    the largest change found, or None.

    Parameters
    ----------
    query : AggregateQuery
        The statement as analysed over the per-person table: its aggregates and group
        columns name the released vector's entries.
    sql, dialect : str
        The user's statement, run on both databases (in SQLite's syntax).
    schema : Schema
        The user's schema.
    unit, unit_text : str
        The unit table, and the unit as the analysis shows it (``customer(c_custkey)``).
    column_checks : mapping
        Each column's CHECKs and ``--bounds`` ranges (predicates over ``Slot(0)``).
    valid : callable
        Whether a database meets everything declared but the foreign keys (checked here).
    """
    own = sqlite_query(sql, dialect)
    table = schema.find(unit)
    if own is None or table is None:
        return None
    base = Database({r.name: r.columns for r in schema.relations},
                    {r.name: frozenset() for r in schema.relations},
                    {r.name: r.types for r in schema.relations})
    best: PersonWitness | None = None
    for person in _persons(schema, table, column_checks):
        found = _tried(query, own, base, person, schema, column_checks, valid)
        if found is not None and (best is None or found.change > best.change):
            best = found
    if best is None:
        return None
    return PersonWitness(
        best.database, best.relation, best.row, 0, 0,
        "one person with the fewest rows: " + ("its unit row alone" if len(best.added) == 1
                                                else "its unit row and one row of each "
                                                "table that references it"),
        added=best.added, unit=unit_text, change=best.change, before=best.before,
        after_text=best.after_text, query_sql=own,
        constraints=declared_clauses(best.after, schema))


def _persons(schema: Schema, table: Relation,
             checks: Mapping[tuple[str, int], Sequence[Predicate]]) -> list[list[tuple[str, Row]]]:
    """The unit's row alone, then with one row of each table referencing it directly."""
    conn = sqlite3.connect(":memory:")
    try:
        values = Values(CQ((), frozenset()), conn)
        unit_row = _fresh_row(table, {}, values, checks)
        if unit_row is None:
            return []
        out = [[(table.name, unit_row)]]
        children: list[tuple[str, Row]] = []
        for relation, fk, target in schema.foreign_keys():
            if target.name.lower() != table.name.lower() or relation.name == table.name:
                continue
            given = {c: unit_row[p] for c, p in zip(fk.columns, fk.referenced, strict=True)}
            row = _fresh_row(relation, given, values, checks)
            if row is not None:
                children.append((relation.name, row))
        if children:
            out.append([(table.name, unit_row), *children])
        return out
    finally:
        conn.close()


def _fresh_row(table: Relation, given: Mapping[int, Value], values: Values,
               checks: Mapping[tuple[str, int], Sequence[Predicate]]) -> Row | None:
    out: list[Value] = []
    for p, _ in enumerate(table.columns):
        if p in given:
            out.append(given[p])
            continue
        declared = table.types[p] if p < len(table.types) else ""
        try:
            value = values.fresh(checks.get((table.name, p), ()))
        except NoValue:
            return None
        if isinstance(value, (int, float)) and any(
                t in declared.upper() for t in ("CHAR", "TEXT", "CLOB")):
            value = f"v{value}"
        out.append(affinity_value(value, declared))
    return tuple(out)


def _tried(query: AggregateQuery, sql: str, base: Database, person: list[tuple[str, Row]],
           schema: Schema, checks: Mapping[tuple[str, int], Sequence[Predicate]],
           valid: Callable[[Database], bool]) -> PersonWitness | None:
    """The pair for ``person`` (completed, checked, run), or None."""
    full = base
    for relation, row in person:
        full = full.with_row(relation, row)
    full = complete(full, [], schema=schema, column_checks=checks) or base
    smaller = full
    for relation, row in person:
        smaller = smaller.without_row(relation, row)
    if full is base or not all(references_hold(db, schema) and valid(db)
                               for db in (smaller, full)):
        return None
    pair = released_pair(query, smaller, full, sql)
    if pair is None or pair[2][0] == 0:
        return None
    change: Fraction = pair[2][0]
    relation, row = person[0]
    return PersonWitness(smaller, relation, row, 0, 0, "", added=tuple(person), change=change,
                         before=show_released(pair[0]), after_text=show_released(pair[1]))
