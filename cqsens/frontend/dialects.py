"""The SQL dialects cqsens reads: sqlglot's, by name in any casing."""

from __future__ import annotations

from sqlglot.dialects.dialect import Dialect

__all__ = ["dialect_names", "normalize_dialect"]


def dialect_names() -> list[str]:
    """The names of sqlglot's dialects, sorted (``bigquery``, ``mysql``, ``postgres``...).

    >>> "postgres" in dialect_names()
    True
    """
    return sorted(name for name in Dialect.classes if name)


def normalize_dialect(name: str) -> str | None:
    """The dialect's name as sqlglot spells it, or None when there is no such dialect.

    Parameters
    ----------
    name : str
        A dialect name in any casing, with or without blanks around it.

    Examples
    --------
    >>> normalize_dialect("Postgres"), normalize_dialect("nonsense")
    ('postgres', None)
    """
    wanted = name.strip().lower()
    return wanted if wanted and wanted in Dialect.classes else None
