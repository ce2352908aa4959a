"""The witness record: databases A and A ∪ {t} with both counts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cqsens.ir.expr import Predicate
from cqsens.witness.evaluate import Database, Value

__all__ = ["Witness"]


@dataclass(frozen=True)
class Witness:
    """Databases A and A ∪ {t} with both counts, as evaluated in SQLite."""

    database: Database
    relation: str
    row: tuple[Value, ...]
    count_without: int
    count_with: int
    construction: str
    growth: tuple[tuple[int, int], ...] = ()
    unbounded: bool = False
    checks: tuple[tuple[str, int, Predicate], ...] = ()  # (relation, position, CHECK on Slot(0))

    @property
    def difference(self) -> int:
        """``#Q(A ∪ {t}) − #Q(A)``."""
        return self.count_with - self.count_without

    @property
    def lower(self) -> float:
        """The lower bound this witness proves (∞ for a proven growing family)."""
        return math.inf if self.unbounded else self.difference

    def summary(self) -> str:
        """One line for people."""
        text = (
            f"A has {self.database.size()} rows; adding {self.relation}{self.row!r} takes the "
            f"count from {self.count_without} to {self.count_with} "
            f"(difference {self.difference}; {self.construction})"
        )
        if self.growth:
            seq = ", ".join(f"N={n}: {d}" for n, d in self.growth)
            text += f"; growing family {seq}"
            text += " — a proof for every N" if self.unbounded else ""
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        tables = self.database.as_lists()
        return {
            "rows": self.database.size(),
            "relation": self.relation,
            "tuple": list(self.row),
            "count_without": self.count_without,
            "count_with": self.count_with,
            "difference": self.difference,
            "construction": self.construction,
            "growth": [{"n": n, "difference": d} for n, d in self.growth],
            "unbounded": self.unbounded,
            "database": {r: [list(row) for row in rows] for r, rows in tables.items()},
            "summary": self.summary(),
        }
