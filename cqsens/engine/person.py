"""The privacy unit: one person is a row of the unit table and every row that references it.

With ``--unit users`` the neighbouring databases differ by one *person*: a row
``u`` of ``users`` together with every row that references ``u`` along a chain
of foreign keys (an order of ``u``, a line of that order, ...), as a cascading
delete would remove them.  Every other table is the same in both databases.

A row ``r`` of a table ``T`` belongs to ``u`` through a chain ``π`` of foreign
keys from ``T`` to ``users`` when following ``π`` from ``r`` ends at ``u``; each
key references a key, so ``π`` determines the rows it passes.  Adding a person
creates only answers that send some atom ``a`` onto a row of that person,
through some chain ``π``.  Those answers are the answers of the query ``Q⁺``
extended by the atoms of ``π`` from ``a`` (an atom of the query with the same
key is reused: it is the same row) whose last atom holds the person's key
``k``.  So their number is at most the number of values the free variables
take once the terms ``ȳ`` holding ``k`` are fixed: walks and trees of steps
from ``ȳ`` in ``Q⁺`` (docs/rules.md, rule privacy-unit).  Chains whose ``ȳ``
are the same terms of the query share one count, bounded by the smaller of
the counts in the query alone and the sum over the chains.

A cycle of foreign keys among the tables that reference the unit makes a
person's rows a chain of any length; it is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from cqsens.engine.neighbourhood import Neighbourhood, Unit
from cqsens.engine.ownerless import Reads, ownerless_persons, ownerless_read
from cqsens.engine.paths import Step, Weight
from cqsens.engine.rules import Derivation, Rule
from cqsens.engine.upper import extension_bound
from cqsens.errors import InputError
from cqsens.ir.cq import CQ, Atom, Const, Term, Var, format_term
from cqsens.ir.dependencies import Sigma
from cqsens.ir.schema import ForeignKey, Relation, Schema

__all__ = ["MAX_CHAINS", "Chain", "PersonBound", "PersonGroup", "Unit", "chains",
           "check_ownership", "group_derivations", "owner_key", "person_bound",
           "person_derivation", "reaches",
           "resolve_unit"]

MAX_CHAINS = 64
"""Chains of foreign keys from one table to the unit table, at most."""


Chain = tuple[tuple[str, ForeignKey], ...]
"""Foreign keys followed from a table to the unit table: (referencing table, key)."""


@dataclass(frozen=True, slots=True)
class PersonGroup:
    """The atoms that can hold one person's rows through the same key terms ``key``."""

    key: tuple[Term, ...]
    atoms: tuple[Atom, ...]
    chains: tuple[str, ...]
    value: Weight
    steps: tuple[Step, ...]
    extended: CQ  # the query with the chain of the member that allows the most answers


@dataclass(frozen=True, slots=True)
class PersonBound:
    """At most ``value`` answers touch one person's rows: the sum over ``groups``."""

    unit: Unit
    value: Weight
    groups: tuple[PersonGroup, ...]
    boolean_cap: bool = False


def group_derivations(person: PersonBound, where: Neighbourhood) -> tuple[Derivation, ...]:
    """Per group of atoms that can hold one person's rows through the same key terms, the
    answers they give with the key fixed (docs/rules.md, rule privacy-unit)."""
    return tuple(Derivation(Rule.PRIVACY_UNIT, g.value, where, {
        "chains": "; ".join(g.chains), "key": ", ".join(format_term(t) for t in g.key),
        "route": "; ".join(str(s) for s in g.steps) or "the key alone"}) for g in person.groups)


def person_derivation(person: PersonBound, where: Neighbourhood) -> Derivation:
    """The derivation of a bound on one person (docs/rules.md, rule privacy-unit): the
    group of rows that gives it, by its key terms and steps."""
    unit = person.unit
    worst = max(person.groups, key=lambda g: g.value, default=None)
    if worst is None:
        return Derivation(Rule.PRIVACY_UNIT, person.value, where, {"table": unit.table})
    key = ", ".join(format_term(t) for t in worst.key)
    route = "; ".join(str(s) for s in worst.steps) or "the key alone"
    return Derivation(Rule.PRIVACY_UNIT, person.value, where,
                      {"table": unit.table, "unit": unit.text, "key": key, "group": worst.value,
                       "route": route})


