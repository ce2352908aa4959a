"""Real databases: reflect the schema, check declared dependencies, measure fan-outs.

cqsens reasons about dependencies (functional ``R[i->j]`` and cardinality
``R[i->j]<=k``) that the *data* is supposed to obey.  This module confronts
them with a live database through SQLAlchemy (>= 2.0):

* :func:`reflect_schema` reads tables, column order, single-column and
  composite keys (``PRIMARY KEY``, ``UNIQUE``, unique indexes) and ``CHECK``
  bounds into a :class:`~cqsens.frontend.ddl.Schema`;
* :func:`check_constraints` checks every declared dependency with SQL run *in
  the database* (``GROUP BY`` position ``i``, ``COUNT(DISTINCT`` position
  ``j)``) and reports the offending values;
* :func:`measure_fanouts` measures, for every ordered pair of columns, the
  largest number of distinct ``j`` values seen with one ``i`` value, and turns
  them into proposed cardinality dependencies.  Those are **observed in this
  data, not guaranteed**: the next insert may break them;
* :func:`load_sql_file` runs a SQL script (DDL and inserts), for tests and docs.

Two back ends are supported: SQLite (``sqlite:///path.db``, Python's own
driver) and PostgreSQL (``postgresql://user:password@host:port/dbname``, read
with psycopg 3; a plain ``postgresql://`` or ``postgres://`` URL is mapped to
``postgresql+psycopg://``).  Every message names the database by
:func:`mask_url`, which hides the password.

NULLs: rows whose value at ``i`` is NULL are skipped (NULL never joins), and
``COUNT(DISTINCT j)`` does not count NULLs at ``j``.

Table and column names are matched case-insensitively (PostgreSQL folds
unquoted names to lower case), so a schema read from a DDL file can be checked
against the database the DDL created.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import sqlalchemy as sa
import sqlglot
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.pool import NullPool
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError

from cqsens.errors import DependencyError, InputError, SchemaError, read_text
from cqsens.frontend.ddl import column_bounds
from cqsens.ir.dependencies import Dependency
from cqsens.ir.schema import Relation, Schema

__all__ = [
    "OBSERVED_NOTE",
    "ConstraintCheck",
    "DatabaseError",
    "FanOut",
    "Offender",
    "Profile",
    "check_constraints",
    "dependency_label",
    "load_sql_file",
    "mask_url",
    "measure_fanouts",
    "profile_database",
    "proposals",
    "proposals_text",
    "reflect_schema",
]

#: The caveat every proposal carries.
OBSERVED_NOTE = "observed in this data, not guaranteed"

_CONSTRUCT = "--db"
_URL_HELP = "expected sqlite:///path.db or postgresql://user:password@host:port/dbname"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_USERINFO_PASSWORD = re.compile(
    r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@?#]*):(?P<pw>[^?#]*)@")
_QUERY_PASSWORD = re.compile(
    r"(?P<head>[?&](?:password|passwd|pass|pwd)=)(?P<pw>[^&#]*)", re.IGNORECASE)
_CONNECT_TIMEOUT = 10  # seconds, PostgreSQL


class DatabaseError(InputError):
    """The database URL is bad, or the database cannot be reached or read."""


# --------------------------------------------------------------------------- URLs


def mask_url(url: str) -> str:
    """The URL with any password replaced by ``***``.

    Parameters
    ----------
    url : str
        A database URL, well-formed or not.

    Returns
    -------
    str
        The same text with the password of the user-info part and any
        ``password=`` query parameter masked.

    Examples
    --------
    >>> mask_url("postgresql://alice:s3cr3t@db.example:5432/hospital")
    'postgresql://alice:***@db.example:5432/hospital'
    >>> mask_url("postgresql://alice@localhost/h?password=s3cr3t&sslmode=require")
    'postgresql://alice@localhost/h?password=***&sslmode=require'
    >>> mask_url("sqlite:///hospital.db")
    'sqlite:///hospital.db'
    """
    text = _USERINFO_PASSWORD.sub(lambda m: f"{m.group('head')}:***@", url, count=1)
    return _QUERY_PASSWORD.sub(lambda m: f"{m.group('head')}***", text)


def _secrets(url: str) -> list[str]:
    """Every spelling of the password(s) in ``url``, to scrub from messages."""
    out: list[str] = []
    for pattern in (_USERINFO_PASSWORD, _QUERY_PASSWORD):
        for m in pattern.finditer(url):
            out.append(m.group("pw"))
    try:
        password = make_url(url).password
    except Exception:  # noqa: BLE001 - any parse failure: nothing more to scrub
        password = None
    if password:
        out.append(str(password))
    expanded: list[str] = []
    for s in out:
        if s:
            expanded.append(s)
            expanded.append(unquote(s))
    return sorted({s for s in expanded if s and s != "***"}, key=len, reverse=True)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    """Replace each secret by ``***`` (a very short one only where it stands alone)."""
    for s in secrets:
        if len(s) >= 4:
            text = text.replace(s, "***")
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])", "***", text)
    return text


def _parse_url(url: str) -> URL:
    """Validate ``url`` and pick the driver (psycopg 3 for PostgreSQL)."""
    text = url.strip()
    masked = mask_url(text)
    if not text:
        raise DatabaseError(f"empty database URL ({_URL_HELP})", construct=_CONSTRUCT)
    try:
        parsed = make_url(text)
    except (sa_exc.ArgumentError, ValueError, TypeError):
        hint = ""
        if "://" not in text and Path(text).suffix.lower() in (".db", ".sqlite", ".sqlite3"):
            hint = f"; for a SQLite file write sqlite:///{text}"
        raise DatabaseError(f"not a database URL ({_URL_HELP}){hint}",
                            source=masked, construct=_CONSTRUCT) from None
    backend, _, driver = parsed.drivername.partition("+")
    backend = backend.lower()
    if backend in ("postgresql", "postgres"):
        parsed = parsed.set(drivername=f"postgresql+{driver or 'psycopg'}")
    elif backend != "sqlite":
        raise DatabaseError(
            f"unsupported database {backend!r}: cqsens reads SQLite and PostgreSQL ({_URL_HELP})",
            source=masked, construct=_CONSTRUCT,
        )
    return parsed


def _one_line(exc: BaseException, secrets: Sequence[str]) -> str:
    """The driver's message on one line, without SQLAlchemy's boilerplate or secrets."""
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc)
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("(Background on this error"):
            continue
        if line.startswith(("[SQL:", "[parameters:")):
            break
        lines.append(line)
    message = re.sub(r"\s+", " ", " ".join(lines)).strip() or type(exc).__name__
    return _scrub(message, secrets)


def _engine(url: str, *, must_exist: bool) -> Engine:
    parsed = _parse_url(url)
    masked = mask_url(url.strip())
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if must_exist and not database.startswith("file:"):
            if database in ("", ":memory:"):
                raise DatabaseError("an in-memory SQLite database is empty: give a file, "
                                    "sqlite:///path.db", source=masked, construct=_CONSTRUCT)
            if not Path(database).is_file():
                raise DatabaseError(f"SQLite database file not found: {database}",
                                    source=masked, construct=_CONSTRUCT)
    else:
        connect_args["connect_timeout"] = _CONNECT_TIMEOUT
    try:
        return sa.create_engine(parsed, poolclass=NullPool, connect_args=connect_args)
    except (ImportError, sa_exc.NoSuchModuleError) as exc:
        raise DatabaseError(
            f"no driver for {parsed.drivername} ({exc}); PostgreSQL needs psycopg 3: "
            "pip install 'psycopg[binary]'",
            source=masked, construct=_CONSTRUCT,
        ) from None
    except sa_exc.ArgumentError as exc:
        raise DatabaseError(f"bad database URL: {_one_line(exc, _secrets(url))}",
                            source=masked, construct=_CONSTRUCT) from None


def _open(url: str, *, must_exist: bool, raw: bool) -> tuple[Any, Any, str, list[str]]:
    """(engine, connection, masked URL, secrets); a failed connection is a DatabaseError."""
    engine = _engine(url, must_exist=must_exist)
    masked = mask_url(url.strip())
    secrets = _secrets(url)
    try:
        conn = engine.raw_connection() if raw else engine.connect()
    except sa_exc.SQLAlchemyError as exc:
        engine.dispose()
        raise DatabaseError(f"cannot connect: {_one_line(exc, secrets)}",
                            source=masked, construct=_CONSTRUCT) from None
    return engine, conn, masked, secrets


@contextmanager
def _connect(url: str, *, must_exist: bool = True) -> Iterator[Connection]:
    """A connection whose database errors become one-line :class:`DatabaseError`."""
    engine, conn, masked, secrets = _open(url, must_exist=must_exist, raw=False)
    try:
        if conn.dialect.name == "postgresql" and conn.dialect.driver in ("psycopg", "psycopg2"):
            # profiling never writes: make sure of it
            conn = conn.execution_options(postgresql_readonly=True)
        try:
            with conn:
                yield conn
        except sa_exc.SQLAlchemyError as exc:
            raise DatabaseError(f"the database refused a query: {_one_line(exc, secrets)}",
                                source=masked, construct=_CONSTRUCT) from None
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- reflection


def _dialect_name(conn: Connection) -> str:
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
    else:  # pragma: no cover - other back ends are refused by _parse_url
        return {}
    return {row[0]: n for n, row in enumerate(conn.execute(sa.text(sql)))}


def _type_name(column_type: Any, dialect: str) -> str:
    if isinstance(column_type, sa.types.NullType):
        return ""
    try:
        text = str(column_type)
    except Exception:  # noqa: BLE001 - a type SQLAlchemy cannot render
        return ""
    try:
        return exp.DataType.build(text, dialect=dialect).sql()
    except Exception:  # noqa: BLE001 - keep the database's spelling
        return text


def _unwrap_casts(node: exp.Expression) -> exp.Expression:
    """``0::numeric`` → ``0`` and ``'-5'::integer`` → ``-5`` so bounds read as numbers."""

    def strip(n: exp.Expression) -> exp.Expression:
        while isinstance(n, (exp.Cast, exp.Paren)):
            n = n.this
        if isinstance(n, exp.Literal) and n.is_string:
            try:
                float(n.this)
            except ValueError:
                return n
            return exp.Literal.number(n.this)
        return n

    def fix(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Cast):
            inner = strip(n)
            if isinstance(inner, (exp.Literal, exp.Neg, exp.Column)):
                return inner.copy()
        return n

    return node.transform(fix)


def _check_bounds(texts: Iterable[str], columns: Sequence[str],
                  dialect: str) -> tuple[tuple[int, float, float], ...]:
    lowered = [c.lower() for c in columns]
    merged: dict[int, tuple[float, float]] = {}
    for text in texts:
        try:
            tree = sqlglot.parse_one(text, read=dialect)
        except (SqlglotParseError, TokenError, ValueError):
            continue  # bounds are information only: skip what does not parse
        if not isinstance(tree, exp.Expression):
            continue
        for col, (low, high) in column_bounds(_unwrap_casts(tree)).items():
            if col in lowered:
                i = lowered.index(col)
                old = merged.get(i, (-math.inf, math.inf))
                merged[i] = (max(old[0], low), min(old[1], high))
    return tuple((i, lo, hi) for i, (lo, hi) in sorted(merged.items()))


def _reflect_relation(inspector: Any, table: str, dialect: str) -> Relation:
    cols = inspector.get_columns(table)
    columns = tuple(str(c["name"]) for c in cols)
    types = tuple(_type_name(c["type"], dialect) for c in cols)
    lowered = [c.lower() for c in columns]

    def positions(names: Sequence[str | None]) -> tuple[int, ...] | None:
        out = []
        for n in names:
            if n is None or n.lower() not in lowered:
                return None  # an expression index: no column dependency
            out.append(lowered.index(n.lower()))
        return tuple(out)

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
    try:
        checks = [str(c["sqltext"]) for c in inspector.get_check_constraints(table)]
    except NotImplementedError:  # pragma: no cover
        checks = []
    return Relation(
        table,
        columns,
        types,
        tuple(sorted(keys)),
        tuple(composite),
        _check_bounds(checks, columns, dialect),
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
    with _connect(url) as conn:
        inspector = sa.inspect(conn)
        names = list(inspector.get_table_names())
        order = _table_order(conn)
        names.sort(key=lambda n: (order.get(n, len(order)), n))
        if not names:
            raise SchemaError("the database has no table", source=masked, construct=_CONSTRUCT)
        dialect = _dialect_name(conn)
        relations = tuple(_reflect_relation(inspector, n, dialect) for n in names)
    return Schema(relations, masked)


# --------------------------------------------------------------------------- name mapping


@dataclass(frozen=True, slots=True)
class _Table:
    """A schema relation bound to the database's spelling of its names."""

    relation: Relation
    db_name: str
    db_columns: tuple[str, ...]  # aligned with relation.columns

    def sql(self) -> sa.TableClause:
        return sa.table(self.db_name, *(sa.column(c) for c in self.db_columns))


