"""The intermediate representation: terms, atoms, conjunctive queries, aggregates.

A conjunctive query (CQ) ``Q(x1..xn) :- R1(t1), ..., Rm(tm)`` is a head (a tuple
of terms: variables, or constants once a chase has bound them) and a set of
atoms; duplicate atoms collapse.  ``#Q(A)`` counts the *distinct* head tuples.
A SQL row filter that is not an equality (``age > 30``) is kept as a *filter
atom*: an atom whose typed ``predicate`` (:mod:`cqsens.ir.expr`) reads its terms by
position.  Its relation symbol is derived from the predicate, so homomorphisms,
cores and chases treat it as an uninterpreted relation (sound: it can only
remove answers), while the bounds never let a filter atom play the added tuple
(filters are public).

References
----------
.. [1] M. Arapinis, D. Figueira, M. Gaboardi. Sensitivity of Counting Queries.
   ICALP 2016, Section 3 (canonical structures).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cqsens.ir.expr import Expr, Predicate, render

__all__ = [
    "Classes",
    "position_classes",
    "unit_classes",
    "with_atom",
    "Var",
    "Const",
    "Term",
    "Atom",
    "CQ",
    "Aggregate",
    "AggregateQuery",
    "format_term",
    "normalised",
]

@dataclass(frozen=True, slots=True, order=True)
class Var:
    """A variable (an element of the canonical structure)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Const:
    """A constant: a string or a number.  Homomorphisms fix constants."""

    value: str | int | float

    def __str__(self) -> str:
        return format_term(self)

    def definitely_differs(self, other: Const) -> bool:
        """True when no database typing or collation can make the two equal.

        ``5`` and ``'5'`` may be equal (type affinity), ``'a'`` and ``'A'`` too
        (case-insensitive collations): only constants whose normalised forms
        differ are definitely different.

        >>> Const(5).definitely_differs(Const("5")), Const("F").definitely_differs(Const("M"))
        (False, True)
        """
        return normalised(self.value) != normalised(other.value)

    def sort_key(self) -> tuple[int, str]:
        """A total order over constants of mixed types."""
        return (0 if isinstance(self.value, str) else 1, repr(self.value))


Term = Var | Const


def normalised(value: object) -> str:
    """A constant's form for comparison across database typings and collations.

    Numbers by value (``5``, ``'5'`` and ``5.0`` give ``"5"``), texts trimmed and in
    lower case; any other value by its text (a ``Fraction`` as ``"1/2"``).

    >>> normalised(" 5.0"), normalised("F"), normalised(0.5)
    ('5', 'f', '0.5')
    """
    text = str(value).strip().lower()
    try:
        number = float(text)
    except ValueError:
        return text
    return repr(number) if not number.is_integer() else str(int(number))


def format_term(term: Term) -> str:
    """Render a term as CQ text (strings single-quoted, numbers bare).

    >>> format_term(Const("it's"))
    "'it\\\\'s'"
    >>> format_term(Var("x"))
    'x'
    """
    if isinstance(term, Var):
        return term.name
    value = term.value
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


def _term_key(term: Term) -> tuple[int, str]:
    if isinstance(term, Var):
        return (2, term.name)
    return term.sort_key()


@dataclass(frozen=True, slots=True)
class Atom:
    """``R(t1, ..., tr)``, or a *filter atom*: a ``predicate`` over its terms.

    A filter atom's predicate reads ``terms[i]`` as ``Slot(i)``; its relation
    symbol is the bracketed canonical text of the predicate (``[{0} > 30]``),
    which no table name can spell, so two filter atoms are atoms of one
    relation exactly when their predicates are equal.  Build one with
    :meth:`filter`.
    """

    relation: str
    terms: tuple[Term, ...]
    predicate: Predicate | None = None

    @staticmethod
    def filter(predicate: Predicate, terms: Iterable[Term]) -> Atom:
        """The filter atom of ``predicate`` over ``terms``."""
        return Atom(f"[{render(predicate)}]", tuple(terms), predicate)

    @property
    def is_filter(self) -> bool:
        """True for a filter atom (a public predicate, never the added tuple)."""
        return self.predicate is not None

    @property
    def template(self) -> str:
        """A filter's canonical text, ``{i}`` for its ``i``-th term (``""`` for a relation atom)."""
        return render(self.predicate) if self.predicate is not None else ""

    @property
    def arity(self) -> int:
        """Number of positions."""
        return len(self.terms)

    def variables(self) -> frozenset[Var]:
        """The variables of the atom."""
        return frozenset(t for t in self.terms if isinstance(t, Var))

    def substitute(self, mapping: Mapping[Term, Term]) -> Atom:
        """Apply ``mapping`` to every term (terms not in it stay)."""
        return Atom(self.relation, tuple(mapping.get(t, t) for t in self.terms), self.predicate)

    def sort_key(self) -> tuple[object, ...]:
        """Stable order: relation atoms before filters, then by name and terms."""
        return (self.is_filter, self.relation, tuple(_term_key(t) for t in self.terms))

    def __str__(self) -> str:
        if self.predicate is not None:
            return "[" + render(self.predicate, [format_term(t) for t in self.terms]) + "]"
        return f"{self.relation}({', '.join(format_term(t) for t in self.terms)})"


