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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from cqsens.errors import InputError

__all__ = [
    "BudgetExceeded", "Change", "Charge", "Entry", "Ledger", "LedgerMismatch", "Limits",
    "PrivacyModel", "Settings", "Spent", "TamperedLedger", "agreed", "open_ledger", "precheck",
    "query_hash", "read_ledger", "record", "set_budget", "spent", "zcdp_dp_epsilon",
]

FORMAT = "2"
_RELEASES = """
CREATE TABLE releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    query_sha256 TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    rho REAL,
    mechanism TEXT NOT NULL,
    privacy_unit TEXT NOT NULL,
    database TEXT NOT NULL,
    rho_epsilon REAL NOT NULL DEFAULT 0,
    rho_delta REAL NOT NULL DEFAULT 0
)
"""
_SETTINGS = "CREATE TABLE ledger_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
_CHANGES = """
CREATE TABLE ledger_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,
    setting TEXT NOT NULL,
    old TEXT NOT NULL,
    new TEXT NOT NULL,
    how TEXT NOT NULL
)
"""
_OLD_COLUMNS = ("id", "time", "query_sha256", "epsilon", "delta", "rho", "mechanism",
                "privacy_unit", "database")
_COLUMNS = ("time", "query_sha256", "epsilon", "delta", "rho", "mechanism", "privacy_unit",
            "database", "rho_epsilon", "rho_delta")
_KEYS = ("format", "created", "epsilon_budget", "delta_budget", "neighbor", "contributions",
         "unit", "checksum")
_NEIGHBORS = ("add-remove", "substitute")
_OPTION = {"epsilon_budget": "--budget", "delta_budget": "--delta-budget"}


# ----------------------------------------------------------------------------- errors


class BudgetExceeded(InputError):
    """A release would spend more than the ledger's budget."""


class LedgerMismatch(InputError):
    """A release asks for another budget or neighbour model than the ledger stores."""


class TamperedLedger(InputError):
    """The ledger file is corrupt, truncated, or was edited outside cqsens."""


# ----------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class PrivacyModel:
    """The neighbour model a release protects: what one person is."""

    neighbor: str
    contributions: int = 1
    unit: str | None = None  # --unit: a row of this table with the rows that reference it

    def text(self) -> str:
        """The model in words (the ``privacy_unit`` of an entry).

        >>> PrivacyModel("add-remove", 2).text()
        'add-remove, up to 2 rows per person'
        """
        if self.unit is not None:
            return f"{self.neighbor}, one person: {self.unit} with the rows that reference it"
        rows = "1 row" if self.contributions == 1 else f"up to {self.contributions} rows"
        return f"{self.neighbor}, {rows} per person"


@dataclass(frozen=True, slots=True)
class Charge:
    """What one release spends.

    ``rho`` is the zCDP ρ of its Gaussian measurements, and ``rho_epsilon``,
    ``rho_delta`` the part of ``epsilon`` and ``delta`` they were given; the
    rest of ``epsilon`` and ``delta`` is spent by the other measurements.
    """

    epsilon: float
    delta: float
    rho: float = 0.0
    rho_epsilon: float = 0.0
    rho_delta: float = 0.0


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
    rho_epsilon: float | None = None  # None: with a ρ, all of ε and δ is Gaussian
    rho_delta: float | None = None

    @property
    def charge(self) -> Charge:
        """What the release spent."""
        if self.rho is None:
            return Charge(self.epsilon, self.delta)
        return Charge(self.epsilon, self.delta, self.rho,
                      self.epsilon if self.rho_epsilon is None else self.rho_epsilon,
                      self.delta if self.rho_delta is None else self.rho_delta)

    def to_dict(self) -> dict[str, object]:
        """The JSON object of the entry."""
        c = self.charge
        return {"time": self.time, "query_sha256": self.query_sha256, "epsilon": self.epsilon,
                "delta": self.delta, "rho": self.rho, "rho_epsilon": c.rho_epsilon,
                "rho_delta": c.rho_delta, "mechanism": self.mechanism,
                "privacy_unit": self.privacy_unit, "database": self.database}


