"""Schema values: relations with their columns in order, keys, types and value bounds.

A schema gives every relation of a query its columns in order, so that SQL
column names become positions of the canonical structure; its single-column
keys give functional dependencies, its CHECK ranges value bounds.  The DDL
reader that builds these values is :mod:`cqsens.frontend.ddl`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cqsens.ir.dependencies import Dependency, MultiDependency
from cqsens.ir.domains import Domain, domain_of
from cqsens.ir.exact import Exact
from cqsens.ir.expr import Predicate

__all__ = ["ForeignKey", "Relation", "Schema"]


@dataclass(frozen=True, slots=True)
class ForeignKey:
    """``FOREIGN KEY (columns) REFERENCES table (referenced)``, by positions.

    Every row whose ``columns`` are all non-NULL has a row of ``table`` with the
    same values at ``referenced``, a key of ``table`` (so exactly one such row).
    """

    columns: tuple[int, ...]
    table: str
    referenced: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Relation:
    """One table: name, columns in order, keys, value bounds and nullability.

    ``primary_key`` lists the positions of the PRIMARY KEY (empty without one);
    ``not_null`` the positions declared NOT NULL or in the primary key.  Every
    other column may hold NULL.  ``checks`` holds the text of every ``CHECK``
    (SQLite's spelling when it has one), ``column_checks`` each ``CHECK`` that
    reads a single column, as a predicate over ``Slot(0)``.
    """

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...] = ()
    keys: tuple[int, ...] = ()
    composite_keys: tuple[tuple[int, ...], ...] = ()
    bounds: tuple[tuple[int, Exact, Exact], ...] = ()  # (position, low, high), exact
    primary_key: tuple[int, ...] = ()
    not_null: tuple[int, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    checks: tuple[str, ...] = ()
    column_checks: tuple[tuple[int, Predicate], ...] = ()

    def domain(self, column: int) -> Domain | None:
        """The values a column's CHECKs admit when they are finitely many (``IN`` lists,
        ``=``), else None; NULL, which every CHECK admits, is not among them."""
        best: Domain | None = None
        for c, check in self.column_checks:
            found = domain_of(check) if c == column else None
            if found is not None and (best is None or len(found) < len(best)):
                best = found
        return best

    def nullable(self, column: int) -> bool:
        """True when the column may hold NULL."""
        return column not in self.not_null and column not in self.primary_key

    @property
    def distinct_rows(self) -> bool:
        """True when no two rows can be equal: a primary key, or a UNIQUE key on NOT NULL
        columns (a UNIQUE column may repeat NULL, so it does not keep rows apart)."""
        if self.primary_key:
            return True
        return any(all(not self.nullable(c) for c in key)
                   for key in (*((k,) for k in self.keys), *self.composite_keys))

    def index(self, column: str) -> int | None:
        """0-based position of ``column`` (case-insensitive), or None."""
        lowered = column.lower()
        for i, c in enumerate(self.columns):
            if c.lower() == lowered:
                return i
        return None

    def key_dependencies(self) -> list[Dependency]:
        """The FDs a single-column key implies: key → every other column."""
        return [
            Dependency(self.name, k, j, 1)
            for k in self.keys
            for j in range(len(self.columns))
            if j != k
        ]

    def composite_key_dependencies(self) -> list[MultiDependency]:
        """The FDs a composite key (PRIMARY KEY or UNIQUE over several columns) implies:
        the key's columns together determine every other column."""
        keys = {tuple(k) for k in self.composite_keys}
        if len(self.primary_key) > 1:
            keys.add(tuple(self.primary_key))
        return [MultiDependency(self.name, key, j, 1)
                for key in sorted(keys) for j in range(len(self.columns)) if j not in key]

    def is_key(self, columns: tuple[int, ...]) -> bool:
        """True when ``columns`` (in any order) are the primary key or a UNIQUE key."""
        wanted = set(columns)
        keys = [set(self.primary_key), *({k} for k in self.keys),
                *(set(k) for k in self.composite_keys)]
        return any(k and k == wanted for k in keys)

    def describe_foreign_key(self, fk: ForeignKey, target: Relation | None) -> str:
        """``orders(uid) → users(id)``, by the names the schema declares."""
        own = ", ".join(self.columns[c] for c in fk.columns)
        names = (", ".join(target.columns[c] for c in fk.referenced) if target is not None
                 else ", ".join(str(c + 1) for c in fk.referenced))
        return f"{self.name}({own}) → {fk.table}({names})"

    def bound(self, column: int) -> tuple[Exact, Exact] | None:
        """``(low, high)`` from CHECK constraints (±inf where open), or None."""
        for c, low, high in self.bounds:
            if c == column:
                return (low, high)
        return None


@dataclass(frozen=True, slots=True)
class Schema:
    """The relations of a database, looked up case-insensitively."""

    relations: tuple[Relation, ...] = ()
    source: str = "<schema>"
    _index: dict[str, Relation] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        # a fresh index: ``dataclasses.replace`` passes the old one, which a cached
        # schema (frontend.ddl.schema_from_ddl) shares with every analysis
        object.__setattr__(self, "_index", {r.name.lower(): r for r in self.relations})

    def find(self, name: str) -> Relation | None:
        """The relation called ``name`` (case-insensitive), or None."""
        return self._index.get(name.lower())

    def relation_names(self) -> list[str]:
        """Names in declaration order."""
        return [r.name for r in self.relations]

    def key_dependencies(self) -> list[Dependency]:
        """Every FD implied by single-column PRIMARY KEY / UNIQUE constraints."""
        return [d for r in self.relations for d in r.key_dependencies()]

    def composite_key_dependencies(self) -> list[MultiDependency]:
        """Every FD implied by composite PRIMARY KEY / UNIQUE constraints."""
        return [d for r in self.relations for d in r.composite_key_dependencies()]

    def foreign_keys(self) -> list[tuple[Relation, ForeignKey, Relation]]:
        """Every foreign key as (referencing relation, key, referenced relation)."""
        out = []
        for r in self.relations:
            for fk in r.foreign_keys:
                target = self.find(fk.table)
                if target is not None:
                    out.append((r, fk, target))
        return out
