"""Witnesses: lower bounds proven by two concrete databases.

A witness is a database A and a row t with A and A ∪ {t} both satisfying Σ
(and the query's filters), and ``#Q(A ∪ {t}) − #Q(A)`` computed by running the
query in SQLite — the user's own SQL for SQL input.  The construction starts
from the canonical database of the (chased) core, with one atom playing t, and
glues N copies of it along that atom (fresh copies of every other element,
constants shared); several atoms of t's relation can play t at once.  Copies
that break a dependency are repaired by merging values: the chase for FDs, and
for a CD ``R[i->j]<=k`` the values beyond the k-th are merged into the first k.
A seeded, time-bounded local search then tries to raise the difference.

For an unbounded query, a family at N = 1, 2, 4, ..., 64 whose differences
grow is reported; the lower bound is ∞ only when the construction is a proof
for every N: the glued database needs no repair (the group sizes of every
dependency do not grow with N, so every N satisfies Σ), no filter touches a
copied variable, and some free variable is copied — then each copy's answer
needs t (mapping the copies back onto the core would otherwise give an
endomorphism of the core missing t), so the difference is at least N.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cqsens.engine.upper import UpperBound, explaining_steps
from cqsens.frontend.sqlgen import ColumnRef, predicate_sql
from cqsens.ir.cq import CQ, AggregateQuery, Atom, Const, Term, Var, position_classes
from cqsens.ir.dependencies import Sigma, satisfies
from cqsens.ir.expr import Predicate, Slot, Undecided, bind, evaluate, literal_of, literals
from cqsens.witness.evaluate import (
    Database,
    Value,
    affinity_value,
    connect,
    count_answers,
    quote_ident,
    sql_literal,
)

__all__ = ["Witness", "find_witness", "is_witness", "to_sql_script", "write_witness"]

Element = int | Const  # a labelled null (an int) or a constant
_MAX_ROWS = 40_000  # the largest database a construction builds
Row = tuple[Element, ...]


@dataclass(frozen=True)
class Witness:
    """Databases A and A ∪ {t} with both counts, as evaluated in SQLite."""

    database: Database
    relation: str
    row: tuple[Value, ...]
    count_without: int
    count_with: int
    construction: str
    growth: tuple[tuple[int, int], ...] = ()
    unbounded: bool = False
    checks: tuple[tuple[str, int, Predicate], ...] = ()  # (relation, position, CHECK on Slot(0))

    @property
    def difference(self) -> int:
        """``#Q(A ∪ {t}) − #Q(A)``."""
        return self.count_with - self.count_without

    @property
    def lower(self) -> float:
        """The lower bound this witness proves (∞ for a proven growing family)."""
        return math.inf if self.unbounded else self.difference

    def summary(self) -> str:
        """One line for people."""
        text = (
            f"A has {self.database.size()} rows; adding {self.relation}{self.row!r} takes the "
            f"count from {self.count_without} to {self.count_with} "
            f"(difference {self.difference}; {self.construction})"
        )
        if self.growth:
            seq = ", ".join(f"N={n}: {d}" for n, d in self.growth)
            text += f"; growing family {seq}"
            text += " — a proof for every N" if self.unbounded else ""
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        return {
            "rows": self.database.size(),
            "relation": self.relation,
            "tuple": list(self.row),
            "count_without": self.count_without,
            "count_with": self.count_with,
            "difference": self.difference,
            "construction": self.construction,
            "growth": [{"n": n, "difference": d} for n, d in self.growth],
            "unbounded": self.unbounded,
            "database": {r: [list(row) for row in rows] for r, rows in self.database.as_lists().items()},
            "summary": self.summary(),
        }


# ---------------------------------------------------------------------------
# building structures of labelled nulls


@dataclass
class _Structure:
    rows: dict[str, dict[Row, None]] = field(default_factory=dict)  # ordered sets
    t: tuple[str, Row] | None = None
    copied: set[int] = field(default_factory=set)  # nulls that are fresh per copy
    origin: dict[int, Var] = field(default_factory=dict)  # the variable a null copies
    next_null: int = 0

    def fresh(self) -> int:
        self.next_null += 1
        return self.next_null

    def add(self, relation: str, row: Row) -> None:
        self.rows.setdefault(relation, {})[row] = None


