"""The values of the privacy budget ledger (:mod:`cqsens.release.ledger`): a release's charge
and entry, the stored settings and limits, the spent budget and its composition, the ledger's
errors."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction

from cqsens.errors import InputError

__all__ = ["BudgetExceeded", "Change", "Charge", "Entry", "Ledger", "LedgerMismatch", "Limits",
           "NEIGHBORS", "PrivacyModel", "Settings", "Spent", "TamperedLedger", "now",
           "query_hash", "spent", "zcdp_dp_epsilon"]


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
        """The model in words (the ``privacy_unit`` of an entry); :meth:`from_text` reads it back.

        >>> PrivacyModel("add-remove", 2).text()
        'add-remove, up to 2 rows per person'
        """
        if self.unit is not None:
            return _UNIT_TEXT.format(self.neighbor, self.unit)
        if self.contributions == 1:
            return _ONE_ROW_TEXT.format(self.neighbor)
        return _ROWS_TEXT.format(self.neighbor, self.contributions)

    @staticmethod
    def from_text(text: str) -> PrivacyModel | None:
        """The model whose :meth:`text` is ``text``, or None (a ledger written by an earlier
        cqsens stored only this column; the three forms are the templates :meth:`text` fills).

        >>> PrivacyModel.from_text("substitute, up to 3 rows per person")
        PrivacyModel(neighbor='substitute', contributions=3, unit=None)
        """
        for neighbor in NEIGHBORS:
            if (unit := _filled(_UNIT_TEXT, neighbor, text)) is not None and unit:
                return PrivacyModel(neighbor, 1, unit)
            if text == _ONE_ROW_TEXT.format(neighbor):
                return PrivacyModel(neighbor)
            rows = _filled(_ROWS_TEXT, neighbor, text)
            if rows is not None and rows.isdigit() and int(rows) > 1 \
                    and str(int(rows)) == rows:
                return PrivacyModel(neighbor, int(rows))
        return None


#: The neighbour relations a ledger records.
NEIGHBORS = ("add-remove", "substitute")
_UNIT_TEXT = "{}, one person: {} with the rows that reference it"
_ONE_ROW_TEXT = "{}, 1 row per person"
_ROWS_TEXT = "{}, up to {} rows per person"


def _filled(template: str, neighbor: str, text: str) -> str | None:
    """The value that fills the second ``{}`` of ``template`` (its first is ``neighbor``) to
    give ``text``, or None."""
    head, tail = template.format(neighbor, "\0").split("\0")
    if len(text) > len(head) + len(tail) - 1 and text.startswith(head) and text.endswith(tail):
        return text[len(head):len(text) - len(tail)]
    return None


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