class _Catalogue:
    """Maps the relations of a schema to the tables of a database (case-insensitively)."""

    def __init__(self, conn: Connection, schema: Schema, masked: str) -> None:
        self.conn = conn
        self.schema = schema
        self.masked = masked
        self.inspector = sa.inspect(conn)
        self.tables = {n.lower(): n for n in self.inspector.get_table_names()}
        self._cache: dict[str, _Table] = {}

    def relation(self, name: str, *, what: str) -> Relation:
        rel = self.schema.find(name)
        if rel is None:
            known = ", ".join(self.schema.relation_names()) or "none"
            raise DependencyError(f"{what} names table {name}, which the schema lacks "
                                  f"(it has: {known})", source=self.schema.source,
                                  construct="dependency")
        return rel

    def bind(self, rel: Relation) -> _Table:
        key = rel.name.lower()
        if key in self._cache:
            return self._cache[key]
        db_name = self.tables.get(key)
        if db_name is None:
            known = ", ".join(sorted(self.tables.values())) or "none"
            raise SchemaError(f"table {rel.name} is not in the database (it has: {known})",
                              source=self.masked, construct=_CONSTRUCT)
        actual = [str(c["name"]) for c in self.inspector.get_columns(db_name)]
        by_lower = {c.lower(): c for c in actual}
        db_columns = []
        for c in rel.columns:
            found = by_lower.get(c.lower())
            if found is None:
                raise SchemaError(f"table {db_name} in the database has no column {c} "
                                  f"(it has: {', '.join(actual)})",
                                  source=self.masked, construct=_CONSTRUCT)
            db_columns.append(found)
        table = _Table(rel, db_name, tuple(db_columns))
        self._cache[key] = table
        return table