def resolve_unit(text: str, schema: Schema | None, owner: Sequence[str] = (),
                 ownerless: bool = False) -> Unit:
    """``users`` (its primary key) or ``users.id`` (a key column) as a :class:`Unit`.

    ``owner`` names the foreign keys that carry ownership (``"orders.uid"``, or
    ``"lines(order_id, shop)"`` for a composite key); empty means every foreign key.
    ``ownerless`` makes each row whose ownership key is NULL a person of its own
    (docs/rules.md, rule ownerless-rows).

    Raises
    ------
    InputError
        No schema, an unknown table or column, a column that is not a key, or an
        owner that is not a foreign key of the schema.
    """
    table, _, column = text.strip().partition(".")
    if schema is None:
        raise _unit_error(f"--unit {text} needs the schema (--schema or --db): the unit is a "
                         "table and its foreign keys say which rows belong to one person")
    relation = schema.find(table)
    if relation is None:
        raise _unit_error(f"--unit names table {table!r}, which the schema does not declare "
                         f"(tables: {', '.join(schema.relation_names())})")
    if column:
        position = relation.index(column)
        if position is None:
            raise _unit_error(f"--unit names column {column!r}, which {relation.name} does not "
                             f"have (columns: {', '.join(relation.columns)})")
        key: tuple[int, ...] = (position,)
        if not relation.is_key(key):
            raise _unit_error(f"{relation.name}.{relation.columns[position]} is "
                             "not a PRIMARY KEY or UNIQUE column, so it does not identify one "
                             "person")
    else:
        key = relation.primary_key or (relation.keys[:1] if relation.keys else ())
        if not key:
            raise _unit_error(f"{relation.name} has no primary key; name the "
                             f"key column, --unit {relation.name}.column")
    shown = ", ".join(relation.columns[p] for p in key)
    owners = frozenset(_owner(item, schema) for item in owner) if owner else None
    return Unit(relation.name, key, f"{relation.name}({shown})", owners, ownerless)


def _owner(text: str, schema: Schema) -> tuple[str, tuple[int, ...]]:
    """``orders.uid`` or ``orders(a, b)``: a foreign key of the schema, by its columns."""
    spelled = text.strip()
    if "(" in spelled and spelled.endswith(")"):
        table, _, inside = spelled[:-1].partition("(")
        names = [c.strip() for c in inside.split(",")]
    else:
        table, _, column = spelled.partition(".")
        names = [column.strip()]
    relation = schema.find(table.strip())
    if relation is None or not all(names):
        raise InputError(f"owner {spelled!r} does not name a foreign key: write "
                         "table.column (or table(col1, col2) for a composite key) of a table "
                         "the schema declares", source="--owner", construct="--owner")
    positions = []
    for name in names:
        position = relation.index(name)
        if position is None:
            raise InputError(f"owner {spelled!r}: {relation.name} has no column {name!r} "
                             f"(columns: {', '.join(relation.columns)})", source="--owner",
                             construct="--owner")
        positions.append(position)
    for fk in relation.foreign_keys:
        if sorted(fk.columns) == sorted(positions):
            return (relation.name.lower(), fk.columns)
    declared = ", ".join(relation.describe_foreign_key(fk, schema.find(fk.table))
                         for fk in relation.foreign_keys) or "none"
    raise InputError(f"owner {spelled!r} is not a foreign key of {relation.name} (its foreign "
                     f"keys: {declared}); declare it with REFERENCES in the schema",
                     source="--owner", construct="--owner")


def _unit_error(message: str) -> InputError:
    return InputError(message, source="--unit", construct="--unit")


