"""What a schema asks of a witness: CHECK and --bounds predicates, keys, and columns with
finitely many values; :func:`checks_hold` replays every CHECK of the schema in SQLite."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence

from cqsens.ir.exact import Exact
from cqsens.ir.expr import And, Compare, Predicate, Slot, literal_of
from cqsens.ir.schema import Schema
from cqsens.witness.evaluate import Database, Value

__all__ = ["checks_hold", "column_checks", "finite_columns", "keys"]


def _declared_bounds(
    schema: Schema | None,
    value_bounds: Mapping[str, tuple[Exact, Exact]],
    columns: Mapping[str, tuple[str, ...]],
) -> list[tuple[str, int, Exact, Exact]]:
    """(relation, position, low, high) of the schema's CHECKs and of ``--bounds``."""
    relations = schema.relations if schema is not None else ()
    out = [(rel.name, pos, low, high) for rel in relations for pos, low, high in rel.bounds]
    for key, (low, high) in sorted(value_bounds.items()):
        table, _, column = key.partition(".")
        names = {r.lower(): (r, cols) for r, cols in columns.items()}
        if table in names:
            relation, cols = names[table]
            lowered = [c.lower() for c in cols]
            if column in lowered:
                out.append((relation, lowered.index(column), low, high))
    return out


def column_checks(
    schema: Schema | None,
    *,
    value_bounds: Mapping[str, tuple[Exact, Exact]] | None = None,
    columns: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[tuple[str, int], list[Predicate]]:
    """The schema's CHECK bounds, its CHECKs over one column (``IN`` lists, ``LIKE``, ...)
    and the ``--bounds`` ranges as predicates over ``Slot(0)`` that every value of a
    witness's column must meet."""
    out: dict[tuple[str, int], list[Predicate]] = {}
    for rel in schema.relations if schema is not None else ():
        for pos, predicate in rel.column_checks:
            if predicate not in out.setdefault((rel.name, pos), []):
                out[(rel.name, pos)].append(predicate)
    for rel_name, pos, low, high in _declared_bounds(schema, value_bounds or {}, columns or {}):
        parts: list[Predicate] = []
        if low != -math.inf:
            parts.append(Compare(">=", Slot(0), literal_of(low)))
        if high != math.inf:
            parts.append(Compare("<=", Slot(0), literal_of(high)))
        if parts:
            check = parts[0] if len(parts) == 1 else And(tuple(parts))
            if check not in out.setdefault((rel_name, pos), []):
                out[(rel_name, pos)].append(check)
    return out


_INTEGER_TYPES = ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "SERIAL",
                  "BIGSERIAL", "BOOLEAN", "BOOL")


def finite_columns(
    schema: Schema | None,
    *,
    value_bounds: Mapping[str, tuple[Exact, Exact]] | None = None,
    columns: Mapping[str, tuple[str, ...]] | None = None,
) -> set[tuple[str, int]]:
    """Columns with finitely many legal values: a finite domain (``CHECK (c IN ...)``), or
    integer (or untyped) with a two-sided CHECK or ``--bounds`` range."""
    out: set[tuple[str, int]] = {
        (rel.name, pos) for rel in (schema.relations if schema is not None else ())
        for pos in range(len(rel.columns)) if rel.domain(pos) is not None}
    for rel_name, pos, low, high in _declared_bounds(schema, value_bounds or {}, columns or {}):
        rel = schema.find(rel_name) if schema is not None else None
        types = rel.types if rel is not None else ()
        kind = (types[pos] if pos < len(types) else "").upper().split("(")[0].strip()
        if low > -math.inf and high < math.inf and (not kind or kind in _INTEGER_TYPES):
            out.add((rel_name, pos))
    return out


def keys(schema: Schema | None) -> dict[str, tuple[tuple[int, ...], ...]]:
    """Relation → its keys (primary, unique, composite), each a tuple of positions: no two
    rows of a witness may agree on one."""
    out: dict[str, tuple[tuple[int, ...], ...]] = {}
    for rel in schema.relations if schema is not None else ():
        found = {tuple(sorted(k)) for k in (*((k,) for k in rel.keys), *rel.composite_keys)}
        if rel.primary_key:
            found.add(tuple(sorted(rel.primary_key)))
        if found:
            out[rel.name] = tuple(sorted(found))
    return out


