"""A person built along the bound's own derivation: one database ``D*`` with a person
whose rows meet as many answers as the steps of its group allow.

The person bound (docs/rules.md, rule privacy-unit) fixes the person's key and
follows steps ``x -> y`` through the declared dependencies: ``k`` values of ``y``
for each value of ``x`` through ``R[x->y]<=k`` (a CD), one through an FD.  Here
each step is taken at its weight: a variable reached by a step gets ``k`` values
per combination of its sources' values (a product along the steps, so a
customer's 41 orders each carry their own 7 lines), every other variable one
value shared by every copy.  Concrete values then meet the query's filters
(every comparison, ``IN``, ``LIKE``, ``BETWEEN`` and date range over the values
already chosen, decided as SQLite decides it) and the columns' CHECKs, dates in
the ``YYYY-MM-DD`` text of the SQL's literals.  The rows the foreign keys
reference (the public tables) are completed by
:func:`~cqsens.witness.references.complete`, identical in both databases.

Nothing here is reported on its own: the caller tries every person of ``D*``
with :meth:`~cqsens.witness.person._Search.best_person`, which checks both
databases against everything declared and runs the user's SQL on both.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import itertools
import math
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, cast

from cqsens.engine.paths import Step
from cqsens.frontend.sqlgen import predicate_sql
from cqsens.ir.cq import CQ, AggregateQuery, Atom, Const, Term, Var
from cqsens.ir.exact import Exact
from cqsens.ir.expr import Arith, Kind, Literal, Predicate, Slot, literals, shifted_date
from cqsens.ir.schema import Schema
from cqsens.ir.semantics import Undecided, checks_range, evaluate
from cqsens.witness.aggregate import concrete
from cqsens.witness.disjuncts import disjunct_variants
from cqsens.witness.evaluate import Database, Value, affinity_value
from cqsens.witness.values import unary_checks

__all__ = ["MAX_PERSON_ROWS", "build_person"]

MAX_PERSON_ROWS = 5_000
"""The most copies of the query's atoms one constructed person holds."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_Node = Any  # a node of cqsens.ir.expr
_Ident = tuple[object, ...]  # a value's identity: (variable, the identities it depends on, index)


@dataclass(frozen=True)
class _Plan:
    """The variables reached by steps: per target, its sources and weight, in order."""

    order: tuple[tuple[Var, tuple[Term, ...], int], ...]
    key: tuple[Term, ...]


def build_person(
    extended: CQ,
    steps: Sequence[Step],
    key: Sequence[Term],
    *,
    schema: Schema,
    columns: Mapping[str, tuple[str, ...]],
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
    hidden: Mapping[str, int],
    ends: Mapping[str, bool] | None = None,
    cap: int = MAX_PERSON_ROWS,
    hints: Mapping[str, Sequence[Value]] | None = None,
    spread: frozenset[str] = frozenset(),
) -> Database | None:
    """The rows of ``extended`` (the query extended to the unit table) for one person
    whose key holds ``key``, a product along ``steps``, with concrete values; None when
    no value meets a filter or CHECK, or a step has no finite weight.  ``ends`` puts
    a variable (by name) at the high (True) or low (False) end of the range its CHECKs
    and filters allow, when that range is finite: an aggregated value at the end that
    moves the released value most.  ``hints`` are values to try first for a variable (by
    name): the literals a CASE of a summed expression compares it with.  ``spread``
    names variables (GROUP BY columns) whose copies take distinct values where they
    can: the person's rows then fall into as many groups as the steps allow.

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> from cqsens.ir.schema import Relation
    >>> q = parse_cq("Q(o) :- U(c), O(o, c)")
    >>> step = Step("O", 1, 0, Var("c"), Var("o"), 3)
    >>> schema = Schema((Relation("U", ("c",)), Relation("O", ("o", "c"))))
    >>> db = build_person(q, [step], [Var("c")], schema=schema,
    ...                   columns={"U": ("c",), "O": ("o", "c")}, column_checks={}, hidden={})
    >>> len(db.rows["O"]), len(db.rows["U"])
    (3, 1)
    """
    shape = _shape(extended, tuple(steps), tuple(key), cap)
    if shape is None:
        return None
    copies, idents, branching = shape
    atoms = extended.relation_atoms()
    declared = {t.name: tuple(table.types)[p] for a in atoms
                if (table := schema.find(a.relation)) is not None
                for p, t in enumerate(a.terms) if isinstance(t, Var) and p < len(table.types)}
    for variant in disjunct_variants(extended):
        chosen = _Chooser(variant, column_checks, branching | spread, ends or {},
                          declared, hints or {}).choose(idents)
        if chosen is not None:
            break
    else:
        return None
    return _database(extended, copies, chosen, schema, columns, hidden)