def chains(schema: Schema, unit: Unit, table: str) -> list[Chain]:
    """Every chain of foreign keys from ``table`` to the unit table (the empty chain for
    the unit table itself).

    Raises
    ------
    InputError
        A cycle of foreign keys among the tables that reach the unit, or more than
        :data:`MAX_CHAINS` chains.
    """
    edges: dict[str, list[tuple[str, ForeignKey]]] = {}
    for relation, fk, _ in schema.foreign_keys():
        if unit.owns(relation.name, fk):
            edges.setdefault(relation.name.lower(), []).append((relation.name, fk))
    out: list[Chain] = []
    goal = unit.table.lower()

    def walk(current: str, path: list[tuple[str, ForeignKey]], seen: list[str]) -> None:
        if current == goal:
            out.append(tuple(path))
        for relation, fk in edges.get(current, ()):
            following = fk.table.lower()
            if following in seen or following == current:
                if reaches(edges, following, goal):
                    cycle = " → ".join([*seen[seen.index(following):], following]) \
                        if following in seen else f"{current} → {current}"
                    raise InputError(
                        f"the foreign keys form a cycle ({cycle}) among tables whose rows "
                        f"belong to one {unit.table}: one person's rows would be a chain of any "
                        "length; cqsens does not model a cyclic privacy unit. Name the "
                        "foreign keys that carry ownership with --owner (owner = [...] in "
                        "cqsens.toml): the others, self-references included, are then "
                        "ordinary references",
                        source="--unit", construct="--unit")
                continue
            walk(following, [*path, (relation, fk)], [*seen, following])
            if len(out) > MAX_CHAINS:
                raise InputError(f"more than {MAX_CHAINS} chains of foreign keys lead from "
                                 f"{table} to {unit.table}", source="--unit",
                         construct="--unit")

    walk(table.lower(), [], [table.lower()])
    return out


def owner_key(schema: Schema, unit: Unit) -> Callable[[str, str], tuple[str, str] | None]:
    """``(table, column)`` → the owned row the column names, ``(table, key column)`` in lower
    case: a NOT NULL single-column foreign key that carries ownership into the key of a
    table whose every row belongs to a person, and that is the row's only way to a person
    (every chain of ownership starts with it), or that key itself (None otherwise).  Two
    columns with the same answer hold rows of the same persons (docs/rules.md, rule
    person-local)."""
    owned: dict[str, bool] = {}

    def every_row_owned(relation: Relation) -> bool:
        name = relation.name.lower()
        if name not in owned:
            owned[name] = name == unit.table.lower() or any(
                _all_not_null(chain, schema) for chain in chains(schema, unit, relation.name))
        return owned[name]

    def only_route(relation: Relation, fk: ForeignKey) -> bool:
        """Whether every chain of ownership from ``relation`` starts with ``fk``: a row
        that also reached the unit another way (``items.uid`` beside ``items.oid``) would
        belong to a person who does not own the row ``fk`` names."""
        try:
            return all(chain[0][1] == fk for chain in chains(schema, unit, relation.name))
        except InputError:
            return False

    def key(table: str, column: str) -> tuple[str, str] | None:
        relation = schema.find(table)
        position = relation.index(column) if relation is not None else None
        if relation is None or position is None:
            return None
        for fk in relation.foreign_keys:
            target = schema.find(fk.table)
            if fk.columns == (position,) and unit.owns(relation.name, fk) \
                    and not relation.nullable(position) and target is not None \
                    and every_row_owned(target) and only_route(relation, fk):
                return (target.name.lower(), target.columns[fk.referenced[0]].lower())
        single = relation.primary_key == (position,) or position in relation.keys
        if single and every_row_owned(relation) and not relation.nullable(position):
            return (relation.name.lower(), relation.columns[position].lower())
        return None

    return key


def _all_not_null(chain: Chain, schema: Schema) -> bool:
    for relation, fk in chain:
        own = schema.find(relation)
        if own is None or any(own.nullable(c) for c in fk.columns):
            return False
    return True


