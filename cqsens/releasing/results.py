"""What a release returns: the noisy values of each group and how each part was made.

None of these values holds a true answer (:mod:`cqsens.releasing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cqsens.errors import InputError
from cqsens.release.ledger_values import Charge, Entry, PrivacyModel, now, query_hash

__all__ = ["BrokenConstraint", "Number", "PartRelease", "Release", "ReleasedGroup",
           "ReleasedValue", "UnboundedRelease"]

Number = int | float


class UnboundedRelease(InputError):
    """The query's sensitivity is unbounded: no noise makes its release private."""


@dataclass(frozen=True, slots=True)
class PartRelease:
    """How one aggregate was released (never its value)."""

    label: str
    kind: str
    mechanism: str
    epsilon: float
    delta: float
    scale: float
    halfwidth_95: float | None
    sensitivity: str
    family: str  # the mechanism's name alone ("discrete Laplace"), for the release's summary

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of the part."""
        return {"label": self.label, "kind": self.kind, "mechanism": self.mechanism,
                "epsilon": self.epsilon, "delta": self.delta, "scale": self.scale,
                "halfwidth_95": self.halfwidth_95, "sensitivity": self.sensitivity}


@dataclass(frozen=True, slots=True)
class ReleasedValue:
    """One released number (noisy) and its 95 % error half-width (None when unknown)."""

    label: str
    value: Number | str | None  # a text only in the exact answer of a public statement
    halfwidth_95: float | None


@dataclass(frozen=True, slots=True)
class ReleasedGroup:
    """The released values of one group (the key is () without GROUP BY)."""

    key: tuple[str | None, ...]
    values: tuple[ReleasedValue, ...]


@dataclass(frozen=True, slots=True)
class Release:
    """A differentially private release: noisy values and how they were made."""

    query: str
    source: str
    database: str
    neighbor: str
    contributions: int
    epsilon: float
    delta: float
    mechanism: str
    split: str
    key_names: tuple[str, ...]
    key_mode: str
    parts: tuple[PartRelease, ...]
    groups: tuple[ReleasedGroup, ...]
    rho: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    unit: str | None = None  # --unit: one person is a row of this table and its cascade
    charge: Charge | None = None  # what the ledger is charged (None: ε and δ, no ρ)

    @property
    def model(self) -> PrivacyModel:
        """The neighbour model the release protects."""
        return PrivacyModel(self.neighbor, self.contributions, self.unit)

    @property
    def privacy_unit(self) -> str:
        """The neighbour model in words."""
        return self.model.text()

    @property
    def query_sha256(self) -> str:
        """The hash the ledger records."""
        return query_hash(self.query)

    def entry(self) -> Entry:
        """The ledger entry of this release (no answer in it)."""
        c = self.charge or Charge(self.epsilon, self.delta)
        gauss = c.rho > 0 or c.rho_epsilon > 0
        return Entry(now(), self.query_sha256, c.epsilon, c.delta, c.rho if gauss else None,
                     self.mechanism, self.privacy_unit, self.database,
                     c.rho_epsilon if gauss else 0.0, c.rho_delta if gauss else 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: one object per group, the number under ``value``."""
        groups = []
        for g in self.groups:
            obj: dict[str, Any] = {"group": dict(zip(self.key_names, g.key, strict=True))}
            items = [{"label": v.label, "value": v.value, "halfwidth_95": v.halfwidth_95}
                     for v in g.values]
            if len(items) == 1:
                obj.update(items[0])
            else:
                obj["values"] = items
            groups.append(obj)
        return {
            "query": self.query, "source": self.source, "database": self.database,
            "query_sha256": self.query_sha256, "epsilon": self.epsilon, "delta": self.delta,
            "privacy_unit": self.privacy_unit, "mechanism": self.mechanism,
            "budget_split": self.split, "keys": self.key_mode,
            "parts": [p.to_dict() for p in self.parts], "groups": groups,
            "notes": list(self.notes),
        }


class BrokenConstraint(InputError):
    """The data break a constraint the sensitivity bound relies on: nothing is released."""
