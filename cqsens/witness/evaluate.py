"""Evaluate counting queries on concrete databases with SQLite.

A :class:`Database` is a set of rows per relation (set semantics), with the
column names of each relation.  ``count_answers`` runs, in an in-memory
SQLite database, either the user's own SQL (translated to SQLite by the SQL
front end) or a SELECT generated from the CQ: the number of distinct head
tuples.  Both the witnesses and the brute-force test oracle use it.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from cqsens.frontend.sqlgen import ColumnRef, predicate_sql, sqlite_query
from cqsens.ir.cq import CQ, AggregateQuery, Const, Var

__all__ = [
    "Database",
    "affinity_kind",
    "affinity_value",
    "connect",
    "count_answers",
    "counting_sql",
    "cq_sql",
    "quote_ident",
    "scratch",
    "sql_literal",
    "with_affinity",
]

Value = str | int | float


def quote_ident(name: str) -> str:
    """``"name"`` with inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: Value) -> str:
    """A SQL literal for a value."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


@dataclass(frozen=True)
class Database:
    """Rows per relation (a set each) and the column names of every relation."""

    columns: Mapping[str, tuple[str, ...]]
    rows: Mapping[str, frozenset[tuple[Value, ...]]] = field(default_factory=dict)
    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def with_row(self, relation: str, row: tuple[Value, ...]) -> Database:
        """This database plus one row."""
        rows = dict(self.rows)
        rows[relation] = frozenset(rows.get(relation, frozenset()) | {row})
        return Database(self.columns, rows, self.types)

    def without_row(self, relation: str, row: tuple[Value, ...]) -> Database:
        """This database minus one row."""
        rows = dict(self.rows)
        rows[relation] = frozenset(rows.get(relation, frozenset()) - {row})
        return Database(self.columns, rows, self.types)

    def column_defs(self, relation: str) -> list[str]:
        """``['"a" INT', '"b" TEXT']`` (declared types give SQLite's type affinity)."""
        types = self.types.get(relation, ())
        return [
            f"{quote_ident(c)} {types[i]}".rstrip() if i < len(types) else quote_ident(c)
            for i, c in enumerate(self.columns[relation])
        ]

    def column_sql(self, relation: str) -> str:
        """The column definitions of ``relation`` joined for a CREATE TABLE."""
        return ", ".join(self.column_defs(relation))

    def size(self) -> int:
        """Total number of rows."""
        return sum(len(r) for r in self.rows.values())

    def as_lists(self) -> dict[str, list[tuple[Value, ...]]]:
        """Relation → sorted rows (deterministic)."""
        return {r: sorted(rows, key=repr) for r, rows in sorted(self.rows.items())}


@functools.lru_cache(maxsize=256)
def affinity_kind(declared: str) -> str:
    """SQLite's affinity of a declared type as :func:`affinity_value` reads it: ``blob``
    (none or BLOB), ``text``, ``real`` or ``numeric`` (INTEGER and NUMERIC alike there)."""
    kind = declared.upper()
    if not kind or "BLOB" in kind:
        return "blob"
    if any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    return "real" if any(word in kind for word in ("REAL", "FLOA", "DOUB")) else "numeric"


def affinity_value(value: Value, declared: str) -> Value:
    """``value`` as SQLite stores it in a column of the declared type (type affinity).

    >>> affinity_value("1", "INTEGER"), affinity_value(2, "TEXT"), affinity_value("x", "INT")
    (1, '2', 'x')
    """
    return with_affinity(value, affinity_kind(declared))


def with_affinity(value: Value, kind: str) -> Value:
    """:func:`affinity_value` with the declared type read as its :func:`affinity_kind`."""
    if kind == "blob":
        return value
    if kind == "text":
        if isinstance(value, str):
            return value
        return repr(value) if isinstance(value, float) else str(value)
    number: int | float
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            try:
                number = float(value.strip())
            except ValueError:
                return value
    else:
        number = value
    if kind == "real":
        return float(number)
    if isinstance(number, float) and number.is_integer():
        return int(number)
    return number


def connect(db: Database) -> sqlite3.Connection:
    """An in-memory SQLite database holding ``db`` (columns typed as declared, if known)."""
    conn = sqlite3.connect(":memory:")
    for relation, cols in db.columns.items():
        conn.execute(f"CREATE TABLE {quote_ident(relation)} ({db.column_sql(relation)})")
        rows = db.rows.get(relation, ())
        if rows:
            marks = ", ".join("?" for _ in cols)
            conn.executemany(f"INSERT INTO {quote_ident(relation)} VALUES ({marks})", list(rows))
    return conn


class _Scratch(threading.local):
    """In-memory SQLite databases of this thread, one per layout (the tables and their
    column definitions): a layout's tables are created once and emptied for each
    database it holds, so that no statement is prepared again after a CREATE or DROP."""

    def __init__(self) -> None:
        self.conns: OrderedDict[tuple[tuple[str, str], ...], sqlite3.Connection] = \
            OrderedDict()


_SCRATCH = _Scratch()
#: Layouts kept per thread (the most recently used last).
_LAYOUTS = 16


def scratch(db: Database) -> sqlite3.Connection:
    """This thread's scratch connection holding exactly ``db``: the same tables, typed
    alike, and rows as :func:`connect` gives, without a new database each time (a
    certificate check evaluates small databases many times).  Valid until the next
    call in the same thread; do not close it.
    """
    layout = tuple((relation, db.column_sql(relation)) for relation in db.columns)
    state = _SCRATCH
    conn = state.conns.get(layout)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        try:
            for relation, defs in layout:
                conn.execute(f"CREATE TABLE {quote_ident(relation)} ({defs})")
        except BaseException:
            conn.close()
            raise
        state.conns[layout] = conn
        if len(state.conns) > _LAYOUTS:
            state.conns.popitem(last=False)[1].close()
    state.conns.move_to_end(layout)
    if conn.in_transaction:  # a call interrupted (by a time limit) between BEGIN and COMMIT
        conn.execute("ROLLBACK")
    try:
        conn.execute("BEGIN")
        for relation in db.columns:
            conn.execute(f"DELETE FROM {quote_ident(relation)}")
            rows = db.rows.get(relation, ())
            if rows:
                marks = ", ".join("?" for _ in db.columns[relation])
                conn.executemany(f"INSERT INTO {quote_ident(relation)} VALUES ({marks})",
                                 list(rows))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # not when the interruption came after COMMIT
            conn.execute("ROLLBACK")
        raise
    return conn


def cq_sql(cq: CQ, columns: Mapping[str, tuple[str, ...]]) -> str:
    """A SQLite SELECT counting the distinct head tuples of ``cq``.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> select, where = cq_sql(parse_cq("Q(x) :- R(x, y), R(y, 'a')"), {"R": ("c1", "c2")}).split(
    ...     " WHERE ")
    >>> print(select)
    SELECT COUNT(*) FROM (SELECT DISTINCT a0."c1" FROM "R" AS a0, "R" AS a1
    >>> print(where)
    a0."c2" = a1."c1" AND a1."c2" = 'a')
    """
    return _cq_sql(cq, tuple(sorted((name, tuple(cols)) for name, cols in columns.items())))


@functools.lru_cache(maxsize=1024)
def _cq_sql(cq: CQ, column_items: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    """:func:`cq_sql`, once per query and columns (a search evaluates one query on many
    databases)."""
    columns = dict(column_items)
    atoms = cq.relation_atoms()
    where: list[str] = []
    first: dict[Var, str] = {}
    refs: dict[Var, ColumnRef] = {}
    tables: list[str] = []
    for n, atom in enumerate(atoms):
        alias = f"a{n}"
        tables.append(f"{quote_ident(atom.relation)} AS {alias}")
        cols = columns[atom.relation]
        for pos, term in enumerate(atom.terms):
            ref = f"{alias}.{quote_ident(cols[pos])}"
            if isinstance(term, Const):
                where.append(f"{ref} = {sql_literal(term.value)}")
            elif term in first:
                where.append(f"{first[term]} = {ref}")
            else:
                first[term] = ref
                refs[term] = ColumnRef(alias, cols[pos])
    for atom in cq.sorted_atoms():
        if atom.predicate is not None:
            args = [refs[t] if isinstance(t, Var) else t.value for t in atom.terms]
            where.append("(" + predicate_sql(atom.predicate, args) + ")")
    if not cq.satisfiable:
        where.append("0 = 1")
    from_ = ", ".join(tables) if tables else "(SELECT 1)"
    cond = f" WHERE {' AND '.join(where)}" if where else ""
    if cq.is_boolean:
        return f"SELECT COUNT(*) FROM (SELECT 1 FROM {from_}{cond} LIMIT 1)"
    head = ", ".join(first[t] if isinstance(t, Var) else sql_literal(t.value) for t in cq.head)
    return f"SELECT COUNT(*) FROM (SELECT DISTINCT {head} FROM {from_}{cond})"


def counting_sql(
    query: CQ | AggregateQuery,
    columns: Mapping[str, tuple[str, ...]],
    *,
    use_user_sql: bool = True,
) -> str:
    """The SQLite SELECT :func:`count_answers` runs: the user's own SQL for a single
    COUNT given as SQL, else the generated SELECT of :func:`cq_sql`."""
    if isinstance(query, AggregateQuery):
        if use_user_sql and query.sql and len(query.aggregates) == 1 \
                and not query.group_by and query.aggregate in ("count", "count_distinct") \
                and len(query.aggregates[0].columns) <= 1:
            own = sqlite_query(query.sql, query.dialect)
            if own is not None:
                return own
        return cq_sql(query.cq, columns)
    return cq_sql(query, columns)


def count_answers(
    query: CQ | AggregateQuery,
    db: Database,
    *,
    use_user_sql: bool = True,
    conn: sqlite3.Connection | None = None,
) -> int:
    """``#Q(db)``, evaluated in SQLite.

    For an :class:`AggregateQuery` from SQL with a single COUNT, the user's own
    SQL (in SQLite syntax) is run when ``use_user_sql``; otherwise, and for
    CQs, the generated SELECT of :func:`cq_sql`.
    """
    own = conn is None
    connection = conn or connect(db)
    try:
        (value,) = connection.execute(
            counting_sql(query, db.columns, use_user_sql=use_user_sql)).fetchone()
        return int(value or 0)
    finally:
        if own:
            connection.close()