@functools.lru_cache(maxsize=16)
def _shape(extended: CQ, steps: tuple[Step, ...], key: tuple[Term, ...], cap: int) -> tuple[
        tuple[Mapping[Var, _Ident], ...], tuple[_Ident, ...], frozenset[str]] | None:
    """The copies of the plan, their identities in order and the variables a step
    multiplies; shared by the builds that differ only in the values chosen (read only)."""
    plan = _plan(steps, key)
    if plan is None:
        return None
    copies = _copies(extended, plan, cap)
    if copies is None:
        return None
    atoms = extended.relation_atoms()
    shown: dict[int, str] = {}  # the repr of each identity, by id (all held by the copies)
    idents = sorted({c[t] for c in copies for a in atoms for t in a.terms if isinstance(t, Var)},
                    key=lambda ident: _tuple_repr(ident, shown))
    return (tuple(copies), tuple(idents),
            frozenset(t.name for t, _, w in plan.order if w > 1))


def _tuple_repr(value: object, shown: dict[int, str]) -> str:
    """``repr(value)``, the repr of each tuple inside kept in ``shown`` by id (the copies'
    identities share their parents' identities: each is written once, not once per
    child).  The caller keeps every tuple alive while ``shown`` is in use."""
    if type(value) is not tuple:
        return repr(value)
    got = shown.get(id(value))
    if got is None:
        inner = ", ".join(_tuple_repr(v, shown) for v in value)
        got = shown[id(value)] = f"({inner},)" if len(value) == 1 else f"({inner})"
    return got


def _plan(steps: Sequence[Step], key: Sequence[Term]) -> _Plan | None:
    """Per variable a step reaches first: its sources and the step's weight."""
    order: list[tuple[Var, tuple[Term, ...], int]] = []
    reached: set[Term] = set(key)
    pending = list(steps)
    while pending:
        progress = False
        for step in list(pending):
            sources = (step.source, *(t for _, t in step.more))
            if not all(isinstance(s, Const) or s in reached for s in sources):
                continue
            pending.remove(step)
            progress = True
            if step.weight == math.inf:
                return None
            for target in (step.target, *step.also):
                if isinstance(target, Var) and target not in reached:
                    reached.add(target)
                    order.append((target, sources, int(step.weight)))
        if not progress:
            break
    return _Plan(tuple(order), tuple(key))


def _copies(cq: CQ, plan: _Plan, cap: int) -> list[dict[Var, _Ident]] | None:
    """One assignment of identities per combination of choices along the plan."""
    base: dict[Var, _Ident] = {t: ("key", t.name) for t in plan.key if isinstance(t, Var)}
    copies = [base]
    for target, sources, weight in plan.order:
        grown: list[dict[Var, _Ident]] = [] if weight != 1 else copies
        for copy in copies:
            parents = tuple(copy[s] if isinstance(s, Var) else ("const", repr(s.value))
                            for s in sources)
            if weight == 1:  # one choice: the copy itself grows (no other holds it)
                copy[target] = (target.name, parents, 0)
                continue
            for i in range(weight):
                grown.append({**copy, target: (target.name, parents, i)})
        copies = grown
        if len(copies) * max(len(cq.relation_atoms()), 1) > cap:
            return None
    for copy in copies:
        for atom in cq.atoms:
            for t in atom.terms:
                if isinstance(t, Var) and t not in copy:
                    copy[t] = (t.name,)  # one value shared by every copy
    return copies