@dataclass(frozen=True, slots=True)
class Limits:
    """The budget a release or ``cqsens budget`` asks for (None: not given)."""

    epsilon: float | None = None
    delta: float | None = None

    def checked(self) -> Limits:
        """The limits, or an :class:`InputError` for a meaningless one (from cqsens.toml)."""
        if self.epsilon is not None and not (0 < self.epsilon < math.inf):
            raise InputError(f"the ε budget must be a finite number > 0, not {self.epsilon!r}",
                             construct="--budget")
        if self.delta is not None and not (0 < self.delta < 1):
            raise InputError(f"the δ budget must be a number in (0, 1), not {self.delta!r}",
                             construct="--delta-budget")
        return self


@dataclass(frozen=True, slots=True)
class Change:
    """One change of a stored setting (the ledger's audit log)."""

    time: str
    setting: str
    old: str
    new: str
    how: str

    def to_dict(self) -> dict[str, str]:
        """The JSON object of the change."""
        return {"time": self.time, "setting": self.setting, "old": self.old, "new": self.new,
                "how": self.how}


@dataclass(frozen=True, slots=True)
class Settings:
    """What a ledger stores besides its releases."""

    epsilon_budget: float | None = None
    delta_budget: float | None = None
    model: PrivacyModel | None = None
    created: str = ""


@dataclass(frozen=True, slots=True)
class Spent:
    """The budget the entries spend together (``epsilon`` and ``delta`` rounded up as floats)."""

    epsilon: float
    delta: float
    releases: int
    rule: str
    exact_epsilon: Fraction = Fraction(0)
    exact_delta: Fraction = Fraction(0)


@dataclass(frozen=True, slots=True)
class Ledger:
    """A ledger read from its file.

    ``mixed`` lists the privacy units of a ledger written by an earlier cqsens
    whose releases mix several (no release can be added to it).
    """

    settings: Settings
    entries: tuple[Entry, ...] = ()
    changes: tuple[Change, ...] = ()
    old_format: bool = False
    mixed: tuple[str, ...] = ()

    @property
    def spent(self) -> Spent:
        """ε and δ spent by the releases."""
        return spent(self.entries)

    def epsilon_left(self) -> float | None:
        """ε left in the budget (None without a budget)."""
        if self.settings.epsilon_budget is None:
            return None
        return max(0.0, float(_exact(self.settings.epsilon_budget) - self.spent.exact_epsilon))

    def delta_left(self) -> float | None:
        """δ left under the cap (None without one)."""
        if self.settings.delta_budget is None:
            return None
        return max(0.0, float(_exact(self.settings.delta_budget) - self.spent.exact_delta))


# ----------------------------------------------------------------------------- composition


def _exact(value: float) -> Fraction:
    """The decimal a float prints as, exactly (``0.1`` is 1/10)."""
    return Fraction(Decimal(repr(float(value))))


def zcdp_dp_epsilon(rho: float, delta: float) -> float:
    """ε of a ρ-zCDP mechanism at δ, rounded up.

    Canonne, Kamath and Steinke (NeurIPS 2020, Prop 12 and Cor 13): ρ-zCDP
    implies (ε, δ)-DP for every α > 1 with
    ``ε = αρ + ln(1 − 1/α) + (ln(1/δ) − ln α)/(α − 1)``; the smallest over α
    is searched (every α gives a valid ε, so the search cannot err on the
    unsafe side) and the floating-point error is rounded up.  It is never
    larger than Bun and Steinke's ``ρ + 2√(ρ ln(1/δ))`` (Prop 1.3).

    Examples
    --------
    >>> round(zcdp_dp_epsilon(0.01, 1e-6), 4)
    0.6217
    >>> zcdp_dp_epsilon(0.0, 1e-6)
    0.0
    """
    if not (0 <= rho < math.inf) or not (0 < delta < 1):
        raise ValueError(f"ρ = {rho!r} and δ = {delta!r}: need ρ >= 0 and δ in (0, 1)")
    if rho == 0:
        return 0.0
    log_d = -math.log(delta)

    def at(t: float) -> tuple[float, float]:  # α = 1 + e^t
        a1 = math.exp(t)
        log_a = math.log1p(a1)
        terms = ((1 + a1) * rho, t - log_a, (log_d - log_a) / a1)
        return math.fsum(terms), sum(abs(x) for x in terms)

    grid = [-30 + i * 0.25 for i in range(321)]  # t in [-30, 50]
    best = min(grid, key=lambda t: at(t)[0])
    lo, hi = best - 0.25, best + 0.25
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(80):  # golden section on the bracket around the best grid point
        m1, m2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if at(m1)[0] <= at(m2)[0]:
            hi = m2
        else:
            lo = m1
    value, size = min(at(t) for t in (lo, hi, best))
    return max(0.0, value + 1e-12 * size + 1e-300)