def check_ownership(schema: Schema, unit: Unit, cq: CQ, public: Iterable[str],
                    reads: Reads | None = None) -> tuple[str, ...]:
    """Refuse a query whose tables are neither owned by one person nor public.

    With a privacy unit every table is private unless it is declared public, and
    a private table must belong to persons: every row the query can read must
    reach a row of the unit table along foreign keys that carry ownership, each
    NOT NULL.  A row whose key is NULL belongs to nobody, so it is accepted only
    when the query cannot read it: the key's term is joined to another atom or
    fixed to a constant (SQL's ``=`` never matches NULL).  A public table is the
    same in both neighbouring databases, so it cannot hold a person's rows: a
    public table that reaches the unit along ownership keys contradicts its
    declaration (docs/rules.md, rule ownership).  With ``unit.ownerless`` a row
    whose ownership key is NULL is a person of its own instead (docs/rules.md, rule
    ownerless-rows, checked with ``reads``).

    Parameters
    ----------
    schema : Schema
        The tables and their foreign keys.
    unit : Unit
        The privacy unit, with the foreign keys that carry ownership.
    cq : CQ
        The query: its relation atoms are the rows it reads.
    public : iterable of str
        The tables declared public.
    reads : Reads, optional
        What the whole query reads (:func:`cqsens.engine.ownerless.reads_of`); needed
        for ``unit.ownerless``, built from ``cq`` alone when omitted.

    Returns
    -------
    tuple of str
        Notes for the output: the use of rule ownerless-rows, if any.

    Raises
    ------
    InputError
        A private table that no person owns, or a public table that a person owns.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> s = schema_from_ddl("CREATE TABLE users (id INT PRIMARY KEY); "
    ...                     "CREATE TABLE visits (vid INT PRIMARY KEY, uid INT NOT NULL)")
    >>> check_ownership(s, resolve_unit("users", s), parse_cq("Q(v) :- visits(v, u)"), [])
    Traceback (most recent call last):
    ...
    cqsens.errors.InputError: --unit: table visits is private (not declared public) but no ...
    """
    declared_public = {name.lower() for name in public}
    goal = unit.table.lower()
    atoms = cq.relation_atoms()
    occurrences: dict[Term, int] = {}
    for atom in atoms:
        for term in atom.terms:
            occurrences[term] = occurrences.get(term, 0) + 1
    found: dict[str, list[Chain]] = {}
    for name in sorted(declared_public):  # read or not (a public subquery): never owned
        relation = schema.find(name)
        if relation is not None:
            found[relation.name] = chains(schema, unit, relation.name)
            _refuse_owned_public(relation, found[relation.name], schema, unit)
    read: dict[str, Relation] = {}
    refusal: InputError | None = None
    for atom in atoms:
        relation = schema.find(atom.relation)
        if relation is None:
            continue
        if relation.name not in found:
            found[relation.name] = chains(schema, unit, relation.name)
        owned = found[relation.name]
        if relation.name.lower() in declared_public:
            _refuse_owned_public(relation, owned, schema, unit)
        elif relation.name.lower() != goal:
            _refuse_no_chain(relation, owned, unit)
            read[relation.name] = relation
            refusal = refusal or _unowned(relation, atom, owned, occurrences, schema, unit)
    if not unit.ownerless:
        if refusal is not None:
            raise refusal
        return ()
    tables = list(read.values())
    if refusal is None and not ownerless_read(schema, tables, found):
        return ()  # no ownerless person's row is read (rule ownerless-rows, not read)
    given = reads if reads is not None else Reads(
        {t: 1 for a in cq.atoms if a.is_filter for t in a.terms} | {t: 1 for t in cq.head})
    note = ownerless_persons(schema, unit, atoms, given, tables, found)
    if note is not None:
        return (note,)
    what = refusal.message if refusal is not None else (
        f"a table the query reads reaches {unit.table} through a nullable ownership key "
        "beyond its first link, so a person of its own (a row whose key is NULL) holds rows "
        "the query reads")
    raise InputError(
        f"{what}. With --ownerless person such rows are persons of their own, but cqsens "
        f"bounds them only for a query that reads neither {unit.table} nor the nullable "
        f"key, and this query reads {unit.table} (docs/rules.md, rule ownerless-rows)",
        source="--ownerless", construct=unit.table)


def _refuse_owned_public(relation: Relation, owned: Sequence[Chain], schema: Schema,
                         unit: Unit) -> None:
    if relation.name.lower() == unit.table.lower():
        raise InputError(
            f"table {relation.name} is declared public, but it is the privacy unit: its rows "
            f"are the persons. Drop {relation.name} from --public", source="--public",
            construct="--public")
    if owned:
        raise InputError(
            f"table {relation.name} is declared public, but its rows belong to persons of "
            f"{unit.table}: {_chain_text(owned[0], schema)}. A public table is the same in "
            "both neighbouring databases, so it cannot hold a person's rows: drop "
            f"{relation.name} from --public, or name the foreign keys that carry ownership "
            "with --owner (owner = [...] in cqsens.toml) and leave its key out",
            source="--public", construct="--public")


