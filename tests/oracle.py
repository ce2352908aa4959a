"""Brute-force sensitivity on concrete databases, evaluated in SQLite.

For a database A satisfying Σ, every single-row move — adding a row t of the
small domain with A ∪ {t} still in C_Σ, or removing a row of A — is evaluated
for real, and the largest change of the count is returned.  It is a lower
bound on the global sensitivity, so it must never exceed a sound upper bound.
"""

from __future__ import annotations

import functools
import itertools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from cqsens.ir.cq import CQ
from cqsens.ir.dependencies import Sigma, satisfies
from cqsens.witness.evaluate import Database, connect, cq_sql, quote_ident
from tests.strategies import DOMAIN


def local_sensitivity(
    cq: CQ,
    relations: dict[str, int],
    columns: dict[str, tuple[str, ...]],
    db: dict[str, set[tuple[object, ...]]],
    sigma: Sigma,
    *,
    max_moves: int = 400,
) -> tuple[int, int]:
    """(largest observed |#Q(A ∪ {t}) − #Q(A)| over single-row moves, moves tried)."""
    conn = connect(Database(columns, {r: frozenset(rows) for r, rows in db.items()}))
    sql = cq_sql(cq, columns)
    base = conn.execute(sql).fetchone()[0]
    best, tried = 0, 0
    for rel, arity in sorted(relations.items()):
        table = quote_ident(rel)
        marks = ", ".join("?" for _ in range(arity))
        conds = " AND ".join(f"{quote_ident(c)} IS ?" for c in columns[rel])
        candidates = list(itertools.product(DOMAIN, repeat=arity))
        for row in candidates:
            if tried >= max_moves:
                return best, tried
            present = row in db[rel]
            if not present:
                db[rel].add(row)
                ok = satisfies(db, sigma)
                db[rel].discard(row)
                if not ok:
                    continue
                conn.execute(f"INSERT INTO {table} VALUES ({marks})", row)
                value = conn.execute(sql).fetchone()[0]
                conn.execute(f"DELETE FROM {table} WHERE {conds}", row)
            else:
                conn.execute(f"DELETE FROM {table} WHERE {conds}", row)
                value = conn.execute(sql).fetchone()[0]
                conn.execute(f"INSERT INTO {table} VALUES ({marks})", row)
            tried += 1
            best = max(best, abs(value - base))
    return best, tried




# ----------------------------------------------------------------------------- SQL statements

Rows = dict[str, list[tuple[object, ...]]]
Released = dict[tuple[object, ...], list[float]]


def released(ddl: str, statements: list[str], db: Rows) -> Released:
    """The vector the statements release on ``db`` (tables as bags), run in SQLite.

    Result columns whose names start with ``g`` are the group key; the others are
    released values.  Several statements are released side by side (their keys
    are tagged with the statement's number).  The tables of ``ddl`` are created once
    per process (:func:`tables_of`); ``db``'s rows are inserted in a
    transaction that is rolled back afterwards, so each call starts from the tables
    as ``ddl`` left them.
    """
    out: Released = {}
    with tables_of(ddl) as conn:
        for name, rows in db.items():
            if rows:
                marks = ", ".join("?" for _ in rows[0])
                conn.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
        for index, sql in enumerate(statements):
            cursor = conn.execute(sql)
            groups = sum(1 for d in cursor.description if d[0].lower().startswith("g"))
            for row in cursor.fetchall():
                key = (index, *row[:groups])
                assert key not in out, f"two rows for group {key} of {sql}"
                out[key] = [float(v or 0) for v in row[groups:]]
    return out


@contextmanager
def tables_of(ddl: str) -> Iterator[sqlite3.Connection]:
    """A SQLite connection whose tables are those of ``ddl`` as ``ddl`` left them; what the
    caller inserts is rolled back when the block ends."""
    conn = _schema_connection(ddl)
    try:
        yield conn
    finally:
        conn.rollback()


@functools.cache
def _schema_connection(ddl: str) -> sqlite3.Connection:
    """An in-memory SQLite database holding the tables of ``ddl`` (one per DDL text and
    process: creating it for every neighbour cost more than evaluating the neighbour)."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(ddl)
    conn.commit()
    return conn


def _distance(x: Released, y: Released) -> tuple[float, float]:
    width = max((len(v) for v in [*x.values(), *y.values()]), default=0)
    zero = [0.0] * width
    diffs = [abs(a - b) for g in set(x) | set(y)
             for a, b in zip(x.get(g, zero), y.get(g, zero), strict=True)]
    return sum(diffs), sum(d * d for d in diffs) ** 0.5


def sql_sensitivity(
    ddl: str,
    statements: list[str],
    db: Rows,
    candidates: Rows,
    ok: Callable[[Rows], bool],
    *,
    neighbor: str = "add-remove",
) -> tuple[float, float]:
    """(largest ℓ1, largest ℓ2) change of the released vector over every neighbour of ``db``.

    Add-remove: each row removed (one copy), each candidate row added; substitute:
    each row replaced by each candidate row of its table.  A neighbour must satisfy ``ok``.
    """
    base = released(ddl, statements, db)
    neighbours: list[Rows] = []
    for name, rows in db.items():
        for i in range(len(rows)):
            smaller = {**db, name: rows[:i] + rows[i + 1:]}
            if neighbor == "add-remove":
                neighbours.append(smaller)
                continue
            for row in candidates.get(name, []):  # the row changed in place
                neighbours.append({**smaller, name: [*smaller[name], row]})
        if neighbor == "add-remove":
            for row in candidates.get(name, []):
                neighbours.append({**db, name: [*rows, row]})
    best1 = best2 = 0.0
    for moved in neighbours:
        if not ok(moved):
            continue
        d1, d2 = _distance(base, released(ddl, statements, moved))
        best1, best2 = max(best1, d1), max(best2, d2)
    return best1, best2
