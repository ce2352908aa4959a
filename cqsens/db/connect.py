"""Connections to live databases: URL parsing, connections, one-line errors.

cqsens reads two back ends through SQLAlchemy (>= 2.0): SQLite
(``sqlite:///path.db``, Python's own driver) and PostgreSQL
(``postgresql://user:password@host:port/dbname``, read with psycopg 3; a plain
``postgresql://`` or ``postgres://`` URL is mapped to ``postgresql+psycopg://``).
Every message names the database by :func:`~cqsens.passwords.mask_url`, which hides the
password, and every driver error becomes a one-line :class:`DatabaseError`
with the secrets scrubbed.  Profiling connections to PostgreSQL are read-only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.pool import NullPool

from cqsens.errors import InputError
from cqsens.passwords import mask_url, password_spellings, scrub, split_userinfo

__all__ = [
    "DB_CONSTRUCT",
    "DatabaseError",
    "connect",
    "driver_message",
    "open_connection",
    "sqlite_file",
]

#: The construct every database error names (the command-line option).
DB_CONSTRUCT = "--db"
_URL_HELP = "expected sqlite:///path.db or postgresql://user:password@host:port/dbname"
_CONNECT_TIMEOUT = 10  # seconds, PostgreSQL


class DatabaseError(InputError):
    """The database URL is bad, or the database cannot be reached or read."""


def _parse_url(url: str) -> URL:
    """Validate ``url`` and pick the driver (psycopg 3 for PostgreSQL).

    With more than one ``@`` the last one ends the user-info, as in
    :func:`mask_url`: a raw ``@`` belongs to the password (write ``%40`` for
    an ``@`` anywhere else).  Otherwise SQLAlchemy's parse is kept.
    """
    text = url.strip()
    masked = mask_url(text)
    if not text:
        raise DatabaseError(f"empty database URL ({_URL_HELP})", construct=DB_CONSTRUCT)
    parts = split_userinfo(text)
    try:
        parsed = make_url(text)
        if parts is not None and text.count("@") > 1:
            scheme, user, password, rest = parts
            parsed = make_url(f"{scheme}://{rest}").set(
                username=unquote(user) if user else None,
                password=unquote(password) if password is not None else None)
    except (sa_exc.ArgumentError, ValueError, TypeError):
        hint = ""
        if "://" not in text and Path(text).suffix.lower() in (".db", ".sqlite", ".sqlite3"):
            hint = f"; for a SQLite file write sqlite:///{text}"
        elif "://" not in text and "=" in text:
            hint = "; a key=value connection string is not read: write it as a URL"
        raise DatabaseError(f"not a database URL ({_URL_HELP}){hint}",
                            source=masked, construct=DB_CONSTRUCT) from None
    backend, _, driver = parsed.drivername.partition("+")
    backend = backend.lower()
    if backend in ("postgresql", "postgres"):
        parsed = parsed.set(drivername=f"postgresql+{driver or 'psycopg'}")
    elif backend != "sqlite":
        raise DatabaseError(
            f"unsupported database {backend!r}: cqsens reads SQLite and PostgreSQL ({_URL_HELP})",
            source=masked, construct=DB_CONSTRUCT,
        )
    return parsed


def sqlite_file(url: str) -> Path | None:
    """The file a ``sqlite:///path`` URL names (None for other URLs or in memory).

    Parameters
    ----------
    url : str
        A ``--db`` value.

    Returns
    -------
    Path or None
        The database file, to protect from being written over.
    """
    try:
        parsed = _parse_url(url)
    except DatabaseError:
        return None
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database.startswith("file:"):
        database = database[len("file:"):].partition("?")[0]
    if database in ("", ":memory:"):
        return None
    return Path(database)


def driver_message(exc: BaseException, secrets: Sequence[str]) -> str:
    """The driver's message on one line, without SQLAlchemy's boilerplate or secrets.

    Parameters
    ----------
    exc : BaseException
        A SQLAlchemy or DB-API error (its ``orig`` is read when present).
    secrets : sequence of str
        Passwords to replace by ``***`` (as :func:`open_connection` returns them).

    Returns
    -------
    str
        The message without the ``[SQL: ...]`` and background lines; the
        exception's class name when the message is empty.
    """
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
    return scrub(message, secrets)


def _engine(url: str, *, must_exist: bool) -> Engine:
    parsed = _parse_url(url)
    masked = mask_url(url.strip())
    connect_args: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if must_exist and not database.startswith("file:"):
            if database in ("", ":memory:"):
                raise DatabaseError("an in-memory SQLite database is empty: give a file, "
                                    "sqlite:///path.db", source=masked, construct=DB_CONSTRUCT)
            if not Path(database).is_file():
                raise DatabaseError(f"SQLite database file not found: {database}",
                                    source=masked, construct=DB_CONSTRUCT)
    else:
        connect_args["connect_timeout"] = _CONNECT_TIMEOUT
    try:
        return sa.create_engine(parsed, poolclass=NullPool, connect_args=connect_args)
    except (ImportError, sa_exc.NoSuchModuleError) as exc:
        raise DatabaseError(
            f"no driver for {parsed.drivername} ({exc}); PostgreSQL needs psycopg 3: "
            "pip install 'psycopg[binary]'",
            source=masked, construct=DB_CONSTRUCT,
        ) from None
    except sa_exc.ArgumentError as exc:
        raise DatabaseError(f"bad database URL: {driver_message(exc, password_spellings(url))}",
                            source=masked, construct=DB_CONSTRUCT) from None


def open_connection(url: str, *, must_exist: bool, raw: bool) -> tuple[Any, Any, str, list[str]]:
    """Open an engine and one connection to ``url``.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://user:password@host:port/dbname``.
    must_exist : bool
        Refuse a SQLite file that does not exist (instead of creating it).
    raw : bool
        Return the DB-API connection (for scripts) instead of a SQLAlchemy one.

    Returns
    -------
    tuple
        ``(engine, connection, masked URL, secrets)``; the caller closes the
        connection and disposes of the engine.

    Raises
    ------
    DatabaseError
        Bad URL, missing driver or SQLite file, failed connection.
    """
    engine = _engine(url, must_exist=must_exist)
    masked = mask_url(url.strip())
    secrets = password_spellings(url)
    try:
        conn = engine.raw_connection() if raw else engine.connect()
    except sa_exc.SQLAlchemyError as exc:
        engine.dispose()
        raise DatabaseError(f"cannot connect: {driver_message(exc, secrets)}",
                            source=masked, construct=DB_CONSTRUCT) from None
    return engine, conn, masked, secrets


@contextmanager
def connect(url: str, *, must_exist: bool = True) -> Iterator[Connection]:
    """A connection whose database errors become one-line :class:`DatabaseError`.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    must_exist : bool
        Refuse a SQLite file that does not exist.

    Yields
    ------
    Connection
        Read-only on PostgreSQL (psycopg); the engine is disposed of on exit.

    Raises
    ------
    DatabaseError
        As :func:`open_connection`, or a query the database refuses.
    """
    engine, conn, masked, secrets = open_connection(url, must_exist=must_exist, raw=False)
    try:
        if conn.dialect.name == "postgresql" and conn.dialect.driver in ("psycopg", "psycopg2"):
            # profiling never writes: make sure of it
            conn = conn.execution_options(postgresql_readonly=True)
        try:
            with conn:
                yield conn
        except sa_exc.SQLAlchemyError as exc:
            raise DatabaseError(f"the database refused a query: {driver_message(exc, secrets)}",
                                source=masked, construct=DB_CONSTRUCT) from None
    finally:
        engine.dispose()