# --------------------------------------------------------------------------- checks


def _plain(value: object) -> object:
    """A value JSON and people can read (Decimal, dates, bytes → str or number)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def dependency_label(dep: Dependency, schema: Schema | None = None, *,
                     always_bound: bool = False) -> str:
    """``R[col->col]<=k`` with column names when the schema has them, else positions.

    Parameters
    ----------
    dep : Dependency
        The dependency (0-based positions).
    schema : Schema, optional
        Gives the column names and the schema's spelling of the relation.
    always_bound : bool
        Write ``<=1`` for a functional dependency too.

    Returns
    -------
    str
        The FD form ``R[a->b]`` when ``k = 1`` (unless ``always_bound``), else
        ``R[a->b]<=k``; names that
        are not plain identifiers are written as 1-based positions, so the
        label always parses with :func:`cqsens.frontend.parse_cq.parse_dependency`.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> s = schema_from_ddl("CREATE TABLE PatDoc (pat INT, doc INT)")
    >>> dependency_label(Dependency("patdoc", 0, 1, 3), s)
    'PatDoc[pat->doc]<=3'
    >>> dependency_label(Dependency("R", 1, 0))
    'R[2->1]'
    """
    rel = schema.find(dep.relation) if schema is not None else None
    name = rel.name if rel is not None else dep.relation

    def col(i: int) -> str:
        if rel is not None and i < len(rel.columns) and _NAME.match(rel.columns[i]):
            return rel.columns[i]
        return str(i + 1)

    text = f"{name}[{col(dep.i)}->{col(dep.j)}]"
    return text if dep.k == 1 and not always_bound else f"{text}<={dep.k}"


@dataclass(frozen=True, slots=True)
class Offender:
    """One value at position ``i`` with too many distinct values at ``j``."""

    value: object
    count: int
    sample: tuple[object, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"value": _plain(self.value), "count": self.count,
                "sample": [_plain(v) for v in self.sample]}


@dataclass(frozen=True, slots=True)
class ConstraintCheck:
    """The check of one declared dependency against the data.

    Attributes
    ----------
    dependency : Dependency
        ``R[i->j]<=k`` (0-based positions, the schema's relation name).
    label : str
        The dependency written with column names (:func:`dependency_label`).
    columns : tuple of str
        The names of the columns at ``i`` and ``j``.
    groups : int
        Distinct non-NULL values at ``i``.
    max_count : int
        The largest number of distinct values at ``j`` for one value at ``i``.
    violating : int
        How many values at ``i`` have more than ``k`` values at ``j``.
    offenders : tuple of Offender
        The worst few of them, with some of their ``j`` values.
    origin : str
        Where the dependency was declared (``"key R.col"``, ``"--cd"``, ``file:line``).
    """

    dependency: Dependency
    label: str
    columns: tuple[str, str]
    groups: int
    max_count: int
    violating: int
    offenders: tuple[Offender, ...] = ()
    origin: str = ""

    @property
    def ok(self) -> bool:
        """True when the data satisfies the dependency."""
        return self.violating == 0

    def summary(self) -> str:
        """What the data shows, in words (without the verdict)."""
        k = self.dependency.k
        ci, cj = self.columns
        if self.ok:
            return f"at most {self.max_count} {cj} per {ci} (declared {k})"
        many = "value" if self.violating == 1 else "values"
        return (f"{self.violating} {ci} {many} with more than {k} distinct {cj} "
                f"(max {self.max_count})")

    def describe(self) -> str:
        """One line for people: ``ok: ...`` or ``VIOLATED: ...``."""
        return f"{'ok' if self.ok else 'VIOLATED'}: {self.summary()}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "dependency": self.label,
            "relation": self.dependency.relation,
            "i": self.dependency.i + 1,
            "j": self.dependency.j + 1,
            "columns": list(self.columns),
            "k": self.dependency.k,
            "origin": self.origin,
            "ok": self.ok,
            "groups": self.groups,
            "max_count": self.max_count,
            "violating": self.violating,
            "offenders": [o.to_dict() for o in self.offenders],
        }


def _count_distinct(column: sa.ColumnClause[Any]) -> sa.ColumnElement[int]:
    return sa.func.count(sa.distinct(column))


def _check_one(conn: Connection, table: _Table, dep: Dependency, samples: int,
               schema: Schema, origin: str) -> ConstraintCheck:
    t = table.sql()
    ci, cj = t.c[table.db_columns[dep.i]], t.c[table.db_columns[dep.j]]
    per_value = (sa.select(ci.label("v"), _count_distinct(cj).label("n"))
                 .where(ci.is_not(None)).group_by(ci).subquery("g"))
    summary = sa.select(
        sa.func.count(),
        sa.func.max(per_value.c.n),
        sa.func.sum(sa.case((per_value.c.n > dep.k, 1), else_=0)),
    ).select_from(per_value)
    groups, max_count, violating = conn.execute(summary).one()
    groups, max_count, violating = int(groups or 0), int(max_count or 0), int(violating or 0)
    offenders: list[Offender] = []
    if violating and samples:
        count = _count_distinct(cj)
        worst = (sa.select(ci, count).where(ci.is_not(None)).group_by(ci)
                 .having(count > dep.k).order_by(count.desc(), ci).limit(samples))
        for value, n in conn.execute(worst).all():
            shown = (sa.select(cj).distinct().where(ci == value, cj.is_not(None))
                     .order_by(cj).limit(min(int(n), dep.k + 3)))
            sample = tuple(row[0] for row in conn.execute(shown))
            offenders.append(Offender(value, int(n), sample))
    rel = table.relation
    return ConstraintCheck(
        dependency=Dependency(rel.name, dep.i, dep.j, dep.k),
        label=dependency_label(dep, schema),
        columns=(rel.columns[dep.i], rel.columns[dep.j]),
        groups=groups,
        max_count=max_count,
        violating=violating,
        offenders=tuple(offenders),
        origin=origin,
    )


def _checked_positions(dep: Dependency, rel: Relation, source: str) -> None:
    arity = len(rel.columns)
    for pos in (dep.i, dep.j):
        if not 0 <= pos < arity:
            raise DependencyError(f"position {pos + 1} of {dep} is out of range: {rel.name} "
                                  f"has {arity} columns", source=source, construct="dependency")
    if dep.i == dep.j or dep.k < 1:
        raise DependencyError(f"{dep} is not a valid dependency", source=source,
                              construct="dependency")


def check_constraints(
    url: str,
    schema: Schema | None,
    deps: Iterable[Dependency],
    *,
    samples: int = 3,
    origins: Mapping[Dependency, str] | None = None,
) -> list[ConstraintCheck]:
    """Check declared dependencies against the data, with SQL run in the database.

    For ``R[i->j]<=k`` the database runs ``SELECT i, COUNT(DISTINCT j) FROM R
    WHERE i IS NOT NULL GROUP BY i HAVING COUNT(DISTINCT j) > k`` (and a summary
    of the same grouping); nothing but the counts and a few sample values leave
    the database.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema or None
        Resolves positions to columns; reflected from the database when None.
        Names are matched case-insensitively with the database's.
    deps : iterable of Dependency
        The dependencies to check (0-based positions), in the order to report.
    samples : int
        How many offending values to report per violated dependency (the
        worst first), each with a few of its values at ``j``.
    origins : mapping, optional
        Where each dependency was declared, copied to :attr:`ConstraintCheck.origin`.

    Returns
    -------
    list of ConstraintCheck
        One per dependency, in order.

    Raises
    ------
    DatabaseError
        Bad URL, unreachable server, failed authentication, failed query.
    SchemaError
        A table or column of the schema is missing from the database.
    DependencyError
        A dependency names a table the schema lacks or a position out of range.
    """
    deps = list(deps)
    if schema is None:
        schema = reflect_schema(url)
    masked = mask_url(url.strip())
    out: list[ConstraintCheck] = []
    with _connect(url) as conn:
        catalogue = _Catalogue(conn, schema, masked)
        for dep in deps:
            rel = catalogue.relation(dep.relation, what=f"dependency {dep}")
            _checked_positions(dep, rel, schema.source)
            table = catalogue.bind(rel)
            origin = (origins or {}).get(dep, "")
            out.append(_check_one(conn, table, dep, max(samples, 0), schema, origin))
    return out


# --------------------------------------------------------------------------- fan-outs


@dataclass(frozen=True, slots=True)
class FanOut:
    """The observed fan-out of one ordered pair of columns of one table.

    Attributes
    ----------
    relation : str
        The schema's name of the table.
    i, j : int
        0-based positions (``i != j``).
    columns : tuple of str
        The names of the columns at ``i`` and ``j``.
    max_count : int
        The largest number of distinct non-NULL values at ``j`` seen with one
        non-NULL value at ``i`` (0 for an empty table).
    groups : int
        Distinct non-NULL values at ``i``.
    declared : int or None
        The least ``k`` declared for ``R[i->j]`` (keys included), or None.
    rows : int or None
        Rows with a non-NULL value at ``i`` (None when unknown).
    """

    relation: str
    i: int
    j: int
    columns: tuple[str, str]
    max_count: int
    groups: int
    declared: int | None = None
    rows: int | None = None

    @property
    def weak(self) -> bool:
        """True when every value at ``i`` occurs in one row only.

        The fan-out is then 1 whatever the columns mean: the data gives no
        evidence for the proposal.
        """
        return self.rows is not None and self.groups > 0 and self.rows == self.groups

    @property
    def proposal(self) -> Dependency | None:
        """``R[i->j]<=max_count`` — *observed in this data, not guaranteed*.

        None when a bound is declared for the pair (the declaration, checked
        separately, is the better source) or when the table has no value at
        ``i``.  The proposed ``k`` is at least 1.
        """
        if self.declared is not None or self.groups == 0:
            return None
        return Dependency(self.relation, self.i, self.j, max(self.max_count, 1))

    def to_dict(self, schema: Schema | None = None) -> dict[str, Any]:
        """JSON-ready form."""
        proposal = self.proposal
        return {
            "relation": self.relation,
            "i": self.i + 1,
            "j": self.j + 1,
            "columns": list(self.columns),
            "max_count": self.max_count,
            "groups": self.groups,
            "declared": self.declared,
            "rows": self.rows,
            "weak": self.weak,
            "proposal": None if proposal is None else dependency_label(proposal, schema),
        }


def _least_declared(deps: Iterable[Dependency]) -> dict[tuple[str, int, int], int]:
    out: dict[tuple[str, int, int], int] = {}
    for d in deps:
        key = (d.relation.lower(), d.i, d.j)
        if key not in out or d.k < out[key]:
            out[key] = d.k
    return out


def measure_fanouts(
    url: str,
    schema: Schema | None = None,
    *,
    declared: Iterable[Dependency] = (),
    tables: Iterable[str] | None = None,
) -> list[FanOut]:
    """The observed fan-out of every ordered pair of columns of every table.

    For each table and each position ``i`` the database runs one query:
    ``SELECT MAX(n_j), ... FROM (SELECT i, COUNT(DISTINCT j) AS n_j, ... FROM R
    WHERE i IS NOT NULL GROUP BY i)``.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema, optional
        The tables and columns to measure; reflected from the database when None.
    declared : iterable of Dependency
        Declared dependencies (keys included, if wanted): fills
        :attr:`FanOut.declared`, and declared pairs get no proposal.
    tables : iterable of str, optional
        Measure only these tables (case-insensitive); all by default.

    Returns
    -------
    list of FanOut
        In schema order, then by ``i``, then by ``j``.  The fan-outs are
        **observed in this data, not guaranteed**.

    Raises
    ------
    DatabaseError, SchemaError
        As :func:`check_constraints`.
    """
    if schema is None:
        schema = reflect_schema(url)
    masked = mask_url(url.strip())
    least = _least_declared(declared)
    wanted = None if tables is None else {t.lower() for t in tables}
    out: list[FanOut] = []
    with _connect(url) as conn:
        catalogue = _Catalogue(conn, schema, masked)
        for rel in schema.relations:
            if wanted is not None and rel.name.lower() not in wanted:
                continue
            table = catalogue.bind(rel)
            t = table.sql()
            arity = len(rel.columns)
            for i in range(arity):
                others = [j for j in range(arity) if j != i]
                if not others:
                    continue
                ci = t.c[table.db_columns[i]]
                per_value = sa.select(
                    ci.label("v"),
                    sa.func.count().label("r"),
                    *(_count_distinct(t.c[table.db_columns[j]]).label(f"n{j}") for j in others),
                ).where(ci.is_not(None)).group_by(ci).subquery("g")
                row = conn.execute(sa.select(
                    sa.func.count(),
                    sa.func.sum(per_value.c.r),
                    *(sa.func.max(per_value.c[f"n{j}"]) for j in others),
                ).select_from(per_value)).one()
                groups, rows = int(row[0] or 0), int(row[1] or 0)
                for j, value in zip(others, row[2:], strict=True):
                    out.append(FanOut(
                        relation=rel.name,
                        i=i,
                        j=j,
                        columns=(rel.columns[i], rel.columns[j]),
                        max_count=int(value or 0),
                        groups=groups,
                        declared=least.get((rel.name.lower(), i, j)),
                        rows=rows,
                    ))
    return out


def proposals(fanouts: Iterable[FanOut]) -> list[Dependency]:
    """The proposed dependencies of the fan-outs, *observed in this data, not guaranteed*."""
    return [p for f in fanouts if (p := f.proposal) is not None]


def proposals_text(fanouts: Iterable[FanOut], schema: Schema | None = None, *,
                   database: str = "") -> str:
    """The proposals as a constraints file that ``--constraints`` reads.

    Parameters
    ----------
    fanouts : iterable of FanOut
        As :func:`measure_fanouts` returns them.
    schema : Schema, optional
        Gives column names (the file then needs ``--schema`` or ``--db`` to be read).
    database : str
        The database the fan-outs were measured in, for the header (masked).

    Returns
    -------
    str
        A ``#`` header saying the bounds were observed, not guaranteed, then one
        ``Table[col->col]<=k`` per line.

    Examples
    --------
    >>> f = FanOut("PatDoc", 0, 1, ("pat", "doc"), max_count=3, groups=12)
    >>> print(proposals_text([f]), end="")
    # Cardinality dependencies OBSERVED in this data, NOT GUARANTEED.
    # They held when measured; nothing stops a later insert from breaking them, and
    # a sensitivity bound that uses them is only as good as they are.
    # Review each line: keep the real business rules, delete the rest.
    PatDoc[1->2]<=3  # max over 12 pat values
    """
    lines = ["# Cardinality dependencies OBSERVED in this data, NOT GUARANTEED."]
    if database:
        lines.append(f"# Measured by cqsens profile in {mask_url(database)}.")
    lines += [
        "# They held when measured; nothing stops a later insert from breaking them, and",
        "# a sensitivity bound that uses them is only as good as they are.",
        "# Review each line: keep the real business rules, delete the rest.",
    ]
    for fanout in fanouts:
        dep = fanout.proposal
        if dep is None:
            continue
        rel = schema.find(dep.relation) if schema is not None else None
        name = rel.name if rel is not None else dep.relation
        if not _NAME.match(name):
            lines.append(f"# {name}[{dep.i + 1}->{dep.j + 1}]<={dep.k}  "
                         "(table name is not a plain identifier: cannot be declared)")
            continue
        ci = fanout.columns[0]
        many = "value" if fanout.groups == 1 else "values"
        note = f"max over {fanout.groups} {ci} {many}"
        if fanout.weak:
            note += f"; weak evidence: every {ci} value occurs once"
        lines.append(f"{dependency_label(dep, schema, always_bound=True)}  # {note}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- profile


@dataclass(frozen=True, slots=True)
class Profile:
    """What ``cqsens profile`` reports: declared dependencies checked, fan-outs measured."""

    database: str
    schema: Schema
    checks: tuple[ConstraintCheck, ...]
    fanouts: tuple[FanOut, ...]
    note: str = field(default=OBSERVED_NOTE)

    @property
    def violations(self) -> list[ConstraintCheck]:
        """The checks that failed."""
        return [c for c in self.checks if not c.ok]

    @property
    def proposals(self) -> list[Dependency]:
        """Proposed CDs: *observed in this data, not guaranteed*."""
        return proposals(self.fanouts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "database": self.database,
            "schema": self.schema.source,
            "tables": self.schema.relation_names(),
            "checks": [c.to_dict() for c in self.checks],
            "violations": len(self.violations),
            "fanouts": [f.to_dict(self.schema) for f in self.fanouts],
            "proposals": [dependency_label(p, self.schema) for p in self.proposals],
            "proposals_note": self.note,
        }


def profile_database(
    url: str,
    *,
    schema: Schema | None = None,
    deps: Iterable[Dependency] = (),
    origins: Mapping[Dependency, str] | None = None,
    include_keys: bool = True,
    samples: int = 3,
) -> Profile:
    """Check the declared dependencies and measure every fan-out.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema, optional
        Reflected from the database when None.
    deps : iterable of Dependency
        Declared dependencies beyond the schema's keys.
    origins : mapping, optional
        Where each of ``deps`` was declared (for the report).
    include_keys : bool
        Also check the FDs the schema's single-column keys imply.
    samples : int
        Offending values reported per violated dependency.

    Returns
    -------
    Profile

    Raises
    ------
    DatabaseError, SchemaError, DependencyError
        As :func:`check_constraints`.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> url = f"sqlite:///{path}"
    >>> load_sql_file(url, text="CREATE TABLE R (a INT PRIMARY KEY, b INT);"
    ...                         "INSERT INTO R VALUES (1, 5), (2, 5), (3, 6);")
    >>> p = profile_database(url)
    >>> [c.label for c in p.checks], [c.ok for c in p.checks]
    (['R[a->b]'], [True])
    >>> [dependency_label(d, p.schema) for d in p.proposals]
    ['R[b->a]<=2']
    """
    if schema is None:
        schema = reflect_schema(url)
    declared: list[Dependency] = []
    where: dict[Dependency, str] = {}
    if include_keys:
        for rel in schema.relations:
            for d in rel.key_dependencies():
                if d not in where:
                    declared.append(d)
                    where[d] = f"key {rel.name}.{rel.columns[d.i]}"
    for given in deps:
        found = schema.find(given.relation)
        d = replace(given, relation=found.name) if found is not None else given
        if d not in where:
            declared.append(d)
            where[d] = (origins or {}).get(given, "")
    checks = check_constraints(url, schema, declared, samples=samples, origins=where)
    fanouts = measure_fanouts(url, schema, declared=declared)
    return Profile(mask_url(url.strip()), schema, tuple(checks), tuple(fanouts))


# --------------------------------------------------------------------------- loading


def load_sql_file(url: str, *paths: str | Path, text: str | None = None) -> None:
    """Run SQL scripts (DDL and inserts) in a database, in one transaction each.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` (the file is created when missing) or
        ``postgresql://...`` (the database must exist).
    *paths : str or Path
        Script files, run in order.
    text : str, optional
        A script given inline, run after the files.

    Raises
    ------
    InputError
        A file cannot be read.
    DatabaseError
        Bad URL, unreachable server, or a statement the database refuses.
    """
    scripts: list[tuple[str, str]] = []
    for p in paths:
        path = Path(p)
        scripts.append((str(path), read_text(path, what="SQL file")))
    if text is not None:
        scripts.append(("<sql>", text))
    engine, raw, masked, secrets = _open(url, must_exist=False, raw=True)
    try:
        dbapi_error = engine.dialect.loaded_dbapi.Error
        try:
            for name, script in scripts:
                try:
                    if engine.dialect.name == "sqlite":
                        raw.driver_connection.executescript(script)  # type: ignore[union-attr]
                    else:
                        cursor = raw.cursor()
                        cursor.execute(script)  # no parameters: several statements run
                        cursor.close()
                    raw.commit()
                except dbapi_error as exc:
                    raw.rollback()
                    raise DatabaseError(f"{name}: the database refused the script: "
                                        f"{_one_line(exc, secrets)}",
                                        source=masked, construct=_CONSTRUCT) from None
        finally:
            raw.close()
    finally:
        engine.dispose()