class _Chooser:
    """Concrete values for identities, one variable's values distinct where they can be,
    every filter over chosen values holding (decided in Python or, failing that, SQLite)."""

    def __init__(self, cq: CQ, column_checks: Mapping[tuple[str, int], Sequence[Predicate]],
                 branching: frozenset[str], ends: Mapping[str, bool],
                 declared: Mapping[str, str], hints: Mapping[str, Sequence[Value]]):
        self.cq = cq
        self.hints = hints
        self.declared = declared  # a variable's declared column type
        self.ends = ends
        self.branching = branching  # variables a step gives several values per source
        self.unary = unary_checks(cq, column_checks)
        self.filters = [a for a in cq.sorted_atoms()
                        if a.predicate is not None and len(a.variables()) > 1]
        self.constants = [c.value for c in sorted(cq.constants(), key=Const.sort_key)]
        self.conn = sqlite3.connect(":memory:")
        self.folded: dict[Predicate, Predicate] = {}

    def choose(self, idents: Sequence[_Ident]) -> dict[_Ident, Value] | None:
        try:
            return self._choose(idents)
        finally:
            self.conn.close()

    def _choose(self, idents: Sequence[_Ident]) -> dict[_Ident, Value] | None:
        by_var: dict[str, list[_Ident]] = {}
        for ident in idents:
            by_var.setdefault(str(ident[1] if ident[0] == "key" else ident[0]), []).append(ident)
        names = {v.name: v for a in (*self.filters, *self._relation_atoms())
                 for v in a.variables()}
        chosen: dict[_Ident, Value] = {}
        per_var: dict[str, Value] = {}  # a value of each variable (for binary filters)
        slots = self._slots()
        taken: dict[tuple[str, int], list[Value]] = {}  # values other variables hold there
        for name in sorted(by_var, key=lambda n: (self._rank(names.get(n)), n)):
            wanted = len(by_var[name]) if name in self.branching else 1
            avoid = [v for slot in slots.get(name, ()) for v in taken.get(slot, ())]
            values = self._values(names.get(name), per_var, wanted, avoid)
            if not values:
                return None
            for slot in slots.get(name, ()):
                taken.setdefault(slot, []).extend(values)
            for n, ident in enumerate(by_var[name]):
                chosen[ident] = values[n % len(values)]
            per_var[name] = values[0]
        return chosen

    def _relation_atoms(self) -> list[Atom]:
        return list(self.cq.relation_atoms())

    def _slots(self) -> dict[str, set[tuple[str, int]]]:
        """The columns (relation, position) each variable fills: two variables in one
        column take different values where they can (two nations of one query are two
        rows, not one key with two names)."""
        out: dict[str, set[tuple[str, int]]] = {}
        for atom in self._relation_atoms():
            for p, t in enumerate(atom.terms):
                if isinstance(t, Var):
                    out.setdefault(t.name, set()).add((atom.relation, p))
        return out

    def _rank(self, var: Var | None) -> int:
        """Variables with a filter over them alone first, then the others."""
        return 0 if var is not None and self.unary.get(var) else 1

    def _values(self, var: Var | None, known: Mapping[str, Value],
                wanted: int, avoid: Sequence[Value] = ()) -> list[Value]:
        """Up to ``wanted`` distinct values meeting the variable's CHECKs and filters, the
        filters over other variables read at their chosen value (one per variable that is
        not multiplied by a step); values in ``avoid`` only when no other one fits."""
        checks = self.unary.get(var, []) if var is not None else []
        related = [a for a in self.filters if var in a.variables()]
        seeds: list[Value] = [*self.constants]
        for chk in checks:
            seeds.extend(literals(chk))
        for atom in related:
            assert atom.predicate is not None
            seeds.extend(literals(atom.predicate))  # an OR of equalities names its values
            seeds.extend(known[t.name] for t in atom.variables() if t.name in known)
        out: list[Value] = []
        first = [*self._end(var, checks),
                 *(self.hints.get(var.name, ()) if var is not None else ())]
        taken = set(avoid)
        later: list[Value] = []  # values other variables hold: tried last
        for value in itertools.chain(first, _candidates(seeds, wanted + len(taken))):
            if value in taken:
                later.append(value)
            elif self._fits_all(var, value, value in first, checks, related, known):
                out.append(value)
                if len(out) >= wanted:
                    return out
        for value in later:
            if self._fits_all(var, value, value in first, checks, related, known):
                out.append(value)
                if len(out) >= wanted:
                    break
        return out

    def _fits_all(self, var: Var | None, value: Value, end: bool,
                  checks: Sequence[Predicate], related: Sequence[Atom],
                  known: Mapping[str, Value]) -> bool:
        """Whether ``value`` suits the variable's type, CHECKs and filters (a range's end
        decided as SQLite decides it, in doubles)."""
        if var is not None and not _fits(value, self.declared.get(var.name, "")):
            return False
        sqlite = end and isinstance(value, float)
        return all(self._holds(c, [value], sqlite) for c in checks) and all(
            self._filter_holds(a, var, value, known) for a in related)

    def _end(self, var: Var | None, checks: Sequence[Predicate]) -> list[Value]:
        """The end of the variable's range asked for in ``ends`` (empty when none)."""
        if var is None or var.name not in self.ends:
            return []
        low, high = _range(checks)
        end = high if self.ends[var.name] else low
        if end in (math.inf, -math.inf) or low > high:
            return []
        toward = low if end == high else high
        inward = 1 if toward > end else -1  # a strict bound (x < 24): a cent, a unit inside
        # SQLite decides a filter's 0.06 + 0.01 in doubles, where 0.07 is above it: then a
        # cent inside (a DECIMAL(15,2) value), then a unit
        return [concrete(Fraction(end) + step * inward, toward)
                for step in (Fraction(0), Fraction(1, 100), Fraction(1))
                if low <= Fraction(end) + step * inward <= high]

    def _filter_holds(self, atom: Atom, var: Var | None, value: Value,
                      known: Mapping[str, Value]) -> bool:
        args: list[Value] = []
        for t in atom.terms:
            if isinstance(t, Const):
                args.append(t.value)
            elif t == var:
                args.append(value)
            elif t.name in known:
                args.append(known[t.name])
            else:
                return True  # decided once its last variable is chosen
        assert atom.predicate is not None
        return self._holds(atom.predicate, args)

    def _holds(self, predicate: Predicate, args: Sequence[Value], sqlite: bool = False) -> bool:
        predicate = self.folded.setdefault(predicate, _folded(predicate))
        try:
            if sqlite:  # a range's end: exact in Python, maybe not in SQLite's doubles
                raise Undecided
            return evaluate(predicate, args) is True
        except Undecided:
            try:
                row = self.conn.execute("SELECT " + predicate_sql(predicate, args)).fetchone()
            except sqlite3.Error:
                return False
            return bool(row and row[0])


