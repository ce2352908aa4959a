"""Connections to live databases: URL parsing, password masking, one-line errors.

cqsens reads two back ends through SQLAlchemy (>= 2.0): SQLite
(``sqlite:///path.db``, Python's own driver) and PostgreSQL
(``postgresql://user:password@host:port/dbname``, read with psycopg 3; a plain
``postgresql://`` or ``postgres://`` URL is mapped to ``postgresql+psycopg://``).
Every message names the database by :func:`mask_url`, which hides the
password, and every driver error becomes a one-line :class:`DatabaseError`
with the secrets scrubbed.  Profiling connections to PostgreSQL are read-only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.pool import NullPool

from cqsens.errors import InputError

__all__ = [
    "DB_CONSTRUCT",
    "DatabaseError",
    "connect",
    "driver_message",
    "mask_url",
    "open_connection",
    "scrub",
    "secrets_of",
    "sqlite_file",
]

#: The construct every database error names (the command-line option).
DB_CONSTRUCT = "--db"
_URL_HELP = "expected sqlite:///path.db or postgresql://user:password@host:port/dbname"
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>.*)$", re.S)
_PASSWORD_KEYS = r"(?:password|passwd|pass|pwd|sslpassword)"
_QUERY_PASSWORD = re.compile(rf"(?P<head>[?&;]{_PASSWORD_KEYS}=)(?P<pw>[^&;]*)", re.IGNORECASE)
_DSN_PASSWORD = re.compile(
    rf"(?P<head>(?<![A-Za-z0-9_]){_PASSWORD_KEYS}\s*=\s*)"
    r"(?P<pw>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|\S+)", re.IGNORECASE)
_MASK = "***"
_CONNECT_TIMEOUT = 10  # seconds, PostgreSQL


class DatabaseError(InputError):
    """The database URL is bad, or the database cannot be reached or read."""


def _split_userinfo(url: str) -> tuple[str, str | None, str | None, str] | None:
    """``(scheme, user, password, rest)`` of a URL with a user-info part, else None.

    The user-info ends at the *last* ``@`` of the URL, so a password may hold a
    raw ``?``, ``#``, ``@`` or ``/`` (written unescaped, as people do); an ``@``
    in the query string makes more of the URL count as the password, which
    masks too much rather than too little.  A URL whose authority is empty
    (``sqlite:///a@b.db``) has no user-info.
    """
    m = _SCHEME.match(url)
    if m is None:
        return None
    rest = m.group("rest")
    if rest.startswith("/") or "@" not in rest:
        return None
    userinfo, _, after = rest.rpartition("@")
    user, colon, password = userinfo.partition(":")
    return m.group("scheme"), user, password if colon else None, after


def mask_url(url: str) -> str:
    """The URL (or libpq ``key=value`` string) with every password replaced by ``***``.

    Parameters
    ----------
    url : str
        A database URL, well-formed or not, or a libpq connection string.

    Returns
    -------
    str
        The same text with the password of the user-info part (which ends at
        the last ``@``, so raw ``?``, ``#``, ``@`` and ``/`` in it are masked
        too), any ``password=`` query parameter and any ``password=`` key of a
        key/value string masked.

    Examples
    --------
    >>> mask_url("postgresql://alice:s3cr3t@db.example:5432/hospital")
    'postgresql://alice:***@db.example:5432/hospital'
    >>> mask_url("postgresql://alice:S3c?r#t@9@db.example/hospital")
    'postgresql://alice:***@db.example/hospital'
    >>> mask_url("postgresql://alice@localhost/h?password=s3cr3t&sslmode=require")
    'postgresql://alice@localhost/h?password=***&sslmode=require'
    >>> mask_url("host=db.example password='s3 cr3t' dbname=h")
    'host=db.example password=*** dbname=h'
    >>> mask_url("sqlite:///hospital.db")
    'sqlite:///hospital.db'
    """
    parts = _split_userinfo(url)
    if parts is not None:
        scheme, user, password, rest = parts
        shown = user if password is None else f"{user}:{_MASK}"
        url = f"{scheme}://{shown}@{rest}"
    text = _QUERY_PASSWORD.sub(lambda m: f"{m.group('head')}{_MASK}", url)
    if _SCHEME.match(text) is None:
        text = _DSN_PASSWORD.sub(lambda m: f"{m.group('head')}{_MASK}", text)
    return text


def _secrets(url: str) -> list[str]:
    """Every spelling of the password(s) in ``url`` and of ``PGPASSWORD``, to scrub."""
    out: list[str] = []
    parts = _split_userinfo(url)
    if parts is not None and parts[2]:
        out.append(parts[2])
    out += [m.group("pw") for m in _QUERY_PASSWORD.finditer(url)]
    out += [m.group("pw").strip("'\"") for m in _DSN_PASSWORD.finditer(url)]
    try:
        password = make_url(url.strip()).password
    except Exception:  # noqa: BLE001 - any parse failure: nothing more to scrub
        password = None
    if password:
        out.append(str(password))
    env = os.environ.get("PGPASSWORD")
    if env:
        out.append(env)
    expanded: list[str] = []
    for s in out:
        if s:
            expanded += [s, unquote(s), quote(s, safe=""), unquote(s).replace("'", "\\'")]
    return sorted({s for s in expanded if s and s != _MASK}, key=len, reverse=True)


def secrets_of(*texts: str) -> list[str]:
    """The passwords in ``texts`` (URLs, key/value strings) and ``PGPASSWORD``.

    Parameters
    ----------
    *texts : str
        Any command-line arguments; those that hold no password add nothing.

    Returns
    -------
    list of str
        Every spelling to scrub (raw, percent-decoded, percent-encoded),
        longest first.
    """
    found: set[str] = set()
    for text in texts:
        found.update(_secrets(text))
    if not texts:
        found.update(_secrets(""))
    return sorted(found, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """Replace each secret in ``text`` by ``***`` (a very short one only where it stands alone).

    Parameters
    ----------
    text : str
        A message about to be shown or written.
    secrets : sequence of str
        As :func:`secrets_of` returns them.

    Returns
    -------
    str
        The text with the secrets masked.
    """
    for s in secrets:
        if len(s) >= 4:
            text = text.replace(s, _MASK)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])", _MASK, text)
    return text


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
    parts = _split_userinfo(text)
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
        raise DatabaseError(f"bad database URL: {driver_message(exc, _secrets(url))}",
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
    secrets = _secrets(url)
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