Classes = tuple[tuple[int, ...], tuple[tuple[int, Const], ...]]
"""Position classes of atoms sent onto one row: each position's parent (union-find),
and the constant each class is bound to."""


def unit_classes(arity: int) -> Classes:
    """The classes of no atom yet: every position alone, no constant."""
    return tuple(range(arity)), ()


def with_atom(classes: Classes, atom: Atom) -> Classes | None:
    """The classes once ``atom`` is also sent onto the row, or None when two different
    constants meet; linear in the arity, so atoms can be added one at a time."""
    parent = list(classes[0])

    def find(p: int) -> int:
        while parent[p] != p:
            p = parent[p]
        return p

    first: dict[Term, int] = {}
    for p, term in enumerate(atom.terms):
        if isinstance(term, Var):
            if term in first:
                a, b = find(p), find(first[term])
                parent[max(a, b)] = min(a, b)
            else:
                first[term] = p
    consts: dict[int, Const] = {}
    pinned = [*classes[1], *((p, t) for p, t in enumerate(atom.terms) if isinstance(t, Const))]
    for p, const in pinned:
        root = find(p)
        if consts.setdefault(root, const) != const:
            return None
    return tuple(parent), tuple(sorted(consts.items(), key=lambda kv: kv[0]))


def position_classes(atoms: Iterable[Atom]) -> tuple[list[int], dict[int, Const]] | None:
    """Unify atoms of one relation position-wise, as when all are sent onto one tuple.

    Returns the class (a representative position) of every position and the
    constant each class is bound to, or None when two different constants meet.

    >>> position_classes([Atom("R", (Var("x"), Var("x"), Var("y"))),
    ...                   Atom("R", (Var("u"), Var("v"), Const(1)))])
    ([0, 0, 2], {2: Const(value=1)})
    """
    atoms = list(atoms)
    if not atoms:
        return [], {}
    classes: Classes | None = unit_classes(atoms[0].arity)
    for atom in atoms:
        assert classes is not None
        classes = with_atom(classes, atom)
        if classes is None:
            return None
    assert classes is not None
    parent = list(classes[0])

    def root(p: int) -> int:
        while parent[p] != p:
            p = parent[p]
        return p

    return [root(p) for p in range(len(parent))], dict(classes[1])


@functools.lru_cache(maxsize=4096)
def _ordered(atoms: frozenset[Atom]) -> tuple[tuple[Atom, ...], tuple[Atom, ...]]:
    """``atoms`` in the canonical order, and those that are not filters: kept per set of
    atoms (a set hashes once), as the engine asks for them again and again."""
    ordered = tuple(sorted(atoms, key=Atom.sort_key))
    return ordered, tuple(a for a in ordered if not a.is_filter)