def _range(checks: Sequence[Predicate]) -> tuple[Exact, Exact]:
    """The closed range the predicates put on ``Slot(0)``, constant arithmetic folded
    (``BETWEEN 0.06 - 0.01 AND 0.06 + 0.01``)."""
    return checks_range(cast(Predicate, _folded(check, numeric=True)) for check in checks)


def ranged_variables(cq: CQ, column_checks: Mapping[tuple[str, int], Sequence[Predicate]]
                     ) -> dict[str, tuple[Exact, Exact]]:
    """The variables of ``cq`` whose values lie in a finite range (a column's CHECK and
    the filters over the variable alone), with that range: the ones worth putting at an
    end."""
    out: dict[str, tuple[Exact, Exact]] = {}
    for var, checks in unary_checks(cq, column_checks).items():
        low, high = _range(checks)
        if abs(low) != math.inf and abs(high) != math.inf and low <= high:
            out[var.name] = (low, high)
    return out


def aggregate_hints(query: AggregateQuery) -> dict[str, list[Value]]:
    """Per variable of a summed expression, the literals that expression holds (``CASE
    WHEN p_type LIKE 'PROMO%'``, ``WHEN nation = 'BRAZIL'``): values to try first."""
    out: dict[str, list[Value]] = {}
    for agg in query.aggregates:
        if agg.expression is None:
            continue
        found = [v for v in literals(agg.expression) if isinstance(v, str)]
        for term in agg.terms:
            if isinstance(term, Var) and found:
                out.setdefault(term.name, []).extend(found)
    return out