def _pattern_for(atoms: Sequence[Atom]) -> tuple[list[int], dict[int, Const]] | None:
    return position_classes(atoms)


Tree = dict[Var, tuple[Term, int]]  # child variable → (parent term, number of values)


def _determined(core_cq: CQ, sigma: Sigma | None, player: Atom) -> set[Var]:
    """Variables the FDs fix once the player's elements and the constants are fixed."""
    if sigma is None:
        return set()
    fds = {(r, i, j) for (r, i, j), k in sigma.weights().items() if k == 1}
    known: set[Term] = set(player.terms) | set(core_cq.constants())
    changed = True
    while changed:
        changed = False
        for atom in core_cq.relation_atoms():
            for (r, i, j) in fds:
                if r == atom.relation and atom.terms[i] in known and atom.terms[j] not in known:
                    known.add(atom.terms[j])
                    changed = True
    return {t for t in known if isinstance(t, Var) and t not in player.terms}


def _build(
    core_cq: CQ,
    relation: str,
    players: Sequence[Atom],
    copies: int,
    trees: Sequence[Tree | None] | None = None,
    sigma: Sigma | None = None,
) -> _Structure | None:
    """Glue copies of the core per player atom, every player sent onto t.

    Without a tree, ``copies`` copies with every other variable fresh.  With a
    tree of steps for a player (the one behind its upper bound), a *product*
    construction: one copy per choice of a value index on every tree edge,
    and a tree variable's value depends only on the indices along its path
    from the root, so siblings share their ancestors' values as the bound
    assumes.
    """
    unified = _pattern_for(players)
    if unified is None:
        return None
    classes, consts = unified
    s = _Structure()
    class_value: dict[int, Element] = {}
    for p in range(len(classes)):
        root = classes[p]
        if root not in class_value:
            class_value[root] = consts[root] if root in consts else s.fresh()
            term = players[0].terms[p]
            if isinstance(term, Var):
                s.origin[class_value[root]] = term  # type: ignore[index]
    t: Row = tuple(class_value[classes[p]] for p in range(len(classes)))
    s.t = (relation, t)
    atoms = core_cq.relation_atoms()
    keyed: dict[tuple[object, ...], int] = {}
    for number, player in enumerate(players):
        shared = _determined(core_cq, sigma, player)  # one value in every copy (FDs force it)
        tree = trees[number] if trees is not None else None
        edges = sorted(tree.items(), key=lambda kv: kv[0].name) if tree else []
        position = {child: k for k, (child, _) in enumerate(edges)}

        def path(v: Var, tree: Tree | None = tree, position: dict[Var, int] = position) -> list[int]:
            out: list[int] = []
            while tree is not None and v in tree:
                out.append(position[v])
                parent = tree[v][0]
                if not isinstance(parent, Var):
                    break
                v = parent
            return out

        if edges:
            indices = list(itertools.product(*(range(w) for _, (_, w) in edges)))
        else:
            indices = [(c,) for c in range(copies)]
        for index in indices:
            mapping: dict[Var, Element] = {}
            for p, term in enumerate(player.terms):
                if isinstance(term, Var):
                    mapping[term] = t[p]
            for atom in atoms:
                for term in atom.terms:
                    if isinstance(term, Var) and term not in mapping:
                        if term in shared:
                            key: tuple[object, ...] = (number, term, "shared")
                        elif edges and term in position:
                            key = (number, term, tuple(index[k] for k in path(term)))
                        else:
                            key = (number, term, index)
                        if key not in keyed:
                            null = s.fresh()
                            keyed[key] = null
                            if term not in shared:
                                s.copied.add(null)
                            s.origin[null] = term
                        mapping[term] = keyed[key]
            for atom in atoms:
                s.add(atom.relation, tuple(term if isinstance(term, Const) else mapping[term]
                                           for term in atom.terms))
    return s


