"""The neighbour relation of an analysis as one value.

Two databases are neighbours when they differ by one row (``unit`` None) or by one
person: a row of the unit's table and every row that references it along the foreign
keys that carry ownership (docs/rules.md, rules privacy-unit and ownership); by an
addition or removal, or by a change (``model``); ``contributions`` rows at a time
(Observation 1 of Arapinis, Figueira, Gaboardi, ICALP 2016); and never in a public
table (docs/rules.md, rule public-tables).
"""

from __future__ import annotations

from dataclasses import dataclass

from cqsens.engine.person import Unit
from cqsens.engine.upper import References

__all__ = ["Neighbourhood"]


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """Who differs between two neighbouring databases, and how.

    Attributes
    ----------
    model : {"add-remove", "substitute"}
        One row (or person) added or removed, or one changed.
    contributions : int
        Rows one individual may own, at row level (1 with a unit).
    unit : Unit or None
        The privacy unit, None for one row.
    public : frozenset of str
        Public tables, spelled as the query spells them.
    references : References
        The schema's foreign keys.
    """

    model: str = "add-remove"
    contributions: int = 1
    unit: Unit | None = None
    public: frozenset[str] = frozenset()
    references: References = ()

    @property
    def per_person(self) -> bool:
        """Whether neighbours differ by one person (a privacy unit) rather than one row."""
        return self.unit is not None

    @property
    def add_remove(self) -> bool:
        """Whether neighbours differ by an addition or a removal (not a change)."""
        return self.model == "add-remove"

    @property
    def kept_references(self) -> References:
        """The foreign keys the count bound may use: both add/remove neighbours of one row
        keep them (a substitution may not, and k rows that reference each other in a cycle
        cannot be added one at a time; docs/rules.md, rule foreign-keys)."""
        return self.references if self.add_remove and self.contributions == 1 else ()

    @property
    def who(self) -> str:
        """What one neighbour step adds: ``"person"`` or ``"tuple"``."""
        return "person" if self.per_person else "tuple"
