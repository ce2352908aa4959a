"""Write a witness: a runnable SQL script, or two SQLite files holding A and A ∪ {t}."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from cqsens.errors import InputError
from cqsens.files import write_atomically, write_text_atomically
from cqsens.frontend.sqlgen import ColumnRef, predicate_sql
from cqsens.witness.aggregate import AggregateWitness
from cqsens.witness.evaluate import Database, Value, quote_ident, sql_literal
from cqsens.witness.model import Witness
from cqsens.witness.person import PersonWitness

__all__ = ["companion_path", "is_database_path", "replay_sql", "replayed", "to_sql_script",
           "write_witness"]


def _column_defs(witness: Witness, relation: str) -> list[str]:
    """The table's own columns (typed as declared) and its CHECKs, without a row identity."""
    hidden = {p for r, p in witness.hidden if r == relation}
    every = witness.database.column_defs(relation)
    columns = witness.database.columns[relation]
    defs = [d for i, d in enumerate(every) if i not in hidden]
    defs += [f"CHECK ({predicate_sql(c, [ColumnRef(None, columns[pos])])})"
             for r, pos, c in witness.checks if r == relation and pos not in hidden]
    defs += [clause for r, clause in witness.constraints if r == relation]
    return defs


def replay_sql(witness: Witness) -> str:
    """The query the written witness runs: ``witness.query_sql`` on the tables' own
    columns.  A generated counting SELECT that reads a hidden row identity (a table
    without a key counts each copy of a row) reads SQLite's ``rowid`` instead, which
    tells the copies apart in the written tables just as the identity did."""
    query = witness.query_sql.strip().rstrip(";")
    shown = {c for r in witness.database.columns for c in witness.shown_columns(r)}
    for relation, position in witness.hidden:
        name = witness.database.columns[relation][position]
        if name not in shown:
            query = query.replace(f".{quote_ident(name)}", ".rowid")
    return query


def _fill(conn: sqlite3.Connection, witness: Witness, db: Database) -> None:
    """Create the witness's tables in ``conn`` (own columns, CHECKs, keys) holding ``db``."""
    tables = replace(witness, database=db).shown_tables()
    for rel in _table_order(witness):
        rows = tables.get(rel, [])
        conn.execute(f"CREATE TABLE {quote_ident(rel)} ({', '.join(_column_defs(witness, rel))})")
        if rows:
            marks = ", ".join("?" for _ in rows[0])
            conn.executemany(f"INSERT INTO {quote_ident(rel)} VALUES ({marks})", rows)


def replayed(witness: Witness, db: Database, sql: str | None = None) -> list[tuple[Value, ...]]:
    """The rows ``sql`` (default: :func:`replay_sql`) prints on ``db`` written as the
    witness writes it: the tables' own columns, without a row identity.

    Raises
    ------
    sqlite3.Error
        The query does not run on the written tables.
    """
    conn = sqlite3.connect(":memory:")
    try:
        _fill(conn, witness, db)
        return list(conn.execute(replay_sql(witness) if sql is None else sql).fetchall())
    finally:
        conn.close()


def _cell(value: object) -> str:
    """A value as the sqlite3 shell prints it (list mode)."""
    if value is None:
        return ""
    if isinstance(value, float):
        out = f"{value:.15g}"
        return out if any(c in out for c in ".eni") else out + ".0"
    return str(value)


def _printed(witness: Witness, db: Database) -> str:
    """What the replayed query prints on ``db``, for a comment of the script."""
    try:
        rows = replayed(witness, db)
    except sqlite3.Error:
        return "an error in SQLite"
    if not rows:
        return "no row"
    shown = ["|".join(_cell(v) for v in row) for row in rows[:5]]
    return ", ".join(shown) + (f", … ({len(rows)} rows)" if len(rows) > 5 else "")


def _table_order(witness: Witness) -> list[str]:
    """The witness's tables, each after the tables its foreign keys reference (then by
    name), so that the script creates and fills referenced tables first."""
    names = sorted(witness.database.columns)
    after = {r: {t for o, clause in witness.constraints if o == r for t in names
                 if t != r and f"REFERENCES {quote_ident(t)} (" in clause} for r in names}
    out: list[str] = []
    while len(out) < len(names):
        ready = [r for r in names if r not in out and after[r] <= set(out)]
        out += ready or [r for r in names if r not in out]  # a cycle: declaration order
    return out


def _aggregate_script(witness: AggregateWitness, title: str) -> str:
    """B, the query, then B' in place of B, the query again: both released values."""
    lines = [f"-- cqsens witness: {title}" if title else "-- cqsens witness"]
    lines.append(f"-- {witness.summary()}")
    for rel in _table_order(witness):
        lines.append(f"CREATE TABLE {quote_ident(rel)} ({', '.join(_column_defs(witness, rel))});")
    query = replay_sql(witness)
    for name, db in (("B", witness.database), ("B' (the neighbour)", witness.after)):
        shown = replace(witness, database=db)
        if name != "B":
            lines.append(f"-- {name}: the same tables, one row apart")
            lines += [f"DELETE FROM {quote_ident(rel)};" for rel in reversed(_table_order(shown))]
        tables = shown.shown_tables()
        for rel in _table_order(shown):
            lines += [_insert(rel, row) for row in tables.get(rel, [])]
        if query:
            lines.append(f"-- the query on {name.split(' ')[0]}:")
            lines.append(f"{query};")
    return "\n".join(lines) + "\n"


