"""Rows whose ownership key is NULL, each a person of its own (docs/rules.md, rule ownerless-rows).

With ``ownerless = "person"`` a row whose ownership keys that lead to the unit table all
hold a NULL is a person of its own, together with the rows that reference it along
ownership keys.  cqsens analyses a query under that neighbour relation in two cases:

* **not read** — the query reads only rows owned by real persons (every table it reads
  passes rule ownership) and no chain of ownership keys from a table it reads passes a
  nullable key beyond its first link: an ownerless person's rows are then never read,
  and the bound of rule privacy-unit holds as it is;
* **fresh persons** — the query reads neither the unit table nor the nullable ownership
  keys (each such key points straight to the unit table).  Replacing each NULL key by a
  fresh value, with a fresh unit row, maps the database to one where every such row
  belongs to a person of the unit table, with the same answers, and removing an ownerless
  person to removing its fresh person: the person bound of rule privacy-unit is a bound.
  The fresh values must keep every declared constraint; what that needs of the schema is
  checked here, and anything else is refused, naming the construct.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cqsens.engine.neighbourhood import Unit
from cqsens.errors import InputError
from cqsens.ir.cq import AggregateQuery, Atom, Const, Term, Var
from cqsens.ir.dependencies import Dependency, Sigma
from cqsens.ir.exact import Exact
from cqsens.ir.schema import ForeignKey, Relation, Schema

__all__ = ["FRESH_TYPES", "Reads", "ownerless_persons", "reads_of"]

FRESH_TYPES = ("INT", "CHAR", "TEXT", "CLOB", "STRING", "NUM", "DEC", "REAL", "FLOA", "DOUB")
"""Declared types (SQLite's affinity words) whose values never run out: a fresh value,
equal to no value of the database, always exists."""

Chain = tuple[tuple[str, ForeignKey], ...]


@dataclass(frozen=True, slots=True)
class Reads:
    """What a query reads, for rule ownerless-rows.

    Attributes
    ----------
    outside : mapping
        Each term → its occurrences outside the relation atoms: in the filter atoms, the
        GROUP BY terms and the aggregates' arguments (what SQL reads of a row besides its
        joins).
    texts : tuple of str
        Conditions kept out of the conjunctive query (public or person-local subqueries),
        as SQL text.
    sigma : Sigma
        The dependencies the analysis assumes.
    value_bounds : mapping
        ``table.column`` (lower case) → declared value range.
    row_positions : mapping
        Table → the position of its hidden row identity.
    """

    outside: Mapping[Term, int]
    texts: tuple[str, ...] = ()
    sigma: Sigma = field(default_factory=Sigma.of)
    value_bounds: Mapping[str, tuple[Exact, Exact]] = field(default_factory=dict)
    row_positions: Mapping[str, int] = field(default_factory=dict)

    def mentions(self, name: str) -> bool:
        """Whether a condition kept out of the query names ``name`` (a table or column)."""
        pattern = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])", re.IGNORECASE)
        return any(pattern.search(text) for text in self.texts)


def reads_of(query: AggregateQuery, sigma: Sigma,
             value_bounds: Mapping[str, tuple[Exact, Exact]]) -> Reads:
    """The :class:`Reads` of ``query`` under ``sigma`` and the value bounds."""
    counts: dict[Term, int] = {}

    def see(terms: Iterable[Term | None]) -> None:
        for term in terms:
            if term is not None:
                counts[term] = counts.get(term, 0) + 1

    for atom in query.cq.atoms:
        if atom.is_filter:
            see(atom.terms)
    see(query.group_by)
    for aggregate in query.aggregates:
        see((aggregate.column, *aggregate.columns, *aggregate.terms))
    return Reads(counts, tuple(query.opaque_filters), sigma, dict(value_bounds),
                 dict(query.row_positions))


def ownerless_persons(schema: Schema, unit: Unit, atoms: Sequence[Atom], reads: Reads,
                      read_tables: Sequence[Relation],
                      found: Mapping[str, Sequence[Chain]]) -> str | None:
    """Check a query against rule ownerless-rows; the note for the output, or None when
    no ownerless row can matter.

    Parameters
    ----------
    schema : Schema
        The tables, keys, CHECKs and foreign keys.
    unit : Unit
        The privacy unit (with ``ownerless`` set).
    atoms : sequence of Atom
        The relation atoms of the query.
    reads : Reads
        What the query reads.
    read_tables : sequence of Relation
        The private tables the query reads, the unit table left out.
    found : mapping
        Each read table's name → its chains of ownership keys to the unit.

    Returns
    -------
    str or None
        A note naming the fresh-persons case when the query relies on it; None in the
        not-read case.

    Raises
    ------
    InputError
        A query whose ownerless rows are read but for which the fresh-persons argument
        does not go through (the construct is named).
    """
    mapped = _nullable_links(schema, read_tables, found)
    if not mapped:
        return None
    goal = unit.table.lower()
    deep = [(t, fk) for t, fks in mapped.items() for fk in fks if fk.table.lower() != goal]
    if deep:
        table, fk = deep[0]
        relation = schema.find(table)
        assert relation is not None
        raise _error(f"{relation.describe_foreign_key(fk, schema.find(fk.table))} is a "
                     "nullable ownership key that does not point straight to the unit "
                     f"table {unit.table}: cqsens makes a row whose ownership key is NULL a "
                     "person of its own (--ownerless person) only when the key points to "
                     f"{unit.table}. Declare the key NOT NULL, or leave it out of --owner",
                     relation.name)
    if _unit_read(unit, atoms, reads):
        return None  # refused by the caller unless the not-read case holds
    for table, fks in sorted(mapped.items()):
        relation = schema.find(table)
        assert relation is not None
        _check_mapped(relation, fks, atoms, reads, mapped, schema)
    _check_unit(schema, unit, reads, mapped)
    names = ", ".join(f"{t}.{schema_column(schema, t, c)}" for t, fks in sorted(mapped.items())
                      for fk in fks for c in fk.columns)
    return (f"each row with a NULL {names} is a person of its own (--ownerless person): the "
            f"query reads neither {names} nor {unit.table}, so it has the same answers once "
            f"each such NULL is replaced by a fresh {unit.table} row, and the person bound holds "
            "for those persons too (docs/rules.md, rule ownerless-rows)")


def schema_column(schema: Schema, table: str, column: int) -> str:
    """The name of column ``column`` of ``table``."""
    relation = schema.find(table)
    assert relation is not None
    return relation.columns[column]


def ownerless_read(schema: Schema, read_tables: Sequence[Relation],
                   found: Mapping[str, Sequence[Chain]]) -> bool:
    """Whether some chain from a read table passes a nullable ownership key beyond its
    first link: an ownerless row's cascade may then hold rows the query reads."""
    for relation in read_tables:
        for chain in found.get(relation.name, ()):
            if any(_nullable(schema, t, fk) for t, fk in chain[1:]):
                return True
    return False