def _repair(s: _Structure, sigma: Sigma) -> tuple[_Structure, int] | None:
    """Merge values until every dependency holds; returns (structure, merges) or None."""
    parent: dict[Element, Element] = {}

    def find(e: Element) -> Element:
        while e in parent:
            e = parent[e]
        return e

    merges = 0
    weights = sigma.weights()
    while True:
        violation = False
        for (rel, i, j), k in sorted(weights.items()):
            groups: dict[Element, list[Element]] = {}
            for row in s.rows.get(rel, {}):
                key, value = find(row[i]), find(row[j])
                values = groups.setdefault(key, [])
                if value not in values:
                    values.append(value)
            for values in groups.values():
                if len(values) <= k:
                    continue
                kept, extra = values[:k], values[k:]
                for n, e in enumerate(extra):
                    target = kept[n % k]
                    if isinstance(e, Const) and isinstance(target, Const):
                        nulls = [x for x in kept if not isinstance(x, Const)]
                        if not nulls:
                            return None
                        target = nulls[0]
                    a, b = find(e), find(target)
                    if a == b:
                        continue
                    if isinstance(a, Const) and isinstance(b, Const):
                        return None
                    if isinstance(a, Const):
                        a, b = b, a
                    parent[a] = b  # a is a null
                    merges += 1
                violation = True
            if violation:
                break  # apply this dependency's merges, then look again
        if not violation:
            break
        s = _substituted(s, find)
        parent = {}
    return s, merges


def _substituted(s: _Structure, find: Any) -> _Structure:
    out = _Structure(next_null=s.next_null)
    for rel, rows in s.rows.items():
        for row in rows:
            out.add(rel, tuple(find(e) for e in row))
    assert s.t is not None
    out.t = (s.t[0], tuple(find(e) for e in s.t[1]))
    out.copied = {e for e in (find(x) for x in s.copied) if isinstance(e, int)}
    for null, var in s.origin.items():
        rep = find(null)
        if isinstance(rep, int):
            out.origin.setdefault(rep, var)
    return out


# ---------------------------------------------------------------------------
# values, filters and evaluation


class _NoValue(Exception):
    """No fresh value meets the predicates on a column (a small finite domain)."""


class _Values:
    """Concrete values for nulls: distinct, avoiding the query's constants, and
    satisfying the unary filters on the variable they stand for when possible."""

    def __init__(
        self, cq: CQ, conn: sqlite3.Connection,
        memo: dict[tuple[Predicate, str], bool] | None = None,
    ) -> None:
        self.conn = conn
        self.used: set[Value] = {c.value for c in cq.constants()}
        self.counter = 0
        self.memo = {} if memo is None else memo  # (predicate, value) → holds, across attempts

    def fresh(self, checks: Sequence[Predicate] = ()) -> Value:
        candidates: list[Value] = []
        for _ in range(3):
            self.counter += 1
            candidates.append(1000 + self.counter)
        for checker in checks:
            for lit in literals(checker):
                if isinstance(lit, (int, float)):
                    for delta in (1, -1, 0, 2, -2):
                        candidates.append(lit + delta + 0)
                    candidates.extend(lit + 1 + n for n in range(3, 200, 7))
                else:
                    base = lit.replace("%", "").replace("_", "x")
                    candidates += [base, base + f"{self.counter}", f"{self.counter}{base}", lit]
        candidates.append(f"v{self.counter}")
        for value in candidates:
            if value in self.used:
                continue
            if all(self._holds(chk, value) for chk in checks):
                self.used.add(value)
                return value
        if checks:
            raise _NoValue  # never a value that breaks a CHECK or a filter on its column
        for value in candidates:
            if value not in self.used:
                self.used.add(value)
                return value
        self.counter += 1  # pragma: no cover
        return 1000 + self.counter  # pragma: no cover

    def _holds(self, check: Predicate, value: Value) -> bool:
        """Does ``check`` (over ``Slot(0)``) hold for ``value``?  Decided in Python,
        or by SQLite where Python cannot match SQLite's semantics exactly."""
        key = (check, repr(value))
        if key not in self.memo:
            try:
                self.memo[key] = evaluate(check, [value]) is True
            except Undecided:
                try:
                    row = self.conn.execute("SELECT " + predicate_sql(check, [value])).fetchone()
                    self.memo[key] = bool(row and row[0])
                except sqlite3.Error:
                    self.memo[key] = False
        return self.memo[key]


