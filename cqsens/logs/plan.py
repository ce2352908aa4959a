"""Which literals of a shape may change without changing its upper bound.

The rule and its proof are in docs/rules.md, rule ``shape-cache``.  In short,
the upper bound of a query depends on its constants only through

* which constants are equal and how they are ordered, *among the constants
  that can meet*: a constant of a relation atom sits at a column (relation,
  position); a filter joins the columns of the variables it reads; two columns
  holding one variable are joined.  The chase of the FDs only equates terms at
  one position of one relation, and a homomorphism maps a constant to itself at
  the same position, so constants of different *groups* (connected components
  of that graph) never meet;
* their *values* wherever a value bound reads them: a ``WHERE`` range over an
  aggregated column (``SUM(age) ... WHERE age BETWEEN 10 AND 20``), an
  aggregate's expression, a divisor, a ``LIMIT``.  Every literal of a group
  that holds a column of a value aggregate (SUM, AVG, MEDIAN, MIN, MAX) stays
  in the key with its value: it is *pinned*, as is every literal of an
  aggregate's expression or head and every literal the frontend turned into
  something else (an interval, a ``LIMIT``).

:func:`abstract_literals` abstracts a literal when every use of its value is a
constant of a relation atom or a plain comparison of one column with
constants (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``, ``IN``, an
ISO date ``DATE 'YYYY-MM-DD'``), or a ``LIKE`` pattern that is the only
literal of its group (no constant can reach a column it filters, so the
pattern is never matched against a constant).  A CHECK or ``--bounds`` range
of a column does not pin a literal of a count: the count rules read CHECKs
only as finite domains of the head, never with the query's constants.
:class:`Plan` also gives the groups, so that :func:`cqsens.logs.shape.shape_key`
records the order and equality of literals within a group only.

The lower bound is not part of this: it is a witness instantiated for each
record and checked against the record's own query (:mod:`cqsens.logs.proofs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from cqsens.ir.cq import AggregateQuery, Atom, Const, Var, normalised
from cqsens.ir.expr import (
    And,
    Between,
    Compare,
    InList,
    Kind,
    Like,
    Literal,
    Node,
    Slot,
    literals,
)
from cqsens.ir.union_find import UnionFind
from cqsens.logs.shape import Lexed, literal_value
from cqsens.release.values import VALUE_KINDS

__all__ = ["ISO_DATE", "Plan", "abstract_literals"]

#: The only form of a date literal that may be abstract: its text order is its date order.
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, slots=True)
class Plan:
    """The literals (by index) that may be abstract, those of them compared by order, and
    the groups of literals that can meet (each a sorted tuple of indices); ``aliases``:
    the table aliases' names are left out of the key (:mod:`cqsens.logs.aliases`)."""

    abstract: frozenset[int]
    ordered: frozenset[int]
    groups: tuple[tuple[int, ...], ...] | None = None
    aliases: bool = False


_ValueKey = tuple[str, str]
_Column = tuple[str, int]


def _key(value: object) -> _ValueKey:
    """A value's identity for matching: numbers by value, texts as written."""
    if isinstance(value, bool) or value is None:
        return ("other", repr(value))
    if isinstance(value, int | Fraction | float):
        return ("number", str(Fraction(value)))
    return ("text", str(value))


@dataclass(frozen=True, slots=True)
class _Found:
    """The literals of a plain filter, whether one compares by order, and the LIKE patterns."""

    literals: tuple[Literal, ...]
    ordered: bool
    patterns: tuple[Literal, ...]


def _const(e: object, out: list[Literal]) -> bool:
    if not isinstance(e, Literal) or isinstance(e.value, bool):
        return False
    if e.kind in (Kind.INTEGER, Kind.TEXT) or (
            e.kind == Kind.DATE and isinstance(e.value, str) and ISO_DATE.fullmatch(e.value)):
        out.append(e)
        return True
    return False


def _plain(node: Node) -> _Found | None:
    """The literals of a conjunction of plain comparisons of one slot with constants;
    None when the predicate is anything else."""
    out: list[Literal] = []
    patterns: list[Literal] = []
    ordered = False

    def visit(n: Node) -> bool:
        nonlocal ordered
        if isinstance(n, And):
            return all(visit(p) for p in n.parts)
        if isinstance(n, Compare) and n.op in ("=", "<>", "<", "<=", ">", ">="):
            ordered = ordered or n.op not in ("=", "<>")
            return (isinstance(n.left, Slot) and _const(n.right, out)) or \
                (isinstance(n.right, Slot) and _const(n.left, out))
        if isinstance(n, Between):
            ordered = True
            return isinstance(n.operand, Slot) and _const(n.low, out) and _const(n.high, out)
        if isinstance(n, InList):
            return isinstance(n.operand, Slot) and all(_const(i, out) for i in n.items)
        if isinstance(n, Like):
            ok = isinstance(n.operand, Slot) and isinstance(n.pattern, Literal) \
                and n.pattern.kind == Kind.TEXT and isinstance(n.pattern.value, str)
            if ok:
                assert isinstance(n.pattern, Literal)
                patterns.append(n.pattern)
            return ok
        return False

    return _Found(tuple(out), ordered, tuple(patterns)) if visit(node) else None


