"""Write a witness: a runnable SQL script, or a SQLite file holding A and A ∪ {t}."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from cqsens.errors import InputError
from cqsens.files import write_atomically, write_text_atomically
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
    holding A in the tables and A ∪ {t} in ``<table>_with_t`` copies.

    The file is written whole to a temporary file beside ``path`` and renamed
    into place (:func:`cqsens.files.write_atomically`), so a failure never
    leaves a half-written file or loses the one that was there.  Whether
    ``path`` may be replaced at all is the caller's decision.

    Raises
    ------
    OSError
        The folder is missing or not writable.
    InputError
        A ``.sqlite``/``.db`` output would need an integer beyond 64 bits.
    """
    target = Path(path)
    if target.suffix in (".sqlite", ".db", ".sqlite3"):
        write_atomically(target, lambda temporary: _write_sqlite(witness, temporary, str(target)))
    else:
        write_text_atomically(target, to_sql_script(witness, title=title))


def _write_sqlite(witness: Witness, target: Path, name: str) -> None:
    """Fill the empty SQLite file ``target`` (written for ``name``): A, A ∪ {t} as
    ``<table>_with_t``, and a ``cqsens_witness`` table."""
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
    except OverflowError as exc:
        raise InputError(f"the witness holds an integer SQLite cannot store ({exc}); "
                         "write a .sql script instead", source=name,
                         construct="-o") from None
    finally:
        conn.close()