def _nullable(schema: Schema, table: str, fk: ForeignKey) -> bool:
    own = schema.find(table)
    return own is not None and any(own.nullable(c) for c in fk.columns)


def _nullable_links(schema: Schema, read_tables: Sequence[Relation],
                    found: Mapping[str, Sequence[Chain]]) -> dict[str, tuple[ForeignKey, ...]]:
    """Table → its nullable ownership keys on the chains from the tables the query reads."""
    out: dict[str, list[ForeignKey]] = {}
    for relation in read_tables:
        for chain in found.get(relation.name, ()):
            for table, fk in chain:
                own = schema.find(table)
                assert own is not None
                if _nullable(schema, table, fk) and fk not in out.setdefault(own.name, []):
                    out[own.name].append(fk)
    return {t: tuple(fks) for t, fks in out.items() if fks}


def _unit_read(unit: Unit, atoms: Sequence[Atom], reads: Reads) -> bool:
    return any(a.relation.lower() == unit.table.lower() for a in atoms) \
        or reads.mentions(unit.table)


def _error(message: str, construct: str) -> InputError:
    return InputError(message, source="--ownerless", construct=construct)


def _check_mapped(relation: Relation, fks: Sequence[ForeignKey], atoms: Sequence[Atom],
                  reads: Reads, mapped: Mapping[str, Sequence[ForeignKey]],
                  schema: Schema) -> None:
    """The fresh values of ``relation``'s nullable ownership keys change no answer and
    break no constraint."""
    positions = sorted({c for fk in fks for c in fk.columns})
    at_mapped = _mapped_occurrences(atoms, mapped, schema)
    for column in positions:
        name = f"{relation.name}.{relation.columns[column]}"
        if reads.mentions(relation.columns[column]):
            raise _error(f"a condition kept out of the join ({'; '.join(reads.texts)}) names "
                         f"{name}: with --ownerless person the query must not read a nullable "
                         "ownership key", name)
        for atom in atoms:
            if atom.relation.lower() != relation.name.lower() or column >= len(atom.terms):
                continue
            _check_term(atom.terms[column], name, reads, at_mapped)
        _check_fresh_column(relation, column, reads, "the nullable ownership key")
    _check_dependencies(relation, positions, reads)
    for other, fk, _ in schema.foreign_keys():
        if other.name.lower() == relation.name.lower() and fk not in fks \
                and set(fk.columns) & set(positions):
            raise _error(f"{other.describe_foreign_key(fk, relation)} shares a column with a "
                         "nullable ownership key: a fresh value there would break it",
                         relation.name)
        if fk.table.lower() == relation.name.lower() and set(fk.referenced) & set(positions):
            raise _error(f"{other.describe_foreign_key(fk, relation)} references a nullable "
                         "ownership key: a fresh value there could break it", relation.name)


