"""Passwords in database URLs and connection strings: find them, mask them, scrub them.

Text functions only (no database driver is imported until a ``scheme://`` URL is parsed), so
that every command can mask its messages and its command line without loading SQLAlchemy.
:mod:`cqsens.db.connect` names every database by :func:`mask_url`; the command line
scrubs every message with :func:`secrets_of` and :func:`scrub`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from urllib.parse import quote, unquote

__all__ = ["MASK", "mask_url", "password_spellings", "scrub", "secrets_of", "split_userinfo"]

_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>.*)$", re.S)
_PASSWORD_KEYS = r"(?:password|passwd|pass|pwd|sslpassword)"
_QUERY_PASSWORD = re.compile(rf"(?P<head>[?&;]{_PASSWORD_KEYS}=)(?P<pw>[^&;]*)", re.IGNORECASE)
_DSN_PASSWORD = re.compile(
    rf"(?P<head>(?<![A-Za-z0-9_]){_PASSWORD_KEYS}\s*=\s*)"
    r"(?P<pw>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|\S+)", re.IGNORECASE)
#: What a password is replaced by.
MASK = "***"


def split_userinfo(url: str) -> tuple[str, str | None, str | None, str] | None:
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
    parts = split_userinfo(url)
    if parts is not None:
        scheme, user, password, rest = parts
        shown = user if password is None else f"{user}:{MASK}"
        url = f"{scheme}://{shown}@{rest}"
    text = _QUERY_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}", url)
    if _SCHEME.match(text) is None:
        text = _DSN_PASSWORD.sub(lambda m: f"{m.group('head')}{MASK}", text)
    return text


def password_spellings(url: str) -> list[str]:
    """Every spelling of the password(s) in ``url`` and of ``PGPASSWORD``, to scrub."""
    out: list[str] = []
    parts = split_userinfo(url)
    if parts is not None and parts[2]:
        out.append(parts[2])
    out += [m.group("pw") for m in _QUERY_PASSWORD.finditer(url)]
    out += [m.group("pw").strip("'\"") for m in _DSN_PASSWORD.finditer(url)]
    password = None
    if "://" in url:  # SQLAlchemy parses nothing else (its URL pattern needs "name://")
        from sqlalchemy.engine import make_url

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
    return sorted({s for s in expanded if s and s != MASK}, key=len, reverse=True)


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
        found.update(password_spellings(text))
    if not texts:
        found.update(password_spellings(""))
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
            text = text.replace(s, MASK)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(s)}(?![A-Za-z0-9])", MASK, text)
    return text
