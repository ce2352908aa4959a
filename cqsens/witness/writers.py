"""Write a witness: a runnable SQL script, or a SQLite file holding A and A ∪ {t}."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from cqsens.frontend.sqlgen import ColumnRef, predicate_sql
from cqsens.witness.evaluate import Value, quote_ident, sql_literal
from cqsens.witness.model import Witness

__all__ = ["to_sql_script", "write_witness"]


def to_sql_script(witness: Witness, *, title: str = "") -> str:
    """A runnable SQL script: CREATE TABLE, INSERT for A, then the INSERT of t last."""
    lines = [f"-- cqsens witness{': ' + title if title else ''}"]
    lines.append(f"-- #Q(A) = {witness.count_without}")
    lines.append(f"-- #Q(A ∪ {{t}}) = {witness.count_with}   (difference {witness.difference})")
    if witness.growth:
        lines.append("-- growing family: " + ", ".join(f"N={n}: {d}" for n, d in witness.growth))
    for rel, cols in sorted(witness.database.columns.items()):
        parts = witness.database.column_defs(rel)
        parts += [f"CHECK ({predicate_sql(c, [ColumnRef(None, cols[pos])])})"
                  for r, pos, c in witness.checks if r == rel]
        lines.append(f"CREATE TABLE {quote_ident(rel)} ({', '.join(parts)});")
    for rel, rows in witness.database.as_lists().items():
        for row in rows:
            lines.append(_insert(rel, row))
    lines.append(f"-- the added row t (A ∪ {{t}} has count {witness.count_with}):")
    lines.append(_insert(witness.relation, witness.row))
    return "\n".join(lines) + "\n"


def _insert(relation: str, row: Iterable[Value]) -> str:
    return f"INSERT INTO {quote_ident(relation)} VALUES ({', '.join(sql_literal(v) for v in row)});"


def write_witness(witness: Witness, path: str | Path, *, title: str = "") -> None:
    """Write the witness as a SQL script, or for ``.sqlite``/``.db`` a SQLite file
    holding A in the tables and A ∪ {t} in ``<table>_with_t`` copies."""
    target = Path(path)
    if target.suffix in (".sqlite", ".db", ".sqlite3"):
        _write_sqlite(witness, target)
    else:
        target.write_text(to_sql_script(witness, title=title), encoding="utf-8")


def _write_sqlite(witness: Witness, target: Path) -> None:
    """A fresh SQLite file: A, A ∪ {t} as ``<table>_with_t``, and a ``cqsens_witness`` table."""
    if target.exists():
        target.unlink()
    conn = sqlite3.connect(target)
    try:
        full = witness.database.with_row(witness.relation, witness.row)
        for suffix, db in (("", witness.database), ("_with_t", full)):
            for rel, cols in sorted(db.columns.items()):
                name = quote_ident(rel + suffix)
                conn.execute(f"CREATE TABLE {name} ({db.column_sql(rel)})")
                rows = db.rows.get(rel, ())
                if rows:
                    marks = ", ".join("?" for _ in cols)
                    conn.executemany(f"INSERT INTO {name} VALUES ({marks})", list(rows))
        conn.execute("CREATE TABLE cqsens_witness (key TEXT, value TEXT)")
        conn.executemany(
            "INSERT INTO cqsens_witness VALUES (?, ?)",
            [("count_without_t", str(witness.count_without)),
             ("count_with_t", str(witness.count_with)),
             ("added_row", f"{witness.relation}{witness.row!r}"),
             ("summary", witness.summary())],
        )
        conn.commit()
    finally:
        conn.close()
