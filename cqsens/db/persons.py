"""Who owns which rows: a proposed privacy unit, and rows per person measured in the data.

:func:`propose_ownership` reads only the schema's foreign keys.  It proposes

* a **unit**: the keyed table that the most other tables reference, directly or
  along chains of foreign keys (ties: more direct references, then schema order);
* the **ownership keys** (``owner = [...]``): every foreign key into a table that
  reaches the unit, except a key that closes a cycle without leading closer to the
  unit (a self-reference such as ``users.referred_by``), so that the chains are
  finite and every table that reaches the unit still does (docs/rules.md, rule
  ownership);
* the **public tables**: the tables no chain of ownership keys leads from to the
  unit.  A table that reaches the unit is private and cannot be public (rule
  ownership), so these proposals are consistent with the rules ``--unit``
  enforces; a table that reaches it only through nullable columns is flagged.

Each is a *proposal*: the catalogue says how tables are linked, not what their rows
mean.  :func:`measure_persons` then counts, in the data, the rows each referenced row
holds along every ownership key and the rows one person holds along every chain, with
the largest count and the 99th percentile over every referenced row (rows holding
none count as 0).  Those counts are *observed in this data, not guaranteed*.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from cqsens.db.catalogue import Catalogue
from cqsens.db.check import dependency_label
from cqsens.db.connect import connect
from cqsens.engine.person import Chain, Unit, chains, reaches, resolve_unit
from cqsens.errors import InputError
from cqsens.ir.dependencies import AnyDependency, Dependency, MultiDependency
from cqsens.ir.schema import ForeignKey, Relation, Schema
from cqsens.passwords import mask_url

__all__ = [
    "ChainCount",
    "Ownership",
    "PersonView",
    "chain_text",
    "measure_persons",
    "owner_text",
    "percentile",
    "propose_ownership",
]

ROWS = -1  # the target of a rows-per-value dependency R[a->*]<=k


@dataclass(frozen=True, slots=True)
class Ownership:
    """The proposed privacy unit, ownership keys and public tables of a schema.

    Attributes
    ----------
    unit : str or None
        The proposed unit table (None: no table is referenced by another one).
    reached_by : tuple of (str, tuple of str)
        Every keyed table that other tables reach, with those tables, best first.
    owners : tuple of (str, ForeignKey)
        The foreign keys that carry ownership, as (referencing table, key).
    cycles : tuple of (str, ForeignKey)
        Foreign keys into the unit's tables left out because they close a cycle.
    references : tuple of (str, ForeignKey)
        Foreign keys into public tables: ordinary references.
    private : tuple of str
        Tables whose rows belong to persons (the unit first).
    public : tuple of str
        Tables that no chain of ownership keys leads from to the unit.
    nullable : tuple of (str, str)
        Private tables that reach the unit only through a nullable column, with
        that column (``orders.uid``).
    notes : tuple of str
        What could not be checked (a table with too many chains to the unit).
    """

    unit: str | None
    reached_by: tuple[tuple[str, tuple[str, ...]], ...]
    owners: tuple[tuple[str, ForeignKey], ...] = ()
    cycles: tuple[tuple[str, ForeignKey], ...] = ()
    references: tuple[tuple[str, ForeignKey], ...] = ()
    private: tuple[str, ...] = ()
    public: tuple[str, ...] = ()
    nullable: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()

    def owner_names(self, schema: Schema) -> list[str]:
        """The ownership keys as ``--owner`` spells them (``orders.uid``)."""
        return [owner_text(schema, table, fk) for table, fk in self.owners]

    def as_unit(self, schema: Schema) -> Unit | None:
        """The proposal as a :class:`~cqsens.engine.person.Unit`, or None."""
        if self.unit is None:
            return None
        return _unit(schema, self.unit, self.owners)


def _unit(schema: Schema, table: str, owners: Iterable[tuple[str, ForeignKey]],
          given: str | None = None) -> Unit:
    """The unit table (its primary key, or ``given``: ``users.id``) owning through ``owners``."""
    found = resolve_unit(given or table, schema)
    return Unit(found.table, found.key, found.text,
                frozenset((t.lower(), fk.columns) for t, fk in owners))


def owner_text(schema: Schema, table: str, fk: ForeignKey) -> str:
    """``orders.uid``, or ``lines(order_id, shop)`` for a composite key."""
    relation = _relation(schema, table)
    names = [relation.columns[c] for c in fk.columns]
    if len(names) == 1:
        return f"{relation.name}.{names[0]}"
    return f"{relation.name}({', '.join(names)})"


def chain_text(schema: Schema, chain: Chain) -> str:
    """``items(oid) → orders(oid); orders(uid) → users(id)``."""
    return "; ".join(_relation(schema, t).describe_foreign_key(fk, schema.find(fk.table))
                     for t, fk in chain)


def _relation(schema: Schema, name: str) -> Relation:
    found = schema.find(name)
    assert found is not None, name
    return found


def _has_key(relation: Relation) -> bool:
    return bool(relation.primary_key or relation.keys)


def _edges(schema: Schema) -> dict[str, list[tuple[str, ForeignKey]]]:
    """Referencing table (lower case) → its foreign keys to other tables."""
    out: dict[str, list[tuple[str, ForeignKey]]] = {}
    for relation, fk, _ in schema.foreign_keys():
        out.setdefault(relation.name.lower(), []).append((relation.name, fk))
    return out


def _reaching(schema: Schema, target: str) -> list[str]:
    """The other tables from which a chain of foreign keys leads to ``target``."""
    into: dict[str, set[str]] = {}
    for relation, fk, _ in schema.foreign_keys():
        into.setdefault(fk.table.lower(), set()).add(relation.name.lower())
    seen, stack = {target.lower()}, [target.lower()]
    while stack:
        for source in into.get(stack.pop(), ()):
            if source not in seen:
                seen.add(source)
                stack.append(source)
    return [r.name for r in schema.relations if r.name.lower() in seen - {target.lower()}]


def _direct(schema: Schema, target: str) -> int:
    return len({r.name.lower() for r, fk, _ in schema.foreign_keys()
                if fk.table.lower() == target.lower() and r.name.lower() != target.lower()})


def _distances(schema: Schema, unit: str) -> dict[str, int]:
    """Fewest foreign keys from each table to the unit table (tables that reach it)."""
    into: dict[str, set[str]] = {}
    for relation, fk, _ in schema.foreign_keys():
        into.setdefault(fk.table.lower(), set()).add(relation.name.lower())
    out = {unit.lower(): 0}
    frontier = [unit.lower()]
    while frontier:
        following: list[str] = []
        for table in frontier:
            for source in sorted(into.get(table, ())):
                if source not in out:
                    out[source] = out[table] + 1
                    following.append(source)
        frontier = following
    return out


def propose_ownership(schema: Schema, unit: str | None = None) -> Ownership:
    """Propose the unit (unless given), the ownership keys and the public tables.

    Parameters
    ----------
    schema : Schema
        Its foreign keys are all that is read.
    unit : str, optional
        The unit table; proposed when None.

    Returns
    -------
    Ownership

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> s = schema_from_ddl(
    ...     "CREATE TABLE users (id INT PRIMARY KEY, boss INT REFERENCES users(id));"
    ...     "CREATE TABLE products (pid INT PRIMARY KEY);"
    ...     "CREATE TABLE orders (oid INT PRIMARY KEY, uid INT NOT NULL REFERENCES users(id),"
    ...     " pid INT NOT NULL REFERENCES products(pid))")
    >>> p = propose_ownership(s)
    >>> p.unit, p.owner_names(s), p.public, len(p.cycles)
    ('users', ['orders.uid'], ('products',), 1)
    """
    ranked = sorted(
        ((r.name, tuple(_reaching(schema, r.name))) for r in schema.relations if _has_key(r)),
        key=lambda item: (-len(item[1]), -_direct(schema, item[0]),
                          schema.relation_names().index(item[0])))
    reached = tuple(item for item in ranked if item[1])
    if unit is None:
        if not reached:
            return Ownership(None, (), public=tuple(schema.relation_names()))
        unit = reached[0][0]
    name = _relation(schema, unit).name
    distance = _distances(schema, name)
    edges = _edges(schema)
    owners, cycles, references = [], [], []
    for relation, fk, target in schema.foreign_keys():
        source, goal = relation.name.lower(), target.name.lower()
        if source not in distance or goal not in distance:
            references.append((relation.name, fk))
        elif reaches(edges, goal, source) and distance[goal] >= distance[source]:
            cycles.append((relation.name, fk))
        else:
            owners.append((relation.name, fk))
    private = tuple(r.name for r in sorted(schema.relations,
                                           key=lambda r: distance.get(r.name.lower(), -1))
                    if r.name.lower() in distance)
    public = tuple(r.name for r in schema.relations if r.name.lower() not in distance)
    proposal = Ownership(name, reached, tuple(owners), tuple(cycles), tuple(references),
                         private, public)
    return _with_nullable(schema, proposal)


def _with_nullable(schema: Schema, proposal: Ownership) -> Ownership:
    """Flag the private tables that reach the unit only through nullable columns."""
    unit = proposal.as_unit(schema)
    assert unit is not None
    flagged, notes = [], []
    for table in proposal.private[1:]:
        try:
            found = chains(schema, unit, table)
        except InputError as err:  # too many chains: say so, guess nothing
            notes.append(f"{table}: not measured: {err.message}")
            continue
        columns = [_first_nullable(schema, chain) for chain in found]
        if found and None not in columns:
            flagged.append((table, str(columns[0])))
    return Ownership(proposal.unit, proposal.reached_by, proposal.owners, proposal.cycles,
                     proposal.references, proposal.private, proposal.public, tuple(flagged),
                     tuple(notes))


def _first_nullable(schema: Schema, chain: Chain) -> str | None:
    for table, fk in chain:
        relation = _relation(schema, table)
        for column in fk.columns:
            if relation.nullable(column):
                return f"{relation.name}.{relation.columns[column]}"
    return None


def percentile(histogram: Mapping[int, int], fraction: float = 0.99) -> int:
    """The nearest-rank percentile of counts given as ``{count: how many}``.

    The smallest count ``c`` such that at least ``fraction`` of all entries are at
    most ``c`` (0 for an empty histogram).

    Examples
    --------
    >>> percentile({0: 98, 5: 1, 40: 1})
    5
    >>> percentile({3: 1})
    3
    """
    total = sum(histogram.values())
    if total == 0:
        return 0
    rank = math.ceil(fraction * total)
    seen = 0
    for count in sorted(histogram):
        seen += histogram[count]
        if seen >= rank:
            return count
    return max(histogram)  # pragma: no cover - the loop always reaches rank


@dataclass(frozen=True, slots=True)
class ChainCount:
    """Rows of ``table`` per row of the chain's last table, counted in the data.

    Attributes
    ----------
    table : str
        The table whose rows are counted.
    chain : Chain
        The foreign keys followed from ``table`` (one key for a link).
    target : str
        The table at the end of the chain (the unit, for a person's rows).
    persons : int
        Rows of ``target`` (every one counts, with 0 rows when it holds none).
    max_count : int
        The most rows of ``table`` one row of ``target`` holds.
    p99 : int
        The nearest-rank 99th percentile of those counts.
    rows : int
        Rows of ``table`` that reach a row of ``target`` along the chain.
    text : str
        The chain, ``items(oid) → orders(oid); orders(uid) → users(id)``.
    proposal : Dependency or MultiDependency or None
        For a link, the cardinality dependency ``table[fk->key]<=max`` (``->*``
        for a table without a single-column primary key): *observed in this data,
        not guaranteed*.
    """

    table: str
    chain: Chain
    target: str
    persons: int
    max_count: int
    p99: int
    rows: int
    text: str
    proposal: AnyDependency | None = None

    def to_dict(self, schema: Schema | None = None) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "table": self.table,
            "through": self.text,
            "per": self.target,
            "persons": self.persons,
            "max": self.max_count,
            "p99": self.p99,
            "rows": self.rows,
            "proposal": None if self.proposal is None
            else dependency_label(self.proposal, schema, always_bound=True),
        }


@dataclass(frozen=True, slots=True)
class PersonView:
    """Rows per person: the unit, the ownership keys, and what the data holds along them.

    ``links`` has one count per ownership key (rows per referenced row), ``chains``
    one per chain from a private table to the unit (rows per person).  ``proposed``
    and ``owners_proposed`` say whether the unit and the ownership keys were
    proposed rather than given.
    """

    ownership: Ownership
    links: tuple[ChainCount, ...]
    chains: tuple[ChainCount, ...]
    unit_text: str
    proposed: bool = True
    owners_proposed: bool = True

    @property
    def proposals(self) -> list[AnyDependency]:
        """The links' cardinality dependencies: *observed in this data, not guaranteed*."""
        return [c.proposal for c in self.links if c.proposal is not None]

    def to_dict(self, schema: Schema) -> dict[str, Any]:
        """JSON-ready form."""
        o = self.ownership
        return {
            "unit": self.unit_text,
            "unit_proposed": self.proposed,
            "owner": o.owner_names(schema),
            "owner_proposed": self.owners_proposed,
            "public": list(o.public),
            "nullable_only": [{"table": t, "column": c} for t, c in o.nullable],
            "notes": list(o.notes),
            "per_key": [c.to_dict(schema) for c in self.links],
            "per_person": [c.to_dict(schema) for c in self.chains],
        }


def _link_proposal(relation: Relation, fk: ForeignKey) -> AnyDependency:
    """``orders[uid->oid]<=k`` (a single-column primary key) or ``orders[uid->*]<=k``."""
    target = relation.primary_key[0] if len(relation.primary_key) == 1 else ROWS
    if len(fk.columns) == 1:
        return Dependency(relation.name, fk.columns[0], target, 1)
    return MultiDependency(relation.name, tuple(fk.columns), target, 1)


def _count(conn: Connection, catalogue: Catalogue, schema: Schema, table: str,
           chain: Chain) -> tuple[int, dict[int, int], int]:
    """(rows of the last table, histogram of rows per one of its rows, rows reached)."""
    first = catalogue.bind(_relation(schema, table))
    current = first.sql().alias("t0")
    joined: Any = current
    where = []
    previous = first
    for n, (_, fk) in enumerate(chain, start=1):
        target = catalogue.bind(_relation(schema, fk.table))
        following = target.sql().alias(f"t{n}")
        on = sa.and_(*(current.c[previous.db_columns[a]] == following.c[target.db_columns[b]]
                       for a, b in zip(fk.columns, fk.referenced, strict=True)))
        where += [current.c[previous.db_columns[a]].is_not(None) for a in fk.columns]
        joined = joined.join(following, on)
        current, previous = following, target
    last_fk = chain[-1][1]
    key = [current.c[previous.db_columns[p]] for p in last_fk.referenced]
    per = (sa.select(sa.func.count().label("n")).select_from(joined).where(*where)
           .group_by(*key).subquery("per"))
    histogram = {int(n): int(k) for n, k in conn.execute(
        sa.select(per.c.n, sa.func.count()).group_by(per.c.n))}
    persons = int(conn.execute(sa.select(sa.func.count()).select_from(previous.sql())).scalar()
                  or 0)
    held = sum(histogram.values())
    if persons > held:
        histogram[0] = histogram.get(0, 0) + persons - held
    return persons, histogram, sum(n * k for n, k in histogram.items())


def _measured(conn: Connection, catalogue: Catalogue, schema: Schema, table: str,
              chain: Chain, proposal: AnyDependency | None) -> ChainCount:
    persons, histogram, rows = _count(conn, catalogue, schema, table, chain)
    largest = max(histogram) if histogram else 0
    if proposal is not None:
        proposal = _bounded(proposal, max(largest, 1))
    return ChainCount(_relation(schema, table).name, chain, _relation(schema, chain[-1][1].table)
                      .name, persons, largest, percentile(histogram), rows,
                      chain_text(schema, chain), proposal)


def _bounded(dep: AnyDependency, k: int) -> AnyDependency:
    if isinstance(dep, MultiDependency):
        return MultiDependency(dep.relation, dep.sources, dep.j, k)
    return Dependency(dep.relation, dep.i, dep.j, k)


def measure_persons(url: str, schema: Schema, *, unit: str | None = None,
                    owner: Sequence[str] = ()) -> PersonView | None:
    """Rows per referenced row along every ownership key, and per person along every chain.

    Parameters
    ----------
    url : str
        ``sqlite:///path.db`` or ``postgresql://...``.
    schema : Schema
        The tables, with their foreign keys.
    unit : str, optional
        The unit table (``users`` or ``users.id``); proposed when None.
    owner : sequence of str
        The ownership keys (``orders.uid``); proposed when empty.

    Returns
    -------
    PersonView or None
        None when no unit is given and none can be proposed (no foreign key).
        Every count is *observed in this data, not guaranteed*.

    Raises
    ------
    InputError
        A bad ``unit`` or ``owner`` (:func:`~cqsens.engine.person.resolve_unit`), a
        cycle among the given ownership keys; DatabaseError, SchemaError as
        :func:`~cqsens.db.check.check_constraints`.
    """
    table = None if unit is None else unit.partition(".")[0]
    if table is not None:
        resolve_unit(unit or "", schema, owner)  # names the fault before any query
    proposal = propose_ownership(schema, table)
    if proposal.unit is None:
        return None
    chosen: str = proposal.unit
    if owner:
        resolved = resolve_unit(unit or chosen, schema, owner)
        proposal = _given_owners(schema, proposal, resolved)
    else:
        resolved = _unit(schema, chosen, proposal.owners, unit)
    masked = mask_url(url.strip())
    links: list[ChainCount] = []
    persons: list[ChainCount] = []
    with connect(url) as conn:
        catalogue = Catalogue(conn, schema, masked)
        for name, fk in proposal.owners:
            links.append(_measured(conn, catalogue, schema, name, ((name, fk),),
                                   _link_proposal(_relation(schema, name), fk)))
        for name in proposal.private[1:]:
            try:
                found = chains(schema, resolved, name)
            except InputError:
                if owner:  # the user's ownership keys: their fault, said as analyze says it
                    raise
                continue  # proposed keys make no cycle; too many chains is in the notes
            for chain in found:
                persons.append(_measured(conn, catalogue, schema, name, chain, None))
    return PersonView(proposal, tuple(links), tuple(persons), resolved.text,
                      proposed=unit is None, owners_proposed=not owner)


def _given_owners(schema: Schema, proposal: Ownership, unit: Unit) -> Ownership:
    """The ownership the user named with ``--owner``: its keys, the tables they reach."""
    owners = tuple((r.name, fk) for r, fk, _ in schema.foreign_keys() if unit.owns(r.name, fk))
    reach = [r.name for r in schema.relations
             if r.name.lower() != unit.table.lower() and chains(schema, unit, r.name)]
    private = (unit.table, *reach)
    public = tuple(r.name for r in schema.relations if r.name not in private)
    references = tuple((r.name, fk) for r, fk, _ in schema.foreign_keys()
                       if not unit.owns(r.name, fk))
    return _with_nullable(schema, Ownership(unit.table, proposal.reached_by, owners, (),
                                            references, private, public))
