"""Joins a NOT NULL foreign key implies: the referenced table's atom is dropped.

When ``R(…, a, …)`` holds a foreign key ``a → P(b)`` whose columns are ``NOT NULL``
and the query joins an atom ``P(b, c1, …, cn)`` on it, with every ``ci`` a
variable read nowhere else (no other atom, filter, aggregate or grouping term; in
a head only beside the key ``b``), every database that keeps the foreign key has
exactly one row of P for each row of R: the query's value is that of the query
without the atom.  Both neighbouring databases keep every foreign key, so the two
queries have the same sensitivity, under every neighbourhood (docs/rules.md, rule
foreign-key-joins).  The analysis uses it under substitution, where the rule
foreign-keys does not apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from cqsens.engine.upper import References
from cqsens.ir.cq import CQ, AggregateQuery, Atom, Term, Var
from cqsens.ir.schema import Schema

__all__ = ["ImpliedJoin", "drop_implied_joins"]


@dataclass(frozen=True, slots=True)
class ImpliedJoin:
    """An atom dropped because a NOT NULL foreign key implies it.

    ``atom`` is the dropped atom, ``reference`` the atom that references it and
    ``key`` the foreign key's text (``orders(uid) → users(id)``).
    """

    atom: Atom
    reference: Atom
    key: str
    positions: tuple[int, ...]  # the referenced key's positions in ``atom``

    def describe(self) -> str:
        """The sentence of the analysis notes."""
        return (f"{self.atom.relation} is read only through the NOT NULL foreign key "
                f"{self.key}: each row of {self.reference.relation} meets exactly one of its "
                f"rows, so the join is left out (docs/rules.md, rule foreign-key-joins)")


def _used_terms(query: AggregateQuery, atom: Atom) -> list[Term]:
    """Every term the query reads outside ``atom`` and outside the heads."""
    out: list[Term] = [t for a in query.cq.atoms if a != atom for t in a.terms]
    out += list(query.group_by)
    for agg in query.aggregates:
        out += [*agg.columns, *agg.terms] + ([agg.column] if agg.column is not None else [])
    return out


def _private(query: AggregateQuery, atom: Atom,
             positions: tuple[int, ...]) -> tuple[Var, ...] | None:
    """The variables of ``atom`` outside the key at ``positions`` when each is read nowhere
    else (in a head only beside the whole key), else None."""
    key = [atom.terms[p] for p in positions]
    rest = [t for i, t in enumerate(atom.terms) if i not in positions]
    if not all(isinstance(t, Var) for t in rest) or len(set(rest)) != len(rest):
        return None
    private = tuple(t for t in rest if isinstance(t, Var))
    if set(private) & set(key) or set(private) & set(_used_terms(query, atom)):
        return None
    rest_vars = {t for a in query.cq.atoms if a != atom for t in a.terms if isinstance(t, Var)}
    for head in (query.cq.head, *query.heads, *((query.body.head,) if query.body else ())):
        # a head holding the atom's columns counts rows of the join: it must hold every
        # other variable too, or the smaller query would count a projection (EXISTS)
        if set(private) & set(head) and not (set(key) | rest_vars) <= set(head):
            return None
    return private


def _implied(query: AggregateQuery, references: References,
             schema: Schema) -> ImpliedJoin | None:
    """The first atom of the query a NOT NULL foreign key implies, or None."""
    atoms = query.cq.relation_atoms()
    for relation, fk, text in references:
        source, target = schema.find(relation), schema.find(fk.table)
        if source is None or target is None or not target.is_key(fk.referenced):
            continue
        if any(source.nullable(c) for c in fk.columns):
            continue
        for atom in atoms:
            if atom.relation != fk.table or relation == atom.relation \
                    or max(fk.referenced) >= atom.arity:
                continue
            key = tuple(atom.terms[p] for p in fk.referenced)
            if len(set(key)) != len(key) or _private(query, atom, fk.referenced) is None:
                continue
            for other in atoms:
                if other.relation == relation and max(fk.columns) < other.arity \
                        and tuple(other.terms[c] for c in fk.columns) == key:
                    return ImpliedJoin(atom, other, text, fk.referenced)
    return None


def _counts_rows_if_single(query: AggregateQuery) -> bool:
    """False for one table whose head projects it: the rules for one table read a plain
    count there as its number of rows (docs/rules.md, rule count-substitution)."""
    atoms = query.cq.relation_atoms()
    return len(atoms) != 1 or atoms[0].variables() <= set(query.cq.head)


def _without(cq: CQ, atom: Atom, drop: Iterable[Var]) -> CQ:
    gone = set(drop)
    return CQ(tuple(t for t in cq.head if t not in gone), cq.atoms - {atom}, cq.name,
              cq.satisfiable)


def drop_implied_joins(query: AggregateQuery, references: References, schema: Schema | None
                       ) -> tuple[AggregateQuery, tuple[ImpliedJoin, ...]]:
    """``query`` without the atoms NOT NULL foreign keys imply, and the atoms dropped.

    Parameters
    ----------
    query : AggregateQuery
        The query as read.
    references : References
        The schema's foreign keys, relations spelled as the query spells them.
    schema : Schema, optional
        Nullability and keys of the tables; without one nothing is dropped.

    Returns
    -------
    tuple
        The query (the same object when nothing is dropped) and the dropped joins.

    Examples
    --------
    >>> from cqsens.frontend.ddl import schema_from_ddl
    >>> from cqsens.frontend.load import load_query
    >>> from cqsens.prepare import references
    >>> s = schema_from_ddl("CREATE TABLE p (id INT PRIMARY KEY, g INT); CREATE TABLE q "
    ...                     "(id INT PRIMARY KEY, pid INT NOT NULL REFERENCES p (id));")
    >>> q = load_query("SELECT COUNT(*) FROM q JOIN p ON p.id = q.pid", schema=s)
    >>> reduced, dropped = drop_implied_joins(q, references(s), s)
    >>> str(reduced.cq), dropped[0].key
    ('Q(q_id, q_pid) :- q(q_id, q_pid).', 'q(pid) → p(id)')
    """
    if schema is None or query.opaque_filters:
        return query, ()
    dropped: list[ImpliedJoin] = []
    while (found := _implied(query, references, schema)) is not None:
        private = _private(query, found.atom, found.positions) or ()
        body = _without(query.body, found.atom, private) if query.body is not None else None
        smaller = replace(query, cq=_without(query.cq, found.atom, private), body=body,
                          heads=tuple(tuple(t for t in h if t not in private)
                                      for h in query.heads))
        if not _counts_rows_if_single(smaller):
            break
        query = smaller
        dropped.append(found)
    return query, tuple(dropped)

