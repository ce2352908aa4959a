"""The release of a statement that reads only public tables (docs/rules.md, rule public-statement).

Both neighbouring databases give such a statement the same answer, so its exact
answer is as private as no answer at all: it is returned without noise and
spends no ε or δ (the ledger records nothing).  The statement runs as written,
in one read-only transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from cqsens.analysis import Analysis
from cqsens.db.connect import connect
from cqsens.frontend.dates import sqlite_dates
from cqsens.frontend.public_statement import statement_for
from cqsens.public_statement import is_public_statement
from cqsens.release.ledger import Charge

__all__ = ["MECHANISM", "NOTHING_SPENT", "PublicAnswer", "is_public_release", "public_answer",
           "run_public", "split_text"]

MECHANISM = "none: computed from public tables only"
NOTHING_SPENT = Charge(0.0, 0.0)


def run_public(url: str, sql: str, dialect: str | None, source: str
               ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """Run ``sql`` (a statement over public tables only) in one read-only transaction
    (a snapshot on PostgreSQL); its column labels and rows, as the driver gives them."""
    with connect(url) as conn:
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        trans = conn.begin()
        try:
            name = str(conn.dialect.name)
            target = "postgres" if name == "postgresql" else name
            if target == "sqlite":
                conn.exec_driver_sql("PRAGMA query_only = ON")
            text = statement_for(sql, dialect=dialect, target=target, source=source)
            result = conn.exec_driver_sql(sqlite_dates(text) if target == "sqlite" else text)
            labels = tuple(str(k) for k in result.keys())
            rows = [tuple(row) for row in result.fetchall()]
        finally:
            trans.rollback()
    return labels, rows


class _Released(Protocol):
    @property
    def mechanism(self) -> str: ...


@dataclass(frozen=True, slots=True)
class PublicAnswer:
    """The exact answer of a statement over public tables: its column labels, its rows
    and the tables it reads."""

    labels: tuple[str, ...]
    rows: tuple[tuple[int | float | str | None, ...], ...]
    tables: str

    @property
    def key_mode(self) -> str:
        """How the rows were chosen, for the release's output."""
        return f"every row of the answer, computed from public tables only ({self.tables})"

    @property
    def note(self) -> str:
        """The release's note."""
        return (f"every table it reads is declared public ({self.tables}): its exact answer "
                "is released without noise and spends no ε or δ (the ledger records nothing)")


def split_text() -> str:
    """The budget line of such a release."""
    return ("nothing spent: both neighbours give the same answer (docs/rules.md, rule "
            "public-statement)")


def is_public_release(release: _Released) -> bool:
    """Whether ``release`` is the exact answer of a statement over public tables only."""
    return release.mechanism == MECHANISM


def _cell(value: object) -> int | float | str | None:
    """A database value as the release shows it (exact text for a decimal)."""
    if value is None or isinstance(value, (int, float, str)):
        return value
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return str(value)


def public_answer(analysis: Analysis, *, url: str) -> PublicAnswer:
    """Run the public statement of ``analysis`` on ``url``, as written, read-only.

    Parameters
    ----------
    analysis : Analysis
        The analysis of a statement that reads only public tables.
    url : str
        ``sqlite:///file.db`` or ``postgresql://…``.

    Returns
    -------
    PublicAnswer
    """
    if not is_public_statement(analysis):
        raise ValueError("not a statement over public tables only")
    labels, found = run_public(url, analysis.query, analysis.query_obj.dialect,
                               analysis.source)
    rows = tuple(tuple(_cell(v) for v in row) for row in found)
    return PublicAnswer(labels, rows, str(analysis.count_derivation.get("tables") or ""))