def _mapped_occurrences(atoms: Sequence[Atom], mapped: Mapping[str, Sequence[ForeignKey]],
                        schema: Schema) -> dict[Term, int]:
    """Each term → how often it stands at a nullable ownership key's column."""
    out: dict[Term, int] = {}
    for atom in atoms:
        relation = schema.find(atom.relation)
        if relation is None or relation.name not in mapped:
            continue
        for column in {c for fk in mapped[relation.name] for c in fk.columns}:
            if column < len(atom.terms):
                out[atom.terms[column]] = out.get(atom.terms[column], 0) + 1
    return out


def _check_term(term: Term, name: str, reads: Reads, at_mapped: Mapping[Term, int]) -> None:
    """A term at a nullable ownership key: a constant other than NULL, or a variable that
    no filter, head, group or aggregate reads and that meets no other such key (a fresh
    value then matches exactly what NULL matches: nothing but the variable itself)."""
    if isinstance(term, Const):
        if term.value is None:
            raise _error(f"the query compares {name} with NULL: with --ownerless person the "
                         "query must not read a nullable ownership key", name)
        return
    assert isinstance(term, Var)
    if at_mapped.get(term, 0) > 1:
        raise _error(f"the query joins {name} to a nullable ownership key: two NULLs never "
                     "match, but two fresh persons' keys would; with --ownerless person the "
                     "query must not read a nullable ownership key", name)
    if reads.outside.get(term, 0):
        raise _error(f"the query reads {name} (in a filter, the SELECT list, GROUP BY or an "
                     "aggregate): with --ownerless person it must not read a nullable "
                     "ownership key, whose NULLs would each stand for another person", name)


def _check_fresh_column(relation: Relation, column: int, reads: Reads, what: str) -> None:
    """A column that gets a fresh value: no CHECK, no value bound, a type that never runs
    out of values."""
    name = f"{relation.name}.{relation.columns[column]}"
    if any(c == column for c, _ in relation.column_checks) or relation.bound(column) is not None \
            or name.lower() in reads.value_bounds:
        raise _error(f"{name} ({what}) has a CHECK or a value bound: cqsens cannot show that "
                     "a fresh value satisfies it, so --ownerless person does not apply", name)
    for text in relation.checks:
        if re.search(rf"(?<![\w$]){re.escape(relation.columns[column])}(?![\w$])", text,
                     re.IGNORECASE):
            raise _error(f"{name} ({what}) is read by CHECK ({text}): cqsens cannot show that "
                         "a fresh value satisfies it, so --ownerless person does not apply",
                         name)
    declared = relation.types[column].upper() if column < len(relation.types) else ""
    if declared and not any(word in declared for word in FRESH_TYPES) or "BOOL" in declared:
        raise _error(f"{name} ({what}) has type {declared}, which may run out of values: "
                     "--ownerless person needs a fresh value there (an integer, number or "
                     "text column)", name)


def _determines_row(relation: Relation, sources: Iterable[int], row: int | None) -> bool:
    wanted = set(sources)
    keys = [set(relation.primary_key), *({k} for k in relation.keys),
            *(set(k) for k in relation.composite_keys)]
    return (row is not None and row in wanted) or any(k and k <= wanted for k in keys)


def _check_dependencies(relation: Relation, positions: Sequence[int], reads: Reads) -> None:
    """Every dependency of ``relation`` still holds once its NULL ownership keys are fresh:
    a source with a fresh value is a group of one row (``k ≥ 1``); a NULL target replaced
    by distinct values is counted only when its source is a key (one row per value)."""
    row = reads.row_positions.get(relation.name)
    for dep in reads.sigma:
        if dep.relation.lower() != relation.name.lower():
            continue
        sources = (dep.i,) if isinstance(dep, Dependency) else dep.sources
        if set(sources) & set(positions):
            if dep.k < 1:
                raise _error(f"the dependency {dep} allows no row per value of a nullable "
                             "ownership key, which a fresh person breaks", str(dep))
            continue
        if dep.j in positions and not _determines_row(relation, sources, row):
            raise _error(f"the dependency {dep} bounds the values of the nullable ownership "
                         f"key {relation.name}.{relation.columns[dep.j]}: a NULL skipped there "
                         "would count once replaced by a fresh person, so --ownerless person "
                         "does not apply", str(dep))


def _check_unit(schema: Schema, unit: Unit, reads: Reads,
                mapped: Mapping[str, Sequence[ForeignKey]]) -> None:
    """A fresh row of the unit table exists: fresh values in its key, in the columns the
    ownership keys reference and in its NOT NULL columns, NULL elsewhere."""
    relation = schema.find(unit.table)
    assert relation is not None
    fresh = set(unit.key) | {c for fks in mapped.values() for fk in fks for c in fk.referenced}
    fresh |= {c for c in range(len(relation.columns)) if not relation.nullable(c)}
    for column in sorted(fresh):
        _check_fresh_column(relation, column, reads, f"a fresh {unit.table} row's value")
    for fk in relation.foreign_keys:
        if set(fk.columns) <= fresh:
            raise _error(f"{relation.describe_foreign_key(fk, schema.find(fk.table))} is NOT "
                         f"NULL: a fresh {unit.table} row would need a row it references, so "
                         "--ownerless person does not apply", relation.name)