def _folded(node: _Node, numeric: bool = False) -> _Node:
    """``node`` with ``DATE 'd' ± INTERVAL 'n' UNIT`` replaced by the date it denotes
    (SQLite has no interval type; the released SQL is translated, a bare predicate is not);
    with ``numeric``, arithmetic on number literals too, exactly (for a range's ends only:
    SQLite computes ``0.06 + 0.01`` in doubles)."""
    if isinstance(node, Arith) and node.op in "+-*":
        left, right = _folded(node.left, numeric), _folded(node.right, numeric)
        number = _number_folded(node.op, left, right) if numeric else None
        if number is not None or node.op == "*":
            return number or Arith(node.op, left, right)
        if isinstance(left, Literal) and isinstance(right, Literal) \
                and left.kind is Kind.DATE and right.kind is Kind.INTERVAL \
                and isinstance(left.value, str) and _DATE.match(left.value):
            try:
                amount = int(str(right.value).strip())
            except ValueError:
                return Arith(node.op, left, right)
            moved = shifted_date(left.value, amount if node.op == "+" else -amount,
                                 right.unit or "DAY")
            if moved is not None:
                return Literal(moved, Kind.DATE)
        return Arith(node.op, left, right)
    if isinstance(node, (Literal, Slot, type)) or not dataclasses.is_dataclass(node):
        return node
    changes = {f.name: _fold_item(getattr(node, f.name), numeric)
               for f in dataclasses.fields(node)}
    return dataclasses.replace(cast(Any, node), **changes)


def _number_folded(op: str, left: _Node, right: _Node) -> Literal | None:
    """``left op right`` for two number literals, exactly (None otherwise)."""
    if not (isinstance(left, Literal) and isinstance(right, Literal)):
        return None
    a, b = left.value, right.value
    if not (isinstance(a, (int, Decimal)) and isinstance(b, (int, Decimal))) \
            or isinstance(a, bool) or isinstance(b, bool):
        return None
    x, y = Decimal(a), Decimal(b)
    return Literal(x + y if op == "+" else x - y if op == "-" else x * y, Kind.DECIMAL)


