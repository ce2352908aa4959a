"""The privacy budget ledger: one SQLite file, one row per release, never an answer.

Each release is recorded with the SHA-256 of its query text, its ε and δ, the
mechanisms used, the time, the privacy unit (the neighbour model and the rows
one person may own) and the database it read (its URL, password masked).  The
answer is not recorded.  The spent budget is computed by composition:

* **basic composition**: ε and δ add up (Dwork and Roth, The Algorithmic
  Foundations of Differential Privacy, 2014, Thm 3.16);
* **zCDP composition** for the releases made only of Gaussian noise: their ρ
  add up (Bun and Steinke, TCC 2016, Lemma 2.3), and ρ-zCDP is
  ``(ρ + 2√(ρ ln(1/δ)), δ)``-DP for their summed δ (Prop 1.3); the smaller of
  this ε and their summed ε is counted.

:func:`record` checks the budget and inserts the release in one ``BEGIN
IMMEDIATE`` transaction, committed before the caller prints anything: a
release that was shown has always been charged.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from cqsens.errors import InputError
from cqsens.release.noise import zcdp_epsilon

__all__ = ["BudgetExceeded", "Entry", "Spent", "query_hash", "read_ledger", "record", "spent"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    query_sha256 TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    rho REAL,
    mechanism TEXT NOT NULL,
    privacy_unit TEXT NOT NULL,
    database TEXT NOT NULL
)
"""
_COLUMNS = "time, query_sha256, epsilon, delta, rho, mechanism, privacy_unit, database"
_SLACK = 1e-12  # sums of decimal ε (0.1 + 0.2) are not exact in binary floating point


class BudgetExceeded(InputError):
    """A release would spend more than the declared budget."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One recorded release (never its answer)."""

    time: str
    query_sha256: str
    epsilon: float
    delta: float
    rho: float | None
    mechanism: str
    privacy_unit: str
    database: str

    def to_dict(self) -> dict[str, object]:
        """The JSON object of the entry."""
        return {"time": self.time, "query_sha256": self.query_sha256, "epsilon": self.epsilon,
                "delta": self.delta, "rho": self.rho, "mechanism": self.mechanism,
                "privacy_unit": self.privacy_unit, "database": self.database}


@dataclass(frozen=True, slots=True)
class Spent:
    """The budget the entries spend together."""

    epsilon: float
    delta: float
    releases: int
    rule: str


def query_hash(text: str) -> str:
    """SHA-256 of the query text, whitespace runs folded.

    >>> query_hash("SELECT  1") == query_hash("SELECT 1")
    True
    """
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def spent(entries: Sequence[Entry]) -> Spent:
    """ε and δ spent by ``entries``: basic composition, zCDP for the Gaussian-only ones.

    Examples
    --------
    >>> e = Entry("t", "h", 0.5, 0.0, None, "laplace", "u", "db")
    >>> spent([e, e]).epsilon
    1.0
    """
    plain = [e for e in entries if e.rho is None]
    gauss = [e for e in entries if e.rho is not None]
    eps = math.fsum(e.epsilon for e in plain)
    delta = math.fsum(e.delta for e in entries)
    rule = "basic composition (ε and δ add up)"
    if gauss:
        basic = math.fsum(e.epsilon for e in gauss)
        rho = math.fsum(e.rho or 0.0 for e in gauss)
        g_delta = math.fsum(e.delta for e in gauss)
        by_rho = zcdp_epsilon(rho, g_delta) if 0 < g_delta < 1 else math.inf
        eps += min(basic, by_rho)
        if by_rho < basic:
            rule = (f"basic composition, with the Gaussian releases composed in zCDP "
                    f"(ρ = {rho:.6g})")
    return Spent(eps, delta, len(entries), rule)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute(_SCHEMA)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the ledger: {exc}", source=str(path),
                         construct="--ledger") from None
    return conn


def _entries(conn: sqlite3.Connection) -> list[Entry]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM releases ORDER BY id").fetchall()
    return [Entry(*row) for row in rows]


def read_ledger(path: str | Path) -> list[Entry]:
    """Every release recorded in the ledger (an absent file is an empty ledger)."""
    target = Path(path)
    if not target.exists():
        return []
    if target.is_dir():
        raise InputError("the ledger is a folder, not a file", source=str(target),
                         construct="--ledger")
    conn = _connect(target)
    try:
        return _entries(conn)
    except sqlite3.Error as exc:
        raise InputError(f"cannot read the ledger: {exc}", source=str(target),
                         construct="--ledger") from None
    finally:
        conn.close()


def record(path: str | Path, entry: Entry, *, budget: float | None) -> Spent:
    """Add ``entry`` if the budget allows it, in one committed transaction.

    Parameters
    ----------
    path : str or Path
        The ledger file (created when absent).
    entry : Entry
        The release.
    budget : float or None
        The total ε the ledger may spend (None: no limit, only recorded).

    Returns
    -------
    Spent
        The budget spent, this release included.

    Raises
    ------
    BudgetExceeded
        The release would spend more than ``budget``; nothing is recorded.
    InputError
        The ledger cannot be opened or written.
    """
    target = Path(path)
    conn = _connect(target)
    try:
        conn.execute("BEGIN IMMEDIATE")
        before = spent(_entries(conn))
        after = spent([*_entries(conn), entry])
        if budget is not None and after.epsilon > budget + _SLACK:
            conn.execute("ROLLBACK")
            left = max(0.0, budget - before.epsilon)
            raise BudgetExceeded(
                f"this release needs ε = {entry.epsilon:g} but the budget ε = {budget:g} has "
                f"{left:.6g} left ({before.epsilon:.6g} spent by {before.releases} "
                f"release{'s' if before.releases != 1 else ''}); nothing was released",
                source=str(target), construct="--budget")
        conn.execute(f"INSERT INTO releases ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (entry.time, entry.query_sha256, entry.epsilon, entry.delta, entry.rho,
                      entry.mechanism, entry.privacy_unit, entry.database))
        conn.execute("COMMIT")
        return after
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise InputError(f"cannot write the ledger: {exc}", source=str(target),
                         construct="--ledger") from None
    finally:
        conn.close()
