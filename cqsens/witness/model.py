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
    hidden: tuple[tuple[str, int], ...] = ()  # (relation, position) of a row identity
    query_sql: str = ""  # the SQLite SELECT both counts come from
    constraints: tuple[tuple[str, str], ...] = ()  # (relation, key or FOREIGN KEY clause)

    def _visible(self, relation: str, row: tuple[Value, ...]) -> tuple[Value, ...]:
        drop = {p for r, p in self.hidden if r == relation}
        return tuple(v for i, v in enumerate(row) if i not in drop)

    @property
    def shown_row(self) -> tuple[Value, ...]:
        """The added row t in the table's own columns (without a row identity)."""
        return self._visible(self.relation, self.row)

    def shown_columns(self, relation: str) -> tuple[str, ...]:
        """The table's own columns (without a row identity)."""
        drop = {p for r, p in self.hidden if r == relation}
        return tuple(c for i, c in enumerate(self.database.columns[relation]) if i not in drop)

    def shown_tables(self) -> dict[str, list[tuple[Value, ...]]]:
        """Relation → rows of A in the tables' own columns; equal rows repeat, as in SQL."""
        return {r: sorted((self._visible(r, row) for row in rows), key=repr)
                for r, rows in self.database.as_lists().items()}

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
            f"A has {self.database.size()} rows; adding {self.relation}{self.shown_row!r} "
            f"takes the count from {self.count_without} to {self.count_with} "
            f"(difference {self.difference}; {self.construction})"
        )
        if self.growth:
            seq = ", ".join(f"N={n}: {d}" for n, d in self.growth)
            text += f"; growing family {seq}"
            text += " — a proof for every N" if self.unbounded else ""
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        tables = self.shown_tables()
        return {
            "rows": self.database.size(),
            "relation": self.relation,
            "tuple": list(self.shown_row),
            "count_without": self.count_without,
            "count_with": self.count_with,
            "difference": self.difference,
            "construction": self.construction,
            "growth": [{"n": n, "difference": d} for n, d in self.growth],
            "unbounded": self.unbounded,
            "database": {r: [list(row) for row in rows] for r, rows in tables.items()},
            "summary": self.summary(),
        }
