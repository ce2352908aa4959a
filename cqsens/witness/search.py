"""Find a witness: the search over constructions, evaluated in SQLite.

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
import math
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from cqsens.budget import search_stop, work_units
from cqsens.engine.upper import UpperBound
from cqsens.ir.cq import CQ, AggregateQuery, Atom, Const, Var
from cqsens.ir.dependencies import Sigma, satisfies
from cqsens.ir.expr import Predicate
from cqsens.witness.construct import (
    MAX_ROWS,
    Element,
    Row,
    Structure,
    Tree,
    bound_trees,
    build,
    capped,
    copy_counts,
    determined,
    group_sizes,
    player_sets,
    repair,
    substituted,
)
from cqsens.witness.evaluate import (
    Database,
    Value,
    affinity_kind,
    count_answers,
    counting_sql,
    quote_ident,
    with_affinity,
)
from cqsens.witness.evaluate import scratch as scratch_database
from cqsens.witness.model import Witness
from cqsens.witness.values import NoValue, Values, fresh_or_repeated, unary_checks

__all__ = ["find_witness", "first_proof"]

_POWERS = (1, 2, 4, 8, 16, 32, 64)  # the copy counts of a growing family
WORK_ROWS = 500_000
"""Rows the constructions of one search may build in all: a budget of work, not of
time, so that the result does not depend on the machine's load (the time limit
stays as a hard cap)."""
LOCAL_ROWS_PER_SECOND = 6_000
"""Rows the local search may materialise (each try rebuilds its whole structure) for each
second of the search's budget: work, not time, about what a typical core does in half
of that second (the constructions before it take the other half)."""
LOCAL_ROWS_MAX = 30_000
"""The local search's rows at most, whatever the budget: past a few hundred merges more
rarely find a larger difference (a large ``--witness-time`` serves the constructions)."""

#: The members a growing family needs before :func:`first_proof` stops at it (N = 1, 2, 4).
FIRST_PROOF_MEMBERS = 3

_FIRST_PROOF: ContextVar[bool] = ContextVar("cqsens_first_proof", default=False)


@contextmanager
def first_proof() -> Iterator[None]:
    """Searches in this block spend less on a query whose count is unbounded: a growing
    family stops at its first members that prove ∞ (N = 1, 2, 4: the proof of the module
    docstring does not depend on how many members were built, and the witness kept is
    the N = 4 member, a small database to check again), and no local search follows
    the families (the largest family member's difference is the lower bound).  For a
    query log, where one search serves every later record of its shape.

    >>> with first_proof():
    ...     _FIRST_PROOF.get()
    True
    """
    token = _FIRST_PROOF.set(True)
    try:
        yield
    finally:
        _FIRST_PROOF.reset(token)


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
    memo: dict[Predicate, dict[str, bool]] = field(default_factory=dict)
    finite: frozenset[Var] = frozenset()  # variables whose column holds finitely many values
    column_checks: Mapping[tuple[str, int], Sequence[Predicate]] = field(default_factory=dict)
    types: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    work_left: int = WORK_ROWS
    keys: Mapping[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    public: frozenset[str] = frozenset()  # tables whose rows never change


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
    keys: Mapping[str, tuple[tuple[int, ...], ...]] | None = None,
    public: frozenset[str] = frozenset(),
    reach: float = math.inf,
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
    reach : float
        A proven upper bound of the counted difference itself, when ``upper`` bounds
        something else (a person's released value): with a finite ``upper``, a witness
        whose difference reaches ``reach`` cannot be beaten (the search keeps only a
        strictly larger difference), so the search stops there with the same result.
    columns : mapping, optional
        Relation → column names (defaults to the query's, or ``c1..cr``).
    time_budget : float
        Seconds for the whole search: the constructions (growth families stop at
        60 % of it once a witness exists), then the local search.
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
    checks = unary_checks(core_cq, column_checks or {})
    # the whole search (constructions, then the local search) is a budget of work set by
    # time_budget; the clock stops it only far past that (cqsens.budget.search_stop)
    deadline = search_stop(time_budget)
    finite_set = set(finite_columns)
    finite = frozenset(t for a in core_cq.relation_atoms() for p, t in enumerate(a.terms)
                       if isinstance(t, Var) and (a.relation, p) in finite_set)
    ctx = _Context(query, sigma, core_cq, cols, checks, scratch, bound, deadline,
                   column_checks=dict(column_checks or {}), finite=finite,
                   types={r: tuple(t) for r, t in (column_types or {}).items() if r in cols},
                   keys=dict(keys or {}), public=public)
    try:
        found = _search(ctx, upper, time_budget, seed, reach)
    finally:
        scratch.close()
    if found is not None and found.difference > reach:  # a real pair beats a proven bound
        raise AssertionError(
            f"internal error: witness difference {found.difference} exceeds the proven count "
            f"bound {reach} for {query.cq}; please report it")
    if found is not None:
        found = dataclasses.replace(
            found, query_sql=counting_sql(query, cols),
            hidden=tuple((r, p) for r, p in sorted(query.row_positions.items()) if r in cols))
    if found is None or not column_checks:
        return found
    kept = tuple((rel, pos, t) for (rel, pos), ts in sorted(column_checks.items()) for t in ts
                 if rel in cols and pos < len(cols[rel]))
    return dataclasses.replace(found, checks=kept)


def _search(ctx: _Context, upper: float, time_budget: float, seed: int,
            reach: float = math.inf) -> Witness | None:
    """Every construction in turn, the best kept; then the local search.  With a finite
    ``upper``, the search stops at a witness whose difference reaches ``upper`` or
    ``reach`` (a proven bound of the difference: nothing later could replace it)."""
    stop = min(upper, reach) if upper != math.inf else math.inf
    if not ctx.core.satisfiable or not ctx.core.relation_atoms():
        return _any_row(ctx)
    best: Witness | None = None
    best_structure: Structure | None = None
    # once a witness exists, growth families stop when 60 % of the work is spent; the
    # rest is for the local search
    trees = bound_trees(ctx.bound)
    quick = _FIRST_PROOF.get() and upper == math.inf
    for relation in sorted(set(ctx.core.relations()) - ctx.public):
        for players in player_sets(ctx.core, relation):
            if upper != math.inf and all(p in trees for p in players):
                cap = max(1, MAX_ROWS // (len(ctx.core.relation_atoms()) * len(players)))
                got = _attempt(ctx, relation, players, 1, [capped(trees[p], cap) for p in players])
                if got is not None and (best is None or got[0].difference > best.difference):
                    best, best_structure = got[0], got[1]
                    if best.difference >= stop:
                        return best
            family: list[tuple[int, int, int]] = []
            growth_witnesses: list[Witness] = []
            for n in copy_counts(upper):
                spent = ctx.work_left < 0.4 * WORK_ROWS
                if time.monotonic() > ctx.deadline or (spent and best is not None):
                    break
                got = _attempt(ctx, relation, players, n)
                if got is None:
                    continue
                w, s, merges = got
                family.append((n, w.difference, merges))
                growth_witnesses.append(w)
                if best is None or w.difference > best.difference:
                    best, best_structure = w, s
                if best.difference >= stop:
                    return best
                if quick and len(players) == 1 and len(family) == FIRST_PROOF_MEMBERS:
                    proven = _proven_family(ctx, players[0], family, growth_witnesses)
                    if proven is not None:
                        return proven
            if upper == math.inf and len(players) == 1 and family:
                proven = _proven_family(ctx, players[0], family, growth_witnesses)
                if proven is not None:
                    return proven
    if best is None or best_structure is None:
        return best
    if not quick and best.difference < stop:
        improved = _local_search(ctx, best, best_structure, stop,
                                 min(work_units(time_budget, LOCAL_ROWS_PER_SECOND),
                                     LOCAL_ROWS_MAX), seed)
        if improved is not None:
            best = improved
    return best


def _any_row(ctx: _Context) -> Witness | None:
    """For an unsatisfiable core: the empty database and any row (a difference of 0)."""
    if not ctx.query.cq.relations():
        return None
    rel, arity = sorted(ctx.query.cq.relations().items())[0]
    empty = Database(ctx.columns, {r: frozenset() for r in ctx.columns}, ctx.types)
    row = tuple(1000 + i for i in range(arity))
    counts = _evaluate(ctx, empty, rel, row)
    if counts is None:
        return None
    return Witness(empty, rel, row, counts[0], counts[1], "the query is unsatisfiable: any row")


def _proven_family(
    ctx: _Context, player: Atom, family: list[tuple[int, int, int]], witnesses: list[Witness]
) -> Witness | None:
    """The largest witness of a growing family, marked unbounded, when the
    family is a proof for every N; else None."""
    powers = [(n, d, m) for n, d, m in family if n in _POWERS]
    if len(powers) < 2 or not _proves_every_n(ctx, player, powers):
        return None
    top = max(witnesses, key=lambda x: x.difference)
    return Witness(
        top.database, top.relation, top.row, top.count_without, top.count_with,
        top.construction, tuple((n, d) for n, d, _ in powers), unbounded=True,
    )


def _proves_every_n(ctx: _Context, player: Atom, family: list[tuple[int, int, int]]) -> bool:
    """Whether the glued family is a proof for every N (see the module docstring)."""
    if any(merges for _, _, merges in family):
        return False
    if not all(diff >= n for n, diff, _ in family):
        return False
    shared = determined(ctx.core, ctx.sigma, player)
    free_copied = [v for v in ctx.core.free if v not in player.terms and v not in shared]
    if not free_copied:
        return False
    body_vars = {t for a in ctx.core.relation_atoms() for t in a.terms if isinstance(t, Var)}
    copied_vars = body_vars - {t for t in player.terms if isinstance(t, Var)} - shared
    for atom in ctx.core.atoms:
        if atom.is_filter and atom.variables() & copied_vars:
            return False
    if copied_vars & ctx.finite:
        return False  # a CHECK leaves a copied integer column only finitely many values
    # group sizes of every dependency must not grow with N: compare N = 1 and N = 2
    sizes = []
    for n in (1, 2):
        s = build(ctx.core, player.relation, [player], n, sigma=ctx.sigma)
        assert s is not None
        sizes.append(group_sizes(s, ctx.sigma))
    return sizes[0] == sizes[1]


def _attempt(
    ctx: _Context,
    relation: str,
    players: Sequence[Atom],
    copies: int,
    trees: Sequence[Tree | None] | None = None,
) -> tuple[Witness, Structure, int] | None:
    """Build, repair, materialise and evaluate one construction."""
    if time.monotonic() > ctx.deadline or ctx.work_left <= 0:
        return None  # the search's time or work is up: no more constructions
    s = build(ctx.core, relation, players, copies, trees, ctx.sigma)
    if s is None:
        return None
    ctx.work_left -= sum(len(rows) for rows in s.rows.values())
    repaired = repair(s, ctx.sigma)
    if repaired is None:
        return None
    s2, merges = repaired
    try:
        db, rel, row = _materialise(ctx, s2)
    except NoValue:
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


def _materialise(ctx: _Context, s: Structure) -> tuple[Database, str, tuple[Value, ...]]:
    """Concrete values for the nulls: the database A, t's relation and t."""
    values = Values(ctx.core, ctx.scratch, ctx.memo)
    concrete: dict[int, Value] = {}
    # a null that no variable of the core stands for (an existential column the tree of
    # steps does not reach) must still meet the CHECKs of every column it fills
    placed: dict[Element, list[Predicate]] = {}
    assert s.t is not None
    for rel, rs in (*s.rows.items(), (s.t[0], (s.t[1],))):
        checked: dict[int, list[tuple[int, Sequence[Predicate]]]] = {}  # arity → checks
        for r in rs:
            at = checked.get(len(r))
            if at is None:
                at = checked[len(r)] = [(p, cs) for p in range(len(r))
                                        if (cs := ctx.column_checks.get((rel, p), ()))]
            for p, cs in at:
                e = r[p]
                for check in cs:
                    if check not in placed.setdefault(e, []):
                        placed[e].append(check)

    def value(e: Element) -> Value:
        if isinstance(e, Const):
            return e.value
        if e not in concrete:
            var = s.origin.get(e)
            if e not in placed and not (var is not None and ctx.checks.get(var)):
                concrete[e] = values.fresh()  # no check: fresh() never fails
                return concrete[e]
            own = list(ctx.checks.get(var, [])) if var is not None else []
            checks = own + [c for c in placed.get(e, []) if c not in own]
            try:
                concrete[e] = values.fresh(checks)
            except NoValue:
                concrete[e] = fresh_or_repeated(values, checks)
        return concrete[e]

    kinds: dict[str, tuple[str, ...]] = {}  # relation → its columns' affinities

    def typed(rel: str, row: Row) -> tuple[Value, ...]:
        kind = kinds.get(rel)
        if kind is None:
            kind = kinds[rel] = tuple(affinity_kind(t) for t in ctx.types.get(rel, ()))
        out: list[Value] = []
        for i, e in enumerate(row):  # the elements in order: value() gives them in turn
            got = e.value if isinstance(e, Const) else \
                concrete[e] if e in concrete else value(e)
            out.append(with_affinity(got, kind[i]) if i < len(kind) else got)
        return tuple(out)

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
    probe = Values(ctx.core, ctx.scratch, ctx.memo)
    for (rel, pos), checks in ctx.column_checks.items():
        for value in {r[pos] for r in db.rows.get(rel, ())}:
            if not all(probe.holds(c, value) for c in checks):
                return False
    return True


def _keys_hold(ctx: _Context, db: Database) -> bool:
    """No two rows agree on a key of their table (composite keys included)."""
    for relation, keys in ctx.keys.items():
        rows = db.rows.get(relation, ())
        for key in keys:
            seen = {tuple(row[p] for p in key) for row in rows}
            if len(seen) != len(rows):
                return False
    return True


def _evaluate(
    ctx: _Context, db: Database, relation: str, row: tuple[Value, ...]
) -> tuple[int, int] | None:
    """``(#Q(A), #Q(A ∪ {t}))``, or None when Σ or a CHECK fails or time is up."""
    full = db.with_row(relation, row)
    if not satisfies(full.rows, ctx.sigma) or not _meets_checks(ctx, full) \
            or not _keys_hold(ctx, full):
        return None
    if time.monotonic() > ctx.deadline:
        return None
    try:
        conn = scratch_database(full)  # this thread's database of full's layout, refilled
        # a construction whose evaluation outlives the search's deadline is abandoned
        conn.set_progress_handler(lambda: int(time.monotonic() > ctx.deadline), 10_000)
        try:
            with_t = count_answers(ctx.query, full, conn=conn)
            cols = ctx.columns[relation]
            cond = " AND ".join(f"{quote_ident(c)} IS ?" for c in cols)
            conn.execute(f"DELETE FROM {quote_ident(relation)} WHERE {cond}", row)
            without_t = count_answers(ctx.query, db, conn=conn)
        finally:
            conn.set_progress_handler(None, 0)
    except sqlite3.Error:
        return None
    return without_t, with_t


def _local_search(
    ctx: _Context, best: Witness, structure: Structure, upper: float, rows: int, seed: int
) -> Witness | None:
    """Random merges of two values, kept when Σ holds and the difference grows, until the
    tries have materialised ``rows`` rows in all."""
    rng = random.Random(seed)
    current = structure
    improved: Witness | None = None
    score = best.difference
    while rows > 0:
        rows -= 1 + sum(len(r) for r in current.rows.values())
        if time.monotonic() >= ctx.deadline:
            break
        assert current.t is not None
        nulls = sorted({e for rows in current.rows.values() for row in rows for e in row
                        if isinstance(e, int)})
        if len(nulls) < 2:
            break
        a, b = rng.sample(nulls, 2)
        trial = substituted(current, _renaming(a, b))
        repaired = repair(trial, ctx.sigma)
        if repaired is None:
            continue
        trial, _ = repaired
        try:
            db, rel, row = _materialise(ctx, trial)
        except NoValue:
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


def _renaming(a: int, b: int) -> Callable[[Element], Element]:
    """The map sending the null ``a`` to ``b`` and every other element to itself."""

    def find(e: Element) -> Element:
        return b if e == a else e

    return find