def _unary_checks(
    core_cq: CQ, column_checks: Mapping[tuple[str, int], Sequence[Predicate]]
) -> dict[Var, list[Predicate]]:
    """The predicates each variable's value must meet: its columns' CHECKs, and
    the filters over it alone (constants bound in), each over ``Slot(0)``."""
    checks: dict[Var, list[Predicate]] = {}
    for atom in core_cq.relation_atoms():
        for pos, term in enumerate(atom.terms):
            if isinstance(term, Var):
                for check in column_checks.get((atom.relation, pos), ()):
                    if check not in checks.setdefault(term, []):
                        checks[term].append(check)
    for atom in core_cq.atoms:
        if atom.predicate is not None and len(atom.variables()) == 1:
            (var,) = atom.variables()
            args = [Slot(0) if t == var else literal_of(t.value) for t in atom.terms
                    if isinstance(t, (Var, Const))]
            checks.setdefault(var, []).append(bind(atom.predicate, args))
    return checks


@dataclass
class _Context:
    query: AggregateQuery
    sigma: Sigma
    core: CQ
    columns: dict[str, tuple[str, ...]]
    checks: dict[Var, list[Predicate]]
    scratch: sqlite3.Connection
    bound: UpperBound | None = None
    deadline: float = math.inf
    memo: dict[tuple[Predicate, str], bool] = field(default_factory=dict)
    finite: frozenset[Var] = frozenset()  # variables whose column holds finitely many values
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]] = field(default_factory=dict)
    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _materialise(ctx: _Context, s: _Structure) -> tuple[Database, str, tuple[Value, ...]]:
    values = _Values(ctx.core, ctx.scratch, ctx.memo)
    concrete: dict[int, Value] = {}

    def value(e: Element) -> Value:
        if isinstance(e, Const):
            return e.value
        if e not in concrete:
            var = s.origin.get(e)
            concrete[e] = values.fresh(ctx.checks.get(var, []) if var is not None else [])
        return concrete[e]

    def typed(rel: str, row: Row) -> tuple[Value, ...]:
        types = ctx.types.get(rel, ())
        return tuple(affinity_value(value(e), types[i]) if i < len(types) else value(e)
                     for i, e in enumerate(row))

    assert s.t is not None
    rows = {rel: frozenset(typed(rel, row) for row in rs) for rel, rs in s.rows.items()}
    relation, t = s.t
    row = typed(relation, t)
    full = Database(ctx.columns, {r: rows.get(r, frozenset()) for r in ctx.columns}, ctx.types)
    return full.without_row(relation, row), relation, row


def _meets_checks(ctx: _Context, db: Database) -> bool:
    """Every value of a checked column (the schema's CHECKs) meets its predicates."""
    if not ctx.column_checks:
        return True
    probe = _Values(ctx.core, ctx.scratch, ctx.memo)
    for (rel, pos), checks in ctx.column_checks.items():
        for value in {r[pos] for r in db.rows.get(rel, ())}:
            if not all(probe._holds(c, value) for c in checks):
                return False
    return True


def _evaluate(ctx: _Context, db: Database, relation: str, row: tuple[Value, ...]) -> tuple[int, int] | None:
    full = db.with_row(relation, row)
    if not satisfies(full.rows, ctx.sigma) or not _meets_checks(ctx, full):
        return None
    if time.monotonic() > ctx.deadline:
        return None
    try:
        conn = connect(full)
        # a construction whose evaluation outlives the search's deadline is abandoned
        conn.set_progress_handler(lambda: int(time.monotonic() > ctx.deadline), 10_000)
        try:
            with_t = count_answers(ctx.query, full, conn=conn)
            cols = ctx.columns[relation]
            cond = " AND ".join(f"{quote_ident(c)} IS ?" for c in cols)
            conn.execute(f"DELETE FROM {quote_ident(relation)} WHERE {cond}", row)
            without_t = count_answers(ctx.query, db, conn=conn)
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return without_t, with_t


