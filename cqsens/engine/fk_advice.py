"""Foreign keys to propose: a column whose name and type match another table's key.

A join ``orders.o_custkey = customer.c_custkey`` is unbounded without
dependencies, but the foreign key ``orders(o_custkey) → customer(c_custkey)``
bounds it under add/remove neighbours (docs/rules.md, rule foreign-keys).  The
schema may simply not declare it.  :func:`foreign_key_candidates` lists the
undeclared foreign keys the query's joins suggest by names and types:

- the same name (``visits.patient_id`` ↔ ``patients.patient_id``);
- the same name after a short table prefix (``o_custkey`` ↔ ``c_custkey``);
- the table's name in the singular before the key (``patient_id`` ↔ ``patients.id``).

Each is only a candidate: the caller keeps those that re-analysis shows bound the
query, and the user decides whether the data keep them.  Measure and free-text
columns (:func:`avoided_sources`) are never proposed as the source of a dependency.
"""

from __future__ import annotations

from dataclasses import dataclass

from cqsens.ir.cq import CQ, AggregateQuery
from cqsens.ir.schema import ForeignKey, Relation, Schema

__all__ = ["FkCandidate", "avoided_sources", "foreign_key_candidates"]

_FREE_TEXT = ("comment", "description", "address", "note", "remark")
_MEASURES = ("sum", "avg", "median", "min", "max")


@dataclass(frozen=True, slots=True)
class FkCandidate:
    """An undeclared foreign key ``relation(column) → target(key)``, as the engine reads it.

    ``relation`` is spelled as in the query, ``fk`` holds positions, ``text`` is how
    it reads (``orders(o_custkey) → customer(c_custkey)``) and ``ddl`` how to
    declare it (``o_custkey ... REFERENCES customer(c_custkey)``).
    """

    relation: str
    fk: ForeignKey
    text: str
    ddl: str


def _family(sql_type: str) -> str:
    """The comparable family of a SQL type: ``INTEGER`` and ``BIGINT`` are one family."""
    base = sql_type.split("(")[0].strip().upper()
    if "INT" in base:
        return "integer"
    if base in ("TEXT", "VARCHAR", "CHAR", "CHARACTER", "STRING", "CHARACTER VARYING"):
        return "text"
    if base in ("DECIMAL", "NUMERIC"):
        return "decimal"
    return base


def _stem(table: str) -> str:
    """``patients`` → ``patient``; ``address`` stays."""
    lower = table.lower()
    return lower[:-1] if lower.endswith("s") and not lower.endswith("ss") else lower


def _unprefixed(name: str) -> str | None:
    """``o_custkey`` → ``custkey`` (a prefix of at most three letters), else None."""
    head, sep, tail = name.partition("_")
    return tail if sep and 0 < len(head) <= 3 and head.isalpha() and tail else None


def names_match(column: str, table: str, key: str) -> bool:
    """Whether ``column`` reads as a reference to ``table(key)``.

    >>> names_match("o_custkey", "customer", "c_custkey")
    True
    >>> names_match("patient_id", "patients", "patient_id")
    True
    >>> names_match("patient_id", "patients", "id")
    True
    >>> names_match("o_orderkey", "customer", "c_custkey")
    False
    >>> names_match("id", "users", "id"), names_match("sid", "shop", "sid")
    (False, True)
    """
    c, k = column.lower(), key.lower()
    if c == k:
        return c != "id"  # a bare "id" names the table's own key, not another's
    mine, theirs = _unprefixed(c), _unprefixed(k)
    if mine is not None and mine == theirs:
        return True
    stem = _stem(table)
    return c in (f"{stem}_{k}", f"{stem}{k}")


def _types_match(source: Relation, i: int, target: Relation, j: int) -> bool:
    if not source.types or not target.types:
        return True
    return _family(source.types[i]) == _family(target.types[j])


def _single_keys(relation: Relation) -> list[int]:
    keys = [relation.primary_key[0]] if len(relation.primary_key) == 1 else []
    return keys + [k for k in relation.keys if k not in keys]


def foreign_key_candidates(core: CQ, schema: Schema) -> list[FkCandidate]:
    """Undeclared foreign keys the query's joins suggest by name and type.

    Only a join the foreign key would serve counts: an atom of the referencing
    table whose column holds the same term as the key of an atom of the target.
    """
    out: list[FkCandidate] = []
    atoms = core.relation_atoms()
    for atom in atoms:
        source = schema.find(atom.relation)
        if source is None:
            continue
        declared = {fk.columns for fk in source.foreign_keys}
        own = set(_single_keys(source))
        for other in atoms:
            target = schema.find(other.relation)
            if target is None or target.name.lower() == source.name.lower():
                continue
            for key in _single_keys(target):
                for i, term in enumerate(atom.terms[:len(source.columns)]):
                    if (i,) in declared or i in own or key >= len(other.terms) \
                            or other.terms[key] != term:
                        continue
                    if not names_match(source.columns[i], target.name, target.columns[key]) \
                            or not _types_match(source, i, target, key):
                        continue
                    fk = ForeignKey((i,), target.name, (key,))
                    candidate = FkCandidate(
                        atom.relation, fk, source.describe_foreign_key(fk, target),
                        f"{source.columns[i]} ... REFERENCES {target.name}"
                        f"({target.columns[key]})")
                    if candidate not in out:
                        out.append(candidate)
    return out


def avoided_sources(query: AggregateQuery, schema: Schema | None) -> frozenset[tuple[str, int]]:
    """``(relation, position)`` pairs never proposed as a dependency's source.

    Measure columns (read by SUM, AVG, MEDIAN, MIN or MAX: a value, not an
    identifier) and free-text columns (a text column whose name says comment,
    description, address, note or remark).
    """
    out: set[tuple[str, int]] = set()
    if schema is None:
        return frozenset()
    measured = {c.lower() for a in query.aggregates if a.kind in _MEASURES
                for c in (*a.term_columns, *([a.column_name] if a.column_name else []))}
    for relation in query.cq.relations():
        rel = schema.find(relation)
        if rel is None:
            continue
        for i, column in enumerate(rel.columns):
            text_column = not rel.types or _family(rel.types[i]) == "text"
            if f"{rel.name}.{column}".lower() in measured \
                    or f"{relation}.{column}".lower() in measured \
                    or (text_column and any(w in column.lower() for w in _FREE_TEXT)):
                out.add((relation, i))
    return frozenset(out)
