"""The privacy budget ledger: one SQLite file, one row per release, never an answer.

Each release is recorded with the SHA-256 of its query text, its ε and δ, the
ρ of its Gaussian measurements, the mechanisms used, the time, the privacy unit
and the database it read (its URL, password masked).  The answer is not
recorded.

**Settings.**  The ledger stores, in its ``ledger_settings`` table, its budget
(total ε, and a cap on the total δ) and its neighbour model (``--neighbor``,
``--contributions``, ``--unit``).  A budget is stored by the first release
that gives one (``--budget``, ``--delta-budget``), or by ``cqsens budget
--set``; a later release that asks for another budget, or for another
neighbour model, is refused (:class:`LedgerMismatch`): a stored budget changes
only through ``cqsens budget --set``, which the ``ledger_changes`` table
records.  With an ε budget and no δ budget, a release that spends δ is
refused (δ is never spent unbudgeted).

**Composition.**  The spent budget is computed exactly (every ε and δ as the
decimal it prints as, added as fractions):

* the measurements that are not Gaussian add up (basic composition, Dwork and
  Roth, The Algorithmic Foundations of Differential Privacy, 2014, Thm 3.16);
* the Gaussian measurements, over every release, are composed in zCDP: their ρ
  add up (Bun and Steinke, TCC 2016, Lemma 2.3) and the total is converted to
  (ε, δ) once, for the sum of their δ, by Canonne, Kamath and Steinke (NeurIPS
  2020, Prop 12 and Cor 13) — the conversion OpenDP's ``make_zCDP_to_approxDP``
  uses; their sum of ε counts instead when it is smaller.

**Integrity.**  The settings hold a SHA-256 checksum of the settings, the
changes and the releases: a ledger edited outside cqsens (a changed budget, a
deleted or altered release), an entry with a meaningless value (a negative ε),
a truncated, empty or corrupt file is refused with an error, never reset.  The
checksum has no secret key: it catches edits, not a forger who recomputes it.

:func:`record` checks the budget and inserts the release in one ``BEGIN
IMMEDIATE`` transaction, committed before the caller prints anything: a
release that was shown has always been charged, and concurrent releases
against one budget never overspend it.  :func:`precheck` makes the same
checks, read-only, before a release runs its query.

This module checks and writes; the ledger's values and the composition of what it
spent are in :mod:`cqsens.release.ledger_values`, its tables and their reading in
:mod:`cqsens.release.ledger_file`, and the public names of both are importable
from here.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from cqsens.errors import InputError
from cqsens.release.ledger_file import (
    _CHANGES,
    _COLUMNS,
    _OPTION,
    _RELEASES,
    _SETTINGS,
    FORMAT,
    _checksum,
    _connect,
    _load,
    _number_text,
    open_ledger,
    read_ledger,
)
from cqsens.release.ledger_values import (
    BudgetExceeded,
    Change,
    Charge,
    Entry,
    Ledger,
    LedgerMismatch,
    Limits,
    PrivacyModel,
    Settings,
    Spent,
    TamperedLedger,
    _exact,
    now,
    query_hash,
    spent,
    zcdp_dp_epsilon,
)

__all__ = [
    "BudgetExceeded", "Change", "Charge", "Entry", "Ledger", "LedgerMismatch", "Limits",
    "PrivacyModel", "Settings", "Spent", "TamperedLedger", "agreed", "open_ledger", "precheck",
    "query_hash", "read_ledger", "record", "set_budget", "spent", "zcdp_dp_epsilon",
]


# ----------------------------------------------------------------------------- checks


def _mismatch_model(ledger: Ledger, model: PrivacyModel, path: Path) -> LedgerMismatch | None:
    if ledger.mixed:
        return LedgerMismatch(
            "this ledger, written by an earlier cqsens, already mixes privacy units ("
            + "; ".join(ledger.mixed) + "): their ε do not add up, so no release is added to "
            "it. Record new releases in a new ledger file", source=str(path),
            construct="--ledger")
    stored = ledger.settings.model
    if stored is None or stored == model:
        return None
    return LedgerMismatch(
        f"this ledger counts releases whose privacy unit is '{stored.text()}' (stored with its "
        f"first release); this release's is '{model.text()}'. An ε spent for one unit does "
        "not add up with an ε spent for another: give the same --neighbor, --contributions "
        "and --unit, or record this release in another ledger (--ledger OTHER.sqlite)",
        source=str(path), construct="--unit")


def _resolve(stored: float | None, given: float | None, key: str, path: Path) -> float | None:
    """The budget that applies: the stored one; a given one must agree with it."""
    if given is None or stored is None:
        return stored if stored is not None else given
    if _exact(given) == _exact(stored):
        return stored
    option = _OPTION[key]
    symbol = "ε" if key == "epsilon_budget" else "δ"
    raise LedgerMismatch(
        f"this ledger's budget is {symbol} = {stored:g}, not {given:g} as {option} (or "
        f"cqsens.toml) says. A stored budget changes only on purpose: cqsens budget --ledger "
        f"{path} --set {option} {given:g}", source=str(path), construct=option)


def agreed(ledger: Ledger, limits: Limits, path: str | Path) -> Settings:
    """The ledger's settings with the budget ``limits`` give where none is stored.

    Raises
    ------
    LedgerMismatch
        A given budget differs from the stored one.
    """
    target, checked, s = Path(path), limits.checked(), ledger.settings
    return replace(s, epsilon_budget=_resolve(s.epsilon_budget, checked.epsilon,
                                              "epsilon_budget", target),
                   delta_budget=_resolve(s.delta_budget, checked.delta, "delta_budget", target))


def _check(ledger: Ledger, charge: Charge, model: PrivacyModel, limits: Limits,
           path: Path) -> Settings:
    """The settings after this release; refuses a mismatch or an overspending release."""
    mismatch = _mismatch_model(ledger, model, path)
    if mismatch is not None:
        raise mismatch
    s = ledger.settings
    eps_budget = _resolve(s.epsilon_budget, limits.epsilon, "epsilon_budget", path)
    delta_budget = _resolve(s.delta_budget, limits.delta, "delta_budget", path)
    before = ledger.spent
    after = spent([*ledger.entries, _as_entry(charge, model)])
    many = f"{before.releases} release{'s' if before.releases != 1 else ''}"
    if eps_budget is not None and after.exact_epsilon > _exact(eps_budget):
        left = max(Fraction(0), _exact(eps_budget) - before.exact_epsilon)
        raise BudgetExceeded(
            f"this release needs ε = {charge.epsilon:g} but the budget ε = {eps_budget:g} has "
            f"{float(left):.6g} left ({before.epsilon:.6g} spent by {many}; with this release "
            f"{after.epsilon:.6g}); nothing was released", source=str(path), construct="--budget")
    if charge.delta > 0 and delta_budget is None and eps_budget is not None:
        raise BudgetExceeded(
            f"this release spends δ = {charge.delta:g}, but the ledger has an ε budget and no δ "
            "budget: give --delta-budget δ_total (the first release that gives it stores it), "
            f"or store one with cqsens budget --ledger {path} --set --delta-budget δ_total; "
            "nothing was released", source=str(path), construct="--delta-budget")
    if delta_budget is not None and after.exact_delta > _exact(delta_budget):
        left_d = max(Fraction(0), _exact(delta_budget) - before.exact_delta)
        raise BudgetExceeded(
            f"this release needs δ = {charge.delta:g} but the δ budget {delta_budget:g} has "
            f"{float(left_d):.3g} left ({before.delta:.3g} spent by {many}); nothing was "
            "released", source=str(path), construct="--delta-budget")
    return Settings(eps_budget, delta_budget, model, s.created)


def _as_entry(charge: Charge, model: PrivacyModel) -> Entry:
    rho = charge.rho if charge.rho > 0 or charge.rho_epsilon > 0 else None
    return Entry("", "", charge.epsilon, charge.delta, rho, "", model.text(), "",
                 charge.rho_epsilon, charge.rho_delta)


def precheck(path: str | Path, charge: Charge, model: PrivacyModel, limits: Limits) -> None:
    """Refuse, before the query runs, a release :func:`record` would refuse.

    Read-only: nothing is created or written.

    Raises
    ------
    BudgetExceeded, LedgerMismatch, TamperedLedger
    """
    target = Path(path)
    _check(open_ledger(target), charge, model, limits.checked(), target)


# ----------------------------------------------------------------------------- writing


def _create(path: Path) -> None:
    """Create an empty ledger at ``path`` atomically (a ready file, hard-linked in place)."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        fd, temp = tempfile.mkstemp(prefix=".ledger-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot create the ledger: {exc.strerror}", source=str(path),
                         construct="--ledger") from None
    os.close(fd)
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            conn.execute("BEGIN")
            for ddl in (_RELEASES, _SETTINGS, _CHANGES):
                conn.execute(ddl)
            created = now()
            values = {"format": FORMAT, "created": created, "epsilon_budget": "",
                      "delta_budget": "", "neighbor": "", "contributions": "", "unit": "",
                      "checksum": ""}
            conn.executemany("INSERT INTO ledger_settings VALUES (?, ?)", values.items())
            _seal(conn)
            conn.execute("COMMIT")
        finally:
            conn.close()
        with contextlib.suppress(FileExistsError):  # another process created it first
            os.link(temp, path)
    except OSError as exc:
        raise InputError(f"cannot create the ledger: {exc.strerror}", source=str(path),
                         construct="--ledger") from None
    finally:
        Path(temp).unlink(missing_ok=True)