def _refuse_no_chain(relation: Relation, owned: Sequence[Chain], unit: Unit) -> None:
    if not owned:
        raise InputError(
            f"table {relation.name} is private (not declared public) but no chain of foreign "
            f"keys{'' if unit.owners is None else ' named by --owner'} leads from it to the "
            f"privacy unit {unit.text}, so cqsens cannot tell which person its rows belong to, "
            "and would treat them as the same in both neighbouring databases. Declare the "
            f"foreign key to {unit.table} (e.g. `... NOT NULL REFERENCES {unit.text}` in the "
            f"schema{_owner_hint(unit)}), or, if its rows are the same for everybody, declare it "
            f"public (--public {relation.name})", source="--unit", construct=relation.name)


def _unowned(relation: Relation, atom: Atom, owned: Sequence[Chain],
             occurrences: Mapping[Term, int], schema: Schema, unit: Unit) -> InputError | None:
    """The refusal of a table read through nullable keys only, or None."""
    links = [_nullable_link(chain, schema, atom, occurrences) for chain in owned]
    if None in links:
        return None
    nullable = links[0]
    hint = "" if unit.ownerless else (
        ", or make each such row a person of its own (--ownerless person, ownerless = "
        "\"person\" in cqsens.toml; docs/rules.md, rule ownerless-rows)")
    return InputError(
        f"table {relation.name} reaches the privacy unit {unit.text} only through the "
        f"nullable column {nullable}: a row whose key is NULL belongs to no person, and "
        "the query reads such rows, so they would be treated as the same in both "
        f"neighbouring databases. Declare {nullable} NOT NULL, join it to "
        f"{unit.table} in the query, or, if the rows of {relation.name} are the same for "
        f"everybody, declare it public and leave its key out of --owner{hint}",
        source="--unit", construct=relation.name)


def _nullable_link(chain: Chain, schema: Schema, atom: Atom,
                   occurrences: Mapping[Term, int]) -> str | None:
    """The first nullable foreign-key column along ``chain`` from ``atom`` whose NULLs the
    query can read (``orders.uid``), or None.  On the first link a column whose term is a
    constant or is joined to another position never matches NULL."""
    for index, (relation, fk) in enumerate(chain):
        own = schema.find(relation)
        assert own is not None
        for column in fk.columns:
            if not own.nullable(column):
                continue
            if index == 0 and column < len(atom.terms):
                term = atom.terms[column]
                if (isinstance(term, Const) and term.value is not None) \
                        or occurrences.get(term, 0) > 1:
                    continue
            return f"{own.name}.{own.columns[column]}"
    return None


def _owner_hint(unit: Unit) -> str:
    return "" if unit.owners is None else ", and name it with --owner"


def _chain_text(chain: Chain, schema: Schema) -> str:
    steps = []
    for relation, fk in chain:
        own = schema.find(relation)
        assert own is not None
        steps.append(own.describe_foreign_key(fk, schema.find(fk.table)))
    return "; ".join(steps)


def reaches(edges: Mapping[str, list[tuple[str, ForeignKey]]], start: str, goal: str) -> bool:
    """True when ``goal`` can be reached from ``start`` along ``edges`` (foreign keys)."""
    seen, stack = {start}, [start]
    while stack:
        current = stack.pop()
        if current == goal:
            return True
        for _, fk in edges.get(current, ()):
            if fk.table.lower() not in seen:
                seen.add(fk.table.lower())
                stack.append(fk.table.lower())
    return False


def _extended(cq: CQ, atom: Atom, chain: Chain, arity: Mapping[str, int],
              spelled: Mapping[str, str], unit: Unit) -> tuple[list[Atom], tuple[Term, ...]]:
    """The atoms a chain adds from ``atom`` and the terms holding the person's key."""
    added: list[Atom] = []
    current = atom
    used = {v.name for v in cq.variables()}
    for _, fk in chain:
        key = tuple(current.terms[c] for c in fk.columns)
        name = spelled.get(fk.table.lower(), fk.table)
        found = next((b for b in [*cq.relation_atoms(), *added] if b.relation == name
                      and tuple(b.terms[p] for p in fk.referenced) == key), None)
        if found is None:
            terms: list[Term] = []
            for p in range(arity[name]):
                if p in fk.referenced:
                    terms.append(key[fk.referenced.index(p)])
                    continue
                n = len(used)
                while f"_u{n}" in used:
                    n += 1
                used.add(f"_u{n}")
                terms.append(Var(f"_u{n}"))
            found = Atom(name, tuple(terms))
            added.append(found)
        current = found
    return added, tuple(current.terms[p] for p in unit.key)