def _fold_item(value: Any, numeric: bool) -> Any:
    if isinstance(value, tuple):
        return tuple(_fold_item(v, numeric) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _folded(value, numeric)
    return value


def _fits(value: Value, declared: str) -> bool:
    """Whether ``value`` is of the kind its column declares: an integer in an INTEGER
    column (a key column SQLite's ``INTEGER PRIMARY KEY`` would refuse text in), a number
    in a numeric one, text in a text one, a ``YYYY-MM-DD`` date in a DATE one."""
    kind = _kind(declared)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "text":
        return isinstance(value, str)
    if kind == "date":
        return isinstance(value, str) and bool(_DATE.match(value))
    return True


@functools.lru_cache(maxsize=256)
def _kind(declared: str) -> str:
    """The kind of value :func:`_fits` asks of a declared type: ``int``, ``number``,
    ``text``, ``date`` or ``any``."""
    kind = declared.upper()
    if "INT" in kind:
        return "int"
    if any(w in kind for w in ("DEC", "NUM", "REAL", "FLOA", "DOUB")):
        return "number"
    if any(w in kind for w in ("CHAR", "TEXT", "CLOB")):
        return "text"
    return "date" if "DATE" in kind or "TIME" in kind else "any"


def _candidates(seeds: Sequence[Value], wanted: int = 1) -> Iterator[Value]:
    """Values to try near the seeds: dates a few days around a date, numbers around a
    number, a text's pattern with its wildcards filled; then plain fresh numbers (each
    once, made as they are asked for)."""
    seen: set[object] = set()
    for v in itertools.chain.from_iterable(
            (*(_near(seed) for seed in seeds), _fresh_values(wanted))):
        marker = (type(v).__name__, v)
        if marker not in seen:
            seen.add(marker)
            yield v


def _near(seed: Value) -> Iterator[Value]:
    """Values near one seed (see :func:`_candidates`)."""
    if isinstance(seed, bool) or seed is None:
        return
    if isinstance(seed, (int, float)):
        yield from (seed + d for d in (1, -1, 0, 2, -2, 3, 5, 10, 100, -10, -100))
        yield from (seed + d for d in range(4, 120))
    elif isinstance(seed, str) and _DATE.match(seed):
        try:
            day = datetime.date.fromisoformat(seed)
        except ValueError:
            return
        for d in (1, -1, 0, *range(2, 120), *range(-2, -60, -1)):
            try:
                yield (day + datetime.timedelta(days=d)).isoformat()
            except OverflowError:
                continue
    elif isinstance(seed, str):
        filled = seed.replace("%", "").replace("_", "x")
        yield from (seed, filled, *(filled + str(n) for n in range(1, 60)),
                    *(f"{n}{filled}" for n in range(1, 10)))


def _fresh_values(wanted: int) -> Iterator[Value]:
    yield from range(100_001, 100_201 + wanted)  # clear of the 1001.. that complete() uses
    yield from (f"v{n}" for n in range(1001, 1201 + wanted))
    yield from ((datetime.date(2000, 1, 1) + datetime.timedelta(days=n)).isoformat()
                for n in range(1, 200 + wanted))


def _database(cq: CQ, copies: Sequence[Mapping[Var, _Ident]], chosen: Mapping[_Ident, Value],
              schema: Schema, columns: Mapping[str, tuple[str, ...]],
              hidden: Mapping[str, int]) -> Database | None:
    """The rows of every copy, typed as declared, a distinct hidden row id where declared."""
    cols: dict[str, tuple[str, ...]] = {}
    types: dict[str, tuple[str, ...]] = {}
    rows: dict[str, dict[tuple[Value, ...], None]] = {}
    counter = 0
    for atom in cq.relation_atoms():
        table = schema.find(atom.relation)
        if table is None:
            return None
        cols[atom.relation] = tuple(columns.get(atom.relation, table.columns))
        types[atom.relation] = tuple(table.types)
        if len(cols[atom.relation]) != len(atom.terms):
            return None
        made = dict.fromkeys(tuple(t.value if isinstance(t, Const) else chosen[copy[t]]
                                   for t in atom.terms) for copy in copies)
        for made_row in made:
            row: list[Value] = []
            for p, value in enumerate(made_row):
                if hidden.get(atom.relation) == p:  # a distinct row id per distinct row
                    counter += 1
                    value = 5_000_000 + counter
                declared = types[atom.relation][p] if p < len(types[atom.relation]) else ""
                row.append(affinity_value(value, declared))
            rows.setdefault(atom.relation, {})[tuple(row)] = None
    return Database(cols, {r: frozenset(rs) for r, rs in rows.items()}, types)
