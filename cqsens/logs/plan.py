"""Which literals of a shape may change without changing its analysis.

The upper bound of a query depends on its constants only through

* which constants are equal (the chase of the FDs meets two different
  constants: the query is unsatisfiable; the core maps equal constants alone),
* how its filters compare them (public filters never raise a count bound), and
* their *values* wherever a value bound reads them: a ``WHERE`` range over an
  aggregated column (``SUM(age) ... WHERE age BETWEEN 10 AND 20``), an
  aggregate's expression, a CHECK or ``--bounds`` range of the column.

:func:`abstract_literals` therefore abstracts a literal only when every use of
its value is a constant of a relation atom or a plain comparison of one column
with constants (``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``,
``IN``) on a column without a declared range, and the query releases no value
aggregate (SUM, AVG, MEDIAN, MIN, MAX) when the literal is a number.  Every
other literal stays in the key with its value: it is *pinned*.  A literal that
the frontend turned into something else (a date, an interval, a ``LIMIT``) is
not found among the query's constants and is pinned too.

The lower bound is a witness: two databases.  Under a renaming of constants
used only with ``=``, ``<>`` and ``IN`` (and in joins) a permutation of the
domain carries the witness to a witness of the renamed query, so the lower
bound carries over; a constant compared with ``<`` or ``>`` may leave no
integer between two new constants, so :func:`abstract_literals` also says which
literals are compared by order, and a cached lower bound is dropped when one
of those changes (:mod:`cqsens.logs.run`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from cqsens.ir.cq import AggregateQuery, Const, Var
from cqsens.ir.expr import And, Between, Compare, InList, Kind, Literal, Node, Slot, literals
from cqsens.logs.shape import Lexed, literal_value
from cqsens.release.values import VALUE_KINDS

__all__ = ["Plan", "abstract_literals"]


@dataclass(frozen=True, slots=True)
class Plan:
    """The literals (by index) that may be abstract, and those of them compared by order."""

    abstract: frozenset[int]
    ordered: frozenset[int]


_Value = int | Fraction | str


def _key(value: object) -> tuple[str, str]:
    """A value's identity for matching: numbers by value, texts as written."""
    if isinstance(value, bool) or value is None:
        return ("other", repr(value))
    if isinstance(value, int | Fraction):
        return ("number", str(Fraction(value)))
    if isinstance(value, float):
        return ("number", str(Fraction(value)))
    return ("text", str(value))


def _normal(value: object) -> str:
    text = str(value).strip().lower()
    try:
        number = float(text)
    except ValueError:
        return text
    return repr(number) if not number.is_integer() else str(int(number))


def _plain(node: Node) -> tuple[list[Literal], bool] | None:
    """The literals of a conjunction of plain comparisons of one slot with constants, and
    whether one compares by order; None when the predicate is anything else."""
    out: list[Literal] = []
    ordered = False

    def const(e: object) -> bool:
        if isinstance(e, Literal) and e.kind in (Kind.INTEGER, Kind.TEXT) \
                and not isinstance(e.value, bool):
            out.append(e)
            return True
        return False

    def visit(n: Node) -> bool:
        nonlocal ordered
        if isinstance(n, And):
            return all(visit(p) for p in n.parts)
        if isinstance(n, Compare) and n.op in ("=", "<>", "<", "<=", ">", ">="):
            ok = (isinstance(n.left, Slot) and const(n.right)) or \
                 (isinstance(n.right, Slot) and const(n.left))
            ordered = ordered or n.op not in ("=", "<>")
            return ok
        if isinstance(n, Between):
            ordered = True
            return isinstance(n.operand, Slot) and const(n.low) and const(n.high)
        if isinstance(n, InList):
            return isinstance(n.operand, Slot) and all(const(i) for i in n.items)
        return False

    return (out, ordered) if visit(node) else None


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
        Columns with a declared range (CHECK, ``--bounds``).

    Returns
    -------
    Plan
    """
    checked = set(checked)
    cq = query.cq
    value_release = any(a.kind in VALUE_KINDS for a in query.aggregates)
    columns: dict[Var, set[tuple[str, int]]] = {}
    for atom in cq.relation_atoms():
        for pos, term in enumerate(atom.terms):
            if isinstance(term, Var):
                columns.setdefault(term, set()).add((atom.relation, pos))
    eligible: set[tuple[str, str]] = set()
    order: set[tuple[str, str]] = set()
    pinned: set[tuple[str, str]] = set()
    for atom in cq.atoms:
        if atom.predicate is None:
            for pos, term in enumerate(atom.terms):
                if isinstance(term, Const):
                    key = _key(term.value)
                    (pinned if (atom.relation, pos) in checked or key[0] == "other"
                     else eligible).add(key)
            continue
        found = _plain(atom.predicate)
        touched = {c for t in atom.terms if isinstance(t, Var) for c in columns.get(t, ())}
        if found is None or touched & checked or any(isinstance(t, Const) for t in atom.terms):
            pinned.update(_key(v) for v in literals(atom.predicate))
            pinned.update(_key(t.value) for t in atom.terms if isinstance(t, Const))
            continue
        lits, by_order = found
        for lit in lits:
            eligible.add(_key(lit.value))
            if by_order:
                order.add(_key(lit.value))
    for agg in query.aggregates:
        for item in (agg.column, *agg.columns, *agg.terms):
            if isinstance(item, Const):
                pinned.add(_key(item.value))
        if agg.expression is not None:
            pinned.update(_key(v) for v in literals(agg.expression))
    for head in (cq.head, *query.heads, tuple(query.group_by)):
        pinned.update(_key(t.value) for t in head if isinstance(t, Const))
    # a number and a text that a database may take as equal ('5' and 5) stay as written
    kinds_of: dict[str, set[str]] = {}
    for written in lexed.literals:
        kinds_of.setdefault(_normal(literal_value(written)), set()).add(written.kind)
    abstract: set[int] = set()
    ordered: set[int] = set()
    for i, written in enumerate(lexed.literals):
        value = literal_value(written)
        key = _key(value)
        if isinstance(value, Fraction) or (written.kind == "number" and value_release):
            continue
        if key in pinned or key not in eligible or len(kinds_of[_normal(value)]) > 1:
            continue
        abstract.add(i)
        if key in order:
            ordered.add(i)
    # equal literals are one constant: abstract all of them or none
    for i in list(abstract):
        same = [j for j, other in enumerate(lexed.literals)
                if _key(literal_value(other)) == _key(literal_value(lexed.literals[i]))]
        if not all(j in abstract for j in same):
            abstract.discard(i)
            ordered.discard(i)
    return Plan(frozenset(abstract), frozenset(ordered))