def _seal(conn: sqlite3.Connection) -> None:
    conn.execute("UPDATE ledger_settings SET value = ? WHERE key = 'checksum'",
                 (_checksum(conn),))


def _migrate(conn: sqlite3.Connection, ledger: Ledger) -> None:
    """Give a ledger of an earlier cqsens the settings and columns of this one."""
    conn.execute("ALTER TABLE releases ADD COLUMN rho_epsilon REAL NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE releases ADD COLUMN rho_delta REAL NOT NULL DEFAULT 0")
    conn.execute("UPDATE releases SET rho_epsilon = epsilon, rho_delta = delta "
                 "WHERE rho IS NOT NULL")
    conn.execute(_SETTINGS)
    conn.execute(_CHANGES)
    model = ledger.settings.model
    values = {"format": FORMAT, "created": ledger.entries[0].time if ledger.entries else now(),
              "epsilon_budget": "", "delta_budget": "",
              "neighbor": model.neighbor if model else "",
              "contributions": str(model.contributions) if model else "",
              "unit": (model.unit or "") if model else "", "checksum": ""}
    conn.executemany("INSERT INTO ledger_settings VALUES (?, ?)", values.items())
    conn.execute("INSERT INTO ledger_changes (time, setting, old, new, how) VALUES "
                 "(?, 'format', '1', ?, 'opened by this cqsens: settings table added')",
                 (now(), FORMAT))


