"""Brute-force sensitivity on concrete databases, evaluated in SQLite.

For a database A satisfying Σ, every single-row move — adding a row t of the
small domain with A ∪ {t} still in C_Σ, or removing a row of A — is evaluated
for real, and the largest change of the count is returned.  It is a lower
bound on the global sensitivity, so it must never exceed a sound upper bound.
"""

from __future__ import annotations

import itertools

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