def _person_script(witness: PersonWitness, title: str) -> str:
    """A, the query, one person's rows (the unit row first), the query again."""
    lines = [f"-- cqsens witness{': ' + title if title else ''}", f"-- {witness.summary()}"]
    for rel in _table_order(witness):
        lines.append(f"CREATE TABLE {quote_ident(rel)} ({', '.join(_column_defs(witness, rel))});")
    tables = witness.shown_tables()
    for rel in _table_order(witness):
        lines += [_insert(rel, row) for row in tables.get(rel, [])]
    query = replay_sql(witness)
    if query:
        lines += [f"-- the query on A (prints {witness.before}):", f"{query};"]
    lines.append(f"-- one person ({witness.unit}): its row and every row that references it")
    order = {r: n for n, r in enumerate(_table_order(witness))}
    for rel, row in sorted(witness.added, key=lambda x: order.get(x[0], len(order))):
        lines.append(_insert(rel, witness._visible(rel, row)))
    if query:
        lines += [f"-- the query with the person (prints {witness.after_text}):", f"{query};"]
    return "\n".join(lines) + "\n"


def to_sql_script(witness: Witness, *, title: str = "") -> str:
    """A runnable SQL script: the tables, the rows of A, the query, the row t, the query again.

    ``sqlite3 :memory: < w.sql`` prints the count on A, then on A ∪ {t}.  Tables
    without a key hold their rows as a bag: equal rows are inserted as often as
    they occur.
    """
    if isinstance(witness, AggregateWitness):
        return _aggregate_script(witness, title)
    if isinstance(witness, PersonWitness):
        return _person_script(witness, title)
    lines = [f"-- cqsens witness{': ' + title if title else ''}"]
    lines.append(f"-- #Q(A) = {witness.count_without}")
    lines.append(f"-- #Q(A ∪ {{t}}) = {witness.count_with}   (difference {witness.difference})")
    if witness.growth:
        lines.append("-- growing family: " + ", ".join(f"N={n}: {d}" for n, d in witness.growth))
    for rel in _table_order(witness):
        lines.append(f"CREATE TABLE {quote_ident(rel)} ({', '.join(_column_defs(witness, rel))});")
    tables = witness.shown_tables()
    for rel in _table_order(witness):
        for row in tables.get(rel, []):
            lines.append(_insert(rel, row))
    query = replay_sql(witness)
    full = witness.database.with_row(witness.relation, witness.row)
    if query:
        lines.append(f"-- the query on A (prints {_printed(witness, witness.database)}):")
        lines.append(f"{query};")
    lines.append(f"-- the added row t (A ∪ {{t}} has count {witness.count_with}):")
    lines.append(_insert(witness.relation, witness.shown_row))
    if query:
        lines.append(f"-- the query on A ∪ {{t}} (prints {_printed(witness, full)}):")
        lines.append(f"{query};")
    return "\n".join(lines) + "\n"


def _insert(relation: str, row: Iterable[Value]) -> str:
    return f"INSERT INTO {quote_ident(relation)} VALUES ({', '.join(sql_literal(v) for v in row)});"


def companion_path(path: str | Path) -> Path:
    """Where a ``.sqlite``/``.db`` witness keeps A ∪ {t}: ``w.sqlite`` → ``w.with_t.sqlite``."""
    target = Path(path)
    return target.with_name(f"{target.stem}.with_t{target.suffix}")


def is_database_path(path: str | Path) -> bool:
    """True for the suffixes written as SQLite files (``.sqlite``, ``.sqlite3``, ``.db``)."""
    return Path(path).suffix in (".sqlite", ".db", ".sqlite3")


def write_witness(witness: Witness, path: str | Path, *, title: str = "") -> None:
    """Write the witness as a SQL script, or as two SQLite files.

    For ``.sqlite``/``.db``/``.sqlite3``, ``path`` holds A and
    :func:`companion_path` holds A ∪ {t}, each with the tables' own columns, so
    the user's query runs unchanged on both; each also has a ``cqsens_witness``
    table with the counts.  Every file is written whole to a temporary file
    beside it and renamed into place (:func:`cqsens.files.write_atomically`).
    Whether a path may be replaced is the caller's decision.

    Raises
    ------
    OSError
        The folder is missing or not writable.
    InputError
        A database output would need an integer beyond 64 bits.
    """
    target = Path(path)
    if is_database_path(target):
        full = (witness.after if isinstance(witness, (AggregateWitness, PersonWitness))
                else witness.database.with_row(witness.relation, witness.row))
        write_atomically(target, lambda tmp: _write_sqlite(witness, witness.database, tmp,
                                                           str(target)))
        second = companion_path(target)
        write_atomically(second, lambda tmp: _write_sqlite(witness, full, tmp, str(second)))
    else:
        write_text_atomically(target, to_sql_script(witness, title=title))


def _write_sqlite(witness: Witness, db: Database, target: Path, name: str) -> None:
    """Fill the empty SQLite file ``target`` (written for ``name``) with ``db`` in the
    tables' own columns (equal rows repeated) and a ``cqsens_witness`` table."""
    conn = sqlite3.connect(target)
    try:
        _fill(conn, witness, db)
        conn.execute("CREATE TABLE cqsens_witness (key TEXT, value TEXT)")
        conn.executemany(
            "INSERT INTO cqsens_witness VALUES (?, ?)",
            [("count_without_t", str(witness.count_without)),
             ("count_with_t", str(witness.count_with)),
             ("added_row", f"{witness.relation}{witness.shown_row!r}"),
             ("query", replay_sql(witness)),
             ("summary", witness.summary())],
        )
        conn.commit()
    except OverflowError as exc:
        raise InputError(f"the witness holds an integer SQLite cannot store ({exc}); "
                         "write a .sql script instead", source=name,
                         construct="-o") from None
    finally:
        conn.close()