def _attempt(
    ctx: _Context,
    relation: str,
    players: Sequence[Atom],
    copies: int,
    trees: Sequence[Tree | None] | None = None,
) -> tuple[Witness, _Structure, int] | None:
    if time.monotonic() > ctx.deadline:
        return None  # the search's time is up: no more constructions
    s = _build(ctx.core, relation, players, copies, trees, ctx.sigma)
    if s is None:
        return None
    repaired = _repair(s, ctx.sigma)
    if repaired is None:
        return None
    s2, merges = repaired
    try:
        db, rel, row = _materialise(ctx, s2)
    except _NoValue:
        return None
    counts = _evaluate(ctx, db, rel, row)
    if counts is None:
        return None
    names = ", ".join(str(p) for p in players)
    if trees is not None:
        how = f"a product of choices along the bound's tree of steps, glued along {names}"
    else:
        how = f"{copies} cop{'y' if copies == 1 else 'ies'} of the core glued along {names}"
    if merges:
        how += f", {merges} value merge{'s' if merges != 1 else ''} to satisfy Σ"
    return Witness(db, rel, row, counts[0], counts[1], how), s2, merges


def _trees(bound: UpperBound | None) -> dict[Atom, Tree]:
    """Per atom, the tree of steps behind its bound (child → parent, weight)."""
    out: dict[Atom, Tree] = {}
    if bound is None:
        return out
    for rel in bound.relations:
        for ab in rel.atoms:
            steps = explaining_steps(ab)
            if not steps:
                continue
            tree: Tree = {}
            for step in steps:
                if isinstance(step.target, Var) and step.target not in tree:
                    tree[step.target] = (step.source, int(step.weight))
            out[ab.atom] = tree
    return out