class _RowChecks(threading.local):
    """One in-memory SQLite database per thread with a table per (columns, CHECKs)
    signature, and what each row gave: a CHECK is a deterministic expression over one
    row (SQLite allows neither subqueries nor non-deterministic functions in one), so a
    row that passed once passes again."""

    def __init__(self) -> None:
        self.conn: sqlite3.Connection | None = None
        self.tables: dict[tuple[str, ...], str | None] = {}
        self.memo: dict[tuple[str, tuple[tuple[str, Value], ...]], bool] = {}


_ROWS = _RowChecks()
#: Rows remembered per thread before the memory starts afresh.
_MEMO = 200_000


def _table(signature: tuple[str, ...]) -> str | None:
    """The table of a signature (created once); None when SQLite refuses its CHECKs."""
    if signature in _ROWS.tables:
        return _ROWS.tables[signature]
    if _ROWS.conn is None:
        _ROWS.conn = sqlite3.connect(":memory:", isolation_level=None)
    name: str | None = f"t{len(_ROWS.tables)}"
    try:
        _ROWS.conn.execute(f"CREATE TABLE {name} ({', '.join(signature)})")
    except sqlite3.Error:
        name = None
    _ROWS.tables[signature] = name
    return name


def _typed(row: Sequence[Value]) -> tuple[tuple[str, Value], ...]:
    return tuple((type(v).__name__, v) for v in row)  # 1, 1.0 and True are not one value


def _rows_hold(signature: tuple[str, ...], rows: Iterable[Sequence[Value]]) -> bool:
    """Whether SQLite accepts each of ``rows`` into a table of ``signature``.

    The rows not remembered are first inserted together (one statement, rolled back):
    when SQLite accepts them all, each row passes alone too (into the empty table: a
    CHECK or NOT NULL reads one row, and a key cannot clash with no other row);
    otherwise each is tried alone.
    """
    joined = "\0".join(signature)
    memo = _ROWS.memo
    new = []
    for row in rows:
        known = memo.get((joined, _typed(row)))
        if known is False:
            return False
        if known is None:
            new.append(row)
    if len(new) > 1 and _insert(signature, new):
        if len(memo) > _MEMO:
            memo.clear()
        for row in new:
            memo[(joined, _typed(row))] = True
        return True
    return all(_row_holds(signature, row, joined) for row in new)


def _insert(signature: tuple[str, ...], rows: Sequence[Sequence[Value]]) -> bool:
    """Whether SQLite accepts ``rows`` into a table of ``signature`` (all, or False)."""
    name = _table(signature)
    conn = _ROWS.conn
    if name is None or conn is None:
        return False
    ok = True
    conn.execute("SAVEPOINT row_check")
    try:
        conn.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in rows[0])})",
                         [tuple(row) for row in rows])
    except sqlite3.Error:
        ok = False
    finally:
        conn.execute("ROLLBACK TO row_check")
        conn.execute("RELEASE row_check")
    return ok


def _row_holds(signature: tuple[str, ...], row: Sequence[Value], joined: str = "") -> bool:
    """Whether SQLite accepts ``row`` into a table of ``signature`` (its CHECKs hold)."""
    key = (joined or "\0".join(signature), _typed(row))
    if key in _ROWS.memo:
        return _ROWS.memo[key]
    name = _table(signature)
    ok = name is not None
    if name is not None and _ROWS.conn is not None:
        conn = _ROWS.conn
        conn.execute("SAVEPOINT row_check")
        try:
            conn.execute(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in row)})",
                         tuple(row))
        except sqlite3.Error:
            ok = False
        finally:
            conn.execute("ROLLBACK TO row_check")
            conn.execute("RELEASE row_check")
    if len(_ROWS.memo) > _MEMO:
        _ROWS.memo.clear()
    _ROWS.memo[key] = ok
    return ok


def checks_hold(db: Database, schema: Schema | None) -> bool:
    """Whether every row of ``db`` meets every CHECK of ``schema``, as SQLite decides it.

    Each table of the schema that ``db`` holds is created in an in-memory SQLite
    database with its declared types and the text of all its CHECKs (the same
    clauses a written witness declares), and its rows are inserted, one at a time (a
    CHECK reads one row; each row's answer is remembered).  A CHECK that fails, or
    that SQLite cannot evaluate, makes the answer False: a witness must be loadable
    into the user's own schema.
    """
    if schema is None:
        return True
    for relation, rows in db.rows.items():
        table = schema.find(relation)
        if table is None or not table.checks or not rows:
            continue
        signature = (*db.column_defs(relation), *(f"CHECK ({c})" for c in table.checks))
        if not _rows_hold(signature, rows):
            return False
    return True