@dataclass(frozen=True, slots=True)
class CQ:
    """A conjunctive query: head terms, a set of atoms, and satisfiability.

    ``satisfiable=False`` is ⊥ (the chase met two different constants): its
    count is 0 on every database.
    """

    head: tuple[Term, ...]
    atoms: frozenset[Atom]
    name: str = "Q"
    satisfiable: bool = True

    @staticmethod
    def of(head: Iterable[Term], atoms: Iterable[Atom], name: str = "Q") -> CQ:
        """Build a CQ from any iterables."""
        return CQ(tuple(head), frozenset(atoms), name)

    @property
    def free(self) -> tuple[Var, ...]:
        """The free variables, in head order, without repetition."""
        seen: dict[Var, None] = {}
        for t in self.head:
            if isinstance(t, Var):
                seen.setdefault(t, None)
        return tuple(seen)

    @property
    def is_boolean(self) -> bool:
        """True when the head has no variable (the count is 0 or 1)."""
        return not self.free

    def sorted_atoms(self) -> list[Atom]:
        """Atoms in the canonical (printing) order."""
        return list(_ordered(self.atoms)[0])

    def relation_atoms(self) -> list[Atom]:
        """The non-filter atoms, in canonical order."""
        return list(_ordered(self.atoms)[1])

    def variables(self) -> frozenset[Var]:
        """Every variable of the body and the head."""
        out = {t for t in self.head if isinstance(t, Var)}
        for atom in self.atoms:
            out |= atom.variables()
        return frozenset(out)

    def constants(self) -> frozenset[Const]:
        """Every constant of the body."""
        return frozenset(t for a in self.atoms for t in a.terms if isinstance(t, Const))

    def elements(self) -> frozenset[Term]:
        """The domain of the canonical structure (variables and body constants)."""
        return frozenset(t for a in self.atoms for t in a.terms) | {
            t for t in self.head if isinstance(t, Var)
        }

    def relations(self) -> dict[str, int]:
        """Relation name → arity, over non-filter atoms."""
        return {a.relation: a.arity for a in self.atoms if not a.is_filter}

    def substitute(self, mapping: Mapping[Term, Term]) -> CQ:
        """Apply ``mapping`` to the head and every atom."""
        return CQ(
            tuple(mapping.get(t, t) for t in self.head),
            frozenset(a.substitute(mapping) for a in self.atoms),
            self.name,
            self.satisfiable,
        )

    def with_atoms(self, atoms: Iterable[Atom]) -> CQ:
        """The same head with another body."""
        return CQ(self.head, frozenset(atoms), self.name, self.satisfiable)

    def __str__(self) -> str:
        head = f"{self.name}({', '.join(format_term(t) for t in self.head)})"
        if not self.satisfiable:
            return f"{head} :- false."
        body = ", ".join(str(a) for a in self.sorted_atoms())
        return f"{head} :- {body}." if body else f"{head}."


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One aggregate of a SELECT list.

    ``kind`` is one of ``count``, ``count_distinct``, ``sum``, ``avg``,
    ``median``, ``min``, ``max``; ``column`` is the aggregated term (for
    ``sum``/``avg``/``median``/``min``/``max``, and the column of ``COUNT(col)``);
    ``columns`` lists the counted columns of ``COUNT(DISTINCT c1, ...)``;
    ``column_name`` is ``table.column`` for value bounds.

    A value aggregate over an expression (``SUM(l_extendedprice * (1 - l_discount))``)
    has ``column`` and ``column_name`` None and holds the typed ``expression``
    instead: its slot ``i`` is the term ``terms[i]``, a value of the column
    ``term_columns[i]`` (``table.column``).

    ``output`` names its result column as the SQL shows it: its alias, else its SQL
    text ("" when it does not come from SQL); ``label`` is for people.
    """

    kind: str
    label: str
    column: Term | None = None
    columns: tuple[Term, ...] = ()
    column_name: str | None = None
    expression: Expr | None = None
    terms: tuple[Term, ...] = ()
    term_columns: tuple[str, ...] = ()
    output: str = ""


@dataclass(frozen=True, slots=True)
class AggregateQuery:
    """A counting (or other aggregate) query: the CQ whose answers are counted.

    ``cq`` has as head the terms whose distinct combinations are counted
    (every variable for ``COUNT(*)``; the listed columns for ``COUNT(DISTINCT)``).
    ``body`` is the same body with every variable free (the rows of the join),
    ``group_by`` the grouping terms, ``sql`` the user's SQL (evaluated for
    witnesses, with ``dialect``), ``notes`` remarks for the output (columns
    assumed without a schema, for instance), ``row_positions`` the position of
    the hidden row identity of each table whose rows may repeat.  SQL for a database is generated
    at the edge (:mod:`cqsens.frontend.sqlgen`), never stored here.
    """

    cq: CQ
    aggregates: tuple[Aggregate, ...] = (Aggregate("count", "count"),)
    group_by: tuple[Term, ...] = ()
    sql: str | None = None
    dialect: str | None = None
    notes: tuple[str, ...] = ()
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = "<query>"
    heads: tuple[tuple[Term, ...], ...] = ()
    body: CQ | None = None
    text: str = ""
    row_positions: Mapping[str, int] = field(default_factory=dict)
    opaque_filters: tuple[str, ...] = ()  # WHERE conditions kept out of cq (public or person-local)

    @property
    def aggregate(self) -> str:
        """The kind of the first aggregate (``count`` for a CQ)."""
        return self.aggregates[0].kind

    def cq_for(self, index: int) -> CQ:
        """The CQ whose distinct answers the ``index``-th aggregate counts."""
        if not self.heads:
            return self.cq
        return CQ(self.heads[index], self.cq.atoms, self.cq.name, self.cq.satisfiable)