def _capped(tree: Tree, cap: int) -> Tree:
    """The tree with weights lowered so the product of choices stays under ``cap``."""
    out: Tree = {}
    total = 1
    for child in sorted(tree, key=lambda v: v.name):
        parent, w = tree[child]
        w = max(1, min(w, cap // total))
        out[child] = (parent, w)
        total *= w
    return out


def _copy_counts(upper: float) -> list[int]:
    """Copies to glue: powers of 2 for a growth family; more divisors for a finite target."""
    if upper == math.inf:
        return [1, 2, 4, 8, 16, 32, 64]
    base = [1, 2, 3, 4, 6, 8, 9, 12, 16, 27, 32, 64]
    if upper <= 256:
        base.append(int(upper))
    return sorted({n for n in base if n <= max(upper, 1)})


def _player_sets(core_cq: CQ, relation: str) -> list[list[Atom]]:
    atoms = [a for a in core_cq.relation_atoms() if a.relation == relation]
    out: list[list[Atom]] = [[a] for a in atoms]
    if len(atoms) > 1:
        for anchor in atoms:
            group = [anchor]
            for other in atoms:
                if other is not anchor and _pattern_for([*group, other]) is not None:
                    group.append(other)
            if len(group) > 1 and group not in out:
                out.append(group)
    return out


def _proves_every_n(ctx: _Context, player: Atom, family: list[tuple[int, int, int]]) -> bool:
    """Whether the glued family is a proof for every N (see the module docstring)."""
    if any(merges for _, _, merges in family):
        return False
    if not all(diff >= n for n, diff, _ in family):
        return False
    shared = _determined(ctx.core, ctx.sigma, player)
    free_copied = [v for v in ctx.core.free if v not in player.terms and v not in shared]
    if not free_copied:
        return False
    copied_vars = {t for a in ctx.core.relation_atoms() for t in a.terms if isinstance(t, Var)} - set(
        t for t in player.terms if isinstance(t, Var)
    ) - shared
    for atom in ctx.core.atoms:
        if atom.is_filter and atom.variables() & copied_vars:
            return False
    if copied_vars & ctx.finite:
        return False  # a CHECK leaves a copied integer column only finitely many values
    # group sizes of every dependency must not grow with N: compare N = 1 and N = 2
    sizes = []
    for n in (1, 2):
        s = _build(ctx.core, player.relation, [player], n, sigma=ctx.sigma)
        assert s is not None
        sizes.append(_group_sizes(s, ctx.sigma))
    return sizes[0] == sizes[1]


def _group_sizes(s: _Structure, sigma: Sigma) -> dict[tuple[str, int, int, Element], int]:
    out: dict[tuple[str, int, int, Element], int] = {}
    for (rel, i, j), _k in sigma.weights().items():
        groups: dict[Element, set[Element]] = {}
        for row in s.rows.get(rel, {}):
            groups.setdefault(row[i], set()).add(row[j])
        for key, values in groups.items():
            if not isinstance(key, int) or key not in s.copied:
                out[(rel, i, j, key)] = len(values)
    return out


def find_witness(
    query: AggregateQuery,
    sigma: Sigma,
    core_cq: CQ,
    *,
    upper: float = math.inf,
    columns: Mapping[str, tuple[str, ...]] | None = None,
    time_budget: float = 1.0,
    seed: int = 0,
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]] | None = None,
    bound: UpperBound | None = None,
    finite_columns: Iterable[tuple[str, int]] = (),
    column_types: Mapping[str, tuple[str, ...]] | None = None,
) -> Witness | None:
    """The best witness found for ``query`` on C_Σ, or None.

    Parameters
    ----------
    query : AggregateQuery
        The query as the user wrote it (its SQL is what gets evaluated).
    sigma : Sigma
        The dependencies both databases must satisfy.
    core_cq : CQ
        ``core(chase_Σ(Q))``, the structure the databases are built from.
    upper : float
        The upper bound: the search stops once a witness reaches it.
    columns : mapping, optional
        Relation → column names (defaults to the query's, or ``c1..cr``).
    time_budget : float
        Seconds for the local search after the constructions.
    seed : int
        Seed of the local search (results are reproducible).
    column_checks : mapping, optional
        ``(relation, position) → [predicate over Slot(0)]``: what every value of
        that column must meet, such as the schema's CHECKs (``{0} >= 0 AND {0} <= 120``).
    bound : UpperBound, optional
        The upper bound's explanation: its trees of steps guide a product
        construction that meets joint-assignment bounds.
    column_types : mapping, optional
        Relation → declared column types: values are stored with SQLite's type
        affinity (``'1'`` in an INTEGER column is 1) before Σ is checked.
    finite_columns : iterable of (relation, position)
        Columns with finitely many legal values (an integer column with a
        two-sided CHECK): a growing family that copies them proves nothing.

    Returns
    -------
    Witness or None
        None when no construction gave a database satisfying Σ and the filters
        with a positive difference (an unsatisfiable query gets a witness of 0).

    Examples
    --------
    >>> from cqsens.frontend.parse_cq import parse_cq
    >>> q = parse_cq("Q(x) :- R(x, y), R(y, x)")
    >>> w = find_witness(AggregateQuery(cq=q), Sigma.of(), q)
    >>> w.difference, w.row
    (2, (1001, 1004))
    """
    cols = dict(columns or {})
    for rel, arity in query.cq.relations().items():
        cols.setdefault(rel, tuple(f"c{i + 1}" for i in range(arity)))
    scratch = sqlite3.connect(":memory:")
    checks = _unary_checks(core_cq, column_checks or {})
    deadline = time.monotonic() + max(3.0, 12 * time_budget)
    finite_set = set(finite_columns)
    finite = frozenset(t for a in core_cq.relation_atoms() for p, t in enumerate(a.terms)
                       if isinstance(t, Var) and (a.relation, p) in finite_set)
    ctx = _Context(query, sigma, core_cq, cols, checks, scratch, bound, deadline,
                   column_checks=dict(column_checks or {}), finite=finite,
                   types={r: tuple(t) for r, t in (column_types or {}).items() if r in cols})
    try:
        found = _search(ctx, upper, time_budget, seed)
    finally:
        scratch.close()
    if found is None or not column_checks:
        return found
    kept = tuple((rel, pos, t) for (rel, pos), ts in sorted(column_checks.items()) for t in ts
                 if rel in cols and pos < len(cols[rel]))
    return dataclasses.replace(found, checks=kept)


