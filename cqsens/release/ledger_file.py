"""The ledger's SQLite file (:mod:`cqsens.release.ledger`): its tables, and reading them
back, checked (format, settings, every entry, the checksum), into a :class:`Ledger`."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from cqsens.errors import InputError
from cqsens.release.ledger_values import (
    NEIGHBORS,
    Change,
    Entry,
    Ledger,
    Limits,
    PrivacyModel,
    Settings,
    TamperedLedger,
)

__all__ = ["open_ledger", "read_ledger"]

FORMAT = "2"


def _log_table(name: str, *columns: str) -> str:
    """The CREATE TABLE of a log of the ledger: an id and a time, then ``columns``."""
    lines = ("id INTEGER PRIMARY KEY AUTOINCREMENT", "time TEXT NOT NULL", *columns)
    return f"\nCREATE TABLE {name} (\n" + ",\n".join(f"    {c}" for c in lines) + "\n)\n"


_RELEASES = _log_table(
    "releases", "query_sha256 TEXT NOT NULL", "epsilon REAL NOT NULL", "delta REAL NOT NULL",
    "rho REAL", "mechanism TEXT NOT NULL", "privacy_unit TEXT NOT NULL", "database TEXT NOT NULL",
    "rho_epsilon REAL NOT NULL DEFAULT 0", "rho_delta REAL NOT NULL DEFAULT 0")
_SETTINGS = "CREATE TABLE ledger_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_CHANGES = _log_table("ledger_changes", "setting TEXT NOT NULL", "old TEXT NOT NULL",
                      "new TEXT NOT NULL", "how TEXT NOT NULL")
_OLD_COLUMNS = ("id", "time", "query_sha256", "epsilon", "delta", "rho", "mechanism",
                "privacy_unit", "database")
_COLUMNS = ("time", "query_sha256", "epsilon", "delta", "rho", "mechanism", "privacy_unit",
            "database", "rho_epsilon", "rho_delta")
_KEYS = ("format", "created", "epsilon_budget", "delta_budget", "neighbor", "contributions",
         "unit", "checksum")
_OPTION = {"epsilon_budget": "--budget", "delta_budget": "--delta-budget"}


def _number_text(value: float | None) -> str:
    """A stored number: the shortest text that reads back as the same float."""
    return "" if value is None else repr(float(value)).removesuffix(".0")


def _shown(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


def _tampered(path: Path, what: str) -> TamperedLedger:
    return TamperedLedger(
        f"{what}; the ledger is refused, not reset. Restore the file from a backup, or record "
        "new releases in a new ledger file", source=str(path), construct="--ledger")


# ----------------------------------------------------------------------------- reading


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    """A connection to an existing ledger file, after a quick integrity check."""
    if path.is_dir():
        raise InputError("the ledger is a folder, not a file", source=str(path),
                         construct="--ledger")
    if path.stat().st_size == 0:
        raise _tampered(path, "the ledger file is empty (truncated?)")
    try:
        if readonly:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                   isolation_level=None, timeout=30.0)
        else:
            conn = sqlite3.connect(path, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA synchronous = FULL")
        check = conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _tampered(path, "the ledger is not a readable SQLite file: it is corrupt or "
                              f"truncated, or not a ledger (SQLite: {exc})") from None
    if check is None or check[0] != "ok":
        conn.close()
        raise _tampered(path, f"the ledger file is corrupt (SQLite: {check and check[0]})")
    return conn


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(r[0]) for r in rows} - {"sqlite_sequence"}


def _entry(row: Sequence[object], number: int, path: Path) -> Entry:
    """A release row, checked: a meaningless value is a tampered ledger."""
    time, sha, eps, delta, rho, mechanism, unit, database, rho_eps, rho_delta = row

    def real(x: object) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)

    problem = None
    if not all(isinstance(x, str) for x in (time, sha, mechanism, unit, database)):
        problem = "a text column holds a number"
    elif not (real(eps) and float(eps) > 0):  # type: ignore[arg-type]
        problem = f"ε = {eps!r} (an ε must be a finite number > 0)"
    elif not (real(delta) and 0 <= float(delta) < 1):  # type: ignore[arg-type]
        problem = f"δ = {delta!r} (a δ must be in [0, 1))"
    elif rho is not None and not (real(rho) and float(rho) >= 0):  # type: ignore[arg-type]
        problem = f"ρ = {rho!r} (a ρ must be a finite number >= 0)"
    elif not (real(rho_eps) and 0 <= float(rho_eps) <= float(eps)  # type: ignore[arg-type]
              and real(rho_delta) and 0 <= float(rho_delta) <= float(delta)):  # type: ignore[arg-type]
        problem = "its Gaussian share of ε or δ is outside [0, its ε or δ]"
    if problem is not None:
        raise _tampered(path, f"release {number} of the ledger is invalid: {problem}")
    return Entry(str(time), str(sha), float(eps), float(delta),  # type: ignore[arg-type]
                 None if rho is None else float(rho), str(mechanism),  # type: ignore[arg-type]
                 str(unit), str(database), float(rho_eps), float(rho_delta))  # type: ignore[arg-type]


def _old_entries(conn: sqlite3.Connection, path: Path) -> list[Entry]:
    """The releases of a ledger written by an earlier cqsens (no Gaussian shares stored).

    Its ρ was recorded only for releases made of Gaussian measurements alone,
    so their whole ε and δ is the Gaussian share.
    """
    rows = conn.execute("SELECT time, query_sha256, epsilon, delta, rho, mechanism, "
                        "privacy_unit, database, CASE WHEN rho IS NULL THEN 0 ELSE epsilon END,"
                        " CASE WHEN rho IS NULL THEN 0 ELSE delta END FROM releases ORDER BY id"
                        ).fetchall()
    return [_entry(r, n, path) for n, r in enumerate(rows, start=1)]


def _old_ledger(conn: sqlite3.Connection, path: Path) -> Ledger:
    """A ledger written by an earlier cqsens: no settings, its model read from its releases."""
    columns = tuple(str(r[1]) for r in conn.execute("PRAGMA table_info(releases)").fetchall())
    if columns != _OLD_COLUMNS:
        raise _tampered(path, "the ledger has releases but no settings table (it was removed?)")
    entries = _old_entries(conn, path)
    units = tuple(dict.fromkeys(e.privacy_unit for e in entries))
    model = PrivacyModel.from_text(units[0]) if len(units) == 1 else None
    mixed = units if len(units) > 1 or (units and model is None) else ()
    return Ledger(Settings(model=model), tuple(entries), (), old_format=True, mixed=mixed)


def _settings(values: dict[str, str], path: Path) -> Settings:
    """The stored settings, checked."""
    if set(values) != set(_KEYS) or values["format"] != FORMAT:
        raise _tampered(path, "the ledger's settings are not the ones cqsens writes "
                              f"(keys: {', '.join(sorted(values))})")
    try:
        eps = float(values["epsilon_budget"]) if values["epsilon_budget"] else None
        delta = float(values["delta_budget"]) if values["delta_budget"] else None
        Limits(eps, delta).checked()
        contributions = int(values["contributions"]) if values["contributions"] else 1
    except (ValueError, InputError) as exc:
        raise _tampered(path, f"a stored setting is invalid ({exc})") from None
    neighbor, unit = values["neighbor"], values["unit"] or None
    if neighbor and neighbor not in NEIGHBORS or contributions < 1:
        raise _tampered(path, f"the stored neighbour model is invalid ({neighbor!r}, "
                              f"{contributions})")
    model = PrivacyModel(neighbor, contributions, unit) if neighbor else None
    return Settings(eps, delta, model, values["created"])


def _rows(conn: sqlite3.Connection, table: str, columns: Sequence[str]) -> list[tuple[object, ...]]:
    return conn.execute(f"SELECT id, {', '.join(columns)} FROM {table} ORDER BY id").fetchall()


def _checksum(conn: sqlite3.Connection) -> str:
    """SHA-256 of every setting (but the checksum), change and release."""
    settings = sorted(conn.execute("SELECT key, value FROM ledger_settings "
                                   "WHERE key != 'checksum'").fetchall())
    changes = _rows(conn, "ledger_changes", ("time", "setting", "old", "new", "how"))
    releases = _rows(conn, "releases", _COLUMNS)
    blob = json.dumps([settings, changes, releases], ensure_ascii=False, allow_nan=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _load(conn: sqlite3.Connection, path: Path) -> Ledger:
    """The ledger of an open connection, every row checked, its checksum verified."""
    try:
        tables = _tables(conn)
        if tables == {"releases"}:
            return _old_ledger(conn, path)
        if tables != {"releases", "ledger_settings", "ledger_changes"}:
            what = ", ".join(sorted(tables)) or "none"
            if "releases" in tables and "ledger_settings" not in tables:
                raise _tampered(path, f"the ledger has no settings table (its tables: {what}; "
                                      "was it removed?)")
            raise _tampered(path, f"the file is not a cqsens ledger (its tables: {what})")
        values = {str(k): str(v) for k, v in
                  conn.execute("SELECT key, value FROM ledger_settings").fetchall()}
        settings = _settings(values, path)
        rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM releases ORDER BY id").fetchall()
        entries = tuple(_entry(r, n, path) for n, r in enumerate(rows, start=1))
        changes = tuple(Change(*(str(x) for x in r[1:]))
                        for r in _rows(conn, "ledger_changes",
                                       ("time", "setting", "old", "new", "how")))
        if _checksum(conn) != values["checksum"]:
            raise _tampered(path, "the ledger was edited outside cqsens (its checksum does "
                                  "not match its settings and releases)")
    except sqlite3.DatabaseError as exc:
        raise _tampered(path, f"the ledger cannot be read ({exc})") from None
    units = tuple(dict.fromkeys(e.privacy_unit for e in entries))
    if settings.model is not None and units and units != (settings.model.text(),):
        raise _tampered(path, "the ledger's releases name another privacy unit than its "
                              "settings")
    # releases without a stored model: a migrated ledger of an earlier cqsens that mixed units
    return Ledger(settings, entries, changes, mixed=units if settings.model is None else ())


def open_ledger(path: str | Path) -> Ledger:
    """The ledger in ``path``, read-only (an absent file is an empty ledger).

    Raises
    ------
    TamperedLedger
        The file is empty, corrupt, not a ledger, or was edited outside cqsens.
    """
    target = Path(path)
    if not target.exists():
        return Ledger(Settings())
    conn = _connect(target, readonly=True)
    try:
        return _load(conn, target)
    finally:
        conn.close()


def read_ledger(path: str | Path) -> list[Entry]:
    """Every release recorded in the ledger (an absent file is an empty ledger)."""
    return list(open_ledger(path).entries)