def spent(entries: Sequence[Entry]) -> Spent:
    """ε and δ spent by ``entries``: basic composition, zCDP for the Gaussian parts.

    Examples
    --------
    >>> e = Entry("t", "h", 0.1, 0.0, None, "laplace", "u", "db")
    >>> f = Entry("t", "h", 0.2, 0.0, None, "laplace", "u", "db")
    >>> spent([e, f]).exact_epsilon
    Fraction(3, 10)
    """
    charges = [e.charge for e in entries]
    plain = sum((_exact(c.epsilon) - _exact(c.rho_epsilon) for c in charges), Fraction(0))
    delta = sum((_exact(c.delta) for c in charges), Fraction(0))
    rule = "basic composition (ε and δ add up)"
    gauss = [c for c in charges if c.rho_epsilon > 0 or c.rho > 0]
    eps = plain
    if gauss:
        basic = sum((_exact(c.rho_epsilon) for c in gauss), Fraction(0))
        rho = math.fsum(c.rho for c in gauss)
        g_delta = math.fsum(c.rho_delta for c in gauss)
        by_rho = Fraction(zcdp_dp_epsilon(rho, g_delta)) if 0 < g_delta < 1 else None
        if by_rho is not None and by_rho < basic:
            eps += by_rho
            rule = (f"basic composition, the Gaussian measurements composed in zCDP: ρ = "
                    f"{rho:.6g} in total, converted once at their δ = {g_delta:.3g}")
        else:
            eps += basic
    return Spent(_up(eps), _up(delta), len(entries), rule, eps, delta)


def _up(value: Fraction) -> float:
    """The float nearest ``value`` whose decimal (as it prints) is not below it."""
    shown = float(value)
    while _exact(shown) < value:
        shown = math.nextafter(shown, math.inf)
    return shown


# ----------------------------------------------------------------------------- helpers


def query_hash(text: str) -> str:
    """SHA-256 of the query text, whitespace runs folded.

    >>> query_hash("SELECT  1") == query_hash("SELECT 1")
    True
    """
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


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


def _model_of(text: str) -> PrivacyModel | None:
    """The model whose :meth:`PrivacyModel.text` is ``text`` (None when none is)."""
    neighbor, sep, rest = text.partition(", ")
    if not sep or neighbor not in _NEIGHBORS:
        return None
    if rest.startswith("one person: ") and rest.endswith(" with the rows that reference it"):
        unit = rest.removeprefix("one person: ").removesuffix(" with the rows that reference it")
        return PrivacyModel(neighbor, 1, unit)
    if rest == "1 row per person":
        return PrivacyModel(neighbor)
    words = rest.split()
    if len(words) == 5 and words[0] == "up" and words[2:] == ["rows", "per", "person"] \
            and words[1].isdigit() and int(words[1]) > 1:
        return PrivacyModel(neighbor, int(words[1]))
    return None


def _old_ledger(conn: sqlite3.Connection, path: Path) -> Ledger:
    """A ledger written by an earlier cqsens: no settings, its model read from its releases."""
    columns = tuple(str(r[1]) for r in conn.execute("PRAGMA table_info(releases)").fetchall())
    if columns != _OLD_COLUMNS:
        raise _tampered(path, "the ledger has releases but no settings table (it was removed?)")
    entries = _old_entries(conn, path)
    units = tuple(dict.fromkeys(e.privacy_unit for e in entries))
    model = _model_of(units[0]) if len(units) == 1 else None
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
    if neighbor and neighbor not in _NEIGHBORS or contributions < 1:
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