def _store(conn: sqlite3.Connection, old: Settings, new: Settings, how: str) -> None:
    """Write the settings that changed, each with a row in the change log."""
    pairs = [("epsilon_budget", _number_text(old.epsilon_budget),
              _number_text(new.epsilon_budget)),
             ("delta_budget", _number_text(old.delta_budget), _number_text(new.delta_budget))]
    if new.model is not None and old.model != new.model:
        pairs += [("neighbor", old.model.neighbor if old.model else "", new.model.neighbor),
                  ("contributions", str(old.model.contributions) if old.model else "",
                   str(new.model.contributions)),
                  ("unit", (old.model.unit or "") if old.model else "", new.model.unit or "")]
    for key, before, after in pairs:
        if before == after:
            continue
        conn.execute("UPDATE ledger_settings SET value = ? WHERE key = ?", (after, key))
        conn.execute("INSERT INTO ledger_changes (time, setting, old, new, how) VALUES "
                     "(?, ?, ?, ?, ?)", (now(), key, before or "none", after or "none", how))


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[tuple[sqlite3.Connection, Ledger]]:
    """An IMMEDIATE transaction on the ledger (created when absent), committed on success."""
    if not path.exists():
        _create(path)
    conn = _connect(path, readonly=False)
    try:
        conn.execute("BEGIN IMMEDIATE")
        ledger = _load(conn, path)
        if ledger.old_format:
            _migrate(conn, ledger)
        yield conn, ledger
        _seal(conn)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise InputError(f"cannot write the ledger: {exc}", source=str(path),
                         construct="--ledger") from None
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def record(path: str | Path, entry: Entry, model: PrivacyModel,
           limits: Limits | None = None) -> Ledger:
    """Add ``entry`` if the ledger allows it, in one committed transaction.

    Parameters
    ----------
    path : str or Path
        The ledger file (created when absent).
    entry : Entry
        The release.
    model : PrivacyModel
        Its neighbour model: stored with the first release, then required.
    limits : Limits
        The budget the release was given; a budget not yet stored is stored.

    Returns
    -------
    Ledger
        The ledger, this release included.

    Raises
    ------
    BudgetExceeded
        The release would spend more than the budget; nothing is recorded.
    LedgerMismatch
        Another budget or neighbour model than the stored one.
    TamperedLedger, InputError
        The ledger is corrupt or edited, or cannot be opened or written.
    """
    target = Path(path)
    checked = (limits or Limits()).checked()
    with _writing(target) as (conn, ledger):
        settings = _check(ledger, entry.charge, model, checked, target)
        _store(conn, ledger.settings, settings, "stored by the first release that gave it")
        c = entry.charge
        values = (entry.time, entry.query_sha256, entry.epsilon, entry.delta, entry.rho,
                  entry.mechanism, entry.privacy_unit, entry.database, c.rho_epsilon,
                  c.rho_delta)
        conn.execute(f"INSERT INTO releases ({', '.join(_COLUMNS)}) VALUES "
                     f"({', '.join('?' * len(_COLUMNS))})", values)
    return replace(ledger, settings=settings, entries=(*ledger.entries, entry), old_format=False)


def set_budget(path: str | Path, limits: Limits) -> Ledger:
    """Store a new budget on purpose (``cqsens budget --set``), logged as a change.

    A budget below what was spent is stored too: every later release is refused.
    """
    target = Path(path)
    checked = limits.checked()
    if checked.epsilon is None and checked.delta is None:
        raise InputError("--set needs --budget and/or --delta-budget", construct="--set")
    with _writing(target) as (conn, ledger):
        old = ledger.settings
        new = replace(old, epsilon_budget=checked.epsilon if checked.epsilon is not None
                      else old.epsilon_budget,
                      delta_budget=checked.delta if checked.delta is not None
                      else old.delta_budget)
        _store(conn, old, new, "cqsens budget --set")
    return open_ledger(target)