def _search(ctx: _Context, upper: float, time_budget: float, seed: int) -> Witness | None:
    if not ctx.core.satisfiable or not ctx.core.relation_atoms():
        if not ctx.query.cq.relations():
            return None
        rel, arity = sorted(ctx.query.cq.relations().items())[0]
        empty = Database(ctx.columns, {r: frozenset() for r in ctx.columns}, ctx.types)
        row = tuple(1000 + i for i in range(arity))
        counts = _evaluate(ctx, empty, rel, row)
        if counts is None:
            return None
        return Witness(empty, rel, row, counts[0], counts[1], "the query is unsatisfiable: any row")
    best: Witness | None = None
    best_structure: _Structure | None = None
    deadline = time.monotonic() + max(time_budget, 0.05) * 4
    trees = _trees(ctx.bound)
    for relation in sorted(ctx.core.relations()):
        for players in _player_sets(ctx.core, relation):
            if upper != math.inf and all(p in trees for p in players):
                cap = max(1, _MAX_ROWS // (len(ctx.core.relation_atoms()) * len(players)))
                got = _attempt(ctx, relation, players, 1, [_capped(trees[p], cap) for p in players])
                if got is not None and (best is None or got[0].difference > best.difference):
                    best, best_structure = got[0], got[1]
                    if best.difference >= upper:
                        return best
            family: list[tuple[int, int, int]] = []
            growth_witnesses: list[Witness] = []
            for n in _copy_counts(upper):
                if time.monotonic() > ctx.deadline or (time.monotonic() > deadline and best is not None):
                    break
                got = _attempt(ctx, relation, players, n)
                if got is None:
                    continue
                w, s, merges = got
                family.append((n, w.difference, merges))
                growth_witnesses.append(w)
                if best is None or w.difference > best.difference:
                    best, best_structure = w, s
                if upper != math.inf and best.difference >= upper:
                    return best
            if upper == math.inf and len(players) == 1 and family:
                powers = [(n, d, m) for n, d, m in family if n in (1, 2, 4, 8, 16, 32, 64)]
                if len(powers) >= 2 and _proves_every_n(ctx, players[0], powers):
                    top = max(growth_witnesses, key=lambda x: x.difference)
                    return Witness(
                        top.database, top.relation, top.row, top.count_without, top.count_with,
                        top.construction, tuple((n, d) for n, d, _ in powers), unbounded=True,
                    )
    if best is not None and best_structure is not None and (upper == math.inf or best.difference < upper):
        improved = _local_search(ctx, best, best_structure, upper, time_budget, seed)
        if improved is not None:
            best = improved
    return best


def _local_search(
    ctx: _Context, best: Witness, structure: _Structure, upper: float, budget: float, seed: int
) -> Witness | None:
    """Random merges of two values, kept when Σ holds and the difference grows."""
    rng = random.Random(seed)
    stop = time.monotonic() + budget
    current = structure
    improved: Witness | None = None
    score = best.difference
    while time.monotonic() < stop:
        assert current.t is not None
        nulls = sorted({e for rows in current.rows.values() for row in rows for e in row
                        if isinstance(e, int)})
        if len(nulls) < 2:
            break
        a, b = rng.sample(nulls, 2)
        trial = _substituted(current, lambda e, a=a, b=b: b if e == a else e)
        repaired = _repair(trial, ctx.sigma)
        if repaired is None:
            continue
        trial, _ = repaired
        try:
            db, rel, row = _materialise(ctx, trial)
        except _NoValue:
            continue
        counts = _evaluate(ctx, db, rel, row)
        if counts is None:
            continue
        diff = counts[1] - counts[0]
        if diff > score:
            score, current = diff, trial
            improved = Witness(db, rel, row, counts[0], counts[1],
                               best.construction + ", improved by local search")
            if upper != math.inf and diff >= upper:
                break
    return improved


# ---------------------------------------------------------------------------
# checking and writing


def is_witness(query: AggregateQuery | CQ, sigma: Sigma, witness: Witness) -> bool:
    """Certificate check: re-evaluate the witness from scratch.

    Both databases satisfy Σ, they are one row apart (t is not in A), and the
    counts are the ones claimed.
    """
    a = witness.database
    if witness.row in a.rows.get(witness.relation, frozenset()):
        return False
    full = a.with_row(witness.relation, witness.row)
    if not satisfies(a.rows, sigma) or not satisfies(full.rows, sigma):
        return False
    return (
        count_answers(query, a) == witness.count_without
        and count_answers(query, full) == witness.count_with
    )


def to_sql_script(witness: Witness, *, title: str = "") -> str:
    """A runnable SQL script: CREATE TABLE, INSERT for A, then the INSERT of t last."""
    lines = [f"-- cqsens witness{': ' + title if title else ''}"]
    lines.append(f"-- #Q(A) = {witness.count_without}")
    lines.append(f"-- #Q(A ∪ {{t}}) = {witness.count_with}   (difference {witness.difference})")
    if witness.growth:
        lines.append("-- growing family: " + ", ".join(f"N={n}: {d}" for n, d in witness.growth))
    for rel, cols in sorted(witness.database.columns.items()):
        parts = witness.database.column_defs(rel)
        parts += [f"CHECK ({predicate_sql(c, [ColumnRef(None, cols[pos])])})"
                  for r, pos, c in witness.checks if r == rel]
        lines.append(f"CREATE TABLE {quote_ident(rel)} ({', '.join(parts)});")
    for rel, rows in witness.database.as_lists().items():
        for row in rows:
            lines.append(_insert(rel, row))
    lines.append(f"-- the added row t (A ∪ {{t}} has count {witness.count_with}):")
    lines.append(_insert(witness.relation, witness.row))
    return "\n".join(lines) + "\n"


def _insert(relation: str, row: Iterable[Value]) -> str:
    return f"INSERT INTO {quote_ident(relation)} VALUES ({', '.join(sql_literal(v) for v in row)});"


def write_witness(witness: Witness, path: str | Path, *, title: str = "") -> None:
    """Write the witness as a SQL script, or for ``.sqlite``/``.db`` a SQLite file
    holding A in the tables and A ∪ {t} in ``<table>_with_t`` copies."""
    target = Path(path)
    if target.suffix in (".sqlite", ".db", ".sqlite3"):
        if target.exists():
            target.unlink()
        conn = sqlite3.connect(target)
        try:
            full = witness.database.with_row(witness.relation, witness.row)
            for suffix, db in (("", witness.database), ("_with_t", full)):
                for rel, cols in sorted(db.columns.items()):
                    name = quote_ident(rel + suffix)
                    conn.execute(f"CREATE TABLE {name} ({db.column_sql(rel)})")
                    rows = db.rows.get(rel, ())
                    if rows:
                        marks = ", ".join("?" for _ in cols)
                        conn.executemany(f"INSERT INTO {name} VALUES ({marks})", list(rows))
            conn.execute("CREATE TABLE cqsens_witness (key TEXT, value TEXT)")
            conn.executemany(
                "INSERT INTO cqsens_witness VALUES (?, ?)",
                [("count_without_t", str(witness.count_without)),
                 ("count_with_t", str(witness.count_with)),
                 ("added_row", f"{witness.relation}{witness.row!r}"),
                 ("summary", witness.summary())],
            )
            conn.commit()
        finally:
            conn.close()
    else:
        target.write_text(to_sql_script(witness, title=title), encoding="utf-8")