def _describe(atom: Atom, chain: Chain, schema: Schema) -> str:
    if not chain:
        return f"{atom} (the person's own row)"
    steps = []
    for relation, fk in chain:
        own = schema.find(relation)
        assert own is not None
        steps.append(own.describe_foreign_key(fk, schema.find(fk.table)))
    return f"{atom} through {'; '.join(steps)}"


def person_bound(cq: CQ, sigma: Sigma, *, unit: Unit, schema: Schema,
                 public: frozenset[str] = frozenset()) -> PersonBound:
    """Bound how many answers of ``cq`` one person's rows can create or destroy.

    Parameters
    ----------
    cq : CQ
        The query, chased with the FDs of ``sigma`` (and reduced to its core).
    sigma : Sigma
        The dependencies, including the keys of the tables the chains pass.
    unit : Unit
        The unit table and its key (:func:`resolve_unit`).
    schema : Schema
        The tables, with their foreign keys.
    public : frozenset of str
        Public tables: their rows belong to nobody.

    Returns
    -------
    PersonBound

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.dependencies import Dependency
    >>> s = schema_from_ddl("CREATE TABLE users (id INT PRIMARY KEY, name TEXT); "
    ...                     "CREATE TABLE orders (oid INT PRIMARY KEY, uid INT REFERENCES users)")
    >>> q = parse_cq("Q(o, u) :- orders(o, u), users(u, n)")
    >>> sigma = Sigma.of([*s.key_dependencies(), Dependency("orders", 1, 0, 20)])
    >>> person_bound(q, sigma, unit=resolve_unit("users", s), schema=s).value
    20
    """
    spelled = {r.lower(): r for r in cq.relations()}
    arity: dict[str, int] = dict(cq.relations())
    for relation in schema.relations:
        name = spelled.setdefault(relation.name.lower(), relation.name)
        arity.setdefault(name, len(relation.columns))
    groups: dict[tuple[Term, ...], list[tuple[Atom, list[Atom], str]]] = {}
    found: dict[str, list[Chain]] = {}  # the chains from each table, computed once
    variables = cq.variables()
    for atom in cq.relation_atoms():
        if atom.relation in public:
            continue
        table: Relation | None = schema.find(atom.relation)
        if table is None:
            continue
        if table.name not in found:
            found[table.name] = chains(schema, unit, table.name)
        for chain in found[table.name]:
            added, key = _extended(cq, atom, chain, arity, spelled, unit)
            groups.setdefault(key, []).append((atom, added, _describe(atom, chain, schema)))
    out: list[PersonGroup] = []
    for key, members in groups.items():
        in_query = all(not isinstance(t, Var) or t in variables for t in key)
        alone = extension_bound(cq, sigma, key) if in_query else None
        total: Weight = 0
        steps: tuple[Step, ...] = ()
        widest: tuple[Weight, CQ] | None = None
        for _, added, _ in members:
            extended = cq.with_atoms([*cq.atoms, *added]) if added else cq
            extension = extension_bound(extended, sigma, key)
            total = total + extension.value
            steps += extension.steps
            if widest is None or extension.value > widest[0]:
                widest = (extension.value, extended)
        value = total
        if alone is not None and alone.value <= total:
            value, steps = alone.value, alone.steps
        out.append(PersonGroup(key, tuple(dict.fromkeys(a for a, _, _ in members)),
                               tuple(text for _, _, text in members), value,
                               tuple(dict.fromkeys(steps)), widest[1] if widest else cq))
    bound: Weight = 0
    for group in out:
        bound = bound + group.value
    capped = cq.is_boolean and bound > 1
    if capped:
        bound = 1
    if not cq.satisfiable:
        bound = 0
    return PersonBound(unit, bound, tuple(out), capped)
