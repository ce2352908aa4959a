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

from cqsens.ir.schema import ForeignKey

__all__ = ["Neighbourhood", "Unit"]

References = tuple[tuple[str, ForeignKey, str], ...]
"""Foreign keys as ``(relation, key, referenced relation)`` (:mod:`cqsens.engine.upper`)."""


@dataclass(frozen=True, slots=True)
class Unit:
    """The privacy unit: a table and the key that identifies one person.

    ``owners`` names the foreign keys that carry ownership, as ``(table, columns)``
    with the table in lower case; ``None`` means every foreign key does (a
    cascading delete along every key).  A foreign key that is not an owner is an
    ordinary reference: a row that holds it does not belong to the row it
    references (docs/rules.md, rule ownership).  ``ownerless`` makes each row whose
    ownership key is NULL a person of its own, with the rows that reference it
    (docs/rules.md, rule ownerless-rows).
    """

    table: str
    key: tuple[int, ...]
    text: str  # users(id)
    owners: frozenset[tuple[str, tuple[int, ...]]] | None = None
    ownerless: bool = False

    @property
    def described(self) -> str:
        """The unit as an analysis and a ledger name it: ``users(id)``, and with
        ``ownerless`` the rows of their own (a release under one model never shares a
        ledger with the other)."""
        if not self.ownerless:
            return self.text
        return f"{self.text} or a row whose ownership key is NULL"

    def owns(self, relation: str, fk: ForeignKey) -> bool:
        """True when ``fk`` of ``relation`` carries ownership."""
        return self.owners is None or (relation.lower(), fk.columns) in self.owners


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
    def person(self) -> bool:
        """True when a neighbour adds, removes or changes one person (``--unit``)."""
        return self.unit is not None

    @property
    def substitution(self) -> bool:
        """True under the substitute (change-one) model."""
        return self.model == "substitute"

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