class _Groups(UnionFind[object]):
    """Union-find over columns and literal values: what can meet."""

    def union(self, *items: object) -> None:
        if not items:
            return
        first = self.find(items[0])
        for other in items[1:]:
            self.link(self.find(other), first)


def _columns(query: AggregateQuery) -> dict[Var, set[_Column]]:
    columns: dict[Var, set[_Column]] = {}
    for atom in query.cq.relation_atoms():
        for pos, term in enumerate(atom.terms):
            if isinstance(term, Var):
                columns.setdefault(term, set()).add((atom.relation, pos))
    return columns


def _filter_columns(atom: Atom, columns: dict[Var, set[_Column]]) -> list[object]:
    """The nodes a filter joins: its variables' columns (the variable itself when it fills
    no column)."""
    nodes: list[object] = []
    for t in atom.terms:
        if isinstance(t, Var):
            nodes.extend(sorted(columns.get(t, ())) or [("var", t.name)])
    return nodes


def abstract_literals(query: AggregateQuery, lexed: Lexed,
                      checked: Iterable[tuple[str, int]] = ()) -> Plan:
    """The plan of a shape: which of ``lexed``'s literals may be abstract.

    Parameters
    ----------
    query : AggregateQuery
        The parsed query of the record (before the chase).
    lexed : Lexed
        Its template and literals.
    checked : iterable of (relation, position)
        Columns with a declared range (CHECK, ``--bounds``).  They pin no literal of a
        count; a value aggregate's column pins its whole group anyway.

    Returns
    -------
    Plan
    """
    del checked  # see the module docstring: the group of a value aggregate is pinned
    cq = query.cq
    columns = _columns(query)
    groups = _Groups()
    for filled in columns.values():
        groups.union(*sorted(filled))
    eligible: set[_ValueKey] = set()
    order: set[_ValueKey] = set()
    like: set[_ValueKey] = set()
    pinned: set[_ValueKey] = set()
    for atom in cq.atoms:
        if atom.predicate is None:
            for pos, term in enumerate(atom.terms):
                if isinstance(term, Const):
                    key = _key(term.value)
                    groups.union(("value", key), (atom.relation, pos))
                    (pinned if key[0] == "other" else eligible).add(key)
            continue
        nodes = _filter_columns(atom, columns)
        found = _plain(atom.predicate)
        values = [_key(v) for v in literals(atom.predicate)]
        values += [_key(t.value) for t in atom.terms if isinstance(t, Const)]
        groups.union(*nodes, *(("value", k) for k in values))
        if found is None or not nodes or any(isinstance(t, Const) for t in atom.terms):
            pinned.update(values)
            continue
        for lit in found.literals:
            eligible.add(_key(lit.value))
            if found.ordered:
                order.add(_key(lit.value))
        for lit in found.patterns:
            eligible.add(_key(lit.value))
            like.add(_key(lit.value))
    valued: list[object] = []
    for agg in query.aggregates:
        for item in (agg.column, *agg.columns, *agg.terms):
            if isinstance(item, Const):
                pinned.add(_key(item.value))
            elif isinstance(item, Var) and agg.kind in VALUE_KINDS:
                valued.extend(sorted(columns.get(item, ())) or [("var", item.name)])
        if agg.expression is not None:
            pinned.update(_key(v) for v in literals(agg.expression))
    for head in (cq.head, *query.heads, tuple(query.group_by)):
        pinned.update(_key(t.value) for t in head if isinstance(t, Const))
    valued_roots = {groups.find(v) for v in valued}
    keys = [_key(literal_value(lit)) for lit in lexed.literals]
    root_of = {k: groups.find(("value", k)) for k in set(keys)}
    members: dict[object, set[_ValueKey]] = {}
    for k, root in root_of.items():
        members.setdefault(root, set()).add(k)
    # a number and a text that a database may take as equal ('5' and 5) stay as written
    kinds_of: dict[str, set[str]] = {}
    for written in lexed.literals:
        kinds_of.setdefault(normalised(literal_value(written)), set()).add(written.kind)
    abstract: set[int] = set()
    ordered: set[int] = set()
    for i, written in enumerate(lexed.literals):
        value = literal_value(written)
        key = keys[i]
        if isinstance(value, Fraction) or key in pinned or key not in eligible \
                or len(kinds_of[normalised(value)]) > 1 or root_of[key] in valued_roots:
            continue
        group = members[root_of[key]]
        if group & like and (len(group) > 1 or key in order):
            continue  # a pattern that may meet another constant is matched against it
        abstract.add(i)
        if key in order:
            ordered.add(i)
    # equal literals are one constant: abstract all of them or none
    for i in list(abstract):
        if not all(j in abstract for j, k in enumerate(keys) if k == keys[i]):
            abstract.discard(i)
            ordered.discard(i)
    by_root: dict[object, list[int]] = {}
    for i, key in enumerate(keys):
        by_root.setdefault(root_of[key], []).append(i)
    parts = tuple(sorted(tuple(ix) for ix in by_root.values()))
    return Plan(frozenset(abstract), frozenset(ordered), parts)
